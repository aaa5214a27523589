"""Standalone (no loopbench code): pydantic-ai-slim 2.58.0 beside the anthropic client of its release's day
(anthropic 2.1.0, published 2026-10-21, which pydantic-ai-slim 2.58's `anthropic` extra admits) fails every
`AnthropicModel` request before it is sent: `_map_message` calls `BetaMessageParam(...)`, which that anthropic
release defines as a `typing.Union`, and Python raises `TypeError: Cannot instantiate typing.Union`. The version
matrix's pydantic-ai-slim 2.58.0 row is this failure (its companions are held to the release's day); with the
locked pydantic-ai-slim 2.68.0 and anthropic 2.14.0 the request is sent (a connection error on the closed port).

Run it in an environment with those two releases (the matrix builds one:
`~/.cache/loopbench/matrix/pydantic-ai-slim-2.58.0-*/venv/bin/python probes/pydantic_ai/anthropic_of_its_day.py`).
No server is needed: the error comes before any connection (the base URL is a closed port).

Printed (pydantic-ai-slim 2.58.0, anthropic 2.1.0):
  TypeError: Cannot instantiate typing.Union
    in pydantic_ai/models/anthropic.py, _map_message: anthropic_messages.append(BetaMessageParam(role='user', ...))
Printed (the locked pydantic-ai-slim 2.68.0, anthropic 2.14.0):
  ModelConnectionError: Connection error.
"""

from __future__ import annotations

import asyncio
import traceback

from anthropic import AsyncAnthropic
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider


async def main() -> None:
    client = AsyncAnthropic(base_url="http://127.0.0.1:9", api_key="k", max_retries=0)
    agent = Agent(AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=client)))
    try:
        await agent.run("hi")
    except Exception as exc:  # noqa: BLE001 - the probe prints whatever ends the run
        frame = traceback.extract_tb(exc.__traceback__)[-3]
        print(f"{type(exc).__name__}: {exc}\n  in {frame.filename.split('site-packages/')[-1]}, {frame.name}: "
              f"{frame.line}")
    else:
        print("the request was sent (no TypeError): this pair of releases works")


asyncio.run(main())
