"""The runner: the model server and ledger in this process for the whole suite, adapters in warm worker
processes, one RunRecord per business task appended to results.jsonl as each task finishes.

A business task is one (scenario, framework, variant, repetition): the first run segment, then each resume
the scenario asks for, from a copy of the pause snapshot, in another worker process with a fresh adapter.
A worker that passes a segment's hard timeout is killed with its process group and replaced (the task is
`hung`); a worker that dies otherwise, or an adapter that raises, makes the task `error` with the reason.

This module orchestrates; each other job has its own module: the worker processes (`pool`, spoken to with the
typed messages of `messages`), judging a task into a RunRecord (`judge`, pure), the results file
(`results_store`, the one torn-line rule) and where a run happened (`environment`).
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import queue
import secrets
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import psutil

from loopbench import __version__
from loopbench.harness.adapter import adapter_class, adapter_target
from loopbench.harness.errors import BadInput, InputProblem, OutputUnwritable, WorkerDied, WorkerHung
from loopbench.harness.judge.judging import TaskEvidence, TaskIdentity, judge
from loopbench.harness.ledger.http import ledger_routes
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.model_server.app import ModelServer, running
from loopbench.harness.record import (
    Capabilities,
    NativeSignals,
    ReportedCounters,
    RunRecord,
    Segment,
    SegmentResult,
)
from loopbench.harness.results.shard import (
    MANIFEST_NAME,
    Shard,
    ShardManifest,
    expected_seconds,
    selection_digest,
    share,
)
from loopbench.harness.results.store import RESULTS_NAME, OutLock, ResultsStore, TaskKey
from loopbench.harness.run.environment import child_environment, environment
from loopbench.harness.run.messages import JobContext, WorkerJob
from loopbench.harness.run.pool import Slot
from loopbench.harness.run.progress import make_progress
from loopbench.harness.run.schedule import Schedule, SlotGovernor, SlotKind, waiting_slot_count
from loopbench.harness.scenario import Scenario, load_scenarios

Task = tuple[Scenario, str, str, int]  # scenario, framework, variant, repetition


@cache
def warmup_scenario() -> Scenario:
    """The scenario each worker runs once per idiom before timing it (never recorded)."""
    return load_scenarios([Path(__file__).with_name("warmup.yaml")])[0]
GOVERNOR_INTERVAL_S = 1.0  # how often the runner samples the machine's CPU to decide on another slot
HARD_MARGIN_S = 60.0  # added to a segment's scripted delays and deadline before it counts as hung


@dataclass
class RunPlan:
    scenarios: list[Scenario]
    variants: list[tuple[str, str]]
    repeat: int = 1
    jobs: int = 2
    out_dir: Path = Path("results/latest")
    hard_margin_s: float = HARD_MARGIN_S
    show_progress: bool = True
    resume_partial: bool = False  # --continue: keep DIR/results.jsonl and run only what is missing
    max_jobs: int | None = None  # open compute slots up to this many while the CPU idles (None: `jobs`, fixed)
    on_first_record: Callable[[], None] | None = None  # e.g. move results/latest here (harness/results/history.py)
    on_record: Callable[[RunRecord], None] | None = None  # each record once it is on disk (the pytest plugin)
    stop: threading.Event | None = None  # set by a caller to stop after the runs in flight (pytest -x)
    terminal: bool | None = None  # progress display: live (a terminal), plain lines, or None: stdout decides
    only: set[tuple[str, str, str]] | None = None  # run only these (scenario, framework, variant) cells (pytest -k)
    shard: Shard | None = None  # run only this share of the selection (`--shard K/N`, harness/results/shard.py)


@dataclass
class SuiteSummary:
    records: int = 0
    errors: int = 0
    skipped: int = 0  # already in the results file (--continue)
    interrupted: str | None = None  # the signal that stopped the run: "SIGINT" | "SIGTERM"
    outcomes: Tally[str] = field(default_factory=Tally)
    results_file: Path | None = None
    warnings: list[str] = field(default_factory=list)
    unwritable: str | None = None  # why the output could not be written (the suite stopped there)


# below this much free space a run's own failures may be the disk's (a framework's snapshot or session file not
# written), so a run that ends there is not recorded: the suite stops and `--continue` runs it again
MIN_FREE_BYTES = 1 << 20
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _hard_timeout(scenario: Scenario, margin: float, retry_window_s: float) -> float:
    return scenario.scripted_delay_s() + (scenario.limits.deadline_s or 0) + margin + (
        retry_window_s if scenario.model_fails_first() else 0)


class Suite:
    def __init__(self, plan: RunPlan):
        self.plan = plan
        self.out = plan.out_dir.resolve()  # absolute: adapters and drivers run in other working dirs
        self.ledger = Ledger()
        self.token = secrets.token_hex(16)
        self.server = ModelServer(extra_routes=ledger_routes(self.ledger, self.token),
                                  call_status=self.ledger.call_status, on_served=self.ledger.observe_turn)
        self.env = environment()
        self.base_url = ""
        # a fresh run replaces earlier results in this directory, once it has a record of its own
        self.store = ResultsStore(self.out / RESULTS_NAME, replace=not plan.resume_partial,
                                  on_first=plan.on_first_record)
        self.slots: queue.Queue[Slot] = queue.Queue()
        self.all_slots: list[Slot] = []
        self.stopping = threading.Event()
        self.versions: dict[str, tuple[str | None, dict[str, str]]] = {}
        self.worker_env = child_environment()  # allow-listed: no user credential or proxy reaches a framework
        self.compute_slots: list[Slot] = []
        self.waiting_slots: list[Slot] = []  # for the runs that wait, beside the compute slots (`schedule`)
        for _ in range(plan.jobs):
            self.slots.put(self.open_slot("compute"))
        self.retry_windows: dict[tuple[str, str], float] = {}  # (framework, variant): each idiom's own retries
        # (framework, variant) -> what the variant declares: an idiom may change a capability (a pause kept in
        # memory does not survive a restart)
        self.capabilities: dict[tuple[str, str], Capabilities] = {}
        self.about: dict[tuple[str, str], str] = {}  # (framework, variant) -> what the variant is
        for framework, variant in plan.variants:
            idiom = adapter_class(framework, variant)
            self.about[(framework, variant)] = idiom.about
            self.capabilities[(framework, variant)] = idiom.capabilities
            cls = adapter_class(framework)
            self.versions[framework] = (cls.version(), cls.package_versions())
            self.retry_windows[(framework, variant)] = idiom.capabilities.retry_window_s

    def open_slot(self, kind: SlotKind) -> Slot:
        """Another slot (its workers start on its first task)."""
        slot = Slot(len(self.all_slots), self.out / "traces" / "workers", self.worker_env, self.warm_job,
                    self.stopping)
        self.all_slots.append(slot)
        (self.compute_slots if kind == "compute" else self.waiting_slots).append(slot)
        return slot

    @contextmanager
    def warm_job(self, framework: str, variant: str) -> Iterator[WorkerJob]:
        """The warm job of one idiom in a worker: its warm-up run (harness/run/warmup.yaml) registered with the
        server and the ledger under a run id of its own while the job runs, then forgotten (never recorded)."""
        run_id = f"warmup-{framework}-{variant}-{uuid.uuid4().hex[:6]}"
        api_key = f"lb-{secrets.token_hex(12)}"
        scenario = warmup_scenario()
        self.server.register_run(run_id, api_key, scenario)
        self.ledger.register_run(run_id, scenario)
        work = Path(tempfile.mkdtemp(prefix="loopbench-warmup-"))
        try:
            yield WorkerJob(op="warm", framework=framework, adapter=adapter_target(framework), variant=variant,
                            scenario_file=str(Path(scenario.source).resolve()),
                            ctx=JobContext(run_id=run_id, api_key=api_key, base_url=self.base_url,
                                           ledger_token=self.token, variant=variant, work_dir=work / "work",
                                           snapshot_dir=work / "snapshot", task_dir=work / "state"))
        finally:
            self.server.unregister_run(run_id)
            self.ledger.unregister_run(run_id)
            shutil.rmtree(work, ignore_errors=True)

    # ---- one business task
    def run_task(self, scenario: Scenario, framework: str, variant: str, repetition: int,
                 slot: Slot | None = None) -> RunRecord:
        """One business task on `slot` (default: the next free compute slot)."""
        run_id = f"{scenario.id[:24]}-{framework}-{variant}-r{repetition}-{uuid.uuid4().hex[:6]}"
        api_key = f"lb-{secrets.token_hex(12)}"
        started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.server.register_run(run_id, api_key, scenario)
        self.ledger.register_run(run_id, scenario)
        task_dir = self.out / "runs" / run_id
        segments: list[Segment] = []
        results: list[SegmentResult] = []
        snapshots: list[Path] = []
        harness_error: str | None = None
        hung_reason: str | None = None
        cpu = own = 0.0
        runner_cpu0 = time.thread_time()  # this thread's own work for the task (waiting costs nothing)
        rss: float | None = None
        own_slot = slot is None
        if slot is None:
            slot = self.slots.get()
        try:
            steps: list[tuple[str, int | None, dict[str, str]]] = [("run", None, {})]
            steps += [("resume", r.pause, dict(r.decisions)) for r in scenario.resumes]
            if scenario.cancel is not None and scenario.cancel.resume:
                steps.append(("resume", None, {}))  # continue the cancelled task from what the framework kept
            cancel_kept: Path | None = None
            told_cancel: float | None = None
            for i, (op, pause, decisions) in enumerate(steps):
                ctx = JobContext(
                    run_id=run_id, api_key=api_key, base_url=self.base_url, ledger_token=self.token,
                    variant=variant, work_dir=task_dir / f"segment{i}" / "work",
                    snapshot_dir=task_dir / f"segment{i}" / "snapshot", task_dir=task_dir / "state",
                )
                snapshot: Path | None = None
                if op == "resume":
                    kept = cancel_kept if pause is None else snapshots[pause - 1] if pause <= len(snapshots) else None
                    if kept is None:
                        break  # the framework never made this pause (or kept nothing at the cancel): no resume
                    snapshot = task_dir / f"segment{i}" / "from-snapshot"
                    shutil.copytree(kept, snapshot)
                    self.server.begin_segment(run_id)
                job = WorkerJob(op=op, framework=framework, adapter=adapter_target(framework),  # type: ignore[arg-type]
                                variant=variant,
                                scenario_file=str(Path(scenario.source).resolve()), ctx=ctx, snapshot=snapshot,
                                decisions=decisions)
                run_worker, resume_worker = slot.workers(framework)
                worker = run_worker if op == "run" else resume_worker
                timeout = _hard_timeout(scenario, self.plan.hard_margin_s, self.retry_windows[(framework, variant)])
                answer = worker.request(job, timeout)
                if not answer.ok or answer.segment is None:
                    harness_error = answer.error or "unknown adapter error"
                    (task_dir / f"segment{i}").mkdir(parents=True, exist_ok=True)
                    (task_dir / f"segment{i}" / "traceback.txt").write_text(answer.traceback)
                    break
                result = answer.segment
                results.append(result)
                # the per-task set-up is CPU spent for the segment, and loopbench's own (an app does it once)
                cpu += answer.cpu_s + answer.prepare_cpu_s
                own += answer.own_cpu_s + answer.prepare_cpu_s
                rss = max(rss or 0.0, answer.peak_rss_mb)
                sent = self.ledger.cancel_sent(run_id)
                cancel_sent_s, told_cancel = (sent if sent != told_cancel else None), sent
                segments.append(Segment(
                    kind=op, from_pause=pause, decisions=decisions, outcome_signals=result.signals,  # type: ignore[arg-type]
                    counters=result.counters, pending=result.signals.pending, elapsed_s=answer.elapsed_s,
                    worker_pid=answer.pid, worker_warm_s=answer.warm_s, prepare_s=answer.prepare_s,
                    cancel_sent_s=cancel_sent_s,
                ))
                if result.signals.ended == "cancelled":
                    if result.snapshot is None:  # nothing kept that a caller could continue from
                        break
                    cancel_kept = Path(result.snapshot)
                    continue
                if result.signals.ended == "paused":
                    if result.snapshot is None:  # an in-process pause (e.g. a callback): nothing to resume
                        break
                    snapshots.append(Path(result.snapshot))
        except WorkerHung as exc:  # the segment that never answered is recorded too, with the time waited for it
            hung_reason = str(exc)
            segments.append(Segment(
                kind=op, from_pause=pause, decisions=decisions,  # type: ignore[arg-type]
                outcome_signals=NativeSignals(ended="hung", exception_message=hung_reason),
                counters=ReportedCounters(), elapsed_s=round(exc.waited_s, 3), worker_pid=exc.pid,
            ))
        except WorkerDied as exc:
            harness_error = f"worker died: {exc}"
        except Exception as exc:  # loopbench broke on this task: that task is `error`, the suite goes on
            if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:  # the disk's, not the framework's: no record
                raise OutputUnwritable.of(task_dir, exc) from exc
            harness_error = f"harness: {type(exc).__name__}: {exc}"
        finally:
            if own_slot:
                self.slots.put(slot)
        if self.stopping.is_set():  # interrupted: this task is not a result (--continue runs it again); no waiting
            self.server.unregister_run(run_id)
            self.ledger.unregister_run(run_id)
            raise Stopped(run_id)
        # an abandoned call still commits at its scripted point: let it, so the record sees every effect
        self.ledger.wait_settled(run_id, scenario.scripted_delay_s() + 5)
        version, packages = self.versions[framework]
        identity = TaskIdentity(run_id=run_id, scenario=scenario, framework=framework, variant=variant,
                                repetition=repetition, started_at=started_at, loopbench_version=__version__,
                                framework_version=version, packages=packages, environment=self.env,
                                capabilities=self.capabilities[(framework, variant)],
                                variant_about=self.about.get((framework, variant)))
        evidence = TaskEvidence(
            segments=segments, results=results, requests=self.server.requests(run_id),
            ledger=self.ledger.entries(run_id), capped=self.server.capped(run_id),
            violations=self.server.violations(run_id), auxiliary=self.server.auxiliary(run_id),  # type: ignore[arg-type]
            harness_error=harness_error, hung_reason=hung_reason, cpu_s=cpu, own_cpu_s=own,
            peak_rss_mb=rss, runner_cpu_s=time.thread_time() - runner_cpu0,
        )
        trace = self.out / "traces" / f"{run_id}.jsonl"
        try:
            judged = judge(identity, evidence, trace=str(trace.relative_to(self.out)))
        except Exception as exc:  # judging broke (e.g. out of memory): still one record, `error`, with why
            why = f"harness: judging failed: {type(exc).__name__}: {exc}"
            judged = judge(identity, TaskEvidence(segments=[], results=[], requests=[], ledger=[], harness_error=why),
                           trace=str(trace.relative_to(self.out)))
        if shutil.disk_usage(self.out).free < MIN_FREE_BYTES:
            raise OutputUnwritable(self.out, f"less than {MIN_FREE_BYTES >> 20} MiB free on its disk (run {run_id} "
                                   "ended there, so it is not recorded: its failures may be the disk's)")
        self._write_trace(trace, judged.record, judged.reason)
        self.server.unregister_run(run_id)
        self.ledger.unregister_run(run_id)
        return judged.record

    @staticmethod
    def _write_trace(path: Path, record: RunRecord, reason: str) -> None:
        events: list[tuple[float, dict[str, Any]]] = []
        for r in record.requests:
            events.append((r.t_s, {"event": "model_request", **r.model_dump(exclude_defaults=True)}))
        for e in record.ledger:
            events.append((e.started_s, {"event": f"tool_{e.kind}", **e.model_dump(exclude_defaults=True)}))
        events.sort(key=lambda x: x[0])
        try:
            with open(path, "w", encoding="utf-8") as fh:
                for i, seg in enumerate(record.segments):
                    fh.write(json.dumps({"event": "segment", "index": i, **seg.model_dump(mode="json")}) + "\n")
                for _, ev in events:
                    fh.write(json.dumps(ev, default=str) + "\n")
                fh.write(json.dumps({"event": "outcome", "outcome": record.outcome, "rule": record.outcome_rule,
                                     "reason": reason, "verdict": record.verdict}) + "\n")
        except OSError as exc:
            path.unlink(missing_ok=True)  # no half trace beside a record that will not be written
            raise OutputUnwritable.of(path, exc) from exc

    def kill_workers(self) -> None:
        for slot in self.all_slots:
            slot.kill()

    def close(self) -> None:
        for slot in self.all_slots:
            slot.close()


def _prepare_out(out: Path) -> None:
    try:
        (out / "traces").mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise BadInput(f"--out {out}: not writable ({exc.strerror})") from None


def run_suite(plan: RunPlan) -> SuiteSummary:
    """Run the plan into `plan.out_dir`, which is locked for the run (a second writer is BadInput). SIGINT and
    SIGTERM stop it cleanly: finished runs are kept, the workers and their children are killed, and
    `summary.interrupted` names the signal."""
    _prepare_out(plan.out_dir)
    results = plan.out_dir / RESULTS_NAME
    summary = SuiteSummary(results_file=results)
    done: set[TaskKey] = set()
    with OutLock(plan.out_dir), _sigterm_interrupts():
        _write_manifest(plan)
        if plan.resume_partial:
            done, summary.warnings = ResultsStore(results).finished_keys()
        return _run_tasks(plan, summary, done)


def _every(plan: RunPlan) -> list[Task]:
    """Every run of the plan, in the runner's order: framework-major, so a slot keeps one framework's warm
    workers for as long as possible."""
    return [(s, f, v, r) for f, v in plan.variants for s in plan.scenarios
            if plan.only is None or (s.id, f, v) in plan.only for r in range(1, plan.repeat + 1)]


def _selected(plan: RunPlan) -> list[Task]:
    """The runs this plan runs: all of them, or its shard's share."""
    return _every(plan) if plan.shard is None else share(_every(plan), plan.shard, _expected)


