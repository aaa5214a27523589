"""Each outcome rule of DESIGN.md, in order: the first rule that applies wins."""

from __future__ import annotations

import pytest

from loopbench.harness.judge.outcome import LIMIT_AS_ANSWER, completion_holds, derive_outcome
from loopbench.harness.record import LedgerEntry, NativeSignals, PendingCall
from loopbench.harness.scenario import Completion

RETURNED = NativeSignals(ended="returned", final_text="done")
HOLDS = (True, "ok")


def test_rule1_harness_error_beats_everything():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), harness_error="adapter bug", hung=True, capped=True)
    assert (d.outcome, d.rule, d.reason) == ("error", 1, "adapter bug")


def test_rule1_no_signals_is_an_error():
    assert derive_outcome(None).outcome == "error"


def test_rule2_hung_beats_cap_and_limits():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), hung=True, capped=True)
    assert (d.outcome, d.rule) == ("hung", 2)


def test_rule3_capped_beats_a_limit_signal():
    d = derive_outcome(NativeSignals(ended="raised", limit="steps"), capped=True)
    assert (d.outcome, d.rule) == ("capped", 3)


@pytest.mark.parametrize("limit,outcome", [("steps", "limit_steps"), ("budget", "limit_budget"), ("deadline", "limit_deadline")])
def test_rule4_raised_limits(limit, outcome):
    d = derive_outcome(NativeSignals(ended="raised", limit=limit, limit_signal="raised"), evidence=HOLDS)
    assert (d.outcome, d.rule, d.notes) == (outcome, 4, ())


def test_rule4_handled_limit_is_a_limit_with_the_named_deviation():
    d = derive_outcome(NativeSignals(ended="returned", final_text="x", limit="steps", limit_signal="handled"), evidence=HOLDS)
    assert (d.outcome, d.rule, d.notes) == ("limit_steps", 4, (LIMIT_AS_ANSWER,))


def test_rule4_inferred_limit():
    d = derive_outcome(NativeSignals(ended="returned", limit="steps", limit_signal="inferred"))
    assert (d.outcome, d.rule) == ("limit_steps", 4)


def test_rule5_pause_with_pending_calls():
    sig = NativeSignals(ended="paused", pending=[PendingCall(call_id="s1", tool="send_reply", args={"to": "a"})])
    d = derive_outcome(sig, evidence=HOLDS)
    assert (d.outcome, d.rule) == ("awaiting_approval", 5)


def test_rule6_denied_beats_failure():
    d = derive_outcome(NativeSignals(ended="raised", denied=True, failure="tool"))
    assert (d.outcome, d.rule) == ("denied", 6)


def test_rule7_tool_or_model_error():
    d = derive_outcome(NativeSignals(ended="raised", failure="tool", exception_type="ToolError"), evidence=HOLDS)
    assert (d.outcome, d.rule) == ("failed", 7)
    assert "ToolError" in d.reason


def test_rule7_an_unclassified_raise_is_a_failure():
    assert derive_outcome(NativeSignals(ended="raised")).outcome == "failed"


def test_rule8_completed_needs_evidence():
    d = derive_outcome(RETURNED, evidence=HOLDS)
    assert (d.outcome, d.rule) == ("completed", 8)


def test_rule9_normal_finish_without_evidence_is_incomplete():
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
