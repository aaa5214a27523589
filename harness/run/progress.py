"""What a run shows while it runs. In a terminal: a live line with done/total, runs in flight, elapsed time,
an ETA and the verdicts so far (rich). Without one (CI logs, a pipe): a plain line per finished run and a
summary line, so a five-minute run is never silent. Both say what the runner is doing before the first run
finishes (starting the model server, the workers' first SDK imports).

The ETA waits until it has something to go on: `ETA after the first runs` until ETA_AFTER_RUNS runs have finished
that were not a slot's first (a slot's first run carries its worker's SDK import, and the time before any run
starts is the model server's and the workers' start-up: neither says how long the rest takes). Then it is the
work left — the runs not started at the mean of those runs' durations, each run in flight at what it has left of
that mean — over the slots the runs use (the most in flight so far), and never less than the longest of the runs
in flight has left."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TextIO

from loopbench.harness.record import RunRecord, column_of

if TYPE_CHECKING:
    from rich.progress import TaskID

MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}
ETA_AFTER_RUNS = 3  # finished runs, none a slot's first, before an ETA is shown
NO_ETA_YET = "after the first runs"


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
    """done/total, runs in flight, verdicts, and the ETA. A run's duration is the time from `run_started` to
    `run_finished` on the same thread (the runner calls both from the slot's thread; the record's own elapsed
    time when they come from different threads)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.total = 0
        self.done = 0
        self.in_flight = 0
        self.verdicts: Tally[str] = Tally()
        self.started_at = clock()
        self.lock = threading.Lock()
        self.running: dict[int, float] = {}  # thread → when its run in flight started
        self.slots_seen: set[int] = set()  # threads that have started a run
        self.warming: set[int] = set()  # threads whose run in flight is their first (it warms a worker)
        self.durations: list[float] = []  # finished runs' durations, a slot's first run left out
        self.most_in_flight = 0

    def _started(self) -> None:
        me = threading.get_ident()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.running[me] = self.clock()
        if me not in self.slots_seen:
            self.slots_seen.add(me)
            self.warming.add(me)

    def _finished(self, record: RunRecord) -> None:
        self.done += 1
        self.in_flight = max(0, self.in_flight - 1)
        self.verdicts[record.verdict] += 1
        me = threading.get_ident()
        began = self.running.pop(me, None)
        if me in self.warming:
            self.warming.discard(me)
        elif began is not None:
            self.durations.append(self.clock() - began)
        elif record.counters.elapsed_s is not None:  # not paired with a start on this thread: the run's own time
            self.durations.append(record.counters.elapsed_s)

    def eta(self) -> str:
        """`–` when nothing is left (or nothing is known to be), NO_ETA_YET before ETA_AFTER_RUNS samples, else
        the estimate (module docstring)."""
        left = self.total - self.done
        if left <= 0:
            return "–"
        durations = list(self.durations)
        if len(durations) < ETA_AFTER_RUNS:
            return NO_ETA_YET
        per_run = sum(durations) / len(durations)
        now = self.clock()
        in_flight = [max(0.0, per_run - (now - t)) for t in list(self.running.values())]
        queued = max(0, left - self.in_flight)
        slots = max(1, min(self.most_in_flight, left))
        seconds = max((queued * per_run + sum(in_flight)) / slots, max(in_flight, default=0.0))
        return _duration(seconds)

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

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        super().__init__(clock)
        self.stream = stream or sys.stdout

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def begin(self, total: int) -> None:
        self.total = total
        self.started_at = self.clock()
        self._line(f"loopbench: {total} run(s) to do")

    def status(self, text: str) -> None:
        self._line(f"loopbench: {text}")

    def run_started(self) -> None:
        with self.lock:
            self._started()

    def run_finished(self, record: RunRecord) -> None:
        with self.lock:
            self._finished(record)
            width = len(str(self.total))
            took = record.counters.elapsed_s
            self._line(f"[{self.done:>{width}}/{self.total}] {MARK.get(record.verdict, '?')} {record.verdict:<11} "
                       f"{record.scenario} × {column_of(record.framework, record.variant)} → {record.outcome}"
                       # an error run says why (loopbench's failure, or the scenario's: script_error)
                       + (f" ({record.error_reason})" if record.verdict == "error" and record.error_reason else "")
                       + (f" ({took:.2f} s)" if took is not None else "")
                       + f" · {self.in_flight} in flight · ETA {self.eta()}")

    def end(self) -> None:
        self._line(f"loopbench: {self.done} of {self.total} run(s) done in "
                   f"{_duration(self.clock() - self.started_at)}: {self.tally() or 'none'}")


class LiveProgress(_Counts):
    """A rich progress line for a terminal."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        counts = self

        class Eta(ProgressColumn):  # the same estimate as the plain lines', drawn at each refresh
            def render(self, task: object) -> Text:
                return Text(counts.eta(), style="progress.remaining")

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("· {task.fields[flight]} in flight ·"), TimeElapsedColumn(), TextColumn("ETA"),
            Eta(), TextColumn("{task.fields[tally]}"))
        self._task: TaskID | None = None

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
            self._started()
            if self.done:
                self._refresh()

    def run_finished(self, record: RunRecord) -> None:
        with self.lock:
            self._finished(record)
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
