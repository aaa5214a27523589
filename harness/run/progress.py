"""What a run shows while it runs. In a terminal: a live line with done/total, runs in flight, elapsed time,
an ETA and the verdicts so far (rich). Without one (CI logs, a pipe): a plain line per finished run and a
summary line, so a five-minute run is never silent. Both say what the runner is doing before the first run
finishes (starting the model server, the workers' first SDK imports)."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter as Tally
from typing import Protocol, TextIO

from loopbench.harness.record import RunRecord, column_of

MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class RunProgress(Protocol):
    def begin(self, total: int) -> None: ...
    def status(self, text: str) -> None: ...
    def run_started(self) -> None: ...
    def run_finished(self, record: RunRecord) -> None: ...
    def end(self) -> None: ...


class _Counts:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.in_flight = 0
        self.verdicts: Tally[str] = Tally()
        self.started_at = time.monotonic()
        self.lock = threading.Lock()

    def eta(self) -> str:
        if not self.done or self.done >= self.total:
            return "–"
        elapsed = time.monotonic() - self.started_at
        return _duration(elapsed / self.done * (self.total - self.done))

    def tally(self) -> str:
        return " ".join(f"{MARK.get(v, v)}{self.verdicts[v]}" for v in MARK if self.verdicts[v])


class Silent:
    def begin(self, total: int) -> None: ...
    def status(self, text: str) -> None: ...
    def run_started(self) -> None: ...
    def run_finished(self, record: RunRecord) -> None: ...
    def end(self) -> None: ...


class PlainProgress(_Counts):
    """One line per finished run, for logs: `[ 12/243] ✓ approval_pause × langgraph → awaiting_approval ...`."""

    def __init__(self, stream: TextIO | None = None):
        super().__init__()
        self.stream = stream or sys.stdout

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def begin(self, total: int) -> None:
        self.total = total
        self.started_at = time.monotonic()
        self._line(f"loopbench: {total} run(s) to do")

    def status(self, text: str) -> None:
        self._line(f"loopbench: {text}")

    def run_started(self) -> None:
        with self.lock:
            self.in_flight += 1

    def run_finished(self, record: RunRecord) -> None:
        with self.lock:
            self.done += 1
            self.in_flight = max(0, self.in_flight - 1)
            self.verdicts[record.verdict] += 1
            width = len(str(self.total))
            took = record.counters.elapsed_s
            self._line(f"[{self.done:>{width}}/{self.total}] {MARK.get(record.verdict, '?')} {record.verdict:<11} "
                       f"{record.scenario} × {column_of(record.framework, record.variant)} → {record.outcome}"
                       + (f" ({took:.2f} s)" if took is not None else "")
                       + f" · {self.in_flight} in flight · ETA {self.eta()}")

    def end(self) -> None:
        self._line(f"loopbench: {self.done} of {self.total} run(s) done in "
                   f"{_duration(time.monotonic() - self.started_at)}: {self.tally() or 'none'}")


class LiveProgress(_Counts):
    """A rich progress line for a terminal."""

    def __init__(self) -> None:
        super().__init__()
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("· {task.fields[flight]} in flight ·"), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), TextColumn("{task.fields[tally]}"))
        self._task = None

    def begin(self, total: int) -> None:
        self.total = total
        self._progress.start()
        self._task = self._progress.add_task("starting", total=total, flight=0, tally="")

    def status(self, text: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=text)

    def _refresh(self) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self.done, flight=self.in_flight, tally=self.tally(),
                                  description="runs")

    def run_started(self) -> None:
        with self.lock:
            self.in_flight += 1
            if self.done:
                self._refresh()

    def run_finished(self, record: RunRecord) -> None:
        with self.lock:
            self.done += 1
            self.in_flight = max(0, self.in_flight - 1)
            self.verdicts[record.verdict] += 1
            self._refresh()

    def end(self) -> None:
        self._progress.stop()


def make_progress(enabled: bool, terminal: bool | None = None) -> RunProgress:
    """Silent when disabled; live in a terminal (stdout is a tty), plain lines otherwise."""
    if not enabled:
        return Silent()
    if terminal is None:
        terminal = sys.stdout.isatty()
    return LiveProgress() if terminal else PlainProgress()
