"""The worker pool: warm worker processes, each in its own process group, spoken to with typed messages.

A slot is a pair of workers for one framework at a time: runs go to the first, resumes to the second, so a
resume always happens in another process. A worker that passes a job's timeout is killed with its process
tree and group (the framework's children die with it, even those in a session of their own) and started again
on the next job.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import psutil

from loopbench.harness.adapter import adapter_target
from loopbench.harness.errors import WorkerDied, WorkerHung
from loopbench.harness.run.messages import WorkerAnswer, WorkerJob
from loopbench.harness.run.reaper import kill_descendants

WARM_TIMEOUT_S = 180.0  # a worker's start-up, SDK imports and warm-up run, not counted in any run's timeout
# (framework, variant) -> the warm job for that idiom, its warm-up run registered with the server and the ledger
# while the job runs (Suite.warm_job)
Warmer = Callable[[str, str], AbstractContextManager[WorkerJob]]


def bare_warm(framework: str, variant: str) -> AbstractContextManager[WorkerJob]:
    """A warm job without a warm-up run: the SDK's imports only."""
    return nullcontext(WorkerJob(op="warm", framework=framework, adapter=adapter_target(framework), variant=variant))


class Worker:
    """One warm worker process (`python -m loopbench.harness.run.worker`) in its own process group."""

    def __init__(self, log_path: Path, env: dict[str, str], warmer: Warmer = bare_warm,
                 stopping: threading.Event | None = None):
        self.log_path = log_path
        self.env = env
        self.warmer = warmer
        self.stopping = stopping or threading.Event()  # the suite is stopping: start no process
        self.proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._warm: set[tuple[str, str]] = set()  # the idioms (framework, variant) this process has warmed

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "a")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loopbench.harness.run.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
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

    def request(self, job: WorkerJob, timeout_s: float) -> WorkerAnswer:
        """Send one job and wait for its answer; before an idiom's first job in this process, its warm job (timed
        apart: the answer's `warm_s`). Raises WorkerHung (the worker is killed) or WorkerDied (also when the suite
        is stopping: no new process is started then)."""
        if self.proc is None or self.proc.poll() is not None:
            if self.stopping.is_set():
                raise WorkerDied("the suite is stopping")
            self._start()
        warm_s: float | None = None
        if job.op != "warm" and (job.framework, job.variant) not in self._warm:
            t0 = time.perf_counter()
            with self.warmer(job.framework, job.variant) as warm:
                answer = self._send(warm, WARM_TIMEOUT_S)
            if not answer.ok:
                return answer
            self._warm.add((job.framework, job.variant))
            warm_s = time.perf_counter() - t0
        answer = self._send(job, timeout_s)
        return answer if warm_s is None else answer.model_copy(update={"warm_s": round(warm_s, 3)})

    def _send(self, job: WorkerJob, timeout_s: float) -> WorkerAnswer:
        assert self.proc is not None and self.proc.stdin is not None
        sent = time.perf_counter()
        try:
            self.proc.stdin.write(job.model_dump_json() + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.kill()
            raise WorkerDied(f"worker stdin closed: {exc}") from None
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            pid = self.pid
            self.kill()
            what = "its start-up" if job.op == "warm" else "the segment"
            raise WorkerHung(f"no answer within the hard timeout of {timeout_s:.0f} s ({what})",
                             waited_s=time.perf_counter() - sent, pid=pid) from None
        if line is None:
            code = self.proc.wait()
            self.proc = None
            raise WorkerDied(f"worker process exited with code {code} (see {self.log_path})")
        return WorkerAnswer.model_validate_json(line)

    def kill(self) -> None:
        """Kill the worker, its whole process tree and every process of its group (framework children: the
        Claude CLI, Node). The tree first, while the worker still holds it: a descendant in a session of its own
        (`setsid`) is not in the group, and once the worker is dead it would be reparented out of reach. The
        worker is stopped first, so it starts nothing new meanwhile."""
        if self.proc is None:
            return
        if self.proc.poll() is None:  # not yet reaped: its pid is still this worker's
            try:
                worker = psutil.Process(self.proc.pid)
                worker.suspend()
                kill_descendants(worker)
            except psutil.NoSuchProcess:
                pass
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

    def __init__(self, index: int, log_dir: Path, env: dict[str, str], warmer: Warmer = bare_warm,
                 stopping: threading.Event | None = None):
        self.index, self.log_dir, self.env = index, log_dir, env
        self.warmer, self.stopping = warmer, stopping
        self.framework: str | None = None
        self.runner: Worker | None = None
        self.resumer: Worker | None = None

    def workers(self, framework: str) -> tuple[Worker, Worker]:
        if framework != self.framework or self.runner is None or self.resumer is None:
            self.close()
            self.framework = framework
            self.runner = Worker(self.log_dir / f"slot{self.index}-{framework}-run.log", self.env, self.warmer,
                                 self.stopping)
            self.resumer = Worker(self.log_dir / f"slot{self.index}-{framework}-resume.log", self.env, self.warmer,
                                  self.stopping)
        return self.runner, self.resumer

    def kill(self) -> None:
        for worker in (self.runner, self.resumer):
            if worker is not None:
                worker.kill()

    def close(self) -> None:
        for worker in (self.runner, self.resumer):
            if worker is not None:
                worker.close()
