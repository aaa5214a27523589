"""The runner: the model server and ledger in this process for the whole suite, adapters in warm worker
processes, one RunRecord per business task appended to results.jsonl as each task finishes.

A business task is one (scenario, framework, variant, repetition): the first run segment, then each resume
the scenario asks for, from a copy of the pause snapshot, in another worker process with a fresh adapter.
A worker that passes a segment's hard timeout is killed with its process group and replaced (the task is
`hung`); a worker that dies otherwise, or an adapter that raises, makes the task `error` with the reason.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter as Tally
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from loopbench import __version__
from loopbench.harness.adapter import adapter_class
from loopbench.harness.counters import build_counters
from loopbench.harness.errors import BadInput, WorkerDied, WorkerHung
from loopbench.harness.ledger import Ledger
from loopbench.harness.ledger_http import ledger_routes
from loopbench.harness.model_server.app import ModelServer, running
from loopbench.harness.outcome import completion_holds, derive_outcome
from loopbench.harness.record import Deviation, NativeRecord, NativeSignals, RunRecord, Segment, SegmentResult
from loopbench.harness.scenario import Scenario
from loopbench.harness.verdict import compare, verdict_of

HARD_MARGIN_S = 60.0  # added to a segment's scripted delays and deadline before it counts as hung
WARM_TIMEOUT_S = 180.0  # a worker's start-up and SDK imports, not counted in any run's timeout
# the checkout this code runs from, when it does (an installed wheel has no .git beside its package)
CHECKOUT = Path(str(resources.files("loopbench"))).parent


class Worker:
    """One warm worker process (`python -m loopbench.harness.worker`) in its own process group."""

    def __init__(self, log_path: Path, env: dict[str, str]):
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._warm: set[str] = set()

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "a")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loopbench.harness.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, text=True, start_new_session=True, env=self.env,
        )
        log.close()
        self._lines = queue.Queue()
        self._warm = set()
        threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True).start()

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # EOF: the worker died

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def request(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        framework = job.get("framework")
        if framework and job["op"] != "warm" and framework not in self._warm:
            answer = self.request({"op": "warm", "framework": framework}, WARM_TIMEOUT_S)
            if not answer.get("ok"):
                return answer
            self._warm.add(framework)
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.kill()
            raise WorkerDied(f"worker stdin closed: {exc}") from None
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise WorkerHung(f"no answer within the hard timeout of {timeout_s:.0f} s") from None
        if line is None:
            code = self.proc.wait()
            self.proc = None
            raise WorkerDied(f"worker process exited with code {code} (see {self.log_path})")
        return json.loads(line)

    def kill(self) -> None:
        """Kill the worker and every process of its group (framework children: the Claude CLI, Node)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc = None

    def close(self) -> None:
        if self.proc is None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            pass
        self.kill()


class Slot:
    """One place to run a task: a pair of warm workers for one framework at a time — runs go to the first,
    resumes to the second (another process). A worker only ever hosts one framework, so its CPU time and peak
    memory are that framework's, and no SDK shares a process with another."""

    def __init__(self, index: int, log_dir: Path, env: dict[str, str]):
        self.index, self.log_dir, self.env = index, log_dir, env
        self.framework: str | None = None
        self.runner: Worker | None = None
        self.resumer: Worker | None = None

    def workers(self, framework: str) -> tuple[Worker, Worker]:
        if framework != self.framework or self.runner is None or self.resumer is None:
            self.close()
            self.framework = framework
            self.runner = Worker(self.log_dir / f"slot{self.index}-{framework}-run.log", self.env)
            self.resumer = Worker(self.log_dir / f"slot{self.index}-{framework}-resume.log", self.env)
        return self.runner, self.resumer

    def kill(self) -> None:
        for worker in (self.runner, self.resumer):
            if worker is not None:
                worker.kill()

    def close(self) -> None:
        for worker in (self.runner, self.resumer):
            if worker is not None:
                worker.close()


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


@dataclass
class SuiteSummary:
    records: int = 0
    errors: int = 0
    skipped: int = 0  # already in the results file (--continue)
    interrupted: bool = False
    outcomes: Tally[str] = field(default_factory=Tally)
    results_file: Path | None = None
    warnings: list[str] = field(default_factory=list)


