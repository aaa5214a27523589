import asyncio, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from p1 import tools_for
from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_openai import ChatOpenAI

async def main():
    with scenario_env("runaway_step_limit") as e:
        llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
        agent = create_agent(llm, tools_for(e), middleware=[ModelCallLimitMiddleware(run_limit=3)])
        print([(x.source, x.target) for x in agent.get_graph().edges], agent.config)
        async for mode, chunk in agent.astream({"messages": [("user", e["sc"].prompt)]}, stream_mode=["debug", "values"]):
            if mode == "debug": print(chunk["type"], chunk["step"], {k: (v if k != "input" else "...") for k, v in chunk["payload"].items()} if chunk["type"] != "checkpoint" else "")
            else: print("VALUES keys", list(chunk))
        print("requests", len(e["requests"]()))
asyncio.run(main())
