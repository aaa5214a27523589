"""Each outcome rule of the ordered outcome table (harness/judge/outcome.py, `OutcomeRule`; docs/policy.md),
in order: the first rule that applies wins. The numbers asserted are the records' `outcome_rule`."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopbench.harness.judge import outcome as outcome_module
from loopbench.harness.judge.outcome import LIMIT_AS_ANSWER, OutcomeRule, completion_holds, derive_outcome
from loopbench.harness.record import GuardSignal, LedgerEntry, NativeSignals, PendingCall
from loopbench.harness.scenario import Completion

TIER = "unit"

RETURNED = NativeSignals(ended="returned", final_text="done")
HOLDS = (True, "ok")
POLICY = Path(__file__).resolve().parent.parent / "docs" / "policy.md"


def _table_rows(text: str) -> list[str]:
    """The rows of the outcome table (`| # | rule | evidence | outcome |`) in a text."""
    lines = text.splitlines()
    start = lines.index("| # | rule | evidence | outcome |")
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_rules_keep_the_numbers_records_carry():
    assert [(r.name, int(r)) for r in OutcomeRule] == [
        ("HARNESS_ERROR", 1), ("SCRIPT_ERROR", 10), ("NOT_RUN", 11), ("HUNG", 2), ("CAPPED", 3), ("CANCELLED", 12),
        ("GUARD_STOP", 13), ("NATIVE_LIMIT", 4),
        ("PAUSED", 5), ("DENIED", 6),
        ("FAILED", 7), ("COMPLETED", 8), ("INCOMPLETE", 9)]


def test_the_table_in_the_module_and_in_docs_policy_agree_with_the_rules():
    table = _table_rows(outcome_module.__doc__ or "")
    assert _table_rows(POLICY.read_text()) == table, "docs/policy.md's outcome table differs from outcome.py's"
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in table[2:]]
    assert [(int(c[0]), c[1].strip("`")) for c in cells] == [(int(r), r.name) for r in OutcomeRule]


def test_harness_error_beats_everything():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), harness_error="adapter bug", hung=True, capped=True)
    assert (d.outcome, d.rule, d.reason) == ("error", 1, "adapter bug")


def test_harness_error_when_there_are_no_signals():
    assert derive_outcome(None).outcome == "error"


def test_hung_beats_cap_and_limits():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), hung=True, capped=True)
    assert (d.outcome, d.rule) == ("hung", 2)


def test_capped_beats_a_native_limit_signal():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), capped=True)
    assert (d.outcome, d.rule) == ("capped", 3)


def test_capped_beats_a_cancel():
    d = derive_outcome(NativeSignals(ended="cancelled", exception_type="CancelledError"), capped=True)
    assert (d.outcome, d.rule) == ("capped", 3)


def test_cancelled_beats_a_native_limit_and_a_failure_and_names_how_it_ended():
    sig = NativeSignals(ended="cancelled", limit="deadline", failure="tool", exception_type="RunCancelled")
    d = derive_outcome(sig, evidence=HOLDS)
    assert (d.outcome, d.rule) == ("cancelled", 12)
    assert "RunCancelled" in d.reason
    d = derive_outcome(NativeSignals(ended="cancelled", terminal_reason="aborted_tools"))
    assert (d.outcome, d.rule) == ("cancelled", 12) and "aborted_tools" in d.reason


def test_a_run_that_returns_before_the_cancel_is_not_cancelled():
    assert derive_outcome(RETURNED, evidence=HOLDS).outcome == "completed"


@pytest.mark.parametrize("limit,outcome", [("steps", "limit_steps"), ("budget", "limit_budget"), ("deadline", "limit_deadline")])
def test_native_limit_raised(limit, outcome):
    d = derive_outcome(NativeSignals(ended="raised", limit=limit, limit_signal="raised"), evidence=HOLDS)
    assert (d.outcome, d.rule, d.notes) == (outcome, 4, ())


def test_native_limit_handled_is_a_limit_with_the_named_deviation():
    d = derive_outcome(NativeSignals(ended="returned", final_text="x", limit="steps", limit_signal="handled"), evidence=HOLDS)
    assert (d.outcome, d.rule, d.notes) == ("limit_steps", 4, (LIMIT_AS_ANSWER,))


def test_native_limit_inferred():
    d = derive_outcome(NativeSignals(ended="returned", limit="steps", limit_signal="inferred"))
    assert (d.outcome, d.rule) == ("limit_steps", 4)


def test_paused_with_pending_calls():
    sig = NativeSignals(ended="paused", pending=[PendingCall(call_id="s1", tool="send_reply", args={"to": "a"})])
    d = derive_outcome(sig, evidence=HOLDS)
    assert (d.outcome, d.rule) == ("awaiting_approval", 5)


@pytest.mark.parametrize(("exit", "measure", "outcome"), [
    ("limit", "model_calls", "limit_steps"), ("limit", "tokens", "limit_budget"), ("limit", "cost_usd", "limit_budget"),
    ("limit", "wall_s", "limit_deadline"), ("stalled", None, "stalled"), ("denied", None, "denied"),
    ("failed", None, "failed")])
def test_a_guard_stop_the_framework_stopped_on_is_the_outcome(exit, measure, outcome):
    sig = NativeSignals(ended="raised", failure="other", guard=GuardSignal(exit=exit, measure=measure))
    d = derive_outcome(sig, evidence=HOLDS)
    assert (d.outcome, d.rule) == (outcome, 13)


def test_a_guard_stop_the_framework_swallowed_is_not_the_outcome():
    sig = NativeSignals(ended="returned", final_text="done", guard=GuardSignal(exit="stalled"))
    assert derive_outcome(sig, evidence=HOLDS).outcome == "completed"


def test_denied_beats_failed():
    d = derive_outcome(NativeSignals(ended="raised", denied=True, failure="tool"))
    assert (d.outcome, d.rule) == ("denied", 6)


def test_failed_on_a_tool_or_model_error():
    d = derive_outcome(NativeSignals(ended="raised", failure="tool", exception_type="ToolError"), evidence=HOLDS)
    assert (d.outcome, d.rule) == ("failed", 7)
    assert "ToolError" in d.reason


def test_failed_on_an_unclassified_raise():
    assert derive_outcome(NativeSignals(ended="raised")).outcome == "failed"


def test_completed_needs_evidence():
    d = derive_outcome(RETURNED, evidence=HOLDS)
    assert (d.outcome, d.rule) == ("completed", 8)


def test_incomplete_is_a_normal_finish_without_evidence():
    d = derive_outcome(RETURNED, evidence=(False, "final answer lacks 'POL-7'"))
    assert (d.outcome, d.rule) == ("incomplete", 9)
    assert "POL-7" in d.reason


def entry(tool, *, outcome="result", committed=False, args=None):
    return LedgerEntry(id="L1", run_id="r", kind="call", tool=tool, args=args or {}, outcome=outcome, committed=committed)


def test_completion_evidence_text_receipts_and_effects():
    c = Completion(final_text_contains=["POL-7"], receipts=[{"tool": "send_reply", "args": {"to": "ana"}}])
    assert completion_holds(c, "see POL-7", [entry("send_reply", args={"to": "ana", "body": "x"})])[0]
    assert not completion_holds(c, "see POL-8", [entry("send_reply", args={"to": "ana"})])[0]
    assert not completion_holds(c, "POL-7", [entry("send_reply", args={"to": "bob"})])[0]
    assert not completion_holds(c, "POL-7", [entry("send_reply", outcome="error", args={"to": "ana"})])[0]
    eff = Completion(effects=[{"tool": "send_reply"}])
    assert completion_holds(eff, None, [entry("send_reply", outcome="timeout", committed=True)])[0]
    assert not completion_holds(eff, None, [entry("send_reply", outcome="timeout", committed=False)])[0]
