"""A plain OpenAI Agents SDK script for `support_draft_completes` — no loopbench code: what a user would write.

Long-lived, like a service: one JSON request per stdin line (`base_url`, `api_key`, `model`, `prompt`,
`max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and CPU
time around the run). `loopbench bench` times it against loopbench's run of the same scenario.

The SDK's quick start, as the adapter's default idiom drives it: `OpenAIResponsesModel` (the Responses API, what
`Agent(model="gpt-4.1")` resolves to) over one `AsyncOpenAI` pointed at the server, with the model named.
"""

import asyncio
import json
import resource
import sys
import time

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI


@function_tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return f"Ticket {ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago."


@function_tool
def lookup_policy(topic: str) -> str:
    """Look up the support policy that applies to a topic."""
    return "Policy POL-7: refunds are accepted within 30 days of delivery."


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


clients: dict[str, AsyncOpenAI] = {}


async def run(req: dict) -> str:
    if req["base_url"] not in clients:
        clients[req["base_url"]] = AsyncOpenAI(base_url=req["base_url"], api_key=req["api_key"])
    client = clients[req["base_url"]].with_options(api_key=req["api_key"])  # the bench gives each run a key
    agent = Agent(name="support", instructions=None, tools=[get_ticket, lookup_policy],
                  model=OpenAIResponsesModel(model=req["model"], openai_client=client))
    result = await Runner.run(agent, req["prompt"], max_turns=req["max_turns"])
    return str(result.final_output)


async def main() -> None:
    set_tracing_disabled(True)
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
