"""Repro: with max_budget_usd, ResultMessage.usage misses the last response while total_cost_usd / model_usage
count it; the run overshoots the budget by one response; query() raises ResultError after the error result."""
import asyncio, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options, drain_query
async def main():
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg("cost_budget")
        await drain_query(sc.prompt, options(sc, base, token, run_id, key, tempfile.mkdtemp(prefix="clp5-"),
                                             max_budget_usd=sc.limits.max_cost_usd,
                                             extra_env={"XDG_CACHE_HOME": tempfile.mkdtemp(prefix="clp5c-")}))
        show(server, ledger, run_id)
asyncio.run(main())