TaskKey = tuple[str, str, str, int]


def finished_keys(path: Path) -> tuple[set[TaskKey], list[str]]:
    """Keys of the complete records in a results file. A torn last line (a kill mid-write) is cut off, with
    a warning, so appending goes on from the last complete record."""
    if not path.exists():
        return set(), []
    raw = path.read_bytes()
    keep = raw if raw.endswith(b"\n") or not raw else raw[: raw.rfind(b"\n") + 1]
    warnings = []
    if keep != raw:
        warnings.append(f"{path}: ignored a torn last line ({len(raw) - len(keep)} bytes) left by an interrupted run")
        path.write_bytes(keep)
    keys: set[TaskKey] = set()
    for n, line in enumerate(keep.decode("utf-8").splitlines(), 1):
        try:
            rec = json.loads(line)
            keys.add((rec["scenario"], rec["framework"], rec["variant"], rec["repetition"]))
        except (ValueError, KeyError, TypeError):
            raise BadInput(f"{path}: line {n} is not a RunRecord; cannot --continue from this file") from None
    return keys, warnings


def _git_revision() -> str:
    """The checkout's revision (`+dirty` with uncommitted changes); an installed wheel: `v<version>`."""
    if not (CHECKOUT / ".git").exists():
        return f"v{__version__}"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=CHECKOUT, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=CHECKOUT, capture_output=True, text=True,
                               timeout=5).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment() -> dict[str, Any]:
    import psutil

    return {
        "loopbench_revision": _git_revision(),
        "python": platform.python_version(),
        "node": shutil.which("node")
        and subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }


