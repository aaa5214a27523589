"""Facts of the shared suite run that do not depend on any framework's choices, checked for every framework and
variant: each ran the whole suite with no harness error, hang or script violation; the ledger and the server
agree with the record's counters; the baseline task completes with its ground-truth counts; a pause runs
nothing it paused on; a policy-denied tool never runs."""

from __future__ import annotations

import pytest

from loopbench.harness.judge.prices import cost_usd
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario import load_scenarios
from tests.suite_helpers import suite_records

SCENARIOS = {s.id for s in load_scenarios()}


@pytest.fixture(scope="module")
def by_column(suite_run) -> dict[str, dict[str, RunRecord]]:
    out: dict[str, dict[str, RunRecord]] = {}
    for r in suite_records():
        out.setdefault(f"{r.framework}:{r.variant}", {})[r.scenario] = r
    return out


def test_all_four_frameworks_ran(by_column):
    assert {c.split(":")[0] for c in by_column} == {"openai-agents", "claude-agent-sdk", "langgraph", "vercel-ai"}


def _second_resume_never_returned(r: RunRecord) -> bool:
    """The one hang that is a framework's behaviour, not a harness fault: resuming a pause that was already
    resumed, the framework never answered (the Claude CLI idles waiting for a prompt)."""
    resumes = [s.outcome_signals.ended for s in r.segments if s.kind == "resume"]
    return r.scenario == "resume_twice" and resumes == ["returned", "hung"]


def test_every_variant_ran_every_scenario_without_error_hang_or_violation(by_column):
    for column, recs in by_column.items():
        assert set(recs) == SCENARIOS, column
        bad = {s: (r.outcome, r.error_reason) for s, r in recs.items()
               if r.outcome == "error" or (r.outcome == "hung" and not _second_resume_never_returned(r))}
        assert bad == {}, column
        assert {s: r.violations for s, r in recs.items() if r.violations} == {}, column


def test_counters_agree_with_the_request_log_and_the_ledger(by_column):
    for column, recs in by_column.items():
        for scenario, r in recs.items():
            c = r.counters
            assert c.model_requests_observed == len(r.requests), (column, scenario)
            assert c.tool_executions == sum(1 for e in r.ledger if e.kind == "call"), (column, scenario)
            served = [q for q in r.requests if q.status == 200]
            expected = sum(cost_usd(q.model or "claude-sonnet-4-5", q.input_tokens, q.output_tokens) or 0
                           for q in served)
            assert abs((c.cost_usd_observed or 0) - expected) < 1e-9, (column, scenario)


def test_the_baseline_task_completes_with_its_ground_truth(by_column):
    for column, recs in by_column.items():
        r = recs["support_draft_completes"]
        assert (r.outcome, r.outcome_rule) == ("completed", 8), column
        assert (r.counters.model_requests_observed, r.counters.tool_executions) == (3, 2), column


def test_a_pause_runs_nothing_it_paused_on_and_keeps_the_call(by_column):
    for column, recs in by_column.items():
        r = recs["approval_pause"]
        assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0, column
        if any(u.startswith("approval_pause") for u in r.unsupported):  # an idiom that cannot pause says so
            assert r.outcome != "awaiting_approval" and r.segments[-1].pending == [], column
            assert r.verdict == "unsupported", column
            continue
        assert r.outcome == "awaiting_approval", column
        (pending,) = r.segments[-1].pending
        assert (pending.tool, pending.args.get("to")) == ("send_reply", "ana@example.com"), column


def test_an_approved_resume_sends_exactly_once(by_column):
    for column, recs in by_column.items():
        r = recs["approval_approved_resume"]
        assert r.outcome == "completed", column
        assert r.counters.tool_executions_by_tool["send_reply"] == 1, column
        if r.counters.resumes:  # resumed from a snapshot: in another worker process
            assert r.segments[0].worker_pid != r.segments[1].worker_pid, column


def test_a_policy_denied_tool_never_runs(by_column):
    for column, recs in by_column.items():
        assert recs["denied_action"].counters.tool_executions_by_tool.get("delete_account", 0) == 0, column


def test_mechanisms_are_recorded_for_exactly_the_intents_a_scenario_states(by_column):
    for column, recs in by_column.items():
        assert set(recs["approval_rejected_resume"].native.mechanisms) == {"approval_pause", "reject"}, column
        assert set(recs["denied_action"].native.mechanisms) == {"deny_stop"}, column
        assert set(recs["denied_action_continue"].native.mechanisms) == {"deny_continue"}, column
        assert recs["support_draft_completes"].native.mechanisms == {}, column
