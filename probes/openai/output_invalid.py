"""Standalone (no loopbench code): what the OpenAI Agents SDK does with a structured answer its own validator
rejects, against a fake Responses server in this script (JSON answers, or SSE when the request streams).

`Agent(output_type=Triage)`, Triage a pydantic model (extra forbidden) whose `policy_id` has an `AfterValidator`
requiring a policy id (^POL-[0-9]+$): a rule in no JSON schema. Turn 1 calls get_ticket; every later answer is the
well-formed `{"ticket_id": "T-1", "priority": "urgent", "policy_id": "the refund policy"}` unless the conversation
already holds an assistant answer after the tool's output (a correction request), which would get POL-7.

  A. `Runner.run`: the answer is asked for with `text.format` json_schema `strict: true` (the default
     AgentOutputSchema), the validator rejects it, `ModelBehaviorError` is raised after 2 requests: no correction is
     asked. By default (OPENAI_AGENTS_DONT_LOG_MODEL_DATA unset = true) the error is redacted: "Invalid JSON when
     parsing model output", without the validator's message, and it has no `run_data`: no usage, no turns.
  B. `Runner.run_streamed`, stream_events() read to the end: the same 2 requests and the same redacted error, raised
     out of stream_events() with no `run_data`; the streaming result object itself still holds
     `context_wrapper.usage` (2 requests).
  C. A with OPENAI_AGENTS_DONT_LOG_MODEL_DATA=0 (a child process): the message quotes the answer and names the
     validator's message, and `run_data.context_wrapper.usage` keeps the 2 requests (`raw_responses` holds only the
     first turn's: the rejected response is not in it): the usage is lost only to the default redaction.
  D. `error_handlers={"invalid_final_output": handler}` (the SDK's only hook, docs/running_agents.md "Error
     handlers"): the handler gets the ModelBehaviorError once and its fallback is the final output; still 2
     requests: it does not retry the model call.

Run from the repo root: .venv/bin/python probes/openai/output_invalid.py
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any, Literal

from agents import Agent, FunctionTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI
from pydantic import AfterValidator, BaseModel, ConfigDict

BODIES: list[dict[str, Any]] = []
BAD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "the refund policy"}
GOOD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}
MESSAGE = "policy_id must be a policy id such as POL-7, not a description"


def policy_id(value: str) -> str:
    if re.search(r"^POL-[0-9]+$", value) is None:
        raise ValueError(MESSAGE)
    return value


class Triage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ticket_id: str
    priority: Literal["low", "normal", "urgent"]
    policy_id: Annotated[str, AfterValidator(policy_id)]


def reply(body: dict[str, Any]) -> dict[str, Any]:
    n = len(BODIES)
    items = [i for i in body["input"] if isinstance(i, dict)]
    done = [k for k, i in enumerate(items) if i.get("type") == "function_call_output"]
    answered = bool(done) and any(i.get("role") == "assistant" or i.get("type") == "message"
                                  for i in items[done[-1] + 1:])
    if not done:
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n}", "call_id": "call_ticket_1",
                                "name": "get_ticket", "arguments": '{"ticket_id":"T-1"}', "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": json.dumps(GOOD if answered else BAD),
                             "annotations": []}]}
    return {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model"), "output": [item], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                                   "total_tokens": 11}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        BODIES.append(body)
        response = reply(body)
        if body.get("stream"):
            events = [{"type": "response.created", "sequence_number": 0, "response": {**response, "output": [],
                                                                                      "status": "in_progress"}},
                      {"type": "response.completed", "sequence_number": 1, "response": response}]
            out = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
            ctype = "text/event-stream"
        else:
            out, ctype = json.dumps(response).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def agent(client: AsyncOpenAI) -> Agent[Any]:
    async def get_ticket(_ctx: Any, _args: str) -> str:
        return "Ticket T-1: refund not received after 30 days."

    tool = FunctionTool(name="get_ticket", description="Read a ticket", on_invoke_tool=get_ticket,
                        params_json_schema={"type": "object", "properties": {"ticket_id": {"type": "string"}}},
                        strict_json_schema=False)
    return Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client), tools=[tool],
                 output_type=Triage)


def raised(exc: BaseException) -> dict[str, Any]:
    run_data = getattr(exc, "run_data", None)
    return {"raised": type(exc).__name__, "message": str(exc)[:160], "names_the_check": MESSAGE in str(exc),
            "run_data": None if run_data is None else {
                "usage.requests": run_data.context_wrapper.usage.requests,
                "raw_responses": len(run_data.raw_responses)}}


def text_format() -> Any:
    fmt = (BODIES[-1].get("text") or {}).get("format") or {}
    return {k: fmt.get(k) for k in ("type", "name", "strict")}


async def main(client: AsyncOpenAI, only_a: bool) -> None:
    BODIES.clear()
    try:
        await Runner.run(agent(client), "Read ticket T-1 and triage it.")
        out: dict[str, Any] = {"raised": None}
    except Exception as exc:  # noqa: BLE001 (what the run raises is the finding)
        out = raised(exc)
    label = "C. Runner.run, OPENAI_AGENTS_DONT_LOG_MODEL_DATA=0" if only_a else "A. Runner.run"
    print(f"{label}:", json.dumps({"requests": len(BODIES), "text.format": text_format(), **out}))
    if only_a:
        return

    BODIES.clear()
    result = Runner.run_streamed(agent(client), "Read ticket T-1 and triage it.")
    out = {"raised": None}
    try:
        async for _event in result.stream_events():
            pass
    except Exception as exc:  # noqa: BLE001
        out = raised(exc)
    print("B. Runner.run_streamed:", json.dumps({
        "requests": len(BODIES), "streamed": all(b.get("stream") for b in BODIES), **out,
        "result.context_wrapper.usage.requests": result.context_wrapper.usage.requests}))

    BODIES.clear()
    calls: list[str] = []

    def on_invalid(data: Any) -> Triage:
        calls.append(type(data.error).__name__)
        return Triage(ticket_id="T-1", priority="normal", policy_id="POL-0")

    result2 = await Runner.run(agent(client), "Read ticket T-1 and triage it.",
                               error_handlers={"invalid_final_output": on_invalid})
    print("D. error_handlers={'invalid_final_output': ...}:", json.dumps({
        "requests": len(BODIES), "handler_calls": calls, "final_output": result2.final_output.model_dump(),
        "usage.requests": result2.context_wrapper.usage.requests}))


def run(only_a: bool) -> None:
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")
    asyncio.run(main(client, only_a))
    server.shutdown()


if __name__ == "__main__":
    if "--unredacted" in sys.argv:
        run(only_a=True)
    else:
        run(only_a=False)
        # the flag is read when the SDK is imported (agents/_debug.py): C runs in a child process
        subprocess.run([sys.executable, __file__, "--unredacted"], check=True,
                       env={**os.environ, "OPENAI_AGENTS_DONT_LOG_MODEL_DATA": "0"})
