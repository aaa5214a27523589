"""Standalone (no loopbench code): what the model sees when a tool fails in the OpenAI Agents SDK.

A `@function_tool` that raises "policy service unavailable" twice, then answers. The model (a fake that calls
the tool again while the last tool message is not a policy text) sees the SDK's fixed wording, which hides the
error ("An error occurred while running the tool. Please try again."), and the run goes on: 4 requests,
3 tool runs. A hand-built `FunctionTool` must handle its own errors; answering with the SDK's
`default_tool_error_function` gives the model the same text.

Run from the repo root: .venv/bin/python probes/openai/tool_error_text.py
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

TOOL_MESSAGES: list[str] = []  # the tool outputs the model received, in order
REQUESTS = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        global REQUESTS
        messages = json.loads(self.rfile.read(int(self.headers["content-length"])))["messages"]
        REQUESTS += 1
        tool_msgs = [m["content"] for m in messages if m["role"] == "tool"]
        if tool_msgs:
            TOOL_MESSAGES.append(tool_msgs[-1])
        if tool_msgs and tool_msgs[-1].startswith("Policy"):
            msg: dict[str, Any] = {"role": "assistant", "content": f"Draft citing {tool_msgs[-1][:12]}"}
        else:  # no policy text yet: call the tool (again)
            msg = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_policy_{REQUESTS}", "type": "function",
                 "function": {"name": "lookup_policy", "arguments": json.dumps({"topic": "refund"})}}]}
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
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")
    runs = 0

    @function_tool
    def lookup_policy(topic: str) -> str:
        """Look up the support policy for a topic."""
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise RuntimeError("[tool-error:recoverable] policy service unavailable")
        return "Policy POL-7: refunds are accepted within 30 days of delivery."

    agent = Agent(name="a", model=OpenAIChatCompletionsModel(model="m", openai_client=client), tools=[lookup_policy])
    result = await Runner.run(agent, "Look up the refund policy.", max_turns=8)
    print(json.dumps({"requests": REQUESTS, "tool_runs": runs, "final_output": result.final_output,
                      "tool_messages_seen_by_the_model": TOOL_MESSAGES}, indent=1))
    server.shutdown()


asyncio.run(main())
