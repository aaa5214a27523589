"""`loopbench bench`: how fast the suite is, what loopbench itself costs, and each framework's cost per model
call. Numbers, not timed tests: the results go to reports/bench/results.json and a Markdown summary.

Measured in one run:
1. the full suite (every available framework and variant) with --jobs 1 and --jobs 2, next to the suite's
   physical limit on this machine: the workers' CPU time summed over every run, divided by the cores;
2. harness overhead per framework: one scenario run bare — the adapter called in a warm worker process of its
   own against the same scripted server and ledger, timed inside that process around the framework call only
   (no runner, bookkeeping or record) — and through loopbench (a full business task measured by the runner:
   registration, worker job round-trip, ground truth, outcome, verdict, record, results line, trace),
   interleaved, several repetitions; the median ratio (process start is excluded from both);
3. the model server's p50/p99 latency on one keep-alive connection and requests/s under concurrent clients;
4. per framework: wall and CPU time per model call, and the peak RSS of a worker.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import platform
import resource
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.environment import child_environment, environment
from loopbench.harness.messages import JobContext, WorkerJob
from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.pool import Worker
from loopbench.harness.runner import RunPlan, Suite, run_suite
from loopbench.harness.scenario import Scenario, load_scenarios

OVERHEAD_SCENARIO = "support_draft_completes"
SERVER_SCENARIO = Scenario.model_validate({
    "id": "bench", "title": "bench", "category": "baseline", "prompt": "p", "tools": {},
    "script": [{"id": "answer", "text": "A short scripted answer, POL-7."}],
    "completion": {"final_text_contains": ["POL-7"]}, "expect": {"outcome": "completed"}, "safety_cap": 10**9,
})


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


# ---------------------------------------------------------------- 3. the model server
def server_numbers(sequential: int = 2000, concurrent_runs: int = 50, per_run: int = 20) -> dict[str, float]:
    server = ModelServer()
    server.register_run("bench", "bench-key", SERVER_SCENARIO)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": "Bearer bench-key"}
    with running(server) as url:
        with httpx.Client(base_url=url, headers=headers) as client:
            for _ in range(100):
                client.post("/v1/chat/completions", json=body).read()
            lat = []
            for _ in range(sequential):
                t = time.perf_counter()
                client.post("/v1/chat/completions", json=body).read()
                lat.append((time.perf_counter() - t) * 1000)

        async def load() -> float:
            async with httpx.AsyncClient(base_url=url, headers=headers, limits=httpx.Limits(max_connections=64)) as c:
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


# ---------------------------------------------------------------- 2 and 4. overhead and cost per call
@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    requests: int


def _bare_run(framework: str, variant: str, scenario: Scenario, suite: Suite, worker: Worker, work: Path) -> Sample:
    """The adapter called directly in a warm worker of its own (out of the server's process, like a real run),
    timed inside the worker around the framework call only: no runner, bookkeeping or record."""
    run_id = f"bare-{secrets.token_hex(4)}"
    key = f"lb-{secrets.token_hex(8)}"
    suite.server.register_run(run_id, key, scenario)
    suite.ledger.register_run(run_id, scenario)
    ctx = JobContext(run_id=run_id, api_key=key, base_url=suite.base_url, ledger_token=suite.token, variant=variant,
                     work_dir=work / run_id / "work", snapshot_dir=work / run_id / "snap",
                     task_dir=work / run_id / "state")
    job = WorkerJob(op="run", framework=framework, variant=variant, scenario_file=scenario.source, ctx=ctx)
    answer = worker.request(job, 300)
    if not answer.ok:
        raise RuntimeError(f"bare run of {framework} failed: {answer.error}")
    sample = Sample(answer.elapsed_s, answer.cpu_s, len(suite.server.requests(run_id)))
    suite.server.unregister_run(run_id)
    suite.ledger.unregister_run(run_id)
    return sample


def overhead_numbers(frameworks: list[tuple[str, str]], repetitions: int, work: Path) -> dict[str, dict[str, Any]]:
    scenario = next(s for s in load_scenarios() if s.id == OVERHEAD_SCENARIO)
    out: dict[str, dict[str, Any]] = {}
    plan = RunPlan(scenarios=[scenario], variants=frameworks, jobs=1, out_dir=work / "lb", show_progress=False)
    (work / "lb" / "traces").mkdir(parents=True)
    suite = Suite(plan)
    bare_worker = Worker(work / "bare-worker.log", child_environment())
    with running(suite.server) as base_url:
        suite.base_url = base_url
        for framework, variant in frameworks:
            # one warm-up of each path, then interleaved measured pairs
            _bare_run(framework, variant, scenario, suite, bare_worker, work)
            suite.run_task(scenario, framework, variant, 0)
            bare: list[Sample] = []
            harnessed: list[float] = []
            rss: list[float] = []
            for i in range(repetitions):
                bare.append(_bare_run(framework, variant, scenario, suite, bare_worker, work))
                t0 = time.perf_counter()
                record = suite.run_task(scenario, framework, variant, i + 1)
                suite.writer.append(record)
                harnessed.append(time.perf_counter() - t0)
                rss.append(record.counters.peak_rss_mb or 0.0)
            ratios = [h / b.wall_s for h, b in zip(harnessed, bare, strict=True)]
            calls = statistics.median(b.requests for b in bare) or 1
            out[framework] = {
                "variant": variant,
                "overhead_ratio": round(statistics.median(ratios), 3),
                "bare_ms_median": round(statistics.median(b.wall_s for b in bare) * 1000, 1),
                "harnessed_ms_median": round(statistics.median(harnessed) * 1000, 1),
                "ms_per_model_call": round(statistics.median(b.wall_s for b in bare) * 1000 / calls, 1),
                "cpu_ms_per_model_call": round(statistics.median(b.cpu_s for b in bare) * 1000 / calls, 1),
                "peak_rss_mb": round(max(rss), 1),
                "model_calls_per_run": calls,
                "repetitions": repetitions,
            }
    bare_worker.close()
    suite.close()
    return out


# ---------------------------------------------------------------- 1. the suite
def suite_numbers(work: Path) -> dict[str, Any]:
    scenarios = load_scenarios()
    variants = [(f, v) for f, v in resolve_selection([]) if adapter_class(f).unavailable_reason() is None]
    out: dict[str, Any] = {"runs": len(scenarios) * len(variants)}
    cpu_total = 0.0
    for jobs in (1, 2):
        plan = RunPlan(scenarios=scenarios, variants=variants, jobs=jobs, out_dir=work / f"suite-j{jobs}",
                       show_progress=False)
        t0 = time.perf_counter()
        run_suite(plan)
        out[f"wall_s_jobs{jobs}"] = round(time.perf_counter() - t0, 1)
        records = [json.loads(x) for x in (plan.out_dir / "results.jsonl").read_text().splitlines()]
        cpu_total = sum(r["counters"]["cpu_s"] or 0.0 for r in records)
        run_time = [r["counters"]["elapsed_s"] or 0.0 for r in records]
        # no schedule on `jobs` slots can beat the longest run, nor the runs' total time spread evenly
        out[f"schedule_bound_s_jobs{jobs}"] = round(max(max(run_time), sum(run_time) / jobs), 1)
        out[f"outcomes_jobs{jobs}"] = {o: sum(r["outcome"] == o for r in records) for o in
                                       sorted({r["outcome"] for r in records})}
        out[f"slowest_runs_jobs{jobs}"] = sorted(
            ({"scenario": r["scenario"], "framework": r["framework"], "variant": r["variant"],
              "elapsed_s": r["counters"]["elapsed_s"], "cpu_s": r["counters"]["cpu_s"]} for r in records),
            key=lambda r: -(r["elapsed_s"] or 0))[:8]
    cores = os.cpu_count() or 1
    out["cpu_s_total"] = round(cpu_total, 1)
    out["physical_limit_s"] = round(cpu_total / cores, 1)
    return out


def markdown(results: dict[str, Any]) -> str:
    s, srv = results["suite"], results["server"]
    lines = [
        "# loopbench benchmark", "",
        f"Machine: {results['machine']['cores']} cores, {results['machine']['memory_gb']} GB, "
        f"{results['machine']['platform']}; Python {results['machine']['python']}. Date: {results['date']}. "
        f"Revision {results['machine']['loopbench_revision']}.", "",
        "## The suite", "",
        "| runs | wall, --jobs 1 | wall, --jobs 2 | physical limit (worker CPU / cores) | schedule bound, --jobs 2 "
        "| goal |",
        "|---|---|---|---|---|---|",
        f"| {s['runs']} | {s['wall_s_jobs1']} s | {s['wall_s_jobs2']} s | {s['physical_limit_s']} s "
        f"({s['cpu_s_total']} s CPU) | {s.get('schedule_bound_s_jobs2', '–')} s | < 90 s with --jobs 2 |", "",
        "The schedule bound is max(longest run, total run time / jobs): runs that wait (scripted delays, a "
        "client's retry backoff) hold a slot without using the CPU.", "",
        "Slowest runs (--jobs 2):", "",
        "| scenario | framework | variant | elapsed s | CPU s |", "|---|---|---|---|---|",
        *[f"| {r['scenario']} | {r['framework']} | {r['variant']} | {r['elapsed_s']} | {r['cpu_s']} |"
          for r in s["slowest_runs_jobs2"]],
        "", "## The model server", "",
        "| p50 | p99 | requests/s (concurrent runs) | goal |", "|---|---|---|---|",
        f"| {srv['p50_ms']} ms | {srv['p99_ms']} ms | {srv['rps']} ({srv['concurrent_runs']} runs) | p50 < 2 ms |",
        "", "## Frameworks: harness overhead and cost per model call", "",
        f"Scenario `{OVERHEAD_SCENARIO}`, interleaved bare/harnessed pairs; overhead = harnessed / bare wall "
        "time (median). Goal: ≤ 1.10.", "",
        "| framework | variant | overhead ratio | bare ms | harnessed ms | ms / model call | CPU ms / model call "
        "| peak RSS MB |", "|---|---|---|---|---|---|---|---|",
        *[f"| {fid} | {f['variant']} | {f['overhead_ratio']} | {f['bare_ms_median']} | {f['harnessed_ms_median']} "
          f"| {f['ms_per_model_call']} | {f['cpu_ms_per_model_call']} | {f['peak_rss_mb']} |"
          for fid, f in results["frameworks"].items()],
        "",
    ]
    return "\n".join(lines)


def run_bench(out_dir: Path, repetitions: int = 7, include_suite: bool = True) -> dict[str, Any]:
    env = environment()
    env.pop("node", None)
    results: dict[str, Any] = {
        "machine": {**env, "python": platform.python_version()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    defaults = [(f, v) for f, v in resolve_selection([]) if v == "default"
                and adapter_class(f).unavailable_reason() is None]
    with tempfile.TemporaryDirectory(prefix="loopbench-bench-") as tmp:
        work = Path(tmp)
        results["server"] = server_numbers()
        results["frameworks"] = overhead_numbers(defaults, repetitions, work / "overhead")
        results["suite"] = suite_numbers(work) if include_suite else {}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    if include_suite:
        (out_dir / "README.md").write_text(markdown(results))
    return results
