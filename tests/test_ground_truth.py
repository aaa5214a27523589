"""Facts of the shared suite run that do not depend on any framework's choices, checked for every framework and
variant: each ran the whole suite with no harness error, hang or script violation; the ledger and the server
agree with the record's counters; the baseline task completes with its ground-truth counts; a pause runs
nothing it paused on; an approved resume sends once; a policy-denied tool never runs, whether the denial stops
the run or goes back to the model; each run records mechanisms for exactly the intents its scenario states.

Each test runs once per column (the adapter registry's framework variants, named as every table names them), so
a failure names the column. The per-adapter tests (tests/test_adapter_*.py) assert only what is framework
specific and leave these to this file.
"""

from __future__ import annotations

import pytest

from loopbench.harness.adapter import BUILTIN, adapter_class, resolve_selection
from loopbench.harness.judge.outcome import OutcomeRule
from loopbench.harness.judge.prices import cost_usd
from loopbench.harness.record import RunRecord, column_of
from loopbench.harness.scenario import load_scenarios
from tests.suite_helpers import suite_records

TIER = "unit"

SCENARIOS = {s.id for s in load_scenarios()}
# every (framework, variant) of the registry, by its column: what the shared suite run runs (when available)
COLUMNS: dict[str, tuple[str, str]] = {column_of(f, v): (f, v) for f, v in resolve_selection([])}
per_column = pytest.mark.parametrize("column", list(COLUMNS))


@pytest.fixture(scope="module")
def by_column(suite_run) -> dict[str, dict[str, RunRecord]]:
    out: dict[str, dict[str, RunRecord]] = {}
    for r in suite_records():
        out.setdefault(column_of(r.framework, r.variant), {})[r.scenario] = r
    return out


@pytest.fixture
def recs(by_column: dict[str, dict[str, RunRecord]], column: str) -> dict[str, RunRecord]:
    """The column's records by scenario; skipped when its framework is not installed here (the suite did not run
    it: test_every_builtin_framework_ran says whether that is allowed)."""
    if column not in by_column:
        framework, _ = COLUMNS[column]
        reason = adapter_class(framework).unavailable_reason()
        if reason is not None:
            pytest.skip(f"{framework} unavailable: {reason}")
        pytest.fail(f"{column} is in the registry and available, but the suite run has no record of it")
    return by_column[column]


def _available(framework: str) -> bool:
    return adapter_class(framework).unavailable_reason() is None


def test_every_builtin_framework_ran(by_column):
    ran = {r.framework for recs in by_column.values() for r in recs.values()}
    assert set(BUILTIN) <= ran
    assert set(by_column) == {c for c, (f, _) in COLUMNS.items() if _available(f)}


def _second_resume_never_returned(r: RunRecord) -> bool:
    """The one hang that is a framework's behaviour, not a harness fault: resuming a pause that was already
    resumed, the framework never answered (the Claude CLI idles waiting for a prompt)."""
    resumes = [s.outcome_signals.ended for s in r.segments if s.kind == "resume"]
    return r.scenario == "resume_twice" and resumes == ["returned", "hung"]


@per_column
def test_every_variant_ran_every_scenario_without_error_hang_or_violation(recs):
    assert set(recs) == SCENARIOS
    bad = {s: (r.outcome, r.error_reason) for s, r in recs.items()
           if r.outcome == "error" or (r.outcome == "hung" and not _second_resume_never_returned(r))}
    assert bad == {}
    assert {s: r.violations for s, r in recs.items() if r.violations} == {}


@per_column
def test_counters_agree_with_the_request_log_and_the_ledger(recs):
    for scenario, r in recs.items():
        c = r.counters
        assert c.model_requests_observed == len(r.requests), scenario
        assert c.tool_executions == sum(1 for e in r.ledger if e.kind == "call"), scenario
        served = [q for q in r.requests if q.status == 200]
        expected = sum(cost_usd(q.model or "claude-sonnet-4-5", q.input_tokens, q.output_tokens) or 0
                       for q in served)
        assert abs((c.cost_usd_observed or 0) - expected) < 1e-9, scenario


@per_column
def test_the_baseline_task_completes_with_its_ground_truth(recs):
    r = recs["support_draft_completes"]
    assert (r.outcome, r.outcome_rule) == ("completed", 8)
    assert r.outcome_rule == OutcomeRule.COMPLETED
    assert (r.counters.model_requests_observed, r.counters.tool_executions) == (3, 2)


@per_column
def test_a_pause_runs_nothing_it_paused_on_and_keeps_the_call(recs):
    r = recs["approval_pause"]
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    if any(u.startswith("approval_pause") for u in r.unsupported):  # an idiom that cannot pause says so
        assert r.outcome != "awaiting_approval" and r.segments[-1].pending == []
        assert r.verdict == "unsupported"
        return
    assert r.outcome == "awaiting_approval"
    (pending,) = r.segments[-1].pending
    assert (pending.tool, pending.args.get("to")) == ("send_reply", "ana@example.com")


@per_column
def test_an_approved_resume_sends_exactly_once(recs):
    r = recs["approval_approved_resume"]
    if r.capabilities is not None and not r.capabilities.pause_survives_restart:
        # the idiom keeps its pause in the process that paused; the resume runs in another one: nothing is sent
        assert r.outcome != "completed" and r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
        return
    assert r.outcome == "completed"
    assert r.counters.tool_executions_by_tool["send_reply"] == 1
    if r.counters.resumes:  # resumed from a snapshot: in another worker process
        assert r.segments[0].worker_pid != r.segments[1].worker_pid


@per_column
def test_a_policy_denied_tool_never_runs(recs):
    for scenario in ("denied_action", "denied_action_continue"):  # the denial stops the run / goes to the model
        assert recs[scenario].counters.tool_executions_by_tool.get("delete_account", 0) == 0, scenario


@per_column
def test_mechanisms_are_recorded_for_exactly_the_intents_a_scenario_states(recs):
    assert set(recs["approval_rejected_resume"].native.mechanisms) == {"approval_pause", "reject"}
    assert set(recs["denied_action"].native.mechanisms) == {"deny_stop"}
    assert set(recs["denied_action_continue"].native.mechanisms) == {"deny_continue"}
    assert recs["support_draft_completes"].native.mechanisms == {}
