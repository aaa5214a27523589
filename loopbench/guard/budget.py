"""One task allowance, reserved before each operation so a hard cap is never overshot.

Every model call and every tool call first reserves what it may cost (one call, its token and cost estimate)
against what is used *and* what is in flight; the reservation is settled with the real amounts when the call
returns, or released when it did not happen. Parallel calls therefore never pass a cap together: the second
one's reservation sees the first one's. A sub-agent's guard draws on the same budget; a resumed task restores the
used amounts from its snapshot, so the allowance carries across pauses, retries and sub-agents.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Measure = Literal["model_calls", "tool_calls", "tokens", "cost_usd"]
MEASURES: tuple[Measure, ...] = ("model_calls", "tool_calls", "tokens", "cost_usd")


class Allowance(BaseModel):
    """The caps of one task (None: no cap on that measure)."""

    model_config = ConfigDict(frozen=True)
    model_calls: int | None = Field(default=None, ge=0)
    tool_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_s: float | None = Field(default=None, gt=0)

    def cap(self, measure: Measure) -> float | None:
        value = getattr(self, measure)
        return None if value is None else float(value)


class GuardStop(Exception):
    """The root of the guard's stops: the policy's exit, and why."""

    exit: str = "failed"
    # False: a refusal of this one call, told to the model as the call's answer; the task goes on
    ends_task: bool = True

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Cancelled(GuardStop):
    """The caller cancelled the task: recorded as the policy's exit when the framework does not say so itself."""

    exit = "cancelled"


class LimitReached(GuardStop):
    """An operation would pass a cap (or the deadline has passed): it is not started."""

    exit = "limit"

    def __init__(self, measure: str, reason: str):
        super().__init__(reason)
        self.measure = measure


Amounts = dict[Measure, float]


@dataclass
class Reservation:
    """What one operation holds until it is settled (`commit`) or given back (`release`)."""

    budget: Budget
    held: Amounts
    open: bool = True

    def commit(self, **actual: float) -> None:
        """The operation happened: its real amounts replace the estimate (a measure not given keeps it)."""
        given: Amounts = {m: float(actual[m]) for m in MEASURES if m in actual}
        if unknown := set(actual) - set(MEASURES):
            raise ValueError(f"unknown measure(s): {', '.join(sorted(unknown))}")
        self.budget._settle(self, {**self.held, **given})

    def release(self) -> None:
        """The operation did not happen (refused, failed before it was sent): nothing is used."""
        self.budget._settle(self, {})


@dataclass
class Budget:
    """Used and in-flight amounts of one task against its allowance; thread-safe."""

    allowance: Allowance
    clock: Callable[[], float] = time.monotonic
    used: Amounts = field(default_factory=lambda: dict.fromkeys(MEASURES, 0.0))
    in_flight: Amounts = field(default_factory=lambda: dict.fromkeys(MEASURES, 0.0))
    elapsed_before_s: float = 0.0  # wall-clock spent in earlier segments (a resume carries it)
    started: float = field(default=0.0)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def restart_clock(self) -> None:
        """This segment's time starts now: for a framework that starts (a CLI process) before its loop reaches
        the first hook, where nothing could be checked or cut."""
        with self._lock:
            self.started = self.clock()

    def elapsed_s(self) -> float:
        return self.elapsed_before_s + self.clock() - self.started

    def remaining_s(self) -> float | None:
        wall = self.allowance.wall_s
        return None if wall is None else max(0.0, wall - self.elapsed_s())

    def reserve(self, **amounts: float) -> Reservation:
        """Hold `amounts` (e.g. `model_calls=1, tokens=1200`) or raise LimitReached, holding nothing."""
        wanted: Amounts = {m: float(amounts.get(m, 0.0)) for m in MEASURES}
        unknown = set(amounts) - set(MEASURES)
        if unknown:
            raise ValueError(f"unknown measure(s): {', '.join(sorted(unknown))}")
        with self._lock:
            remaining = self.remaining_s()
            if remaining is not None and remaining <= 0:
                raise LimitReached("wall_s", f"the deadline of {self.allowance.wall_s:g} s has passed")
            for m in MEASURES:
                cap = self.allowance.cap(m)
                if cap is not None and wanted[m] and self.used[m] + self.in_flight[m] + wanted[m] > cap:
                    raise LimitReached(m, f"{m}: {self.used[m]:g} used + {self.in_flight[m]:g} in flight + "
                                          f"{wanted[m]:g} for this call > the cap of {cap:g}")
            for m in MEASURES:
                self.in_flight[m] += wanted[m]
        return Reservation(self, wanted)

    def _settle(self, r: Reservation, actual: Amounts) -> None:
        with self._lock:
            if not r.open:
                raise RuntimeError("a reservation is settled once")
            r.open = False
            for m in MEASURES:
                self.in_flight[m] -= r.held[m]
                self.used[m] += actual.get(m, 0.0)

    def snapshot(self) -> dict[str, float]:
        """What a resume needs: the used amounts and the time spent (in-flight work at a pause is not used)."""
        with self._lock:
            return {**{m: self.used[m] for m in MEASURES}, "elapsed_s": self.elapsed_s()}

    @classmethod
    def restore(cls, allowance: Allowance, snapshot: dict[str, float],
                clock: Callable[[], float] = time.monotonic) -> Budget:
        budget = cls(allowance, clock=clock)
        budget.used = {m: float(snapshot.get(m, 0.0)) for m in MEASURES}
        budget.elapsed_before_s = float(snapshot.get("elapsed_s", 0.0))
        return budget
