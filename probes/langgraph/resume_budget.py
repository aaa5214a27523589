"""Repro: how many supersteps does a resumed invocation get under the same recursion_limit?
create_agent + HumanInTheLoopMiddleware on resume_keeps_allowance (get_ticket, lookup_policy, send_reply pauses,
then search_kb forever). Prints the superstep numbers of every task in the first run and in the resume."""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from p1 import tools_for
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 10

async def segment(agent, inp, cfg, label):
    steps = []
    try:
        async for c in agent.astream(inp, cfg, stream_mode="debug"):
            if c["type"] == "task": steps.append((c["step"], c["payload"]["name"].replace("HumanInTheLoopMiddleware.", "hitl.")))
    except Exception as exc:
        print(label, "RAISED", type(exc).__name__)
    print(label, len({s for s, _ in steps}), "supersteps:", steps)

async def main():
    with scenario_env("resume_keeps_allowance") as e, tempfile.TemporaryDirectory() as d:
        async with AsyncSqliteSaver.from_conn_string(d + "/cp.sqlite") as saver:
            llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
            agent = create_agent(llm, tools_for(e), middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_reply": True})], checkpointer=saver)
            cfg = {"recursion_limit": LIMIT, "configurable": {"thread_id": "t"}}
            await segment(agent, {"messages": [("user", e["sc"].prompt)]}, cfg, "run   ")
            st = await agent.aget_state(cfg)
            print("checkpoint step at pause:", st.metadata.get("step"), "requests so far", len(e["requests"]()))
            await segment(agent, Command(resume={"decisions": [{"type": "approve"}]}), cfg, "resume")
        print("model requests:", len(e["requests"]()), "recursion_limit:", LIMIT)

asyncio.run(main())
