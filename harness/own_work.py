"""CPU time a worker spends in loopbench's own code during a run, so that a framework is charged only for its
own work ("framework cost per model call").

Inside a worker, loopbench's code that runs while the framework runs is the ledger client (every scenario
tool is a call to the ledger). Its CPU is the worker's process CPU while at least one ledger call is in
flight: overlapping calls (parallel tools) are counted once. What the framework happens to compute during
those intervals (rare: its loop waits for the tool result) is charged to loopbench, never the reverse.
An adapter whose framework runs in another process (the Vercel driver, in Node) measures its whole Python
side the same way: none of the worker's own CPU is the framework's then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class OwnWork:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._since = 0.0
        self._total = 0.0

    @contextmanager
    def measured(self) -> Iterator[None]:
        with self._lock:
            if self._in_flight == 0:
                self._since = time.process_time()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._total += time.process_time() - self._since

    def take(self) -> float:
        """The CPU seconds counted since the last take (a worker takes it after each segment)."""
        with self._lock:
            total, self._total = self._total, 0.0
            if self._in_flight:  # a call still in flight (abandoned): count up to now, go on from here
                now = time.process_time()
                total += now - self._since
                self._since = now
            return total


OWN_WORK = OwnWork()