def shard_line(plan: RunPlan) -> str:
    """`shard 2/3: 14 of the 41 runs, expected 95 s of 290 s` (declared durations: harness/results/shard.py)."""
    every, mine = _every(plan), _selected(plan)
    return (f"shard {plan.shard}: {len(mine)} of the {len(every)} runs, expected {sum(map(_expected, mine)):.0f} s "
            f"of {sum(map(_expected, every)):.0f} s")


def _expected(task: Task) -> float:
    return expected_seconds(task[0], adapter_class(task[1], task[2]).capabilities.retry_window_s)


def _write_manifest(plan: RunPlan) -> None:
    """DIR/shard.json, before any run: which share of which selection the directory holds. `--continue` into a
    directory of another shard or selection is bad input; a run that is not a shard leaves no manifest."""
    before = ShardManifest.read(plan.out_dir)
    if plan.shard is None:
        if before is not None and plan.resume_partial:
            raise BadInput([InputProblem(str(plan.out_dir / MANIFEST_NAME), "--continue", f"holds shard "
                                         f"{before.shard}: continue it with `--shard {before.shard}`")])
        if before is not None:
            (plan.out_dir / MANIFEST_NAME).unlink()
        return
    every, mine = _every(plan), _selected(plan)
    manifest = ShardManifest(
        shard=plan.shard, runs=len(every),
        selection=selection_digest([(s.id, f, v, r) for s, f, v, r in every],
                                   {s.id: s.digest() for s in plan.scenarios}),
        keys=[(s.id, f, v, r) for s, f, v, r in mine], expected_s=round(sum(_expected(t) for t in mine), 1))
    if plan.resume_partial and before is not None and before != manifest:
        same = "this" if before.selection == manifest.selection else "another"
        raise BadInput([InputProblem(str(plan.out_dir / MANIFEST_NAME), "--continue", f"holds shard {before.shard} "
                                     f"of {same} selection, not shard {plan.shard}: continue it with the same "
                                     "--shard and selection")])
    manifest.write(plan.out_dir)


