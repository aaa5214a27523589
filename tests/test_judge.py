"""The judge turns a task's evidence into a RunRecord with no processes: each rule it applies, from data."""

from __future__ import annotations

import pytest

from loopbench.harness.judge.judging import TaskEvidence, TaskIdentity, judge
from loopbench.harness.judge.outcome import OutcomeRule
from loopbench.harness.record import (
    LedgerEntry,
    NativeSignals,
    PendingCall,
    ReportedCounters,
    RequestLogEntry,
    Segment,
    SegmentResult,
)
from loopbench.harness.scenario import load_scenarios

TIER = "unit"

SCENARIOS = {s.id: s for s in load_scenarios()}


def _req(seq: int, status: int = 200) -> RequestLogEntry:
    return RequestLogEntry(seq=seq, t_s=seq * 0.1, protocol="openai_chat", path="/v1/chat/completions",
                           stream=False, model="claude-sonnet-4-5", messages=1, tools_offered=[], prompt_bytes=100,
                           status=status, input_tokens=1000 if status == 200 else 0,
                           output_tokens=100 if status == 200 else 0)


def _call(n: int, tool: str) -> LedgerEntry:
    return LedgerEntry(id=f"L{n}", run_id="r", kind="call", tool=tool, call_number=1, started_s=n * 0.1)


def _evidence(signals: NativeSignals, requests: int, calls: list[str], **kw) -> TaskEvidence:
    result = SegmentResult(signals=signals, counters=ReportedCounters(model_requests_reported=requests),
                           settings={"max_turns": 8}, mechanisms={"approval_pause": "a pause"},
                           limits={"max_model_calls": {"neutral": 8, "native": "max_turns=8"}}, notes=["n1"])
    seg = Segment(kind="run", outcome_signals=signals, counters=result.counters, pending=signals.pending,
                  elapsed_s=0.5)
    return TaskEvidence(segments=[seg], results=[result], requests=[_req(i + 1) for i in range(requests)],
                        ledger=[_call(i + 1, t) for i, t in enumerate(calls)], **kw)


def _identity(scenario: str) -> TaskIdentity:
    return TaskIdentity(run_id="r", scenario=SCENARIOS[scenario], framework="f", variant="default", repetition=1,
                        started_at="2026-12-01T00:00:00Z", loopbench_version="0.1.0")


def test_a_finished_task_with_its_evidence_completes_and_conforms():
    text = "Draft: Hello Ana, under policy POL-7 your refund for order 1042 is accepted."
    ev = _evidence(NativeSignals(ended="returned", final_text=text), 3, ["get_ticket", "lookup_policy"])
    judged = judge(_identity("support_draft_completes"), ev, trace="traces/r.jsonl")
    r = judged.record
    assert (r.outcome, r.outcome_rule, r.verdict) == ("completed", 8, "conforms")
    # the record carries the rule's plain number, as published records do
    assert type(r.outcome_rule) is int and r.outcome_rule == OutcomeRule.COMPLETED
    assert '"outcome_rule":8,' in r.model_dump_json()
    assert r.counters.model_requests_observed == 3 and r.counters.model_requests_reported == 3
    assert r.counters.cost_usd_observed == pytest.approx(3 * (1000 * 3 + 100 * 15) / 1e6)
    assert r.native.mechanisms == {"approval_pause": "a pause"} and r.native.notes == ["n1"]
    assert r.limits["max_model_calls"].native == "max_turns=8" and r.trace == "traces/r.jsonl"
    assert r.loopbench_version == "0.1.0"


def test_a_hang_beats_what_the_framework_said_and_keeps_the_reason():
    ev = _evidence(NativeSignals(ended="returned", final_text="POL-7"), 2, ["get_ticket"],
                   hung_reason="no answer within the hard timeout of 61 s")
    r = judge(_identity("support_draft_completes"), ev).record
    assert (r.outcome, r.outcome_rule) == ("hung", 2) and r.error_reason.startswith("no answer")


def test_a_harness_error_is_error_whatever_else_happened():
    ev = _evidence(NativeSignals(ended="raised", limit="steps"), 8, [], harness_error="adapter bug", capped=True)
    r = judge(_identity("runaway_step_limit"), ev).record
    assert (r.outcome, r.verdict, r.error_reason) == ("error", "error", "adapter bug")


def test_a_pause_that_was_never_resumed_deviates_on_the_resumes():
    body = "Hello Ana, under policy POL-7 your refund for order 1042 is accepted."
    pending = [PendingCall(call_id="send_1", tool="send_reply", args={"to": "ana@example.com", "body": body})]
    ev = _evidence(NativeSignals(ended="returned", pending=[]), 3, ["get_ticket", "lookup_policy"])
    r = judge(_identity("resume_twice"), ev).record  # its `expect` does not name resumes: the judge adds it
    resumes = next(d for d in r.deviations if d.name == "resumes")
    assert (resumes.ideal, resumes.observed, resumes.note) == (2, 0, "no saved pause to resume from")
    paused = _evidence(NativeSignals(ended="paused", pending=pending), 3, ["get_ticket", "lookup_policy"])
    r = judge(_identity("approval_pause"), paused).record
    assert (r.outcome, r.verdict) == ("awaiting_approval", "conforms"), r.deviations
    assert r.counters.approval_requests == 1 and r.counters.pending_approvals == 1


def test_no_segment_at_all_is_judged_from_ground_truth_alone():
    ev = TaskEvidence(segments=[], results=[], requests=[], ledger=[], harness_error="worker died: exit -9")
    r = judge(_identity("support_draft_completes"), ev).record
    assert r.outcome == "error" and r.native.signals is None and r.counters.elapsed_s is None


def test_a_cost_ideal_priced_for_another_model_makes_the_cell_unsupported_with_the_reason():
    """cost_budget's ideal (where $0.05 trips) is priced for the scenario's claude-sonnet-4-5: an idiom that sent
    the model table's gpt-4.1 cannot meet or miss it. It is ⊘ with the reason, its cost priced for gpt-4.1."""
    text = "Draft: Hello Ana, under policy POL-7 your refund for order 1042 is accepted."
    ev = _evidence(NativeSignals(ended="returned", final_text=text), 3, ["get_ticket", "lookup_policy"])
    gpt = [q.model_copy(update={"model": "gpt-4.1", "input_tokens": 5000, "output_tokens": 400}) for q in ev.requests]
    r = judge(_identity("cost_budget"), TaskEvidence(**{**ev.__dict__, "requests": gpt})).record
    assert r.outcome == "completed" and r.verdict == "unsupported" and "max_cost_usd" in r.unsupported
    assert any("priced for claude-sonnet-4-5; this idiom sent gpt-4.1" in n for n in r.native.notes)
    assert r.counters.cost_usd_observed == pytest.approx(3 * (5000 * 2 + 400 * 8) / 1e6)
    same = judge(_identity("cost_budget"), ev).record  # the scenario's own model: judged on its ideal as it is
    assert "max_cost_usd" not in same.unsupported and not any("priced for" in n for n in same.native.notes)
    assert same.verdict == "deviates"
