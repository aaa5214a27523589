"""Which task a slot runs next: the suite's schedule.

Runs that wait rather than compute would hold a compute slot while the CPU idles: a retry storm against a
model that never answers (the scenarios tagged `slow`; one Claude run: ~180 s of backoff for ~2 s of CPU), a
model that fails first (the framework's own backoff), scripted delays (a slow model or tool). They get slots of
their own, beside the `--jobs` compute slots. The storms start first, longest declared retry window first
(the adapter's `capabilities.retry_window_s`: the framework's own retry policy, not a guess per scenario);
the other waiting runs follow in the given framework-major order, so a waiting slot, too, keeps one
framework's warm workers for as long as possible. The compute slots keep the given order, waiting runs
included: one that no waiting slot has taken yet runs there in its turn, while its framework's workers are
warm. A waiting slot never takes a run that does not wait. Measured on the 2-core machine: `--quick` took
94 s with only the storms on waiting slots, 78 s with every waiting run there, and 86 s with twice as many
waiting slots (each slot starts its own workers), every cell unchanged against the published results.

The compute slots start at `--jobs` (default: the cores). Without an explicit `--jobs`, the runner opens more
while the machine's CPU idles and tasks wait (`SlotGovernor`), up to one more than the cores: the suite's runs
spend much of their time waiting (scripted delays, retry backoff), and a fixed slot per core leaves a core idle
then. The bound is where the timing-sensitive cells were measured unchanged (`loopbench diff` against the
published results with `--jobs` at the bound, which gives the same slots); at twice the cores (4 compute and 4
waiting slots on 2 cores) one did change: Claude's `can_use_tool` deny-and-stop ended while still streaming
(`aborted_streaming`, failed) instead of at its tools (`aborted_tools`, denied).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, Literal, TypeVar

T = TypeVar("T")
SlotKind = Literal["compute", "waiting"]


def waiting_slot_count(waiting_tasks: int, cores: int) -> int:
    """One waiting slot per waiting task, at most one per core: each slot starts worker processes of its own
    (their start-up and SDK imports cost seconds of CPU), so their number stays bounded by the machine's."""
    return min(waiting_tasks, cores)


class Schedule(Generic[T]):
    """Thread-safe: each slot's thread asks `next(kind)` until it answers None. Each task is handed out once."""

    def __init__(self, tasks: Sequence[T], waits: Callable[[T], bool], storm_s: Callable[[T], float]):
        """`waits`: the task waits rather than computes (it may go to a waiting slot); `storm_s`: a retry storm's
        declared window (0 for any other task)."""
        self._tasks = list(tasks)
        waiting = [i for i, t in enumerate(self._tasks) if waits(t)]
        # the longest storm first; ties (every non-storm: 0) keep the given order (sorted is stable)
        self._waiting: deque[int] = deque(sorted(waiting, key=lambda i: -storm_s(self._tasks[i])))
        self._order: deque[int] = deque(range(len(self._tasks)))  # compute slots: the given order, waiting included
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)

    def compute_waiting(self) -> bool:
        """Some task is still waiting for a compute slot."""
        with self._lock:
            return any(i not in self._taken for i in self._order)

    def next(self, kind: SlotKind) -> T | None:
        with self._lock:
            queue = self._waiting if kind == "waiting" else self._order
            while queue:
                i = queue.popleft()
                if i not in self._taken:
                    self._taken.add(i)
                    return self._tasks[i]
            return None


class SlotGovernor:
    """When to open another compute slot: while the machine's CPU idles (the runs wait — scripted delays, a
    client's backoff — rather than compute) and tasks are still waiting for a slot, one more slot at a time, up
    to a bound. Fed one machine-wide CPU utilization sample (0-100, psutil) per interval; pure and testable."""

    def __init__(self, start: int, most: int, idle_below: float = 60.0, patience: int = 2):
        self.slots = start
        self.most = most
        self.idle_below = idle_below
        self.patience = patience  # consecutive idle samples before a slot opens (a pause between runs is no sign)
        self._idle = 0

    def sample(self, cpu_percent: float, tasks_waiting: bool) -> bool:
        """True when a slot should open now (and counts it)."""
        self._idle = self._idle + 1 if cpu_percent < self.idle_below and tasks_waiting else 0
        if self._idle >= self.patience and self.slots < self.most:
            self._idle = 0
            self.slots += 1
            return True
        return False
