"""The runner: records appended per run, ground truth in the record, and fault isolation (a crash is
`error`, a hang is `hung` within its timeout, a dead worker is `error`; the other runs go on)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loopbench.harness.record import RunRecord
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios


@pytest.fixture(autouse=True)
def _doubles(doubles):
    """Every test here may run the test doubles."""


def run(tmp_path: Path, variants: list[str], scenarios=("support_draft_completes",), jobs=2, margin=60.0):
    chosen = [s for s in load_scenarios() if s.id in scenarios]
    plan = RunPlan(scenarios=chosen, variants=[(v, "default") for v in variants], jobs=jobs, out_dir=tmp_path,
                   hard_margin_s=margin, show_progress=False)
    summary = run_suite(plan)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    return summary, {r.framework: r for r in (RunRecord.model_validate(json.loads(x)) for x in lines)}


def test_a_run_gets_a_record_with_ground_truth_and_a_trace(tmp_path):
    summary, recs = run(tmp_path, ["double-onecall"])
    r = recs["double-onecall"]
    assert summary.records == 1 and summary.errors == 0
    assert r.counters.model_requests_observed == 1 and r.counters.model_requests_reported == 1
    assert r.counters.tool_executions == 1 and r.requests[0].served_turn is not None
    assert r.outcome == "incomplete" and r.outcome_rule == 9  # a normal finish without POL-7
    assert r.verdict == "deviates" and r.deviations[0].name == "outcome"
    trace = tmp_path / r.trace
    events = [json.loads(x)["event"] for x in trace.read_text().splitlines()]
    assert events[0] == "segment" and "model_request" in events and events[-1] == "outcome"


def test_crash_hang_and_death_are_isolated_and_the_others_complete(tmp_path):
    t0 = time.monotonic()
    summary, recs = run(tmp_path, ["double-crash", "double-hang", "double-die", "double-onecall"], margin=2.0)
    assert time.monotonic() - t0 < 30
    assert summary.records == 4
    assert recs["double-crash"].outcome == "error" and "adapter bug on purpose" in recs["double-crash"].error_reason
    assert recs["double-hang"].outcome == "hung" and recs["double-hang"].outcome_rule == 2
    assert "hard timeout" in recs["double-hang"].error_reason
    hung = recs["double-hang"]  # the segment that never answered is in the record, with the time waited for it
    assert [(s.kind, s.outcome_signals.ended) for s in hung.segments] == [("run", "hung")]
    assert hung.segments[0].elapsed_s >= 2.0 and hung.counters.elapsed_s == hung.segments[0].elapsed_s
    assert hung.segments[0].worker_pid is not None and hung.counters.pending_approvals is None
    assert recs["double-die"].outcome == "error" and "exited with code 3" in recs["double-die"].error_reason
    assert recs["double-onecall"].outcome == "incomplete"
    assert summary.errors == 2


def test_records_are_appended_as_each_run_finishes(tmp_path):
    """A later hung run must not hold back an earlier record: with one slot, the quick run's line is on
    disk before the hung run is decided."""
    seen_before_hang_ended: list[int] = []
    from loopbench.harness.results.store import ResultsStore

    original = ResultsStore.append

    def spy(self, record):
        original(self, record)
        seen_before_hang_ended.append(len((tmp_path / "results.jsonl").read_text().splitlines()))

    ResultsStore.append = spy  # type: ignore[method-assign]
    try:
        run(tmp_path, ["double-onecall", "double-hang"], jobs=1, margin=1.0)
    finally:
        ResultsStore.append = original  # type: ignore[method-assign]
    assert seen_before_hang_ended == [1, 2]


def _keys(path: Path) -> list[tuple]:
    return sorted((r["scenario"], r["framework"], r["variant"], r["repetition"])
                  for r in map(json.loads, path.read_text().splitlines()))


def test_continue_runs_only_what_is_missing_and_drops_a_torn_line(tmp_path):
    scenarios = ("support_draft_completes", "approval_pause", "parallel_tool_calls")
    chosen = [s for s in load_scenarios() if s.id in scenarios]
    plan = RunPlan(scenarios=chosen, variants=[("double-onecall", "default")], jobs=1, out_dir=tmp_path,
                   show_progress=False)
    run_suite(plan)
    results = tmp_path / "results.jsonl"
    full = _keys(results)
    lines = results.read_text().splitlines(keepends=True)
    results.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # one complete record, then a torn line
    plan.resume_partial = True
    summary = run_suite(plan)
    assert summary.skipped == 1 and summary.records == 2
    assert any("torn last line" in w for w in summary.warnings)
    assert _keys(results) == full
    assert all(json.loads(x) for x in results.read_text().splitlines())


def test_a_fresh_run_replaces_earlier_results(tmp_path):
    run(tmp_path, ["double-onecall"])
    run(tmp_path, ["double-onecall"])
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 1


def test_a_relative_output_dir_reaches_adapters_as_absolute_paths(tmp_path, monkeypatch):
    """Drivers run in their own working dirs (the Node driver): every path an adapter gets is absolute."""
    monkeypatch.chdir(tmp_path)
    chosen = [s for s in load_scenarios() if s.id == "support_draft_completes"]
    run_suite(RunPlan(scenarios=chosen, variants=[("double-onecall", "default")], jobs=1, out_dir=Path("rel/out"),
                      show_progress=False))
    (line,) = (tmp_path / "rel" / "out" / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["native"]["signals"]["extra"]["paths_absolute"] is True


def test_a_framework_that_never_pauses_deviates_on_the_resumes_it_could_not_run(tmp_path):
    _, recs = run(tmp_path, ["double-onecall"], scenarios=("resume_twice",))
    r = recs["double-onecall"]
    dev = next(d for d in r.deviations if d.name == "resumes")
    assert (dev.ideal, dev.observed, dev.note) == (2, 0, "no saved pause to resume from")
    assert r.verdict == "deviates"


def test_the_task_dir_is_shared_by_every_segment_and_resumes_run_elsewhere(tmp_path):
    _, recs = run(tmp_path, ["double-pause"], scenarios=("approval_approved_resume",))
    r = recs["double-pause"]
    assert r.counters.resumes == 1 and r.counters.approval_requests == 1
    seen = r.native.signals.extra
    assert seen["snapshot"] == "paused" and seen["store_from_pid"] is not None
    assert seen["store_from_pid"] != seen["my_pid"]  # written by the first run's process, read by the resumer
    assert not any(d.name == "resumes" for d in r.deviations)


def test_a_cancelled_task_resumes_from_what_the_framework_kept_and_the_record_says_when_it_was_told(tmp_path):
    _, recs = run(tmp_path, ["double-cancel"], scenarios=("cancel_then_resume",))
    r = recs["double-cancel"]
    first, second = r.segments
    assert (first.kind, first.outcome_signals.ended, second.kind, second.from_pause) == ("run", "cancelled", "resume", None)
    assert first.cancel_sent_s is not None and first.cancel_sent_s >= 0.5 and second.cancel_sent_s is None
    assert first.elapsed_s < 4  # the 5 s lookup was abandoned, not awaited
    assert (r.outcome, r.verdict) == ("completed", "conforms")
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}


def test_an_idiom_without_a_cancel_is_not_run_on_a_cancel_scenario(tmp_path):
    _, recs = run(tmp_path, ["double-onecall"], scenarios=("cancel_during_tool",))
    r = recs["double-onecall"]
    assert (r.outcome, r.verdict, r.counters.model_requests_observed) == ("not_run", "unsupported", 0)
    assert "cancel" in r.unsupported


def test_a_cancel_the_framework_stops_on_is_the_cancelled_outcome(tmp_path):
    _, recs = run(tmp_path, ["double-cancel"], scenarios=("cancel_during_tool",))
    r = recs["double-cancel"]
    assert (r.outcome, r.outcome_rule) == ("cancelled", 12) and r.segments[0].cancel_sent_s is not None


def test_a_harness_failure_on_one_task_is_that_task_error_and_the_suite_goes_on(tmp_path, monkeypatch):
    import loopbench.harness.run.runner as runner_mod

    real = runner_mod.judge
    calls = {"n": 0}

    def flaky(identity, evidence, trace=None):
        calls["n"] += 1
        if calls["n"] == 1 and evidence.segments:  # the first task's judging breaks
            raise MemoryError("simulated")
        return real(identity, evidence, trace=trace)

    monkeypatch.setattr(runner_mod, "judge", flaky)
    summary, recs = run(tmp_path, ["double-onecall"], scenarios=("support_draft_completes", "approval_pause"), jobs=1)
    outcomes = sorted((r.outcome, r.error_reason or "") for r in
                      (RunRecord.model_validate(json.loads(x)) for x in (tmp_path / "results.jsonl").read_text().splitlines()))
    assert len(outcomes) == 2 and summary.errors == 1
    assert outcomes[0][0] != "error" or outcomes[1][0] != "error"
    assert any(o == "error" and "judging failed: MemoryError" in why for o, why in outcomes)
