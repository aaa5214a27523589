"""Repro: tools left out of `allowed_tools` in the default permission mode are refused (no hook, no
can_use_tool); the CLI also re-sends a 400 answer twice. Usage: p2_noallow.py [SCENARIO]"""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options, drain_query

async def main(sid):
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg(sid)
        work = tempfile.mkdtemp(prefix="clp2-")
        await drain_query(sc.prompt, options(sc, base, token, run_id, key, work, allowed_tools=[]))
        show(server, ledger, run_id)
asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "support_draft_completes"))
