"""Standalone (no loopbench code): the OpenAI Agents SDK's two ways to say "no" to a tool by policy.

A tool input guardrail answering
  A. `raise_exception`: the run stops with `ToolInputGuardrailTripwireTriggered` (2 requests);
  B. `reject_content(message)`: the tool does not run, the model gets the message as the tool's output and
     the loop goes on (3 requests, a normal return).
Also prints what `exc.run_data.raw_responses` holds after A (the turn that tripped is not in it).

Run from the repo root: .venv/bin/python probes/openai/deny_intents.py
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.tool_guardrails import ToolGuardrailFunctionOutput, tool_input_guardrail
from openai import AsyncOpenAI

REQUESTS: list[list[dict[str, Any]]] = []  # the messages of every request the fake server got


def reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Turn 1 reads the ticket, turn 2 deletes the account, turn 3 answers with what the tool said."""
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    if len(tool_msgs) < 2:
        name, args, cid = (("get_ticket", {"ticket_id": "T-1"}, "call_ticket_1") if not tool_msgs
                           else ("delete_account", {"customer": "ana@example.com"}, "call_del_1"))
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}
    return {"role": "assistant", "content": f"Not deleted; the tool said: {tool_msgs[-1]['content']}"}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        REQUESTS.append(body["messages"])
        msg = reply(body["messages"])
        out = json.dumps({"id": f"r{len(REQUESTS)}", "object": "chat.completion", "created": 0, "model": "m",
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


def build(port: int, behaviour: str, runs: dict[str, int]) -> Agent:
    model = OpenAIChatCompletionsModel(model="m", openai_client=AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1",
                                                                             api_key="k"))

    @tool_input_guardrail
    async def policy(_data: Any) -> ToolGuardrailFunctionOutput:
        if behaviour == "raise_exception":
            return ToolGuardrailFunctionOutput.raise_exception(output_info="delete_account is denied")
        return ToolGuardrailFunctionOutput.reject_content("delete_account is denied by policy")

    def make(name: str, text: str, guardrails: list[Any] | None = None) -> FunctionTool:
        async def invoke(_ctx: Any, _args: str) -> str:
            runs[name] += 1
            return text
        return FunctionTool(name=name, description=name, params_json_schema={"type": "object", "properties": {}},
                            on_invoke_tool=invoke, strict_json_schema=False, tool_input_guardrails=guardrails)

    return Agent(name="a", model=model, tools=[make("get_ticket", "Ticket T-1: please delete my account"),
                                               make("delete_account", "deleted", [policy])])


async def main() -> None:
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    for behaviour in ("raise_exception", "reject_content"):
        REQUESTS.clear()
        runs = {"get_ticket": 0, "delete_account": 0}
        agent = build(port, behaviour, runs)
        out: dict[str, Any] = {}
        try:
            result = await Runner.run(agent, "Read ticket T-1 and do what it asks.", max_turns=8)
            out.update(returned=result.final_output, usage_requests=result.context_wrapper.usage.requests)
        except ToolInputGuardrailTripwireTriggered as exc:
            rd = exc.run_data
            out.update(raised=type(exc).__name__,
                       run_data_raw_responses=len(rd.raw_responses) if rd else None,
                       usage_requests=rd.context_wrapper.usage.requests if rd else None)
        last_tool_msg = next((m["content"] for m in reversed(REQUESTS[-1]) if m["role"] == "tool"), None)
        print(f"{behaviour:16}", json.dumps({"requests": len(REQUESTS), "tool_runs": runs, **out,
                                             "last_request_last_tool_message": last_tool_msg}))
    server.shutdown()


asyncio.run(main())
