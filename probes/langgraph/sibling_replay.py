"""Repro: interrupt_sibling_replay with a hand-built StateGraph + ToolNode vs create_agent + HITL middleware.
One model turn calls get_ticket and send_reply together; send_reply records an authorize event then interrupt()s
(stategraph) / HITL interrupts in after_model (create_agent). Resume with approve; count ledger entries."""
import asyncio, sys, tempfile
from collections import Counter
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime, tools_condition
from langgraph.types import Command, interrupt

def tools(e, gate_in_tool):
    out = []
    for name, spec in e["sc"].tools.items():
        async def f(runtime: ToolRuntime, _n=name, _gated=spec.approval == "required", **kw):
            cid = runtime.tool_call_id.removeprefix("call_")
            if _gated and gate_in_tool:
                await e["ledger"].authorize(_n, kw, cid, "approval required")
                if interrupt({"tool_call_id": cid})["type"] != "approve": return "rejected"
            return (await e["ledger"].call(_n, kw, cid)).text
        out.append(StructuredTool(name=name, description=spec.description, args_schema=spec.parameters, coroutine=f))
    return out

async def main(kind):
    with scenario_env("interrupt_sibling_replay") as e, tempfile.TemporaryDirectory() as d:
        async with AsyncSqliteSaver.from_conn_string(d + "/cp.sqlite") as saver:
            llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
            if kind == "stategraph":
                ts = tools(e, True); bound = llm.bind_tools(ts)
                async def model(state: MessagesState): return {"messages": [await bound.ainvoke(state["messages"])]}
                b = StateGraph(MessagesState); b.add_node("model", model); b.add_node("tools", ToolNode(ts))
                b.add_edge(START, "model"); b.add_conditional_edges("model", tools_condition); b.add_edge("tools", "model")
                g = b.compile(checkpointer=saver); answer = {"type": "approve"}
            else:
                def when(req):
                    e["ledger"].authorize_sync(req.tool_call["name"], req.tool_call["args"], req.tool_call["id"].removeprefix("call_"))
                    return True
                g = create_agent(llm, tools(e, False), checkpointer=saver, middleware=[HumanInTheLoopMiddleware(
                    interrupt_on={"send_reply": {"allowed_decisions": ["approve", "reject"], "when": when}})])
                answer = {"decisions": [{"type": "approve"}]}
            cfg = {"configurable": {"thread_id": "t"}}
            await g.ainvoke({"messages": [("user", e["sc"].prompt)]}, cfg)
            before = Counter((x.kind, x.tool) for x in e["entries"]())
            out = await g.ainvoke(Command(resume=answer), cfg)
            after = Counter((x.kind, x.tool) for x in e["entries"]())
            print(f"{kind:12} at pause {dict(before)}\n{'':12} after resume {dict(after)}\n{'':12} final: {out['messages'][-1].content}")

for kind in ("stategraph", "create_agent"):
    asyncio.run(main(kind))
