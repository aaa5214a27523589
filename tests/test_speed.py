"""The speed work's pure parts: the suite's schedule, the lower bound and the ratio's spread the bench reports,
loopbench's own CPU kept apart from the framework's, and the plain scripts' independence from loopbench."""

from __future__ import annotations

import ast
import threading
import time
from importlib import resources
from types import SimpleNamespace

import pytest

from loopbench.bench import (
    PLAIN_SCRIPTS,
    Sample,
    _plain_summary,
    bootstrap_interval,
    lower_bound_s,
    ratio_of_medians,
    settled,
)
from loopbench.harness.own_work import OwnWork
from loopbench.harness.run.runner import _waits
from loopbench.harness.run.schedule import Schedule, SlotGovernor, waiting_slot_count
from loopbench.harness.scenario import load_scenarios

TIER = "unit"

TASKS = [("a", "fw1", False, 0.0), ("storm", "fw1", True, 6.0), ("b", "fw2", False, 0.0),
         ("storm", "fw2", True, 300.0), ("c", "fw2", False, 0.0)]


def schedule() -> Schedule:
    return Schedule(TASKS, waits=lambda t: t[2], storm_s=lambda t: t[3])


def test_waiting_slots_take_slow_tasks_only_longest_retry_window_first() -> None:
    s = schedule()
    assert s.waiting_count == 2
    assert s.next("waiting") == ("storm", "fw2", True, 300.0)
    assert s.next("waiting") == ("storm", "fw1", True, 6.0)
    assert s.next("waiting") is None  # never a compute task
    assert [s.next("compute") for _ in range(4)] == [TASKS[0], TASKS[2], TASKS[4], None]


def test_storms_go_first_then_the_other_waiting_runs_in_the_given_order() -> None:
    tasks = [("fast", "fw1", False, 0.0), ("delay", "fw1", True, 0.0), ("storm", "fw1", True, 6.0),
             ("backoff", "fw2", True, 0.0), ("storm", "fw2", True, 180.0)]
    s = Schedule(tasks, waits=lambda t: t[2], storm_s=lambda t: t[3])
    assert s.waiting_count == 4
    assert [s.next("waiting") for _ in range(5)] == [tasks[4], tasks[2], tasks[1], tasks[3], None]


def test_runs_that_wait_are_the_storms_the_failing_models_and_the_scripted_delays() -> None:
    scenarios = {s.id: s for s in load_scenarios()}
    waits = {i for i, s in scenarios.items() if _waits((s, "fw", "default", 1))}
    assert {"model_outage", "model_transient_error", "deadline_slow_model", "deadline_slow_tool",
            "write_timeout_unknown"} <= waits
    assert "support_draft_completes" not in waits and "approval_approved_resume" not in waits


def test_compute_slots_keep_the_given_order_slow_tasks_included() -> None:
    s = schedule()
    assert [s.next("compute") for _ in range(6)] == [*TASKS, None]


def test_a_slow_task_a_waiting_slot_took_is_skipped_by_the_compute_slots() -> None:
    s = schedule()
    assert s.next("waiting") == TASKS[3]  # the longest retry window
    assert s.next("compute") == TASKS[0]
    assert s.next("compute") == TASKS[1]  # a short storm: in its turn, its framework's workers warm
    assert s.next("waiting") is None  # already taken
    assert [s.next("compute") for _ in range(3)] == [TASKS[2], TASKS[4], None]


