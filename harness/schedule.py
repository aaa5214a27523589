"""Which task a slot runs next: the suite's schedule.

Runs that wait rather than compute — the scenarios tagged `slow`, a retry storm against a model that never
answers (one Claude run: ~180 s of backoff for ~2 s of CPU) — would hold a compute slot for minutes while the
CPU idles. They get slots of their own, beside the `--jobs` compute slots, and start first, longest declared
retry window first (the adapter's `capabilities.retry_window_s`: the framework's own retry policy, not a guess
per scenario). The compute slots keep the given framework-major order (a slot keeps one framework's warm
workers as long as possible), slow tasks included: one that no waiting slot has taken yet (a framework with a
short retry window, whose storm lasts seconds) runs there in its turn, while its framework's workers are warm.
A waiting slot never takes a task that is not slow.

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


def waiting_slot_count(slow_tasks: int, cores: int) -> int:
    """One waiting slot per slow task, at most one per core: each slot is a worker process of its own (its
    start-up and SDK imports cost seconds of CPU), so their number stays bounded by the machine's."""
    return min(slow_tasks, cores)


class Schedule(Generic[T]):
    """Thread-safe: each slot's thread asks `next(kind)` until it answers None. Each task is handed out once."""

    def __init__(self, tasks: Sequence[T], is_slow: Callable[[T], bool], retry_window_s: Callable[[T], float]):
        self._tasks = list(tasks)
        slow = [i for i, t in enumerate(self._tasks) if is_slow(t)]
        # longest declared retry window first; ties keep the given order (sorted is stable)
        self._slow: deque[int] = deque(sorted(slow, key=lambda i: -retry_window_s(self._tasks[i])))
        self._order: deque[int] = deque(range(len(self._tasks)))  # compute slots: the given order, slow included
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    @property
    def slow_count(self) -> int:
        return len(self._slow)

    def compute_waiting(self) -> bool:
        """Some task is still waiting for a compute slot."""
        with self._lock:
            return any(i not in self._taken for i in self._order)

    def next(self, kind: SlotKind) -> T | None:
        with self._lock:
            queue = self._slow if kind == "waiting" else self._order
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
