"""Standalone (no loopbench code): what ADK's `AgentTool(agent=child)` (the multi-agent docs' explicit invocation,
"agent as a tool") passes on to the child and back, against a fake Gemini server in this script.

A main `LlmAgent` ("You are the lead.") has one tool, `AgentTool(agent=LlmAgent(name="billing", instruction="You are
billing."))`; the child has its own FunctionTools. The fake model tells the agents apart by `systemInstruction`;
every response carries usageMetadata 1000 prompt / 100 candidates tokens. CASE:
- `usage` (the default): main delegates, billing calls `lookup` once and answers, main answers. Printed (google-adk
  2.13.0): requests main, billing, billing, main (4 served: 4000 / 400 tokens); the parent run's events carry the
  usage of main's 2 responses only (2000 / 200): the child's events stay in AgentTool's nested Runner.
- `runaway`: billing calls `lookup` forever; the parent run has `RunConfig(max_llm_calls=3)`. Printed: requests
  main 1 + billing 3, then `LlmCallsLimitExceededError` raised out of the PARENT's run_async: AgentTool hands the
  parent's RunConfig to the nested run, whose invocation has its own counter (the child alone may make 3 calls;
  the parent's counter is at 1).
- `approval`: billing's `issue` tool has `require_confirmation=True`. Printed: requests main, billing, billing, main;
  `issue` never runs; the parent run does NOT pause (no adk_request_confirmation among its events): AgentTool logs
  "... which AgentTool cannot resume because its nested session is discarded" and returns the text "Error: agent
  'billing' stopped waiting on unresolved long-running tool call(s) ..., which AgentTool cannot resume." as the
  function response main's model gets; main answers and the run returns.
- `sse`: the usage case with `RunConfig(streaming_mode=StreamingMode.SSE)`. Printed: main's requests go to
  `:streamGenerateContent?alt=sse`, billing's to `:generateContent`: AgentTool forces the nested run to
  StreamingMode.NONE.
- `tool-error`: billing's `lookup` raises (no on_tool_error_callback). Printed: requests main, billing; the
  PermissionError leaves the nested run, AgentTool and the parent's run_async (ADK's default tool-error path).

MECH `single-turn` (second argument): the same child as `sub_agents=[LlmAgent(..., mode='single_turn')]`, which
AgentTool's 2.13 docstring prefers ("Direct usage of AgentTool is discouraged"); the parent exposes it as a tool
named after it and runs it inline (`ctx.run_node`). Printed: `usage`: 4 requests, the parent's events hold all 4
responses (authors lead and billing), 4000 / 400 = served; `runaway`: one counter for the whole tree: main 1 +
billing 2 requests, billing's refused 4th call comes back to main as the function response "Error running sub-agent:
Dynamic node billing failed" (single_turn's tool catches the child's exception), and main's next call is refused
too: `LlmCallsLimitExceededError` out of run_async; `approval`: the parent's events end on a pending
`adk_request_confirmation` (3 requests: a pause the application can answer); `sse`: every request streams;
`tool-error`: the PermissionError does not leave the run: main gets "Error running sub-agent: ..." and answers
(main, billing, main).
MECH `transfer`: the child as `sub_agents=[LlmAgent(...)]` in its default chat mode; ADK offers main
`transfer_to_agent(agent_name)`. Printed: `usage`: 3 requests (main, billing, billing): the child answers the user
and main is not called again (a handoff), usage 3000 / 300 = served; `runaway`: one counter (main 1 + billing 2),
then `LlmCallsLimitExceededError`; `approval`: the run ends on a pending `adk_request_confirmation`; `tool-error`:
the PermissionError leaves run_async (2 requests).
Run from the repo root: .venv/bin/python probes/google_adk/agent_tool.py [usage|runaway|approval|sse|tool-error]
[agent-tool|single-turn|transfer]
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool
from google.adk.tools.agent_tool import AgentTool
from google.genai import types

CASE = sys.argv[1] if len(sys.argv) > 1 else "usage"
# or single-turn: sub_agents=[LlmAgent(mode='single_turn')]; transfer: sub_agents=[LlmAgent] (chat mode)
MECH = sys.argv[2] if len(sys.argv) > 2 else "agent-tool"
USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 100, "totalTokenCount": 1100}
REQUESTS: list[tuple[str, str]] = []  # (agent, path)
RAN: list[str] = []


def answer(agent: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the fake model's answer: per agent, from the function responses it has seen."""
    responses = [p["functionResponse"] for c in body.get("contents", []) for p in c.get("parts", [])
                 if "functionResponse" in p]
    n = len(responses)
    if agent == "main":
        if n == 0 and MECH == "transfer":  # the tool ADK offers a parent of chat-mode sub_agents
            return [{"functionCall": {"id": "fc_ask", "name": "transfer_to_agent", "args": {"agent_name": "billing"}}}]
        if n == 0:
            return [{"functionCall": {"id": "fc_ask", "name": "billing", "args": {"request": "Refund order 1042."}}}]
        return [{"text": f"main saw: {json.dumps(responses[-1]['response'])[:200]}"}]
    n = len([r for r in responses if r.get("name") in ("lookup", "issue")])  # the child's own (a handoff's child
    # sees the parent's history too)
    if CASE == "runaway":
        return [{"functionCall": {"id": f"fc_l{n}", "name": "lookup", "args": {"order_id": "1042"}}}]
    if n == 0:
        return [{"functionCall": {"id": "fc_l", "name": "lookup", "args": {"order_id": "1042"}}}]
    if CASE == "approval" and n == 1:
        return [{"functionCall": {"id": "fc_i", "name": "issue", "args": {"order_id": "1042"}}}]
    return [{"text": "billing: refund RF-88"}]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        system = json.dumps(body.get("systemInstruction") or {})
        agent = "billing" if "You are billing" in system else "main"
        REQUESTS.append((agent, self.path.split(":")[-1]))
        payload = {"candidates": [{"content": {"role": "model", "parts": answer(agent, body)},
                                   "finishReason": "STOP", "index": 0}], "usageMetadata": USAGE}
        self.send_response(200)
        if "alt=sse" in self.path:
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(payload)}\r\n\r\n".encode())
        else:
            data = json.dumps(payload).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def lookup(order_id: str) -> str:
    """Look an order's refund up."""
    RAN.append("lookup")
    if CASE == "tool-error":
        raise PermissionError("permission denied")
    return "refund RF-88"


