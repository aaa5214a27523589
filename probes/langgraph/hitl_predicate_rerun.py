"""Standalone repro (no loopbench code): HumanInTheLoopMiddleware runs the user's approval predicate
(`InterruptOnConfig.when`) again on resume, although the human is asked once (one interrupt, one decision).
A tiny Chat Completions server on 127.0.0.1 scripts one turn calling get_ticket and send_reply together,
then a text answer. create_agent + HITL(interrupt_on={"send_reply": {..., "when": predicate}}) + AsyncSqliteSaver.

  .venv/bin/python probes/langgraph/hitl_predicate_rerun.py

Printed per segment: predicate invocations, interrupts (requests to the human), tool runs, model requests.
"""
import asyncio
import json
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

LOG: list[dict] = []
EVENTS: list[str] = []


def reply(messages: list[dict]) -> dict:
    if any(m["role"] == "tool" for m in messages):
        return {"role": "assistant", "content": "I read the ticket and sent Ana the reply."}
    calls = [("call_ticket_1", "get_ticket", {"ticket_id": "T-1"}),
             ("call_send_1", "send_reply", {"to": "ana@example.com", "body": "POL-7 applies."})]
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for c, n, a in calls]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        assert not body.get("stream"), "this probe serves non-streaming responses only"
        LOG.append(body)
        msg = reply(body["messages"])
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        out = {"id": f"chatcmpl-{len(LOG)}", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@tool
async def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    EVENTS.append("run get_ticket")
    return "ticket"


@tool
async def send_reply(to: str, body: str) -> str:
    """Send a reply email to the customer."""
    EVENTS.append("run send_reply")
    return "sent"


def predicate(request) -> bool:  # the user's approval code: "does this call need a human?"
    EVENTS.append("predicate")
    return True


def summary(label: str, n0: int, e0: int, interrupts: int) -> None:
    ev = EVENTS[e0:]
    print(f"{label:7} predicate invocations={ev.count('predicate')} interrupts={interrupts} "
          f"tool runs={[e[4:] for e in ev if e.startswith('run ')]} model requests={len(LOG) - n0}")


async def main() -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    llm = ChatOpenAI(base_url=f"http://127.0.0.1:{srv.server_port}/v1", api_key="probe", model="probe-model")
    cfg = {"configurable": {"thread_id": "t"}}
    with tempfile.TemporaryDirectory() as d:
        async with AsyncSqliteSaver.from_conn_string(f"{d}/cp.sqlite") as saver:
            hitl = HumanInTheLoopMiddleware(interrupt_on={"send_reply": {"allowed_decisions": ["approve", "reject"],
                                                                         "when": predicate}})
            graph = create_agent(llm, [get_ticket, send_reply], checkpointer=saver, middleware=[hitl])
            out = await graph.ainvoke({"messages": [("user", "Read T-1 and reply to Ana.")]}, cfg)
            pending = (await graph.aget_state(cfg)).interrupts
            summary("run", 0, 0, len(out.get("__interrupt__", [])))
            n0, e0 = len(LOG), len(EVENTS)
            out = await graph.ainvoke(Command(resume={pending[0].id: {"decisions": [{"type": "approve"}]}}), cfg)
            summary("resume", n0, e0, len(out.get("__interrupt__", [])))
            print(f"final: {out['messages'][-1].content!r}")
    srv.shutdown()


asyncio.run(main())
