"""Standalone repro (no loopbench code): what create_agent + langchain_anthropic.ChatAnthropic (its defaults)
leaves in the graph's state when Anthropic Messages requests fail or come back without text, against a tiny
Messages server on 127.0.0.1 in this script.

  .venv/bin/python probes/langgraph/anthropic_counts.py [CASE ...]   (default: every case)

Cases (each prints the requests the server saw with their status and the gap before each, what the graph
raised, and the AI messages in the final state with their usage_metadata):
  transient  429 (retry-after: 1) then 500 (no header), then tool call, tool call, text: 5 requests, 3 AI messages
             (the client's retries leave no message)
  fatal      500 with x-should-retry: false, every time: 1 request, the graph raises, 0 AI messages
  outage     500 with no header, every time: 3 requests (max_retries=2), the graph raises, 0 AI messages
  empty      a 200 with no content blocks (end_turn): 1 request, 1 AI message (content []), with usage
  cache      a 200 whose usage has cache reads: usage_metadata's input_tokens is input + cache read + cache creation
"""
import asyncio
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool

LOG: list[tuple[float, int, int]] = []  # (time, status, messages in the request)
PLAN: list[tuple[int, dict, dict]] = []  # per request: (status, headers, body); the last one repeats


def message(content: list[dict], stop: str, usage: dict | None = None) -> dict:
    return {"id": f"msg_{len(LOG)}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": usage or {"input_tokens": 1000, "output_tokens": 100}}


def call(cid: str, name: str, args: dict) -> tuple[int, dict, dict]:
    return 200, {}, message([{"type": "tool_use", "id": f"toolu_{cid}", "name": name, "input": args}], "tool_use")


def error(status: int, kind: str, headers: dict) -> tuple[int, dict, dict]:
    return status, headers, {"type": "error", "error": {"type": kind, "message": f"{kind} ({status})"}}


TEXT = (200, {}, message([{"type": "text", "text": "Draft citing POL-7."}], "end_turn"))
CASES = {
    "transient": [error(429, "rate_limit_error", {"retry-after": "1"}), error(500, "api_error", {}),
                  call("ticket_1", "get_ticket", {"ticket_id": "T-1"}), call("policy_1", "lookup_policy",
                                                                              {"topic": "refund"}), TEXT],
    "fatal": [error(500, "api_error", {"x-should-retry": "false"})],
    "outage": [error(500, "api_error", {})],
    "empty": [(200, {}, message([], "end_turn"))],
    "cache": [(200, {}, message([{"type": "text", "text": "ok"}], "end_turn",
                                {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 900,
                                 "cache_creation_input_tokens": 0}))],
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        status, headers, payload = PLAN[min(len(LOG), len(PLAN) - 1)]
        LOG.append((time.perf_counter(), status, len(body["messages"])))
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", "content-length": str(len(data)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return "Ticket T-1: a refund of order 1042."


@tool
def lookup_policy(topic: str) -> str:
    """Look up the support policy for a topic."""
    return "POL-7: refunds within 30 days."


async def one(url: str, case: str) -> None:
    LOG.clear()
    PLAN[:] = CASES[case]
    llm = ChatAnthropic(model="claude-sonnet-4-5", base_url=url, api_key="probe")  # the class's own defaults
    graph = create_agent(llm, [get_ticket, lookup_policy])
    state: dict = {}
    t0 = time.perf_counter()
    try:
        async for values in graph.astream({"messages": [("user", "Read T-1 and draft a reply.")]},
                                          stream_mode="values"):
            state = values
        raised = "nothing"
    except Exception as exc:  # noqa: BLE001 - printing what the framework raised
        chain, e = [], exc
        while e is not None:
            chain.append(type(e).__name__)
            e = e.__cause__
        raised = " <- ".join(chain)
    ai = [m for m in state.get("messages", []) if m.type == "ai"]
    gaps = zip(LOG, [t0] + [t for t, _, _ in LOG], strict=False)
    steps = ", ".join(f"{s} after {t - prev:.2f}s" for (t, s, _), prev in gaps)
    print(f"{case}: the server saw {len(LOG)} request(s): {steps}\n    raised: {raised}\n"
          f"    AI messages in the state: {len(ai)}; usage_metadata: {[m.usage_metadata for m in ai]}; "
          f"content: {[m.content if isinstance(m.content, str) else [b['type'] for b in m.content] for m in ai]}")


async def main(cases: list[str]) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    for case in cases:
        await one(f"http://127.0.0.1:{srv.server_port}", case)
    srv.shutdown()


asyncio.run(main(sys.argv[1:] or list(CASES)))