def issue(order_id: str) -> str:
    """Issue a refund."""
    RAN.append("issue")
    return "issued RF-90"


async def main(base: str) -> None:
    model = Gemini(model="gemini-2.5-flash", base_url=base, client_kwargs={"api_key": "k"})
    child_tools: list[Any] = [lookup, FunctionTool(issue, require_confirmation=True)]
    single = {"mode": "single_turn"} if MECH == "single-turn" else {}
    child = LlmAgent(name="billing", model=model, description="The billing agent.", instruction="You are billing.",
                     tools=child_tools, **single)
    reach: dict[str, Any] = {"tools": [AgentTool(agent=child)]} if MECH == "agent-tool" else {"sub_agents": [child]}
    agent = LlmAgent(name="lead", model=model, instruction="You are the lead.", **reach)
    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=agent, app_name="p", session_service=service)
    config = RunConfig(max_llm_calls=3) if CASE == "runaway" else (
        RunConfig(streaming_mode=StreamingMode.SSE) if CASE == "sse" else RunConfig())
    events: list[Any] = []
    try:
        async for e in runner.run_async(user_id="u", session_id="s", run_config=config,
                                        new_message=types.Content(role="user", parts=[types.Part(text="go")])):
            events.append(e)
    except Exception as exc:  # noqa: BLE001 - printed: what the parent's run raised
        print(f"parent run_async raised {type(exc).__name__}: {str(exc)[:160]}")
    finals = [e for e in events if not e.partial and e.usage_metadata is not None]
    print(f"requests served ({len(REQUESTS)}): {REQUESTS}")
    print(f"served tokens: {1000 * len(REQUESTS)} / {100 * len(REQUESTS)}")
    print(f"parent events: {len(events)}, authors {sorted({e.author for e in events})}; responses with usage "
          f"{len(finals)}: {sum(e.usage_metadata.prompt_token_count for e in finals)} / "
          f"{sum(e.usage_metadata.candidates_token_count for e in finals)}")
    print(f"child tools run: {RAN}")
    calls = [fc.name for e in events if not e.partial for fc in e.get_function_calls()]
    print(f"parent's function calls: {calls} (adk_request_confirmation pending: "
          f"{'adk_request_confirmation' in calls})")
    for e in events:
        for fr in e.get_function_responses():
            print(f"function response {fr.name}: {json.dumps(fr.response)[:240]}")
    await runner.close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="log %(levelname)s %(name)s: %(message)s")
    for noisy in ("google_adk.google.adk.workflow", "google_adk.google.adk.runners"):  # the raise's tracebacks
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(main(f"http://127.0.0.1:{server.server_address[1]}"))
    server.shutdown()
