"""Repro: one scenario through the raw Claude SDK with the PreToolUse hook printing each check
(`num_turns` next to the server's request count: a parallel-call response gives 2 requests, 3 turns).
Usage: p1_basic.py [SCENARIO]"""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options, drain_query

async def pre(inp, tuid, ctx):
    print("PreToolUse", inp.get("tool_name"), tuid, file=sys.stderr)
    return {}

async def main(sid):
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg(sid)
        await drain_query(sc.prompt, options(sc, base, token, run_id, key, tempfile.mkdtemp(prefix="clp1-"), hook=pre))
        show(server, ledger, run_id)
asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "support_draft_completes"))
