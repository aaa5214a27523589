"""A plain Claude Agent SDK script for `support_draft_completes` — no loopbench code: what a user would write.

Long-lived, like a service: one JSON request per stdin line (`server_url`, `api_key`, `model`, `prompt`,
`max_turns`, `config_dir`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's
wall and CPU time around the run, the CLI child it waits for included). `loopbench bench` times it against
loopbench's run of the same scenario.
"""

import asyncio
import json
import resource
import sys
import time

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, create_sdk_mcp_server, query, tool


@tool("get_ticket", "Read a support ticket by id.", {"ticket_id": str})
async def get_ticket(args: dict) -> dict:
    text = (f"Ticket {args['ticket_id']}: customer ana@example.com asks for a refund of order 1042, delivered "
            "12 days ago.")
    return {"content": [{"type": "text", "text": text}]}


@tool("lookup_policy", "Look up the support policy that applies to a topic.", {"topic": str})
async def lookup_policy(args: dict) -> dict:
    return {"content": [{"type": "text", "text": "Policy POL-7: refunds are accepted within 30 days of delivery."}]}


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


async def run(req: dict) -> str:
    server = create_sdk_mcp_server("support", tools=[get_ticket, lookup_policy])
    options = ClaudeAgentOptions(
        tools=[], mcp_servers={"support": server}, strict_mcp_config=True, setting_sources=[],
        allowed_tools=["mcp__support__get_ticket", "mcp__support__lookup_policy"], model=req["model"],
        max_turns=req["max_turns"],
        env={"ANTHROPIC_BASE_URL": req["server_url"], "ANTHROPIC_API_KEY": req["api_key"],
             "CLAUDE_CONFIG_DIR": req["config_dir"], "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
    )
    text = ""
    async for message in query(prompt=req["prompt"], options=options):
        if isinstance(message, ResultMessage):
            text = message.result or ""
    return text


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
