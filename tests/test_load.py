"""A bounded loopback stress test: 200 concurrent runs through the model server and the ledger's HTTP face;
no request log entry or ledger entry is lost or crosses runs."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from loopbench.harness.ledger.http import TOKEN_HEADER, ledger_routes
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.markers import result_status
from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.scenario import load_scenarios

TIER = "unit"

RUNS = 200
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
         for n in ("get_ticket", "lookup_policy")]


async def _one_run(client: httpx.AsyncClient, base: str, run_id: str, key: str) -> None:
    """The support_draft_completes loop by hand: model, tool, model, tool, model."""
    auth = {"Authorization": f"Bearer {key}"}
    messages: list[dict] = [{"role": "user", "content": "go"}]
    for _ in range(3):
        r = await client.post(f"{base}/v1/chat/completions", headers=auth,
                              json={"model": "m", "messages": messages, "tools": TOOLS})
        assert r.status_code == 200, r.text
        msg = r.json()["choices"][0]["message"]
        messages.append(msg)
        for call in msg.get("tool_calls") or []:
            out = await client.post(
                f"{base}/ledger/{run_id}/call", headers={TOKEN_HEADER: "tok"},
                json={"tool": call["function"]["name"], "args": {}, "call_id": call["id"].removeprefix("call_")})
            assert result_status(out.json()["text"]) == "receipt"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out.json()["text"]})


@pytest.mark.process
def test_200_concurrent_runs_lose_nothing_and_stay_apart():
    scenario = next(s for s in load_scenarios() if s.id == "support_draft_completes")
    ledger = Ledger()
    server = ModelServer(extra_routes=ledger_routes(ledger, "tok"))
    runs = [(f"load-{i}", f"key-{i}") for i in range(RUNS)]
    for run_id, key in runs:
        server.register_run(run_id, key, scenario)
        ledger.register_run(run_id, scenario)

    async def main(base: str) -> None:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            await asyncio.wait_for(asyncio.gather(*(_one_run(client, base, r, k) for r, k in runs)), 120)

    with running(server) as base:
        asyncio.run(main(base))
    for run_id, _ in runs:
        log = server.requests(run_id)
        assert [e.served_turn for e in log] == ["read_ticket", "find_policy", "draft"], run_id
        entries = ledger.entries(run_id)
        assert [e.tool for e in entries] == ["get_ticket", "lookup_policy"]
        assert {e.run_id for e in entries} == {run_id}
        assert not server.violations(run_id)
