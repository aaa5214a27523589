"""Standalone (no loopbench code): what `MaxTurnsExceeded` carries about the turns the run made.

A model that always calls a tool, `max_turns=3`: 3 requests, 3 tool runs, then `MaxTurnsExceeded`. The exception
has no turn counter of its own (its message names the limit), but `exc.run_data.raw_responses` holds one
`ModelResponse` per finished turn (3), and `exc.run_data.context_wrapper.usage.requests` the SDK's request count.
A normal return exposes the same count as `result.raw_responses` (and the private `result._current_turn`).

Run from the repo root: .venv/bin/python probes/openai/max_turns_run_data.py
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.exceptions import MaxTurnsExceeded
from openai import AsyncOpenAI

REQUESTS = 0
ALWAYS_TOOL = True


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        global REQUESTS
        self.rfile.read(int(self.headers["content-length"]))
        REQUESTS += 1
        msg: dict[str, Any] = (
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{REQUESTS}", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}
            if ALWAYS_TOOL or REQUESTS == 1 else {"role": "assistant", "content": "done"})
        out = json.dumps({"id": f"r{REQUESTS}", "object": "chat.completion", "created": 0, "model": "m",
                          "choices": [{"index": 0, "message": msg,
                                       "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


async def main() -> None:
    global REQUESTS, ALWAYS_TOOL
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")
    runs = 0

    async def invoke(_ctx: Any, _args: str) -> str:
        nonlocal runs
        runs += 1
        return "nothing found"

    search = FunctionTool(name="search", description="search", params_json_schema={"type": "object", "properties": {}},
                          on_invoke_tool=invoke, strict_json_schema=False)
    agent = Agent(name="a", model=OpenAIChatCompletionsModel(model="m", openai_client=client), tools=[search])
    try:
        await Runner.run(agent, "go", max_turns=3)
    except MaxTurnsExceeded as exc:
        rd = exc.run_data
        print("max_turns=3, always-tool:", json.dumps({
            "requests": REQUESTS, "tool_runs": runs, "raised": type(exc).__name__, "message": str(exc.message),
            "exception_attrs": sorted(k for k in vars(exc) if not k.startswith("_")),
            "run_data.raw_responses": len(rd.raw_responses) if rd else None,
            "run_data.context_wrapper.usage.requests": rd.context_wrapper.usage.requests if rd else None}))
    REQUESTS, runs, ALWAYS_TOOL = 0, 0, False
    result = await Runner.run(agent, "go", max_turns=3)
    print("normal return (tool, then text):", json.dumps({
        "requests": REQUESTS, "tool_runs": runs, "raw_responses": len(result.raw_responses),
        "_current_turn": getattr(result, "_current_turn", None),
        "usage.requests": result.context_wrapper.usage.requests}))
    server.shutdown()


asyncio.run(main())
