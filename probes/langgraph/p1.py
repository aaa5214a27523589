import asyncio, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt.tool_node import ToolRuntime

def tools_for(e):
    out = []
    for name, spec in e["sc"].tools.items():
        async def f(runtime: ToolRuntime, _n=name, **kw):
            o = await e["ledger"].call(_n, kw, runtime.tool_call_id.removeprefix("call_"))
            if not o.ok: raise RuntimeError(o.text)
            return o.text
        out.append(StructuredTool(name=name, description=spec.description, args_schema=spec.parameters, coroutine=f))
    return out

async def main(sid, limit, mw):
    with scenario_env(sid) as e:
        llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
        middleware = [HumanInTheLoopMiddleware(interrupt_on={"search_kb": True})] if mw else []
        agent = create_agent(llm, tools_for(e), middleware=middleware)
        g = agent.get_graph()
        print("nodes", list(g.nodes)); print("edges", [(x.source, x.target, x.conditional) for x in g.edges])
        steps = set()
        try:
            async for mode, chunk in agent.astream({"messages": [("user", e["sc"].prompt)]}, {"recursion_limit": limit}, stream_mode=["debug"]):
                if chunk["type"] == "task": steps.add(chunk["step"]); print(chunk["step"], chunk["payload"]["name"])
        except Exception as exc:
            print("RAISED", type(exc).__name__, str(exc)[:100])
        print("requests", len(e["requests"]()), "calls", len([x for x in e["entries"]() if x.kind == "call"]), "steps", sorted(steps))

if __name__ == "__main__": asyncio.run(main(sys.argv[1], int(sys.argv[2]), len(sys.argv) > 3))
