"""A plain Pydantic AI script for `support_draft_completes` — no loopbench code: what a user would write.

Long-lived, like a service: one JSON request per stdin line (`server_url`, `api_key`, `model`, `prompt`,
`max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and CPU
time around the run). `loopbench bench` times it against loopbench's run of the same scenario.

The model is a Claude model, so it goes through pydantic-ai's `AnthropicModel` + `AnthropicProvider` (the
docs' pairing for Claude), with one `AsyncAnthropic` client reused across requests.

(Not named `pydantic_ai.py`: a script's directory comes first on sys.path, so that name would shadow the package.)
"""

import asyncio
import json
import resource
import sys
import time

from anthropic import AsyncAnthropic
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider


def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return f"Ticket {ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago."


def lookup_policy(topic: str) -> str:
    """Look up the support policy that applies to a topic."""
    return "Policy POL-7: refunds are accepted within 30 days of delivery."


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


clients: dict[str, AsyncAnthropic] = {}


async def run(req: dict) -> str:
    if req["server_url"] not in clients:  # the Anthropic client adds /v1 itself
        clients[req["server_url"]] = AsyncAnthropic(base_url=req["server_url"], api_key=req["api_key"])
    client = clients[req["server_url"]].with_options(api_key=req["api_key"])  # the bench gives each run a key
    model = AnthropicModel(req["model"], provider=AnthropicProvider(anthropic_client=client))
    agent = Agent(model, tools=[get_ticket, lookup_policy])
    result = await agent.run(req["prompt"], usage_limits=UsageLimits(request_limit=req["max_turns"]))
    return str(result.output)


async def main() -> None:
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True}), flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        req = json.loads(line)
        c0, t0 = cpu_s(), time.perf_counter()
        text = await run(req)
        print(json.dumps({"ok": True, "text": text, "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0}),
              flush=True)


if __name__ == "__main__":
    asyncio.run(main())
