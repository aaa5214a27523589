"""A warm worker process: runs adapter segments on request, one at a time.

Spoken over line-delimited JSON: the runner writes one job per line on stdin; the worker answers one line per
job on its protocol channel (the original stdout; everything the frameworks print goes to stderr instead).
SDK imports are paid once per worker: adapter classes are cached. Each job gets a fresh adapter instance.

Job:    {"op": "warm"|"run"|"resume", "framework", "variant", "scenario_file", "ctx": {...},
         "snapshot": path, "decisions": {...}}
Answer: {"ok": true, "segment": SegmentResult, "elapsed_s", "cpu_s", "peak_rss_mb", "pid"}
        {"ok": false, "error": "<type>: <message>", "traceback": "..."}  (adapter or harness bug)
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from loopbench.harness.adapter import Adapter, RunContext, adapter_class
from loopbench.harness.scenario import Scenario, load_scenarios

_adapters: dict[str, type[Adapter]] = {}
# one event loop for the worker's life: SDKs that cache an async client per process (langchain-openai) keep a
# live loop across runs
_loop = asyncio.Runner()
_scenarios: dict[str, Scenario] = {}


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return max(me.ru_maxrss, kids.ru_maxrss) / 1024


def _scenario(path: str) -> Scenario:
    if path not in _scenarios:
        _scenarios[path] = load_scenarios([Path(path)])[0]
    return _scenarios[path]


def _adapter_class(framework: str) -> type[Adapter]:
    if framework not in _adapters:
        _adapters[framework] = adapter_class(framework)
        _adapters[framework].warm()
    return _adapters[framework]


def handle(job: dict[str, Any]) -> dict[str, Any]:
    if job.get("op") == "warm":  # start-up and SDK imports, timed apart from any run
        _adapter_class(job["framework"])
        return {"ok": True, "pid": os.getpid()}
    adapter = _adapter_class(job["framework"])(job.get("variant", "default"))
    scenario = _scenario(job["scenario_file"])
    raw_ctx = job["ctx"]
    ctx = RunContext(**{**raw_ctx, "work_dir": Path(raw_ctx["work_dir"]),
                        "snapshot_dir": Path(raw_ctx["snapshot_dir"]), "task_dir": Path(raw_ctx["task_dir"])})
    ctx.task_dir.mkdir(parents=True, exist_ok=True)
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
    cpu0, t0 = _cpu_s(), time.perf_counter()
    if job["op"] == "run":
        segment = _loop.run(adapter.run(scenario, ctx))
    else:
        segment = _loop.run(adapter.resume(scenario, Path(job["snapshot"]), job.get("decisions", {}), ctx))
    return {
        "ok": True,
        "segment": segment.model_dump(mode="json"),
        "elapsed_s": time.perf_counter() - t0,
        "cpu_s": _cpu_s() - cpu0,
        "peak_rss_mb": _peak_rss_mb(),
        "pid": os.getpid(),
    }


def main() -> None:
    # the protocol channel is a private copy of stdout; fd 1 then points at stderr, so whatever a framework
    # prints cannot corrupt the protocol
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(json.loads(line))
        except BaseException as exc:  # an adapter or harness bug: report it, stay alive
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        channel.write(json.dumps(answer) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
