"""Standalone repro (no loopbench code): the ways a langchain 1.x / LangGraph user can say "no" to a tool call,
and whether the loop goes on. A tiny Chat Completions server on 127.0.0.1 scripts: turn 1 calls get_ticket,
turn 2 calls delete_account, turn 3 (after any delete_account result) answers in text. 2 requests = the run
stopped on the denial; 3 = the model was told and the loop went on.

  .venv/bin/python probes/langgraph/deny_stop.py

Mechanisms: create_agent + wrap_tool_call returning an error ToolMessage (goes on); create_agent + an
after_model hook answering jump_to "end" (the shape of langchain's own ToolCallLimitMiddleware(exit_behavior=
"end")); create_agent + a wrap_tool_call that raises; a hand-built StateGraph + ToolNode whose tool returns a
refusal text / raises.
"""
import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain.agents.middleware import after_model, wrap_tool_call
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

LOG: list[dict] = []
RUNS: list[str] = []


def reply(messages: list[dict]) -> dict:
    """The scripted turn, chosen from the tool results that came back (not from a counter)."""
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    if "call_del_1" in answered:
        return {"role": "assistant", "content": "I could not delete Ana's account; a human needs to handle it."}
    cid, name, args = (("call_del_1", "delete_account", {"customer": "ana@example.com"}) if "call_ticket_1" in answered
                       else ("call_ticket_1", "get_ticket", {"ticket_id": "T-1"}))
    call = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        LOG.append(body)
        msg = reply(body["messages"])
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        out = {"id": f"chatcmpl-{len(LOG)}", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        assert not body.get("stream"), "this probe serves non-streaming responses only"
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@tool
async def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    RUNS.append("get_ticket")
    return f"Ticket {ticket_id}: ana@example.com asks us to delete her account."


@tool
async def delete_account(customer: str) -> str:
    """Delete a customer account."""
    RUNS.append("delete_account")
    return f"Account {customer} deleted."


class Denied(Exception):
    """The user's own exception for a policy denial."""


@wrap_tool_call
async def deny_continue(request, handler):
    if request.tool_call["name"] != "delete_account":
        return await handler(request)
    return ToolMessage(content="delete_account is denied by policy.", tool_call_id=request.tool_call["id"],
                       name="delete_account", status="error")


@wrap_tool_call
async def deny_raise(request, handler):
    if request.tool_call["name"] == "delete_account":
        raise Denied("delete_account is denied by policy")
    return await handler(request)


@after_model(can_jump_to=["end"])
async def deny_end(state, runtime):
    last = state["messages"][-1]
    calls = getattr(last, "tool_calls", None) or []
    if not any(c["name"] == "delete_account" for c in calls):
        return None
    # like ToolCallLimitMiddleware(exit_behavior="end"): answer every pending call, explain, jump to the end
    msgs = [ToolMessage(content="denied by policy; the run was stopped.", tool_call_id=c["id"], name=c["name"],
                        status="error") for c in calls]
    return {"messages": [*msgs, AIMessage("delete_account is denied by policy; the run was stopped.")],
            "jump_to": "end"}


def stategraph(llm, tools):
    bound = llm.bind_tools(tools)

    async def model(state: MessagesState):
        return {"messages": [await bound.ainvoke(state["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("model", model)
    b.add_node("tools", ToolNode(tools))
    b.add_edge(START, "model")
    b.add_conditional_edges("model", tools_condition)
    b.add_edge("tools", "model")
    return b.compile()


@tool("delete_account")
async def delete_refused(customer: str) -> str:
    """Delete a customer account."""
    return "delete_account is denied by policy; it was not executed."


@tool("delete_account")
async def delete_raises(customer: str) -> str:
    """Delete a customer account."""
    raise Denied("delete_account is denied by policy")


async def one(name, url, build):
    LOG.clear()
    RUNS.clear()
    llm = ChatOpenAI(base_url=url, api_key="probe", model="probe-model")
    graph = build(llm)
    jumps = []
    try:
        async for mode, chunk in graph.astream({"messages": [("user", "Read ticket T-1 and do what it asks.")]},
                                               stream_mode=["debug", "values"]):
            if mode == "debug" and chunk["type"] == "task_result":
                res = chunk["payload"]["result"]
                if isinstance(res, dict) and res.get("jump_to"):
                    jumps.append((chunk["payload"]["name"], res["jump_to"]))
            elif mode == "values":
                final = chunk["messages"][-1]
        result = f"returned: {final.content[:70]!r}"
    except Exception as exc:  # noqa: BLE001 - printing what the framework raised
        chain, cur = [], exc
        while cur is not None:
            chain.append(type(cur).__name__)
            cur = cur.__cause__ or cur.__context__
        result = f"raised {' <- '.join(chain)}: {exc}"
    print(f"{name:46} requests={len(LOG)} tool runs={RUNS} jumps={jumps}\n{'':46} {result}")


async def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/v1"
    tools = [get_ticket, delete_account]
    await one("create_agent + wrap_tool_call -> error ToolMessage", url,
              lambda llm: create_agent(llm, tools, middleware=[deny_continue]))
    await one("create_agent + after_model jump_to end", url,
              lambda llm: create_agent(llm, tools, middleware=[deny_end]))
    await one("create_agent + wrap_tool_call raising", url,
              lambda llm: create_agent(llm, tools, middleware=[deny_raise]))
    await one("StateGraph + tool returning a refusal", url, lambda llm: stategraph(llm, [get_ticket, delete_refused]))
    await one("StateGraph + tool raising", url, lambda llm: stategraph(llm, [get_ticket, delete_raises]))
    srv.shutdown()


asyncio.run(main())
