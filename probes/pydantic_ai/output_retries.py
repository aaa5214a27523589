"""Standalone (no loopbench code): how many answers pydantic-ai asks for when its structured answer fails
validation, against a fake OpenAI Chat Completions server in this script (127.0.0.1, JSON answers).

`Agent(OpenAIChatModel(..., provider=OpenAIProvider(openai_client=AsyncOpenAI(base_url=...))),
output_type=Triage)`, Triage a pydantic model (extra forbidden, priority a Literal), and the check as the docs'
output validator: `@agent.output_validator` raising `ModelRetry(MESSAGE)` when policy_id is not a policy id
(^POL-[0-9]+$). `retries` is left unset unless a case says otherwise. Turn 1 calls get_ticket; after its result, the
k-th answer (k = 1 + the assistant messages after the tool's result) is a call to the output tool the request
offers (the one tool that is not get_ticket) with the case's k-th object (the last repeats).

  check-rejects  a well-formed answer the validator rejects, then a valid one: 3 requests, the run returns the
                 valid Triage; the 3rd request carries the validator's message back to the model (the tool
                 message answering the rejected call: {"error": MESSAGE}).
  schema-then-check  an answer breaking the Literal (priority "asap"), then one the validator rejects: the
                 ValidationError and the ModelRetry share one budget: 3 requests, then
                 UnexpectedModelBehavior("Exceeded maximum output retries (1)"); its cause is the ModelRetry.
  never-valid    every answer rejected by the validator, under request_limit=4: the default budget (1) ends the
                 run after 3 requests (2 answers), before the limit; agent.iter's run.usage.requests says 3.
  never-valid-5  the same with retries={'output': 5}: the corrections run into request_limit=4:
                 UsageLimitExceeded after 4 requests (3 answers): each correction is a step under the limit.
It also prints what the requests offered: the output tool's name, whether it was sent `strict`, the tool_choice.

Run from the repo root: .venv/bin/python probes/pydantic_ai/output_retries.py [CASE]

Output printed on 2026-12-07 (pydantic-ai-slim 2.68.0, openai 3.57.0):
  wire: tools=['get_ticket', 'final_result'] final_result strict=True tool_choice=required
  check-rejects: completed policy_id='POL-7' requests=3 answers=2 usage.requests=3
    the model was told: '{"error":"policy_id must be a policy id such as POL-7, not a description"}'
  schema-then-check: UnexpectedModelBehavior 'Exceeded maximum output retries (1)' cause=ModelRetry requests=3 answers=2
    the model was told, of the first: '{"error":[{"type":"literal_error","loc":["priority"],"msg":"Input ...
  never-valid: UnexpectedModelBehavior 'Exceeded maximum output retries (1)' cause=ModelRetry requests=3 answers=2 \
iter usage.requests=3
  never-valid-5: UsageLimitExceeded 'The next request would exceed the request_limit of 4' requests=4 answers=3
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from openai import AsyncOpenAI
from pydantic import BaseModel, ConfigDict
from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

MESSAGE = "policy_id must be a policy id such as POL-7, not a description"
BAD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "the refund policy"}
BROKEN = {"ticket_id": "T-1", "priority": "asap", "policy_id": "POL-7"}
GOOD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}
CASES: dict[str, tuple[list[dict[str, Any]], int | None]] = {  # case -> (the k-th answer's object, output retries)
    "check-rejects": ([BAD, GOOD], None),
    "schema-then-check": ([BROKEN, BAD, GOOD], None),
    "never-valid": ([BAD], None),
    "never-valid-5": ([BAD], 5),
}
BODIES: list[dict[str, Any]] = []
ANSWERS: list[dict[str, Any]] = []  # the case's objects, set per case


class Triage(BaseModel):
    """The triage of one support ticket."""

    model_config = ConfigDict(extra="forbid")
    ticket_id: str
    priority: Literal["low", "normal", "urgent"]
    policy_id: str


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    after = next((i for i, m in enumerate(messages) if m["role"] == "tool" and m.get("tool_call_id") == "call_t1"),
                 None)
    if after is None:
        name, args, cid = "get_ticket", {"ticket_id": "T-1"}, "call_t1"
    else:
        k = sum(1 for m in messages[after:] if m["role"] == "assistant") + 1
        name = next(t["function"]["name"] for t in body["tools"] if t["function"]["name"] != "get_ticket")
        args, cid = ANSWERS[min(k, len(ANSWERS)) - 1], f"call_out_{k}"
    call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"id": f"chatcmpl-{len(BODIES)}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        BODIES.append(body)
        data = json.dumps(reply(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


def agent(port: int, output_retries: int | None) -> Agent[None, Triage]:
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    model = OpenAIChatModel("claude-sonnet-4-5", provider=OpenAIProvider(openai_client=client))

    async def get_ticket(**_: Any) -> str:
        return "Ticket T-1: the customer asks for a refund of a damaged order."

    tool = Tool.from_schema(get_ticket, name="get_ticket", description="Read a ticket.",
                            json_schema={"type": "object", "properties": {"ticket_id": {"type": "string"}},
                                         "required": ["ticket_id"]})
    extra: dict[str, Any] = {} if output_retries is None else {"retries": {"output": output_retries}}
    a: Agent[None, Triage] = Agent(model, output_type=Triage, tools=[tool], **extra)

    @a.output_validator
    def policy_id_is_an_id(output: Triage) -> Triage:
        if re.search(r"^POL-[0-9]+$", output.policy_id) is None:
            raise ModelRetry(MESSAGE)
        return output

    return a


def answers() -> int:
    return sum(1 for b in BODIES if any(m["role"] == "tool" and m.get("tool_call_id") == "call_t1"
                                        for m in b["messages"]))


def told() -> str | None:
    """What the last request told the model about its rejected answer (the tool message answering it)."""
    last = [m for m in BODIES[-1]["messages"] if m["role"] == "tool" and m.get("tool_call_id") != "call_t1"]
    return last[-1]["content"] if last else None


async def run_case(port: int, case: str) -> None:
    objects, output_retries = CASES[case]
    ANSWERS[:] = objects
    BODIES.clear()
    limits = UsageLimits(request_limit=4)
    try:
        result = await agent(port, output_retries).run("Read ticket T-1 and triage it.", usage_limits=limits)
        print(f"{case}: completed policy_id={result.output.policy_id!r} requests={len(BODIES)} answers={answers()} "
              f"usage.requests={result.usage.requests}")
        print(f"  the model was told: {told()!r}")
    except UnexpectedModelBehavior as exc:
        cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else None
        line = (f"{case}: UnexpectedModelBehavior {str(exc)!r} cause={cause} requests={len(BODIES)} "
                f"answers={answers()}")
        if case == "never-valid":  # agent.iter's run.usage, still readable after the raise
            BODIES.clear()
            async with agent(port, output_retries).iter("Read ticket T-1 and triage it.",
                                                        usage_limits=limits) as run:
                try:
                    async for _node in run:
                        pass
                except UnexpectedModelBehavior:
                    line += f" iter usage.requests={run.usage.requests}"
        print(line)
        if case == "schema-then-check":
            print(f"  the model was told, of the first: {(told() or '')[:110]!r}")
    except UsageLimitExceeded as exc:
        print(f"{case}: UsageLimitExceeded {str(exc).split('.')[0]!r} requests={len(BODIES)} answers={answers()}")


async def main(port: int, cases: list[str]) -> None:
    ANSWERS[:] = [GOOD]
    BODIES.clear()
    await agent(port, None).run("Read ticket T-1 and triage it.")
    tools = [t["function"] for t in BODIES[-1]["tools"]]
    out = next(t for t in tools if t["name"] != "get_ticket")
    print(f"wire: tools={[t['name'] for t in tools]} {out['name']} strict={out.get('strict')} "
          f"tool_choice={BODIES[-1].get('tool_choice')}")
    for case in cases:
        await run_case(port, case)


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(CASES)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(main(server.server_address[1], chosen))
    server.shutdown()