def test_schedule_hands_each_task_out_once_across_threads() -> None:
    tasks = [(i, i % 3 == 0) for i in range(300)]
    s = Schedule(tasks, waits=lambda t: t[1], storm_s=lambda t: 0.0)
    got: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def take(kind: str) -> None:
        while (t := s.next(kind)) is not None:  # type: ignore[arg-type]
            with lock:
                got.append(t)

    threads = [threading.Thread(target=take, args=(k,)) for k in ("compute", "compute", "waiting", "waiting")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(tasks)


@pytest.mark.parametrize(("waiting", "cores", "want"), [(0, 2, 0), (2, 2, 2), (9, 2, 2), (1, 4, 1)])
def test_waiting_slots_are_bounded_by_the_waiting_tasks_and_the_cores(waiting: int, cores: int, want: int) -> None:
    assert waiting_slot_count(waiting, cores) == want


def test_lower_bound_is_the_longest_run_or_the_cpu_over_the_cores() -> None:
    assert lower_bound_s(longest_run_s=180.0, tree_cpu_s=200.0, cores=2) == 180.0
    assert lower_bound_s(longest_run_s=50.0, tree_cpu_s=200.0, cores=2) == 100.0
    assert lower_bound_s(longest_run_s=50.0, tree_cpu_s=200.0, cores=0) == 200.0  # no cores known: one


def test_ratio_and_its_interval() -> None:
    base = [1.0, 1.1, 0.9, 1.0, 1.05] * 4
    assert ratio_of_medians([2 * x for x in base], base) == pytest.approx(2.0)
    lo, hi = bootstrap_interval([2 * x for x in base], base)
    assert lo == pytest.approx(2.0) and hi == pytest.approx(2.0)  # a constant ratio has no spread
    noisy = [1.0, 3.0, 1.2, 2.5, 0.8, 2.9, 1.1, 2.2] * 2
    lo, hi = bootstrap_interval(noisy, [1.0] * len(noisy))
    assert lo < ratio_of_medians(noisy, [1.0] * len(noisy)) < hi and hi - lo > 0.5


def test_pairs_are_added_until_the_intervals_are_narrow_and_on_one_side_of_the_goal() -> None:
    assert settled((1.02, 1.08), (1.01, 1.09))  # met
    assert settled((1.15, 1.22), (1.05, 1.12))  # not met: the wall interval lies above 1.10
    assert not settled((1.02, 1.105), (1.02, 1.09))  # narrow, but the wall interval straddles 1.10
    assert not settled((1.0, 1.3), (1.0, 1.05))  # decided nowhere, and wide


def test_the_gap_to_the_plain_script_is_split_around_and_inside_the_adapter() -> None:
    plain = [Sample(wall_s=0.010, cpu_s=0.010, requests=3)] * 5
    # loopbench: 14 ms per run, 11.5 of them in the adapter's segments
    lb = [Sample(wall_s=0.014, cpu_s=0.013, requests=3, adapter_s=0.0115)] * 5
    counters = SimpleNamespace(cpu_s=0.009, loopbench_worker_cpu_s=0.0008, loopbench_runner_cpu_s=0.0004,
                               peak_rss_mb=100.0)
    out = _plain_summary("default", plain, lb, [SimpleNamespace(counters=counters)] * 5)
    assert out["gap_ms"] == pytest.approx(4.0)
    assert out["around_adapter_ms"] == pytest.approx(2.5) and out["inside_adapter_extra_ms"] == pytest.approx(1.5)
    assert out["around_adapter_ms"] + out["inside_adapter_extra_ms"] == pytest.approx(out["gap_ms"])
    assert out["worker_own_cpu_ms_per_run"] == pytest.approx(0.8)
    assert out["loopbench_cpu_ms_per_run"] == pytest.approx(1.2)
    assert out["framework_cpu_ms_per_model_call"] == pytest.approx((9.0 - 0.8) / 3, abs=0.05)
    assert out["plain_wall_ratio"] == pytest.approx(1.4) and out["plain_cpu_ratio"] == pytest.approx(1.3)


def test_own_work_counts_overlapping_calls_once() -> None:
    own = OwnWork()
    own.take()

    def busy(s: float) -> None:
        end = time.process_time() + s
        while time.process_time() < end:
            pass

    with own.measured():
        busy(0.05)
        with own.measured():  # a parallel call in flight at the same time
            busy(0.05)
    outside = time.process_time()
    busy(0.05)  # the framework's own work: not counted
    assert time.process_time() - outside >= 0.05
    counted = own.take()
    assert 0.09 <= counted < 0.14
    assert own.take() == 0.0


@pytest.mark.parametrize("name", sorted(PLAIN_SCRIPTS.values()))
def test_plain_scripts_use_no_loopbench_code(name: str) -> None:
    text = (resources.files("loopbench") / "plain" / name).read_text()
    if name.endswith(".py"):
        imported = {a.name.split(".")[0] for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Import)
                    for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(ast.parse(text))
                     if isinstance(n, ast.ImportFrom) and n.module}
        assert "loopbench" not in imported
    else:
        assert "loopbench" not in "".join(line for line in text.splitlines() if "import" in line)
    assert "POL-7" in text  # it answers the scenario's tools itself


def test_governor_opens_a_slot_after_sustained_idle_cpu_while_tasks_wait() -> None:
    g = SlotGovernor(start=2, most=4, idle_below=60, patience=2)
    assert not g.sample(30, tasks_waiting=True)  # one idle sample: a pause between runs
    assert g.sample(30, tasks_waiting=True) and g.slots == 3
    assert not g.sample(95, tasks_waiting=True)  # busy: the count starts again
    assert not g.sample(20, tasks_waiting=True)
    assert g.sample(20, tasks_waiting=True) and g.slots == 4
    assert not g.sample(0, tasks_waiting=True) and not g.sample(0, tasks_waiting=True)  # at the bound
    assert g.slots == 4


def test_governor_opens_nothing_when_no_task_waits_or_when_fixed() -> None:
    g = SlotGovernor(start=2, most=4)
    assert not any(g.sample(0, tasks_waiting=False) for _ in range(10))
    fixed = SlotGovernor(start=2, most=2)  # an explicit --jobs
    assert not any(fixed.sample(0, tasks_waiting=True) for _ in range(10)) and fixed.slots == 2


def test_compute_waiting_tells_whether_a_compute_slot_has_anything_left() -> None:
    s = schedule()
    s.next("waiting"), s.next("waiting")
    assert s.compute_waiting()
    while s.next("compute") is not None:
        pass
    assert not s.compute_waiting()


def test_the_guard_bench_measures_both_calls_in_process_and_over_http(tmp_path, monkeypatch) -> None:
    """`loopbench bench --guard-only`'s numbers: each call's p50 and p99, merged into results.json beside what
    is kept there, with when and at which revision."""
    from loopbench.bench import run_guard
    from loopbench.bench.guard_cost import guard_numbers

    numbers = guard_numbers(in_process=300, over_http=30)
    assert set(numbers) == {"model_call_in_process", "tool_call_in_process", "model_call_over_http",
                            "tool_call_over_http"}
    assert all(0 < n["p50_us"] <= n["p99_us"] for n in numbers.values())
    (tmp_path / "results.json").write_text('{"server": {"p50_ms": 1}}')
    import loopbench.bench as bench

    monkeypatch.setattr(bench, "guard_numbers", lambda: numbers)
    monkeypatch.setattr(bench, "environment", lambda: {"loopbench_revision": "abc"})  # no git process here
    merged = run_guard(tmp_path)
    assert merged["guard_at"]["loopbench_revision"] == "abc"
    assert merged["server"] == {"p50_ms": 1} and merged["guard"] == numbers and "guard_at" in merged
