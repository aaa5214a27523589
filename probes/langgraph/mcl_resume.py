"""Repro: ModelCallLimitMiddleware across an interrupt + resume (resume_keeps_allowance script: 3 model calls, pause on
send_reply, approve, then search_kb forever). run_limit vs thread_limit, both 4, exit_behavior "end"."""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from p1 import tools_for
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ModelCallLimitMiddleware
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

async def main(kind):
    with scenario_env("resume_keeps_allowance") as e, tempfile.TemporaryDirectory() as d:
        async with AsyncSqliteSaver.from_conn_string(d + "/cp.sqlite") as saver:
            llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
            mw = [ModelCallLimitMiddleware(**{kind: 4}), HumanInTheLoopMiddleware(interrupt_on={"send_reply": True})]
            agent = create_agent(llm, tools_for(e), middleware=mw, checkpointer=saver)
            cfg = {"configurable": {"thread_id": "t"}}
            await agent.ainvoke({"messages": [("user", e["sc"].prompt)]}, cfg)
            st = await agent.aget_state(cfg)
            print(kind, "at pause: requests", len(e["requests"]()), "counts in checkpoint",
                  {k: st.values.get(k) for k in ("thread_model_call_count", "run_model_call_count")})
            out = await agent.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg)
            print(kind, "after resume: requests", len(e["requests"]()), "final:", out["messages"][-1].content)

for kind in ("run_limit", "thread_limit"):
    asyncio.run(main(kind))
