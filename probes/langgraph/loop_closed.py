"""Repro: langchain-openai's ChatOpenAI and langchain-anthropic's ChatAnthropic each cache their default async
httpx client per process (an lru_cache keyed by base_url). With ChatOpenAI a second asyncio.run() against the
same base URL reuses connections bound to the first, closed event loop ("Event loop is closed"); clearing the
cache (as a fresh process has it) works again. Measured with langchain-anthropic 1.7.10 / anthropic 2.14.0:
ChatAnthropic's second asyncio.run() works (and clearing its cache leaves an aclose() task on the closed loop,
"Task exception was never retrieved", harmless).

  .venv/bin/python probes/langgraph/loop_closed.py [anthropic|openai]   (default: both)
"""
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from env import scenario_env  # noqa: E402
from langchain_core.tools import tool  # noqa: E402


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return ticket_id


def model(kind, e):  # a new instance each time, as the adapter builds one per run
    if kind == "openai":
        from langchain_openai import ChatOpenAI
        return ChatOpenAI(base_url=e["url"] + "/v1", api_key=e["key"], model=e["sc"].model.id)
    from langchain_anthropic import ChatAnthropic
    return ChatAnthropic(base_url=e["url"], api_key=e["key"], model=e["sc"].model.id)


def clear(kind):
    if kind == "openai":
        from langchain_openai.chat_models import _client_utils
        _client_utils._cached_async_httpx_client.cache_clear()
    else:
        from langchain_anthropic import _client_utils
        _client_utils._get_default_async_httpx_client.cache_clear()


async def once(kind, e):
    return await model(kind, e).bind_tools([get_ticket]).ainvoke("Read T-1.")


for kind in sys.argv[1:] or ["anthropic", "openai"]:
    with scenario_env("support_draft_completes") as e:
        for i in range(2):
            try:
                asyncio.run(once(kind, e))
                print(kind, i, "ok")
            except Exception as exc:  # noqa: BLE001 - printing what the second loop raised
                print(kind, i, "RAISED", type(exc).__name__, exc)
        clear(kind)
        asyncio.run(once(kind, e))
        print(kind, "after cache_clear: ok")
