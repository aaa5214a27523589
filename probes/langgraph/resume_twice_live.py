"""Standalone repro (no loopbench code): resuming the same approval pause twice against ONE live checkpointer
(one AsyncSqliteSaver file per thread, as the LangGraph docs show), each segment in its own process.
A tiny Chat Completions server on 127.0.0.1 scripts: get_ticket, lookup_policy, send_reply (needs approval),
then a text answer. Segments: run (pauses), resume with approve, the same resume again.

  .venv/bin/python probes/langgraph/resume_twice_live.py            # create_agent + HumanInTheLoopMiddleware
  .venv/bin/python probes/langgraph/resume_twice_live.py stategraph # StateGraph + interrupt() inside the tool
  .venv/bin/python probes/langgraph/resume_twice_live.py create_agent stale-copy
      # for contrast, what loopbench's adapter used to do: restore a copy of the database file taken at the
      # pause before the second resume (a stale snapshot, not the live checkpointer)

Printed per segment: model requests, tool runs, pending interrupts before/after, what ainvoke returned.
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = [("call_ticket_1", "get_ticket", {"ticket_id": "T-1"}),
          ("call_policy_1", "lookup_policy", {"topic": "refund"}),
          ("call_send_1", "send_reply", {"to": "ana@example.com", "body": "Under POL-7 your refund is accepted."})]
LOG: list[dict] = []


def reply(messages: list[dict]) -> dict:
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    for cid, name, args in SCRIPT:
        if cid not in answered:
            call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "I sent Ana the reply citing policy POL-7."}


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


async def segment(kind: str, what: str, url: str, db: str, runs: str, pause_file: str) -> None:
    """One segment in this (child) process, against the shared checkpointer file."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command, interrupt

    def make(name: str, params: dict) -> StructuredTool:
        async def f(**kw):
            if kind == "stategraph" and name == "send_reply":
                if interrupt({"tool": name, "args": kw})["type"] != "approve":
                    return "rejected"
            with open(runs, "a") as fh:
                fh.write(name + "\n")
            return f"{name} done: POL-7"
        schema = {"type": "object", "properties": {k: {"type": "string"} for k in params}, "required": list(params)}
        return StructuredTool(name=name, description=name, args_schema=schema, coroutine=f)

    tools = [make(n, a) for _, n, a in SCRIPT]
    llm = ChatOpenAI(base_url=url, api_key="probe", model="probe-model")
    cfg = {"configurable": {"thread_id": "task-1"}}
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        if kind == "stategraph":
            bound = llm.bind_tools(tools)

            async def model(state: MessagesState):
                return {"messages": [await bound.ainvoke(state["messages"])]}
            b = StateGraph(MessagesState)
            b.add_node("model", model)
            b.add_node("tools", ToolNode(tools))
            b.add_edge(START, "model")
            b.add_conditional_edges("model", tools_condition)
            b.add_edge("tools", "model")
            graph = b.compile(checkpointer=saver)
        else:
            graph = create_agent(llm, tools, checkpointer=saver, middleware=[
                HumanInTheLoopMiddleware(interrupt_on={"send_reply": {"allowed_decisions": ["approve", "reject"]}})])
        before = await graph.aget_state(cfg)
        if what == "run":
            graph_input = {"messages": [("user", "Read T-1, look up the refund policy, reply to Ana.")]}
        else:  # the app answers the interrupt it saved at the pause (the human's decision)
            iid = json.load(open(pause_file))["interrupt_id"]
            answer = {"type": "approve"} if kind == "stategraph" else {"decisions": [{"type": "approve"}]}
            graph_input = Command(resume={iid: answer})
        try:
            out = await graph.ainvoke(graph_input, cfg)
            last = out["messages"][-1]
            returned = f"returned {type(out).__name__}, last message {type(last).__name__}: {str(last.content)[:50]!r}"
        except Exception as exc:  # noqa: BLE001 - printing what the framework raised
            returned = f"raised {type(exc).__name__}: {exc}"
        after = await graph.aget_state(cfg)
        if what == "run" and after.interrupts:
            json.dump({"interrupt_id": after.interrupts[0].id}, open(pause_file, "w"))
        print(json.dumps({"pending_before": len(before.interrupts), "next_before": list(before.next),
                          "pending_after": len(after.interrupts), "returned": returned}))


def main(kind: str, stale_copy: bool) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/v1"
    with tempfile.TemporaryDirectory() as d:
        db, runs, pause = f"{d}/checkpoints.sqlite", f"{d}/runs.txt", f"{d}/pause.json"
        open(runs, "w").close()
        print(f"{kind}: one AsyncSqliteSaver at {os.path.basename(db)}, thread task-1, each segment a new process")
        for i, what in enumerate(("run", "resume", "resume")):
            if stale_copy and i == 1:
                shutil.copy2(db, db + ".at-pause")
            if stale_copy and i == 2:
                shutil.copy2(db + ".at-pause", db)
                print("  (restored the copy of the database taken at the pause)")
            n0, r0 = len(LOG), open(runs).read().split()
            child = subprocess.run([sys.executable, __file__, "--segment", kind, what, url, db, runs, pause],
                                   capture_output=True, text=True, check=True)
            r1 = open(runs).read().split()
            print(f"  {what:7} requests +{len(LOG) - n0} (total {len(LOG)}), tool runs +{r1[len(r0):]}"
                  f"\n          {child.stdout.strip()}")
        r = open(runs).read().split()
        print(f"  total: requests={len(LOG)} send_reply runs={r.count('send_reply')}")
    srv.shutdown()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--segment"]:
        asyncio.run(segment(*sys.argv[2:8]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "create_agent", "stale-copy" in sys.argv[2:])
