"""Standalone (no loopbench code): what limits and accounting an `Agent.as_tool` child gets from its parent.

A parent agent that calls its child's tool once and then answers; a child that calls `search` forever. The parent
runs with `Runner.run(parent, ..., max_turns=8)`; the child is `child.as_tool(tool_name="research", ...)` with
as_tool's defaults. Printed, per case: requests by agent (told apart by the system message), the parent's
`usage.requests` (the child's nested run gets a ToolContext holding the parent's Usage object), the text the
parent got as the tool's output, and what the parent's run ended with.

- `defaults`: the child makes 10 requests (as_tool's nested `Runner.run` uses `DEFAULT_MAX_TURNS`, not the
  parent's 8), its `MaxTurnsExceeded` is turned by as_tool's default `failure_error_function`
  (`default_tool_error_function`) into "An error occurred while running the tool. Please try again." and the parent
  answers: 12 requests, usage.requests 12, a normal return.
- `no-failure-function`: `as_tool(failure_error_function=None)`: the child's `MaxTurnsExceeded` escapes the
  parent's run ("Max turns (10) exceeded": 1 main + 10 child requests, the parent's second turn never made; the
  exception's `run_data` is the child's run, its usage.requests 11 from the shared Usage).
- `child-max-turns`: `as_tool(max_turns=3)` (the documented knob, which the adapter does not set): 3 child
  requests, then the same error text and the parent's answer (5 requests).

Run from the repo root: .venv/bin/python probes/openai/subagent_max_turns.py
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

CHILD_PROMPT = "You are the research specialist."
BY_AGENT: Counter[str] = Counter()
TOOL_OUTPUTS: list[str] = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        system = " ".join(m.get("content") or "" for m in body["messages"] if m["role"] in ("system", "developer"))
        agent = "research" if CHILD_PROMPT in system else "main"
        BY_AGENT[agent] += 1
        n = sum(BY_AGENT.values())
        tool_results = [m for m in body["messages"] if m["role"] == "tool"]
        if agent == "research":
            call = {"name": "search", "arguments": json.dumps({"query": f"q{n}"})}
        elif not tool_results:
            call = {"name": "research", "arguments": json.dumps({"input": "find the article"})}
        else:
            TOOL_OUTPUTS.append(str(tool_results[-1]["content"]))
            call = None
        msg: dict[str, Any] = (
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"call_{n}", "type": "function", "function": call}]}
            if call else {"role": "assistant", "content": "research did not find it"})
        out = json.dumps({"id": f"r{n}", "object": "chat.completion", "created": 0, "model": "m",
                          "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if call else "stop"}],
                          "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


async def case(name: str, client: AsyncOpenAI, **as_tool_kwargs: Any) -> None:
    BY_AGENT.clear()
    TOOL_OUTPUTS.clear()
    model = OpenAIChatCompletionsModel(model="m", openai_client=client)

    async def search(_ctx: Any, _args: str) -> str:
        return "nothing found"

    search_tool = FunctionTool(name="search", description="search the knowledge base",
                               params_json_schema={"type": "object", "properties": {"query": {"type": "string"}}},
                               on_invoke_tool=search, strict_json_schema=False)
    child = Agent(name="research", instructions=CHILD_PROMPT, model=model, tools=[search_tool])
    parent = Agent(name="lead", instructions="You are the lead.", model=model,
                   tools=[child.as_tool(tool_name="research", tool_description="the researcher", **as_tool_kwargs)])
    report: dict[str, Any] = {}
    try:
        result = await Runner.run(parent, "find the refund article", max_turns=8)
        report.update(ended="returned", final=result.final_output, usage_requests=result.context_wrapper.usage.requests)
    except Exception as exc:
        run_data = getattr(exc, "run_data", None)
        report.update(ended=f"raised {type(exc).__name__}: {exc}",
                      usage_requests=run_data.context_wrapper.usage.requests if run_data else None)
    report.update(requests_by_agent=dict(BY_AGENT), tool_output_parent_got=TOOL_OUTPUTS)
    print(f"{name}:", json.dumps(report))


async def main() -> None:
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")
    await case("defaults", client)
    await case("no-failure-function", client, failure_error_function=None)
    await case("child-max-turns", client, max_turns=3)
    server.shutdown()


asyncio.run(main())
