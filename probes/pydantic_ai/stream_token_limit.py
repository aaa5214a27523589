"""Standalone (no loopbench code): pydantic-ai's `total_tokens_limit` under `agent.run` and under
`agent.run_stream_events`, against a fake Anthropic Messages server in this script (127.0.0.1).

The model is driven as the loopbench adapter drives it: `AnthropicModel` +
`AnthropicProvider(anthropic_client=AsyncAnthropic(base_url=...))`, no `max_tokens`, so both entry points send
`stream: true` (agent.run streams inside the model class). Every response is served as the real API serves it: the
input tokens in `message_start` (output_tokens 0 there), the output tokens in the closing `message_delta`. The
script is the suite's token_budget: three turns (get_ticket, lookup_policy, a text answer), each 10,000 input and
500 output tokens, `UsageLimits(total_tokens_limit=25000)`: the 3rd response crosses the limit.

What it shows: `agent.run` checks the limit after the whole response is committed (the exception says
total_tokens=31500: 3 x 10,500); `run_stream_events` (an `event_stream_handler` on `agent.run`: each model request is
then read through `AgentStream`, whose iterator checks the token limit after every event, result.py
`AgentStream.__aiter__`: "Token-limit checks run after every event") checks it mid-response, so the 3rd response trips
it at its `message_start`, before the `message_delta` that carries its 500 output tokens is read: total_tokens=31000,
and the handle's `usage` reports 30,000 input and 1,000 output tokens where the server sent 1,500. The request count
(3) is the same. `agent.run`'s exception carries no usage at all (null in loopbench), so the lost 500 are visible only
in the streamed idiom's count and in the two messages.

Output printed on 2026-12-04 (pydantic-ai-slim 2.68.0, anthropic 2.14.0):
  run:           UsageLimitExceeded 'total_tokens=31500' requests seen=3 streamed={True} usage=None
  stream-events: UsageLimitExceeded 'total_tokens=31000' requests seen=3 streamed={True} usage requests=3 input=30000 \
output=1000
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import AsyncAnthropic
from pydantic_ai import Agent, AgentRunResultEvent, Tool
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.usage import UsageLimits

INPUT, OUTPUT, LIMIT = 10_000, 500, 25_000
SEEN: list[bool] = []  # each request's `stream` flag


def turn(body: dict[str, Any]) -> tuple[str, ...]:
    results = sum(1 for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                  for b in m["content"] if b.get("type") == "tool_result")
    return [("call", "get_ticket", "t1"), ("call", "lookup_policy", "p1"), ("text", "Draft: POL-7")][min(results, 2)]


def events(t: tuple[str, ...], model: str) -> list[bytes]:
    msg = {"id": f"msg_{len(SEEN)}", "type": "message", "role": "assistant", "model": model, "content": [],
           "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": INPUT, "output_tokens": 0}}
    if t[0] == "call":
        block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{t[2]}", "name": t[1], "input": {}}
        delta: dict[str, Any] = {"type": "input_json_delta", "partial_json": "{}"}
    else:
        block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": t[1]}
    out = [{"type": "message_start", "message": msg},
           {"type": "content_block_start", "index": 0, "content_block": block},
           {"type": "content_block_delta", "index": 0, "delta": delta}, {"type": "content_block_stop", "index": 0},
           {"type": "message_delta", "delta": {"stop_reason": "tool_use" if t[0] == "call" else "end_turn",
                                               "stop_sequence": None},
            "usage": {"input_tokens": INPUT, "output_tokens": OUTPUT}},
           {"type": "message_stop"}]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in out]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        SEEN.append(bool(body.get("stream")))
        data = b"".join(events(turn(body), body["model"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:  # the client walked away mid-stream
            pass

    def log_message(self, *_: Any) -> None:
        pass


def agent(port: int) -> Agent[None, str]:
    client = AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="k")
    model = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=client))

    async def tool(**_: Any) -> str:
        return "ok"

    tools = [Tool.from_schema(tool, name=n, description=n, json_schema={"type": "object", "properties": {}})
             for n in ("get_ticket", "lookup_policy")]
    return Agent(model, tools=tools)


def total(exc: Exception) -> str:
    m = re.search(r"total_tokens=\d+", str(exc))
    return m.group(0) if m else str(exc)[:80]


async def main(port: int) -> None:
    limits = UsageLimits(total_tokens_limit=LIMIT)
    SEEN.clear()
    try:
        await agent(port).run("Read ticket T-1", usage_limits=limits)
        print("run:           completed")
    except UsageLimitExceeded as exc:
        print(f"run:           UsageLimitExceeded '{total(exc)}' requests seen={len(SEEN)} "
              f"streamed={set(SEEN)} usage=None")
    SEEN.clear()
    async with agent(port).run_stream_events("Read ticket T-1", usage_limits=limits) as stream:
        try:
            async for ev in stream:
                if isinstance(ev, AgentRunResultEvent):
                    print("stream-events: completed")
        except UsageLimitExceeded as exc:
            u = stream.usage
            print(f"stream-events: UsageLimitExceeded '{total(exc)}' requests seen={len(SEEN)} streamed={set(SEEN)} "
                  f"usage requests={u.requests} input={u.input_tokens} output={u.output_tokens}")


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(main(server.server_address[1]))
    server.shutdown()
