"""The progress's ETA (harness/run/progress.py), on a clock of the test's own: it waits for runs that are not a
slot's first (start-up and the workers' SDK imports say nothing about the rest), then estimates from their
durations and the runs in flight; the line around it is unchanged."""

from __future__ import annotations

import io
import re
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from loopbench.harness.run.progress import NO_ETA_YET, LiveProgress, PlainProgress

TIER = "unit"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(i: int = 1, verdict: str = "conforms", took: float = 1.0) -> SimpleNamespace:
    return SimpleNamespace(scenario=f"scenario_{i}", framework="langgraph", variant="default", outcome="completed",
                           verdict=verdict, counters=SimpleNamespace(elapsed_s=took))


def _seconds(eta: str) -> int:
    m = re.fullmatch(r"(?:(\d+)m)?(\d+)s", eta)
    assert m, eta
    return int(m[1] or 0) * 60 + int(m[2])


@pytest.fixture
def slots():
    """Three slot threads, as the runner has: run_started and run_finished of one run come from one of them."""
    pools = [ThreadPoolExecutor(max_workers=1) for _ in range(3)]
    yield [lambda f, *a, p=p: p.submit(f, *a).result() for p in pools]
    for p in pools:
        p.shutdown()


def _eta_of(line: str) -> str:
    return line.rsplit(" · ETA ", 1)[1]


def test_the_eta_waits_for_runs_past_the_start_up_then_estimates_from_their_durations(slots):
    """243 runs in 3 slots: 20 s of start-up, each slot's first run 15 s (its worker's SDK import), then 1 s a run.
    The old estimate (elapsed / done × left) said 20m+ after the first runs; the rest takes about 79 s."""
    clock, out = Clock(), io.StringIO()
    p = PlainProgress(out, clock=clock)
    p.begin(243)
    clock.now = 20.0
    for s in slots:
        s(p.run_started)
    clock.now = 35.0
    n = 0
    for s in slots:  # the three first runs finish: nothing to go on yet
        n += 1
        s(p.run_finished, _record(n))
        s(p.run_started)
    for _ in range(2):  # two rounds of 1 s runs: 6 samples
        clock.now += 1.0
        for s in slots:
            n += 1
            s(p.run_finished, _record(n))
            s(p.run_started)
    lines = [x for x in out.getvalue().splitlines() if x.startswith("[")]
    assert [_eta_of(x) for x in lines[:5]] == [NO_ETA_YET] * 5  # 3 first runs, then 2 samples: not yet
    later = [_seconds(_eta_of(x)) for x in lines[5:]]
    assert all(70 <= s <= 85 for s in later), later  # (243 - 9) runs × 1 s / 3 slots, give or take the in flight


def test_the_line_is_otherwise_unchanged_and_the_end_says_nothing_is_left(slots):
    clock, out = Clock(), io.StringIO()
    p = PlainProgress(out, clock=clock)
    p.begin(2)
    slots[0](p.run_started)
    slots[1](p.run_started)
    clock.now = 1.5
    slots[0](p.run_finished, _record(1, took=1.25))
    slots[1](p.run_finished, _record(2, verdict="deviates", took=1.5))
    p.end()
    assert out.getvalue().splitlines() == [
        "loopbench: 2 run(s) to do",
        "[1/2] ✓ conforms    scenario_1 × langgraph → completed (1.25 s) · 1 in flight · ETA after the first runs",
        "[2/2] ⚠ deviates    scenario_2 × langgraph → completed (1.50 s) · 0 in flight · ETA –",
        "loopbench: 2 of 2 run(s) done in 2s: ✓1 ⚠1",
    ]


def test_the_live_line_shows_the_same_estimate(slots):
    clock = Clock()
    p = LiveProgress(clock=clock)
    p.total = 10  # begin() would draw on the terminal
    eta = next(c for c in p._progress.columns if type(c).__name__ == "Eta")
    assert eta.render(None).plain == NO_ETA_YET
    slots[0](p._started)
    for i in range(4):  # a first run, then three of 2 s
        clock.now += 2.0
        slots[0](p._finished, _record(i))
        slots[0](p._started)
    assert eta.render(None).plain == "12s"  # 6 left × 2 s in one slot
