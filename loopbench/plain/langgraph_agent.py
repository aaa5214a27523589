"""A plain LangGraph script for `support_draft_completes` — no loopbench code: what a user would write.

Long-lived, like a service: one JSON request per stdin line (`server_url`, `api_key`, `model`, `prompt`,
`max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and CPU
time around the run). `loopbench bench` times it against loopbench's run of the same scenario.
"""

import asyncio
import json
import resource
import sys
import time

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return f"Ticket {ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago."


@tool
def lookup_policy(topic: str) -> str:
    """Look up the support policy that applies to a topic."""
    return "Policy POL-7: refunds are accepted within 30 days of delivery."


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


async def run(req: dict) -> str:
    # the class init_chat_model picks for a Claude model, with its defaults; the Anthropic client adds /v1 itself
    # (it caches its httpx client per process, so a new model per run reuses the connections)
    llm = ChatAnthropic(base_url=req["server_url"], api_key=req["api_key"], model=req["model"])
    agent = create_agent(llm, tools=[get_ticket, lookup_policy])
    # n model calls of the bare agent = 2n - 1 supersteps
    state = await agent.ainvoke({"messages": [{"role": "user", "content": req["prompt"]}]},
                                {"recursion_limit": 2 * req["max_turns"] - 1})
    return str(state["messages"][-1].content)


async def main() -> None:
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True}), flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        req = json.loads(line)
        c0, t0 = cpu_s(), time.perf_counter()
        text = await run(req)
        print(json.dumps({"ok": True, "text": text, "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0}),
              flush=True)


if __name__ == "__main__":
    asyncio.run(main())
