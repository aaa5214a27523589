"""Benchmark of the scripted model server (not a test): many requests with httpx against a small scripted text
turn, the server running in this process as the runner runs it. Prints requests/s and latency percentiles.

    .venv/bin/python benchmarks/server_bench.py [--requests N] [--concurrency C]

Goal: p50 < 2 ms for a plain request over one keep-alive connection.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx

from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.scenario import Scenario

SCENARIO = Scenario.model_validate({
    "id": "bench", "title": "bench", "category": "baseline", "prompt": "p", "tools": {},
    "script": [{"id": "answer", "text": "A short scripted answer, POL-7."}],
    "completion": {"final_text_contains": ["POL-7"]}, "expect": {"outcome": "completed"},
    "safety_cap": 10**9,
})
BODIES = {
    "openai_chat": ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    "openai_responses": ("/v1/responses", {"model": "m", "input": "hi"}),
    "anthropic_messages": ("/v1/messages", {"model": "m", "max_tokens": 64,
                                            "messages": [{"role": "user", "content": "hi"}]}),
}


def _report(name: str, latencies: list[float], wall: float) -> None:
    ms = sorted(x * 1000 for x in latencies)
    p = statistics.quantiles(ms, n=100)
    print(f"{name:34s} {len(ms) / wall:8.0f} req/s   p50 {p[49]:6.2f} ms   p99 {p[98]:6.2f} ms   max {ms[-1]:6.2f} ms")


def sequential(url: str, key: str, n: int) -> None:
    headers = {"authorization": f"Bearer {key}", "x-api-key": key}
    for proto, (path, body) in BODIES.items():
        for stream in (False, True):
            payload = {**body, "stream": stream}
            with httpx.Client(base_url=url, headers=headers) as client:
                for _ in range(50):  # warm up
                    client.post(path, json=payload).read()
                latencies = []
                started = time.perf_counter()
                for _ in range(n):
                    t = time.perf_counter()
                    r = client.post(path, json=payload)
                    r.read()
                    latencies.append(time.perf_counter() - t)
                    assert r.status_code == 200, r.text
                wall = time.perf_counter() - started
            _report(f"{proto}{' stream' if stream else ''} (1 conn)", latencies, wall)


async def concurrent(url: str, key: str, n: int, concurrency: int) -> None:
    path, body = BODIES["openai_chat"]
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {key}"}, limits=limits) as client:

        async def worker(count: int) -> None:
            for _ in range(count):
                t = time.perf_counter()
                r = await client.post(path, json=body)
                latencies.append(time.perf_counter() - t)
                assert r.status_code == 200

        started = time.perf_counter()
        await asyncio.gather(*(worker(n // concurrency) for _ in range(concurrency)))
        wall = time.perf_counter() - started
    _report(f"openai_chat ({concurrency} concurrent)", latencies, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    server = ModelServer()
    server.register_run("bench", "bench-key", SCENARIO)
    with running(server) as url:
        sequential(url, "bench-key", args.requests)
        asyncio.run(concurrent(url, "bench-key", args.requests, args.concurrency))
    log = server.requests("bench")
    server_ms = sorted(e.duration_ms for e in log)
    print(f"server-side handling (all {len(log)} requests): p50 {server_ms[len(log) // 2]:.2f} ms, "
          f"p99 {server_ms[int(len(log) * 0.99)]:.2f} ms")


if __name__ == "__main__":
    main()
