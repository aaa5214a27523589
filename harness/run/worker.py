"""A warm worker process: runs adapter segments on request, one at a time.

Spoken over line-delimited JSON: the runner writes one job per line on stdin; the worker answers one line per
job on its protocol channel (the original stdout; everything the frameworks print goes to stderr instead).
SDK imports are paid once per worker: adapter classes are cached. Each job gets a fresh adapter instance.

Job: `messages.WorkerJob`; answer: `messages.WorkerAnswer` (`ok: false` with the error and its traceback for
an adapter or harness bug: the worker stays alive).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import psutil

from loopbench.harness.adapter import Adapter, RunContext, load_adapter
from loopbench.harness.own_work import OWN_WORK
from loopbench.harness.run import reaper
from loopbench.harness.run.messages import WorkerAnswer, WorkerJob
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


def _adapter_class(job: WorkerJob) -> type[Adapter]:
    """The job's framework, imported from the target the runner named (and warmed) once per worker."""
    if job.adapter not in _adapters:
        _adapters[job.adapter] = load_adapter(job.adapter)
        _adapters[job.adapter].warm()
    return _adapters[job.adapter]


def _context(job: WorkerJob) -> RunContext:
    assert job.ctx is not None
    ctx = RunContext(**job.ctx.model_dump())
    for d in (ctx.task_dir, ctx.work_dir, ctx.snapshot_dir):
        d.mkdir(parents=True, exist_ok=True)
    return ctx


def _warm(job: WorkerJob) -> WorkerAnswer:
    """Load the framework's SDK and, when the job brings a warm-up scenario, run it through the idiom once — its
    run and a resume of its pause — so that what an SDK loads or builds on first use (lazy imports, clients,
    schemas, stores) is paid here, outside every timed segment. The warm-up's outcome is not a result: only a
    broken adapter (an exception) is reported, and the real runs will show it too."""
    t0 = time.perf_counter()
    cls = _adapter_class(job).idioms()[job.variant]
    if job.ctx is not None and job.scenario_file is not None and cls.warm_up_run:
        scenario, ctx = _scenario(job.scenario_file), _context(job)
        adapter = cls()
        _loop.run(adapter.prepare(scenario, ctx))
        first = _loop.run(adapter.segment(scenario, ctx))
        if first.signals.ended == "paused" and first.snapshot is not None:
            decisions = {p.call_id: "approve" for p in first.signals.pending if p.call_id}
            resumed = ctx.work_dir.parent / "resume"
            again = dataclasses.replace(ctx, work_dir=resumed / "work", snapshot_dir=resumed / "snapshot")
            for d in (again.work_dir, again.snapshot_dir):
                d.mkdir(parents=True, exist_ok=True)
            resumer = cls()
            _loop.run(resumer.prepare(scenario, again))
            _loop.run(resumer.segment(scenario, again, Path(first.snapshot), decisions))
    return WorkerAnswer(ok=True, pid=os.getpid(), elapsed_s=time.perf_counter() - t0)


def handle(job: WorkerJob) -> WorkerAnswer:
    if job.op == "warm":  # start-up, SDK imports and the warm-up run, timed apart from any run
        return _warm(job)
    assert job.ctx is not None and job.scenario_file is not None, f"a {job.op} job needs ctx and scenario_file"
    adapter = _adapter_class(job).idioms()[job.variant]()
    scenario = _scenario(job.scenario_file)
    ctx = _context(job)
    p0, pc0 = time.perf_counter(), _cpu_s()
    _loop.run(adapter.prepare(scenario, ctx))  # an application's set-up: before the segment's clock
    prepare_s = time.perf_counter() - p0
    prepare_cpu = _cpu_s() - pc0 + adapter.prepare_child_cpu_s
    # what lives now (the adapter's long-lived children, started at warm-up) outlives the segment; whatever
    # the segment starts does not, even what left this process group (reaper.py)
    kept = reaper.descendants()
    OWN_WORK.take()  # start the segment's count at zero
    cpu0, t0 = _cpu_s(), time.perf_counter()
    try:
        if job.op == "run":
            segment = _loop.run(adapter.segment(scenario, ctx))
        else:
            assert job.snapshot is not None, "a resume job needs a snapshot"
            segment = _loop.run(adapter.segment(scenario, ctx, job.snapshot, job.decisions))
    finally:
        elapsed = time.perf_counter() - t0
        reaper.end_strays(kept)  # also when the adapter raised; reaped before the CPU is read: theirs counts
    cpu, own = _cpu_s() - cpu0, OWN_WORK.take()
    return WorkerAnswer(ok=True, segment=segment, elapsed_s=elapsed, prepare_s=round(prepare_s, 4),
                        prepare_cpu_s=prepare_cpu, cpu_s=cpu + segment.live_child_cpu_s,
                        own_cpu_s=own + segment.live_child_own_cpu_s, peak_rss_mb=_peak_rss_mb(), pid=os.getpid())


PARENT_POLL_S = 0.5


def _die_with_parent() -> None:
    """When the runner is gone (killed, even with -9), take this worker's whole process tree and group with it:
    the framework's children (a Claude CLI, a Node driver) are in them, and nobody else would ever stop them.
    The tree first: a descendant in a session of its own (`setsid`) is not in the group."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        reaper.kill_descendants(psutil.Process())
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def main() -> None:
    # orphans among the runs' descendants (a `setsid` child whose parent exited) become this worker's children,
    # so they stay in its process tree, where end_strays() and the pool's kill() find them (no-op off Linux)
    reaper.become_subreaper()
    # the protocol channel is a private copy of stdout; fd 1 then points at stderr, so whatever a framework
    # prints cannot corrupt the protocol
    _die_with_parent()
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(WorkerJob.model_validate_json(line))
        except BaseException as exc:  # an adapter or harness bug: report it, stay alive
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            answer = WorkerAnswer(ok=False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        channel.write(answer.model_dump_json() + "\n")
        channel.flush()
    _loop.close()  # stdin closed: finalize what lives in the loop (the ledger's HTTP session) before exiting
    reaper.end_escaped()  # what left this group would survive the pool's killpg


if __name__ == "__main__":
    main()