class ResultsWriter:
    """Appends one complete line per record and fsyncs it, so a crash or kill loses no finished run."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def append(self, record: RunRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _hard_timeout(scenario: Scenario, margin: float, retry_window_s: float) -> float:
    failing_model = any(t.fail_first for t in scenario.script)
    return scenario.scripted_delay_s() + (scenario.limits.deadline_s or 0) + margin + (
        retry_window_s if failing_model else 0)


class Suite:
    def __init__(self, plan: RunPlan):
        self.plan = plan
        self.out = plan.out_dir.resolve()  # absolute: adapters and drivers run in other working dirs
        self.ledger = Ledger()
        self.token = secrets.token_hex(16)
        self.server = ModelServer(extra_routes=ledger_routes(self.ledger, self.token),
                                  call_status=self.ledger.call_status)
        self.env = environment()
        self.base_url = ""
        self.writer = ResultsWriter(self.out / "results.jsonl")
        self.slots: queue.Queue[Slot] = queue.Queue()
        self.all_slots: list[Slot] = []
        self.stopping = threading.Event()
        self.versions: dict[str, tuple[str | None, dict[str, str]]] = {}
        worker_env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for i in range(plan.jobs):
            logs = self.out / "traces" / "workers"
            slot = Slot(i, logs, worker_env)
            self.all_slots.append(slot)
            self.slots.put(slot)
        self.retry_windows: dict[str, float] = {}
        for framework, _ in plan.variants:
            cls = adapter_class(framework)
            self.versions[framework] = (cls.version(), cls.package_versions())
            self.retry_windows[framework] = cls.capabilities.retry_window_s

    # ---- one business task
    def run_task(self, scenario: Scenario, framework: str, variant: str, repetition: int) -> RunRecord:
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
        cpu = 0.0
        rss: float | None = None
        slot = self.slots.get()
        try:
            steps: list[tuple[str, int | None, dict[str, str]]] = [("run", None, {})]
            steps += [("resume", r.pause, dict(r.decisions)) for r in scenario.resumes]
            for i, (op, pause, decisions) in enumerate(steps):
                job: dict[str, Any] = {
                    "op": op, "framework": framework, "variant": variant, "scenario_file": scenario.source,
                    "ctx": {
                        "run_id": run_id, "api_key": api_key, "base_url": self.base_url,
                        "ledger_token": self.token, "variant": variant,
                        "work_dir": str(task_dir / f"segment{i}" / "work"),
                        "snapshot_dir": str(task_dir / f"segment{i}" / "snapshot"),
                        "task_dir": str(task_dir / "state"),
                    },
                }
                if op == "resume":
                    if pause is None or pause > len(snapshots):
                        break  # the framework never made this pause: nothing to resume
                    copy = task_dir / f"segment{i}" / "from-snapshot"
                    shutil.copytree(snapshots[pause - 1], copy)
                    job["snapshot"], job["decisions"] = str(copy), decisions
                    self.server.begin_segment(run_id)
                run_worker, resume_worker = slot.workers(framework)
                worker = run_worker if op == "run" else resume_worker
                timeout = _hard_timeout(scenario, self.plan.hard_margin_s, self.retry_windows[framework])
                answer = worker.request(job, timeout)
                if not answer.get("ok"):
                    harness_error = answer.get("error", "unknown adapter error")
                    (task_dir / f"segment{i}").mkdir(parents=True, exist_ok=True)
                    (task_dir / f"segment{i}" / "traceback.txt").write_text(answer.get("traceback", ""))
                    break
                result = SegmentResult.model_validate(answer["segment"])
                results.append(result)
                cpu += answer["cpu_s"]
                rss = max(rss or 0.0, answer["peak_rss_mb"])
                segments.append(Segment(
                    kind=op, from_pause=pause, decisions=decisions, outcome_signals=result.signals,
                    counters=result.counters, pending=result.signals.pending, elapsed_s=answer["elapsed_s"],
                    worker_pid=answer.get("pid"),
                ))
                if result.signals.ended == "paused":
                    if result.snapshot is None:  # an in-process pause (e.g. a callback): nothing to resume
                        break
                    snapshots.append(Path(result.snapshot))
        except WorkerHung as exc:
            hung_reason = str(exc)
        except WorkerDied as exc:
            harness_error = f"worker died: {exc}"
        finally:
            self.slots.put(slot)
        return self._record(scenario, framework, variant, repetition, run_id, started_at, segments, results,
                            harness_error, hung_reason, cpu, rss)

    def _record(self, scenario: Scenario, framework: str, variant: str, repetition: int, run_id: str,
                started_at: str, segments: list[Segment], results: list[SegmentResult], harness_error: str | None,
                hung_reason: str | None, cpu: float, rss: float | None) -> RunRecord:
        # an abandoned call still commits at its scripted point: let it, so the record sees every effect
        self.ledger.wait_settled(run_id, scenario.scripted_delay_s() + 5)
        requests = self.server.requests(run_id)
        ledger = self.ledger.entries(run_id)
        last: NativeSignals | None = segments[-1].outcome_signals if segments else None
        hung = hung_reason is not None
        if hung and last is None:
            last = NativeSignals(ended="raised")
        evidence = completion_holds(scenario.completion, last.final_text if last else None, ledger)
        decision = derive_outcome(last, harness_error=harness_error, hung=hung,
                                  capped=self.server.capped(run_id), evidence=evidence)
        counters = build_counters(
            model_id=scenario.model.id, requests=requests, ledger=ledger, segments=segments,
            elapsed_s=round(sum(s.elapsed_s for s in segments), 3) if segments else None,
            cpu_s=round(cpu, 3) if segments else None, peak_rss_mb=round(rss, 1) if rss else None,
        )
        pending = segments[-1].pending if segments else []
        deviations = compare(scenario.expect, decision.outcome, counters, pending, decision.notes)
        resumed = counters.resumes or 0
        if (resumed < len(scenario.resumes) and decision.outcome not in ("error", "hung")
                and not any(d.name == "resumes" for d in deviations)):
            # the scenario's resumes are part of its ideal: a framework that made no saved pause to resume
            # could not be exercised on them (never counted as conforming)
            deviations.append(Deviation(
                name="resumes", ideal=len(scenario.resumes), observed=resumed,
                note="no saved pause to resume from" if not any(s.outcome_signals.ended == "paused"
                                                                 for s in segments) else "",
            ))
        unsupported = sorted({u for r in results for u in r.unsupported})
        version, packages = self.versions[framework]
        native = NativeRecord(
            signals=last, settings=results[0].settings if results else {},
            mechanisms=results[0].mechanisms if results else {}, notes=[n for r in results for n in r.notes],
            auxiliary_requests=self.server.auxiliary(run_id),  # e.g. token counting: requests, not model calls
        )
        trace = self.out / "traces" / f"{run_id}.jsonl"
        record = RunRecord(
            run_id=run_id, scenario=scenario.id, framework=framework, variant=variant, repetition=repetition,
            started_at=started_at, loopbench_version=__version__, framework_version=version, packages=packages,
            environment=self.env,
            outcome=decision.outcome, outcome_rule=decision.rule,
            error_reason=harness_error or hung_reason or (decision.reason if decision.outcome == "failed" else None),
            native=native, limits=results[0].limits if results else {}, unsupported=unsupported,
            counters=counters, segments=segments, requests=requests, ledger=ledger,
            violations=self.server.violations(run_id),
            verdict=verdict_of(decision.outcome, deviations, unsupported), deviations=deviations,
            claims=scenario.claims, trace=str(trace.relative_to(self.out)),
        )
        self._write_trace(trace, record, decision.reason)
        self.server.unregister_run(run_id)
        self.ledger.unregister_run(run_id)
        return record

    @staticmethod
    def _write_trace(path: Path, record: RunRecord, reason: str) -> None:
        events: list[tuple[float, dict[str, Any]]] = []
        for r in record.requests:
            events.append((r.t_s, {"event": "model_request", **r.model_dump(exclude_defaults=True)}))
        for e in record.ledger:
            events.append((e.started_s, {"event": f"tool_{e.kind}", **e.model_dump(exclude_defaults=True)}))
        events.sort(key=lambda x: x[0])
        with open(path, "w", encoding="utf-8") as fh:
            for i, seg in enumerate(record.segments):
                fh.write(json.dumps({"event": "segment", "index": i, **seg.model_dump(mode="json")}) + "\n")
            for _, ev in events:
                fh.write(json.dumps(ev, default=str) + "\n")
            fh.write(json.dumps({"event": "outcome", "outcome": record.outcome, "rule": record.outcome_rule,
                                 "reason": reason, "verdict": record.verdict}) + "\n")

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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    _prepare_out(plan.out_dir)
    results = plan.out_dir / "results.jsonl"
    summary = SuiteSummary(results_file=results)
    done: set[TaskKey] = set()
    if plan.resume_partial:
        done, summary.warnings = finished_keys(results)
    else:
        results.unlink(missing_ok=True)  # a fresh run replaces earlier results in this directory
    # framework-major order: a slot keeps one framework's warm workers for as long as possible
    tasks = [(s, f, v, r) for f, v in plan.variants for s in plan.scenarios for r in range(1, plan.repeat + 1)
             if (s.id, f, v, r) not in done]
    summary.skipped = len(plan.scenarios) * len(plan.variants) * plan.repeat - len(tasks)
    suite = Suite(plan)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("{task.fields[tally]}"), disable=not plan.show_progress)
    with running(suite.server) as base_url, progress:
        suite.base_url = base_url
        bar = progress.add_task("runs", total=len(tasks), tally="")

        def one(task: tuple[Scenario, str, str, int]) -> None:
            if suite.stopping.is_set():
                return
            record = suite.run_task(*task)
            if suite.stopping.is_set():  # interrupted mid-run: not a result; --continue runs it again
                return
            suite.writer.append(record)
            summary.records += 1
            summary.errors += record.outcome == "error"
            summary.outcomes[record.outcome] += 1
            progress.update(bar, advance=1, tally=" ".join(f"{k}:{v}" for k, v in sorted(summary.outcomes.items())))

        pool = ThreadPoolExecutor(max_workers=plan.jobs)
        try:
            futures = [pool.submit(one, t) for t in tasks]
            for f in futures:
                f.result()
        except KeyboardInterrupt:  # Ctrl-C: keep what finished, stop the rest cleanly
            summary.interrupted = True
            suite.stopping.set()
            suite.kill_workers()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            suite.close()
    return summary
