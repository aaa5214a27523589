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


# ---- approvals among parallel calls (parallel_approvals_split): a read and two gated writes in one response,
# resumed approving send_1 and rejecting refund_1. Which call ran how many times, and what the first pause held,
# per column — the ground truth of every cell, from the ledger (not the counters the record derives from it).
BOTH = ("send_reply", "issue_refund")
PARALLEL_TRUTH: dict[str, tuple[int, int, int, tuple[str, ...] | None]] = {
    # column: (get_ticket runs, send_reply runs, issue_refund runs, tools the first pause held; None: no pause)
    **{c: (1, 1, 0, BOTH) for c, (f, _) in COLUMNS.items()
       if f in ("openai-agents", "pydantic-ai", "vercel-ai", "langgraph", "google-adk")},
    # decided in-process when the CLI asks: no pause
    "claude-agent-sdk:can-use-tool": (1, 1, 0, None),
    # the CLI reports one deferred call (the last): the approved reply is never asked again nor run
    **dict.fromkeys(("claude-agent-sdk", "claude-agent-sdk:guarded"), (1, 0, 0, ("issue_refund",))),
    # the pause lives in the process that paused: the resume in a new one runs nothing
    "google-adk:in-memory": (1, 0, 0, BOTH),
    # one interrupt per gated call, in turn: the read re-runs on the resume, which pauses again on the refund
    "langgraph:stategraph": (2, 1, 0, ("send_reply",)),
    # one approval at a time: the resume runs the reply and pauses again on the refund (no decision for it)
    **{c: (1, 1, 0, ("send_reply",)) for c, (f, _) in COLUMNS.items() if f == "mastra"},
}


def _runs(r: RunRecord, tool: str) -> int:
    return sum(1 for e in r.ledger if e.kind == "call" and e.tool == tool)


def test_the_parallel_approval_truth_covers_every_column():
    assert set(PARALLEL_TRUTH) == set(COLUMNS)


@per_column
def test_approvals_among_parallel_calls_run_what_the_ledger_says(recs, column):
    r = recs["parallel_approvals_split"]
    first = r.segments[0]
    held = tuple(p.tool for p in first.pending) if first.outcome_signals.ended == "paused" else None
    assert (_runs(r, "get_ticket"), _runs(r, "send_reply"), _runs(r, "issue_refund"), held) == PARALLEL_TRUTH[column]
    # whatever the framework: the rejected refund never runs, a read is never held for approval
    assert r.counters.tool_executions_by_tool.get("issue_refund", 0) == 0
    assert all(p.tool != "get_ticket" for s in r.segments for p in s.pending)


@per_column
def test_a_resumed_task_does_its_approved_work_once_whatever_meets_it_after(recs):
    caps = recs["resume_then_deadline"].capabilities
    # an idiom whose pause lives in the process that paused runs nothing in the resumer (as in the approved resume)
    once = 1 if caps is None or caps.pause_survives_restart else 0
    # a deadline after the resume; a fatal tool failure after it; a rejection whose fallback is another gated write
    assert _runs(recs["resume_then_deadline"], "send_reply") == once
    assert _runs(recs["resume_then_tool_fatal"], "issue_refund") == once
    fallback = recs["rejection_fallback_write"]
    assert _runs(fallback, "issue_refund") == 0 and _runs(fallback, "send_reply") <= 1
