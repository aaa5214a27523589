"""Standalone probe (raw SDK, no loopbench code): the Agent SDK's structured outputs (`output_format`), against a
fake Anthropic Messages server on 127.0.0.1 in this script that answers through the CLI's StructuredOutput tool.

    .venv/bin/python probes/claude/structured.py CASE      (each case a few seconds)

invalid-then-valid   the first answer's priority is outside the schema's enum, the second fits
check-rejects        the first answer's policy_id breaks the schema's `pattern` (the check), the second fits
never-valid          every answer breaks the pattern, no max_turns: who stops it, after how many requests
never-valid-turns    the same with max_turns=4
never-valid-env      the same, no max_turns, with the CLI's MAX_STRUCTURED_OUTPUT_RETRIES=2

ClaudeAgentOptions(output_format={"type": "json_schema", "schema": SCHEMA}) as the SDK documents it (types.py:2850;
the SDK passes the schema as --json-schema, _internal/transport/subprocess_cli.py:729-738). The server answers the
opening request with a get_ticket call, then every request with a StructuredOutput call, the k-th answer of the
case (k = 1 + the StructuredOutput calls the request already holds: the CLI sends the earlier answer back). For
each request it prints the tools offered (and whether any carries `strict`; for the first, the StructuredOutput
tool's input_schema), whether the body has an
`output_format` / `output_config` (Anthropic's constrained decoding) or a `tool_choice`, and the tool results the
CLI sent for earlier StructuredOutput calls (is_error, text): the CLI's corrections. Then the messages the SDK
yielded, the ResultMessage (subtype, terminal_reason, errors, structured_output) and any exception.

Measured with claude-agent-sdk 0.2.189 (CLI 2.1.332):
- every request offers StructuredOutput (input_schema = the schema, the pattern included) beside the MCP tool; no
  tool carries `strict`, the body has no output_format / output_config and no tool_choice;
- invalid-then-valid / check-rejects: the CLI answers the broken call with an is_error tool result ("Output does
  not match required schema: /priority: must be equal to one of the allowed values: [...]" / "/policy_id: must
  match pattern \"^POL-[0-9]+$\""), the second answer fits: 3 requests, success, structured_output the answer,
  result its JSON text, num_turns 4, model_usage 3000 / 300;
- never-valid: 6 requests (5 rejected answers), then error_max_structured_output_retries, terminal_reason
  structured_output_retry_exhausted, errors ["Failed to provide valid structured output after 5 attempts — last
  StructuredOutput error: ..."], structured_output null, and the SDK raises ResultError;
- never-valid-turns: max_turns=4 counts each correction: 4 requests (3 rejected answers), error_max_turns;
- never-valid-env: MAX_STRUCTURED_OUTPUT_RETRIES=2: 3 requests, error_max_structured_output_retries ("after 2
  attempts").
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

MODEL = "claude-sonnet-4-5"
PROMPT = "Read ticket T-1 and triage it: its id, its priority and the id of the policy that applies."
OUTPUT_TOOL = "StructuredOutput"
SCHEMA: dict[str, Any] = {
    "type": "object", "title": "TicketTriage", "description": "The triage of one support ticket.",
    "properties": {"ticket_id": {"type": "string"},
                   "priority": {"type": "string", "enum": ["low", "normal", "urgent"]},
                   "policy_id": {"type": "string", "pattern": "^POL-[0-9]+$"}},
    "required": ["ticket_id", "priority", "policy_id"], "additionalProperties": False,
}
VALID = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}
OFF_ENUM = {**VALID, "priority": "asap"}
OFF_PATTERN = {**VALID, "policy_id": "the refund policy"}
CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], dict[str, str]]] = {
    # name: (the answers in order, the last repeating; extra options; extra CLI env)
    "invalid-then-valid": ([OFF_ENUM, VALID], {}, {}),
    "check-rejects": ([OFF_PATTERN, VALID], {}, {}),
    "never-valid": ([OFF_PATTERN], {}, {}),
    "never-valid-turns": ([OFF_PATTERN], {"max_turns": 4}, {}),
    "never-valid-env": ([OFF_PATTERN], {}, {"MAX_STRUCTURED_OUTPUT_RETRIES": "2"}),
}
T0 = time.time()


def blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body.get("messages", []) if isinstance(m.get("content"), list) for b in m["content"]]


def text_of(content: Any) -> str:
    return content if isinstance(content, str) else " ".join(x.get("text", "") for x in content or [])


class Fake:
    """The scripted model: get_ticket first, then the k-th StructuredOutput answer."""

    def __init__(self, answers: list[dict[str, Any]]):
        self.answers, self.n, self.log = answers, 0, []
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_response(404)
                    self.end_headers()
                    return
                fake.n += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b"".join(fake.reply(body)))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def reply(self, body: dict[str, Any]) -> list[bytes]:
        bs = blocks(body)
        asked = [b for b in bs if b.get("type") == "tool_use" and b.get("name") == OUTPUT_TOOL]
        ids = {b["id"] for b in asked}
        corrections = [(bool(b.get("is_error")), text_of(b.get("content"))[:160]) for b in bs
                       if b.get("type") == "tool_result" and b.get("tool_use_id") in ids]
        tools = body.get("tools") or []
        row = {"n": self.n, "t": round(time.time() - T0, 2),
               "tools": [t.get("name") for t in tools],
               "strict_tools": [t.get("name") for t in tools if "strict" in t],
               "output_format": body.get("output_format"), "output_config": body.get("output_config"),
               "tool_choice": body.get("tool_choice"), "corrections": corrections}
        if self.n == 1:  # what the model is shown as the output tool's schema (the check's pattern in it?)
            row["output_tool_schema"] = next((t.get("input_schema") for t in tools if t.get("name") == OUTPUT_TOOL),
                                             None)
        if not any(b.get("type") == "tool_result" for b in bs):
            call = ("toolu_t1", "mcp__t__get_ticket", {"ticket_id": "T-1"})
        else:
            k = len(asked) + 1
            answer = self.answers[min(k, len(self.answers)) - 1]
            call = (f"toolu_out{k}", OUTPUT_TOOL, answer)
            row["answer"] = (k, answer)
        self.log.append(row)
        return sse(call, self.n)


def sse(call: tuple[str, str, dict[str, Any]], n: int) -> list[bytes]:
    out: list[bytes] = []

    def emit(kind: str, **f: Any) -> None:
        out.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **f})}\n\n".encode())

    usage = {"input_tokens": 1000, "output_tokens": 0, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    emit("message_start", message={"id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
                                   "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage})
    cid, name, args = call
    emit("content_block_start", index=0, content_block={"type": "tool_use", "id": cid, "name": name, "input": {}})
    emit("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": json.dumps(args)})
    emit("content_block_stop", index=0)
    emit("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None},
         usage={**usage, "output_tokens": 100})
    emit("message_stop")
    return out


@tool("get_ticket", "Read a support ticket by id.", {"ticket_id": str})
async def get_ticket(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"Ticket {args['ticket_id']}: refund request, angry customer."}]}


def show(m: Any) -> None:
    if isinstance(m, ResultMessage):
        keep = ("subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "errors", "result",
                "structured_output", "total_cost_usd")
        print("  RESULT", json.dumps({k: getattr(m, k) for k in keep}, default=str))
        print("  model_usage", {k: (v.get("inputTokens"), v.get("outputTokens")) for k, v in
                                (m.model_usage or {}).items()})
    elif isinstance(m, AssistantMessage):
        print("  ASSISTANT", m.message_id, [getattr(b, "name", None) or type(b).__name__ for b in m.content])
    elif isinstance(m, UserMessage):
        print("  USER", [(type(b).__name__, getattr(b, "is_error", None), str(getattr(b, "content", ""))[:90])
                         for b in m.content] if isinstance(m.content, list) else str(m.content)[:90])
    elif isinstance(m, SystemMessage):
        print("  SYSTEM", m.subtype)
    else:
        print("  MSG", type(m).__name__)


async def main(case: str) -> None:
    answers, extra, extra_env = CASES[case]
    fake = Fake(answers)
    work = Path(tempfile.mkdtemp(prefix="claude-structured-"))
    (work / "cwd").mkdir()
    env = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "probe", "CLAUDE_CONFIG_DIR": str(work / "config"),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **extra_env}
    options = ClaudeAgentOptions(
        tools=[], mcp_servers={"t": create_sdk_mcp_server("t", tools=[get_ticket])}, strict_mcp_config=True,
        setting_sources=[], cwd=str(work / "cwd"), model=MODEL, env=env, allowed_tools=["mcp__t__get_ticket"],
        output_format={"type": "json_schema", "schema": SCHEMA}, **extra)
    print(f"case {case}: options {extra or '{}'}, env {extra_env or '{}'}")
    try:
        async for m in query(prompt=PROMPT, options=options):
            show(m)
    except Exception as e:  # the SDK raises after an error result: print it, it is the finding
        print("  RAISED", type(e).__name__, str(e)[:300])
    print("requests:", fake.n)
    for row in fake.log:
        print("   ", json.dumps(row))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(CASES)}}}")
    os.environ.pop("MAX_STRUCTURED_OUTPUT_RETRIES", None)
    asyncio.run(main(sys.argv[1]))
