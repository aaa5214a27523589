"""RunRecord round-trip, counters from ground truth, and the verdict computed against `expect`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopbench.harness.judge.counters import build_counters, reported_totals
from loopbench.harness.judge.verdict import compare, verdict_of
from loopbench.harness.record import (
    Counters,
    LedgerEntry,
    NativeSignals,
    PendingCall,
    ReportedCounters,
    RequestLogEntry,
    RunRecord,
    Segment,
)
from loopbench.harness.scenario import Expect

TIER = "unit"


def req(seq, *, status=200, retry=False, prompt=100, calls=(), model="claude-sonnet-4-5"):
    return RequestLogEntry(seq=seq, t_s=seq * 0.1, protocol="openai_chat", path="/v1/chat/completions", stream=False,
                           model=model, messages=seq, tools_offered=[], prompt_bytes=prompt, status=status,
                           retry=retry, calls_served=list(calls),
                           input_tokens=1000 if status == 200 else 0, output_tokens=100 if status == 200 else 0)


def seg(kind="run", *, ended="returned", from_pause=None, pending=(), **counters):
    return Segment(kind=kind, from_pause=from_pause, outcome_signals=NativeSignals(ended=ended),
                   counters=ReportedCounters(**counters), pending=list(pending), elapsed_s=0.5)


def test_counters_come_from_the_request_log_and_the_ledger():
    requests = [req(1, status=429), req(2, status=500, retry=True), req(3, retry=True, calls=["t1"], prompt=100),
                req(4, calls=["p1"], prompt=20_000), req(5, prompt=20_300)]
    ledger = [
        LedgerEntry(id="L1", run_id="r", kind="call", tool="get_ticket"),
        LedgerEntry(id="A2", run_id="r", kind="authorize", tool="send_reply", outcome="authorize"),
        LedgerEntry(id="L3", run_id="r", kind="call", tool="send_reply", committed=True),
        LedgerEntry(id="L4", run_id="r", kind="call", tool="send_reply", committed=True, duplicate_effect=True,
                    caller_abandoned=True),
    ]
    c = build_counters(model_id="claude-sonnet-4-5", requests=requests, ledger=ledger,
                       segments=[seg(model_requests_reported=3)], elapsed_s=1.0, cpu_s=None, peak_rss_mb=None)
    assert c.model_requests_observed == 5 and c.model_retries_observed == 2 and c.model_requests_reported == 3
    assert c.tool_calls_requested == 2
    assert c.tool_executions == 3 and c.tool_executions_by_tool == {"get_ticket": 1, "send_reply": 2}
    assert c.authorize_events_by_tool == {"send_reply": 1} and c.effects_by_tool == {"send_reply": 2}
    assert c.duplicate_effects == 1 and c.abandoned_calls == 1
    assert c.input_tokens_observed == 3000 and c.output_tokens_observed == 300 and c.total_tokens_observed == 3300
    assert abs(c.cost_usd_observed - 3 * 0.0045) < 1e-12
    assert c.max_request_growth_bytes == 19_900
    assert c.cpu_s is None and c.input_tokens_reported is None  # unknown stays unknown


def test_cost_is_unknown_for_a_model_without_a_price():
    c = build_counters(model_id="mystery", requests=[req(1, model="mystery")], ledger=[], segments=[seg()],
                       elapsed_s=None, cpu_s=None, peak_rss_mb=None)
    assert c.cost_usd_observed is None


def test_reported_counters_are_summed_per_segment_and_cumulative_ones_by_growth():
    independent = [seg(ended="paused", model_requests_reported=3), seg("resume", from_pause=1, model_requests_reported=1)]
    assert reported_totals(independent)["model_requests_reported"] == 4
    cumulative = [
        seg(ended="paused", model_requests_reported=3, cumulative=True),
        seg("resume", from_pause=1, model_requests_reported=4, cumulative=True),
        seg("resume", from_pause=1, model_requests_reported=4, cumulative=True),  # the same pause resumed twice
    ]
    assert reported_totals(cumulative)["model_requests_reported"] == 5
    # the resume after a cancel (no pause number) grows from the cancelled segment's count
    after_cancel = [seg(ended="cancelled", model_requests_reported=2, cumulative=True),
                    seg("resume", model_requests_reported=4, cumulative=True)]
    assert reported_totals(after_cancel)["model_requests_reported"] == 4
    assert reported_totals([seg(ended="cancelled", model_requests_reported=2),
                            seg("resume", model_requests_reported=2)])["model_requests_reported"] == 4


def test_a_total_with_an_unknown_segment_is_unknown_not_a_partial_sum():
    segments = [seg(ended="paused", model_requests_reported=3, input_tokens_reported=10),
                seg("resume", from_pause=1, model_requests_reported=None, input_tokens_reported=5)]
    totals = reported_totals(segments)
    assert totals["model_requests_reported"] is None
    assert totals["input_tokens_reported"] == 15
    cumulative = [seg(ended="paused", model_requests_reported=None, cumulative=True),
                  seg("resume", from_pause=1, model_requests_reported=4, cumulative=True)]
    assert reported_totals(cumulative)["model_requests_reported"] is None  # no base to subtract


def test_approval_requests_are_pauses_and_in_process_asks_not_callback_reruns():
    from loopbench.harness.record import LedgerEntry

    pending = [PendingCall(call_id="send_1", tool="send_reply")]
    segments = [seg(ended="paused", pending=pending), seg("resume", from_pause=1), seg("resume", from_pause=1)]
    ledger = [LedgerEntry(id=f"A{i}", run_id="r", kind="authorize", tool="send_reply") for i in range(3)]
    ledger.append(LedgerEntry(id="Q1", run_id="r", kind="approval_request", tool="delete_account"))
    c = build_counters(model_id="claude-sonnet-4-5", requests=[], ledger=ledger, segments=segments,
                       elapsed_s=None, cpu_s=None, peak_rss_mb=None)
    assert c.approval_requests == 2
    assert c.approval_requests_by_tool == {"send_reply": 1, "delete_account": 1}
    assert c.authorize_events_by_tool == {"send_reply": 3}  # callback invocations, shown apart


def test_a_record_that_differs_from_expect_deviates_with_the_difference_named():
    expect = Expect.model_validate({"outcome": "completed", "counters": {
        "model_requests_observed": 3, "tool_executions_by_tool.send_reply": 1, "elapsed_s": {"max": 2.5}}})
    counters = Counters(model_requests_observed=6, tool_executions_by_tool={"send_reply": 1}, elapsed_s=3.0)
    devs = compare(expect, "limit_steps", counters, [])
    assert [(d.name, d.ideal, d.observed) for d in devs] == [
        ("outcome", "completed", "limit_steps"), ("model_requests_observed", 3, 6), ("elapsed_s", "<= 2.5", 3.0)]
    assert verdict_of("limit_steps", devs, []) == "deviates"
    assert verdict_of("limit_steps", devs, ["max_total_tokens"]) == "unsupported"


def test_a_conforming_record_conforms():
    expect = Expect.model_validate({"outcome": "awaiting_approval", "counters": {"pending_approvals": 1},
                                    "pending_calls": [{"tool": "send_reply", "args": {"to": "ana"}}]})
    pending = [PendingCall(call_id="send_1", tool="send_reply", args={"to": "ana", "body": "x"})]
    devs = compare(expect, "awaiting_approval", Counters(pending_approvals=1), pending)
    assert devs == [] and verdict_of("awaiting_approval", devs, []) == "conforms"
    wrong = compare(expect, "awaiting_approval", Counters(pending_approvals=1),
                    [PendingCall(call_id="send_1", tool="send_reply", args={"to": "bob"})])
    assert [d.name for d in wrong] == ["pending_calls"]


def test_unmeasured_counter_is_a_named_deviation_not_a_pass():
    expect = Expect.model_validate({"outcome": "completed", "counters": {"model_requests_reported": 3}})
    (dev,) = compare(expect, "completed", Counters(), [])
    assert dev.observed is None and "not measured" in dev.note


def test_stalled_ideal_names_the_wasted_calls():
    expect = Expect.model_validate({"outcome": "stalled", "stall_at_requests": 3})
    (dev,) = compare(expect, "limit_steps", Counters(model_requests_observed=8), [])
    assert dev.note == "ran 5 more calls with no new information"


def test_handled_limit_adds_the_named_deviation():
    expect = Expect.model_validate({"outcome": "limit_steps"})
    devs = compare(expect, "limit_steps", Counters(), [], rule_notes=("limit reported as an answer",))
    assert [d.name for d in devs] == ["limit reported as an answer"]


def test_error_outcome_gives_error_verdict():
    assert verdict_of("error", [], []) == "error"


def test_run_record_round_trips_through_json():
    rec = RunRecord(run_id="r1", scenario="s", framework="f", started_at="2026-11-30T00:00:00Z", outcome="completed",
                    outcome_rule=8, verdict="conforms", counters=Counters(model_requests_observed=3),
                    requests=[req(1)], segments=[seg()])
    again = RunRecord.model_validate_json(rec.model_dump_json())
    assert again == rec and again.schema_version == 7


# ---------------------------------------------------------------- schema v2: vocabulary, migration
def test_every_counter_list_is_derived_from_the_record():
    from loopbench.harness.judge import counters
    from loopbench.harness.record import (
        PER_AGENT_COUNTERS,
        PER_TOOL_COUNTERS,
        SCALAR_COUNTERS,
        SIZE_COUNTERS,
        SUMMED_COUNTERS,
        TIMING_COUNTERS,
        counter_label,
        is_counter,
    )
    from loopbench.harness.scenario import load as scenario
    from loopbench.reports import diff

    assert set(SCALAR_COUNTERS) | set(PER_TOOL_COUNTERS) | set(PER_AGENT_COUNTERS) == set(Counters.model_fields) - {
        "runtime_step_unit"}
    assert PER_AGENT_COUNTERS == ("model_requests_by_agent", "input_tokens_by_agent", "output_tokens_by_agent",
                                  "tool_executions_by_agent")
    assert counter_label("model_requests_by_agent.billing") == "billing requests"
    assert is_counter("tool_executions_by_agent.main") and not is_counter("tool_executions_by_agent")
    assert TIMING_COUNTERS == ("retry_after_wait_min_s", "retry_after_wait_max_s", "elapsed_s", "cpu_s",
                               "loopbench_worker_cpu_s", "loopbench_runner_cpu_s", "peak_rss_mb")
    assert SIZE_COUNTERS == ("max_request_growth_bytes",)
    assert set(SUMMED_COUNTERS) == {n for n in ReportedCounters.model_fields if n in Counters.model_fields} - {
        "tool_calls_requested", "runtime_step_unit"}
    assert scenario.SCALAR_COUNTERS is SCALAR_COUNTERS and counters.SUMMED_COUNTERS is SUMMED_COUNTERS
    assert diff.IGNORED_COUNTERS is TIMING_COUNTERS
    assert counter_label("tool_executions_by_tool.send_reply") == "send_reply runs"
    assert counter_label("authorize_events_by_tool.send_reply") == "send_reply approval callback runs"
    assert is_counter("tool_executions_by_tool.x") and not is_counter("tool_executions_by_tool")
    assert not is_counter("model_requests_observed.x") and not is_counter("runtime_step_unit")


V1 = {
    "schema_version": 1, "run_id": "r1", "scenario": "s", "framework": "langgraph", "variant": "model-call-limit",
    "started_at": "2026-11-30T00:00:00Z", "outcome": "completed", "outcome_rule": 8, "verdict": "conforms",
    "native": {"settings": {"graph": "g", "mechanisms": {"deny_stop": "a hook"}},
               "signals": {"ended": "returned", "final_text": "done"}, "notes": ["n"]},
    "limits": {"max_model_calls": {"neutral": 8, "native": "ModelCallLimitMiddleware(thread_limit=8)",
                                   "recursion_limit": "recursion_limit default (9999)"},
               "deadline_s": {"neutral": 2.0, "native": None, "note": "no run deadline"}},
    "pauses": [{"kind": "run", "outcome_signals": {"ended": "returned"}, "counters": {}, "elapsed_s": 0.5}],
}


def test_a_v1_record_is_migrated_to_the_current_version():
    from loopbench.harness.record import migrate

    rec = RunRecord.model_validate(migrate(V1))
    assert rec.schema_version == 7 and rec.loopbench_version is None
    assert [s.kind for s in rec.segments] == ["run"]
    assert rec.native.mechanisms == {"deny_stop": "a hook"} and rec.native.settings == {"graph": "g"}
    assert rec.native.signals is not None and rec.native.signals.final_text == "done"
    assert rec.native.signals.pending == []  # typed: every signal key, defaults included
    calls = rec.limits["max_model_calls"]
    assert calls.native == "ModelCallLimitMiddleware(thread_limit=8)" and calls.neutral == 8
    assert calls.note == "recursion_limit: recursion_limit default (9999)"
    assert rec.limits["deadline_s"].native is None and rec.limits["deadline_s"].note == "no run deadline"


def test_a_record_that_cannot_be_migrated_says_why():
    from loopbench.harness.record import MigrationError, migrate

    with pytest.raises(MigrationError, match="schema_version 8: this loopbench reads versions 1, 2, 3, 4"):
        migrate({**V1, "schema_version": 8})
    with pytest.raises(MigrationError, match="limits.max_model_calls: 8 is not a limit translation"):
        migrate({**V1, "limits": {"max_model_calls": 8}})


def test_v2_to_v6_records_are_read_as_v7_with_nothing_made_up():
    from loopbench.harness.record import RunRecord, migrate

    for old in (2, 3, 4, 5, 6):
        raw = {**migrate(V1), "schema_version": old}
        assert migrate(raw) == {**raw, "schema_version": 7}
        rec = RunRecord.model_validate(migrate(raw))
        assert old == 4 or rec.scenario_digest is None and all(
            s.worker_warm_s is None and s.prepare_s is None for s in rec.segments)
        # nothing was attributed to an agent before v5: no agent, no per-agent count
        assert all(r.agent is None for r in rec.requests) and all(e.agent is None for e in rec.ledger)
        assert rec.counters.model_requests_by_agent == {} and rec.counters.tool_executions_by_agent == {}
        # no scenario cancelled a run before v6: no moment the caller was told
        assert all(s.cancel_sent_s is None for s in rec.segments)
        # no scenario had a structured answer before v7: none served, none counted, none returned
        assert all(r.output_attempt is None and r.output_constrained is None for r in rec.requests)
        assert rec.counters.structured_answers_observed is None
        assert all(s.outcome_signals.final_output is None for s in rec.segments)


def test_a_hung_segment_is_a_signal_only_the_runner_sets():
    from loopbench.harness.record import NativeSignals

    assert NativeSignals(ended="hung").ended == "hung"
    with pytest.raises(ValueError):
        NativeSignals(ended="stuck")


def test_v1_results_files_are_read_as_the_current_version(tmp_path):
    import json

    from loopbench.reports.load import load_records

    f = tmp_path / "results.jsonl"
    f.write_text(json.dumps(V1) + "\n")
    (rec,) = load_records(f)
    assert rec.schema_version == 7 and rec.segments[0].elapsed_s == 0.5


def test_the_usage_page_lists_every_outcome():
    """docs/usage.md's list of outcomes is the record's vocabulary, no more, no less."""
    from typing import get_args

    from loopbench.harness.record import Outcome

    usage = (Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text()
    listed = re.split(r"—\s+and `outcome_rule`", usage.split("- `outcome` — the normalized stop:", 1)[1], maxsplit=1)[0]
    assert re.findall(r"`([a-z_]+)`", listed) == list(get_args(Outcome))
