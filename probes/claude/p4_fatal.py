"""Repro: the Claude CLI's default retries against an always-500 server (which sends retry-after-ms: 10)."""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options, drain_query
async def main():
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg("model_fatal_error")
        await drain_query(sc.prompt, options(sc, base, token, run_id, key, tempfile.mkdtemp(prefix="clp4-")))
        show(server, ledger, run_id)
asyncio.run(main())
