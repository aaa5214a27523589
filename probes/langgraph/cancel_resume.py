"""Standalone repro (no loopbench code): a caller cancels a LangGraph run while a tool runs (the asyncio task that
drives `graph.astream` is cancelled), then continues the thread in a new process from the checkpointer with
`astream(None, config)` on the same thread id (the persistence docs' way to continue an interrupted thread).

A tiny Chat Completions server on 127.0.0.1 scripts: post_to_portal (fast), lookup_policy (a tool that sleeps 5 s the
first time), then a text answer. Each segment runs in its own process against one AsyncSqliteSaver file.

  .venv/bin/python probes/langgraph/cancel_resume.py            # create_agent
  .venv/bin/python probes/langgraph/cancel_resume.py stategraph # StateGraph + ToolNode + tools_condition

Printed (langgraph 1.2.24, langchain 1.5.2), for both idioms:
  cancel: cancelled after 0.0 s; lookup cancelled in flight: True; next: ['tools'];
    tool runs: post_to_portal,lookup_policy
  resume: first superstep ran ['tools']; tool runs: post_to_portal,lookup_policy,lookup_policy; requests: 3;
    last: 'POL-7 applies.'
The cancelled superstep (the `tools` node) runs again from its start: lookup_policy a second time; post_to_portal,
finished in an earlier superstep (checkpointed), is not repeated. The model request in flight at a cancel would be
re-sent the same way (`next: ['model']`).
"""
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = [("call_post_1", "post_to_portal", {"body": "Your refund is being reviewed."}),
          ("call_policy_1", "lookup_policy", {"topic": "refund"})]
LOG: list[dict] = []


def reply(messages: list[dict]) -> dict:
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    for cid, name, args in SCRIPT:
        if cid not in answered:
            call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "POL-7 applies."}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        LOG.append(body)
        msg = reply(body["messages"])
        out = {"id": f"chatcmpl-{len(LOG)}", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if msg.get("tool_calls")
                            else "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def segment(kind: str, what: str, url: str, db: str, runs: str) -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    state = {"cancelled_in_tool": False}

    def make(name: str, params: dict) -> StructuredTool:
        async def f(**kw):
            with open(runs, "a") as fh:
                fh.write(name + "\n")
            if name == "lookup_policy" and what == "cancel":
                try:
                    await asyncio.sleep(5)
                except asyncio.CancelledError:
                    state["cancelled_in_tool"] = True
                    raise
            return f"{name} done"
        schema = {"type": "object", "properties": {k: {"type": "string"} for k in params}, "required": list(params)}
        return StructuredTool(name=name, description=name, args_schema=schema, coroutine=f)

    tools = [make(n, a) for _, n, a in SCRIPT]
    llm = ChatOpenAI(base_url=url, api_key="probe", model="probe-model")
    cfg = {"configurable": {"thread_id": "task-1"}}
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        if kind == "stategraph":
            bound = llm.bind_tools(tools)

            async def model(st: MessagesState):
                return {"messages": [await bound.ainvoke(st["messages"])]}
            b = StateGraph(MessagesState)
            b.add_node("model", model)
            b.add_node("tools", ToolNode(tools))
            b.add_edge(START, "model")
            b.add_conditional_edges("model", tools_condition)
            b.add_edge("tools", "model")
            graph = b.compile(checkpointer=saver)
        else:
            graph = create_agent(llm, tools, checkpointer=saver)
        first: list[str] = []
        last: dict = {}

        async def drive(graph_input):
            nonlocal last
            async for mode, chunk in graph.astream(graph_input, cfg, stream_mode=["debug", "values"]):
                if mode == "debug" and chunk["type"] == "task" and (not first or chunk["step"] == first[0][0]):
                    first.append((chunk["step"], chunk["payload"]["name"]))
                elif mode == "values":
                    last = chunk

        if what == "cancel":
            task = asyncio.ensure_future(drive({"messages": [("user", "Post the note, then look up the policy.")]}))
            while not open(runs).read().count("lookup_policy"):
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.5)
            t0 = time.monotonic()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            kept = await graph.aget_state(cfg)
            print(f"cancel: cancelled after {time.monotonic() - t0:.1f} s; lookup cancelled in flight: "
                  f"{state['cancelled_in_tool']}; next: {list(kept.next)}; tool runs: "
                  f"{','.join(open(runs).read().split())}")
        else:
            await drive(None)
            print(f"resume: first superstep ran {[n for _, n in first]}; tool runs: "
                  f"{','.join(open(runs).read().split())}; requests: {{requests}}; "
                  f"last: {last['messages'][-1].content!r}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--segment":
        asyncio.run(segment(*sys.argv[2:]))
        return
    kind = sys.argv[1] if len(sys.argv) > 1 else "create_agent"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = tempfile.mkdtemp()
    db, runs = f"{work}/checkpoints.sqlite", f"{work}/runs.txt"
    open(runs, "w").close()
    for what in ("cancel", "resume"):  # each in its own process, as a caller's new process would
        out = subprocess.run([sys.executable, __file__, "--segment", kind, what, url, db, runs],
                             capture_output=True, text=True, check=True).stdout
        print(out.strip().replace("{requests}", str(len(LOG))))


if __name__ == "__main__":
    main()
