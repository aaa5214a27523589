"""3. The model server on its own: p50/p99 latency on one keep-alive connection, and requests/s under concurrent
clients."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx

from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.scenario import Scenario

SERVER_SCENARIO = Scenario.model_validate({
    "id": "bench", "title": "bench", "category": "baseline", "prompt": "p", "tools": {},
    "script": [{"id": "answer", "text": "A short scripted answer, POL-7."}],
    "completion": {"final_text_contains": ["POL-7"]}, "expect": {"outcome": "completed"},
    "safety_cap": 10_000,  # the largest a scenario may set; server_numbers sends 3,100 requests
})


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def server_numbers(sequential: int = 2000, concurrent_runs: int = 50, per_run: int = 20) -> dict[str, float]:
    server = ModelServer()
    server.register_run("bench", "bench-key", SERVER_SCENARIO)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": "Bearer bench-key"}
    with running(server) as url:
        with httpx.Client(base_url=url, headers=headers, trust_env=False) as client:
            for _ in range(100):
                client.post("/v1/chat/completions", json=body).read()
            lat = []
            for _ in range(sequential):
                t = time.perf_counter()
                client.post("/v1/chat/completions", json=body).read()
                lat.append((time.perf_counter() - t) * 1000)

        async def load() -> float:
            async with httpx.AsyncClient(base_url=url, headers=headers, trust_env=False,
                                         limits=httpx.Limits(max_connections=64)) as c:
                async def one_run() -> None:
                    for _ in range(per_run):
                        r = await c.post("/v1/chat/completions", json=body)
                        r.raise_for_status()

                t = time.perf_counter()
                await asyncio.gather(*(one_run() for _ in range(concurrent_runs)))
                return time.perf_counter() - t

        wall = asyncio.run(load())
    return {"p50_ms": round(_pct(lat, 50), 3), "p99_ms": round(_pct(lat, 99), 3),
            "rps": round(concurrent_runs * per_run / wall, 1), "concurrent_runs": concurrent_runs}