class Stopped(Exception):
    """The suite is stopping (a signal, a full disk, a caller's stop): the task in flight is dropped."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C."""


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return

    def on_term(_signum: int, _frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _waits(task: Task) -> bool:
    """A run whose time is mostly declared waiting: a retry storm (tagged slow), a model that fails first (the
    framework's backoff), or scripted delays."""
    scenario = task[0]
    return "slow" in scenario.tags or scenario.scripted_delay_s() > 0 or scenario.model_fails_first()


def _run_tasks(plan: RunPlan, summary: SuiteSummary, done: set[TaskKey]) -> SuiteSummary:
    wanted = _selected(plan)
    tasks = [t for t in wanted if (t[0].id, t[1], t[2], t[3]) not in done]
    summary.skipped = len(wanted) - len(tasks)
    suite = Suite(plan)
    schedule: Schedule[Task] = Schedule(
        tasks, waits=_waits, storm_s=lambda t: suite.retry_windows[(t[1], t[2])] if "slow" in t[0].tags else 0.0)
    for _ in range(waiting_slot_count(schedule.waiting_count, os.cpu_count() or 1)):
        suite.open_slot("waiting")
    progress = make_progress(plan.show_progress, plan.terminal)
    progress.begin(len(tasks))
    progress.status("starting the model server")
    with running(suite.server) as base_url:
        suite.base_url = base_url
        progress.status(f"starting workers in {len(suite.all_slots)} slot(s): each imports its framework's SDK "
                        "once, before its first run")
        lock = threading.Lock()

        def serve(slot: Slot, kind: SlotKind) -> None:
            while not suite.stopping.is_set() and (task := schedule.next(kind)) is not None:
                try:
                    progress.run_started()
                    try:
                        record = suite.run_task(*task, slot=slot)
                    except Stopped:
                        return
                    with lock:
                        if suite.stopping.is_set():  # interrupted mid-run: not a result; --continue runs it again
                            return
                        suite.store.append(record)
                        summary.records += 1
                        summary.errors += record.verdict == "error"  # loopbench's failure or the scenario's
                        summary.outcomes[record.outcome] += 1
                        progress.run_finished(record)
                        if plan.on_record is not None:
                            plan.on_record(record)
                except OutputUnwritable as exc:  # every later record would fail the same way: stop here
                    with lock:
                        summary.unwritable = summary.unwritable or str(exc)
                    suite.stopping.set()
                    suite.kill_workers()
                    return

        most = max(plan.max_jobs or plan.jobs, plan.jobs)
        pool = ThreadPoolExecutor(max_workers=len(suite.all_slots) + most - plan.jobs)
        try:
            futures = [pool.submit(serve, slot, "compute") for slot in suite.compute_slots]
            futures += [pool.submit(serve, slot, "waiting") for slot in suite.waiting_slots]
            governor = SlotGovernor(plan.jobs, most)
            psutil.cpu_percent(None)  # the first sample starts the interval
            while not all(f.done() for f in futures):
                wait(futures, timeout=GOVERNOR_INTERVAL_S, return_when=FIRST_EXCEPTION)
                if plan.stop is not None and plan.stop.is_set():  # a caller's stop (pytest -x): no new runs
                    suite.stopping.set()
                waiting = schedule.compute_waiting() and not suite.stopping.is_set()
                if governor.sample(psutil.cpu_percent(None), waiting):
                    futures.append(pool.submit(serve, suite.open_slot("compute"), "compute"))
            for f in futures:
                f.result()
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: keep what finished, stop the rest cleanly
            summary.interrupted = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
            suite.stopping.set()
            suite.kill_workers()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            suite.close()
            progress.end()
    return summary
