"""Repro: langchain-openai caches its default async httpx client per process (lru_cache keyed by base_url), so a
second asyncio.run() against the same base URL reuses connections bound to the first, closed event loop."""
import asyncio, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import scenario_env
from langchain_openai import ChatOpenAI

with scenario_env("stops_without_finishing") as e:
    async def once():
        llm = ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)  # a new instance each time
        return await llm.ainvoke("hi")
    for i in range(2):
        try:
            asyncio.run(once()); print(i, "ok")
        except Exception as exc:
            print(i, "RAISED", type(exc).__name__, exc)
    from langchain_openai.chat_models import _client_utils
    _client_utils._cached_async_httpx_client.cache_clear()
    asyncio.run(once()); print("after cache_clear: ok")
