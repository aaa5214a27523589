"""The Claude Agent SDK adapter through the real runner: the whole suite, both variants.

What this framework does natively: the signal mapping, the cost relation measured between the CLI's
`total_cost_usd` and the price table, routing across a resumed session, and that no CLI process outlives the
suite; the facts every framework shares are in test_ground_truth.py. A few unit tests feed the adapter's
message mapping the SDK's own message types (shapes recorded by probes/claude/fair.py) for cases the suite's
scripts do not produce.

`model_outage` (a 500 with no hint, forever) is the slow one: the CLI's default retries take ~3 minutes
(probes/claude/fair.py outage); the adapter declares that window (`retry_window_s`) so the runner waits for it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from loopbench.harness.judge.prices import cost_usd
from loopbench.harness.record import RunRecord
from tests.suite_helpers import run_framework, suite_dir

FRAMEWORK = "claude-agent-sdk"
SUITE_FRAMEWORKS = (FRAMEWORK,)  # run alone, the suite run is this framework's only
VARIANTS = ("default", "can-use-tool")
SLOW = "model_outage"
NO_PAUSE = "approval_pause: can_use_tool is an in-process callback"


def _bundled_cli() -> str | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(path) if path.exists() else None


def _cli_processes_under(root: Path) -> list[int]:
    """PIDs of live bundled-CLI processes whose environment points into `root` (started by this test)."""
    cli = _bundled_cli()
    if cli is None:
        return []
    found = subprocess.run(["pgrep", "-f", cli], capture_output=True, text=True).stdout.split()
    mine = []
    for pid in found:
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # gone meanwhile
        if str(root).encode() in env:
            mine.append(int(pid))
    return mine


@pytest.fixture(scope="module")
def suite(suite_run) -> tuple[dict[tuple[str, str], RunRecord], Path]:
    return run_framework(FRAMEWORK), suite_dir()


@pytest.fixture(scope="module")
def records(suite) -> dict[tuple[str, str], RunRecord]:
    return suite[0]


def test_no_cli_process_survives_the_suite(suite):
    _, root = suite
    assert _cli_processes_under(root) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_runs_the_tools_through_the_sdk_mcp_server(records, variant):
    r = records[("support_draft_completes", variant)]
    # every tool result reached the server with its scripted id: the call id mapping is exact
    assert {e.call_id for e in r.ledger if e.kind == "call"} == {"ticket_1", "policy_1"}
    assert r.requests[0].tools_offered == ["mcp__loopbench__get_ticket", "mcp__loopbench__lookup_policy"]
    assert r.native.settings["tools"] == [] and r.native.settings["setting_sources"] == []


def test_approval_pause_keeps_the_scripted_call(records):
    """The pause and its one pending send_reply are test_ground_truth's; its id and body are the CLI's mapping."""
    r = records[("approval_pause", "default")]
    pending = r.segments[-1].pending[0]
    assert pending.call_id == "send_1" and "POL-7" in pending.args["body"]
    assert r.counters.authorize_events_by_tool["send_reply"] == 1
    assert r.counters.approval_requests == 1 and r.verdict == "conforms"


def test_approval_pause_is_a_deferred_tool_use_with_a_snapshot(suite):
    records, root = suite
    r = records[("approval_pause", "default")]
    signals = r.native.signals
    assert signals.terminal_reason == "tool_deferred" and signals.ended == "paused"
    snapshot = root / "runs" / r.run_id / "segment0" / "snapshot"
    session = json.loads((snapshot / "session.json").read_text())
    # the transcript lives in the task's one live session store, not in a copy inside the snapshot
    live = root / "runs" / r.run_id / "state" / "config" / "projects"
    assert list(live.glob(f"*/{session['session_id']}.jsonl"))
    assert not (snapshot / "config").exists()


def test_can_use_tool_never_fakes_a_pause(records):
    """No decision when the CLI asks: Deny(interrupt=True) ends the run; no pending call is made up, the outcome
    follows the CLI's signals and the intent is unsupported, never a ✓ awaiting_approval."""
    r = records[("approval_pause", "can-use-tool")]
    signals = r.native.signals
    assert signals.terminal_reason == "aborted_tools" and signals.subtype == "error_during_execution"
    assert signals.ended != "paused" and r.counters.pending_approvals == 0
    # named as the reason it cannot pause (test_ground_truth: then no outcome awaiting_approval, no pending
    # call, the verdict unsupported, nothing sent)
    assert any(u.startswith(NO_PAUSE) for u in r.unsupported)
    # the human (the harness) was asked once, at the moment the CLI called can_use_tool
    assert [(e.kind, e.decision) for e in r.ledger if e.tool == "send_reply"][0] == ("approval_request",
                                                                                     "no decision")
    assert r.counters.approval_requests == 1


@pytest.mark.parametrize("scenario", ["approval_approved_resume", "approval_rejected_resume", "resume_twice",
                                      "resume_keeps_allowance", "approval_changed_arguments"])
def test_can_use_tool_cannot_exercise_a_resume(records, scenario):
    r = records[(scenario, "can-use-tool")]
    assert r.counters.resumes == 0
    assert any(u.startswith(NO_PAUSE) for u in r.unsupported)
    assert r.verdict == "unsupported"


def test_approved_resume_resumes_the_session_and_routes_to_this_run(records):
    """Completed, sent once, in another process: test_ground_truth. Here: a resumed CLI session."""
    r = records[("approval_approved_resume", "default")]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.counters.resumes == 1
    # routing by API key survives the resume: the resumed CLI's requests are in this run's log
    assert r.counters.model_requests_observed == 4
    last = r.requests[-1]
    assert {t.call_id: t.status for t in last.tool_results}.get("send_1") == "receipt"
    assert last.t_s > r.segments[0].elapsed_s
    # the approval point ran again in the resumed process (defer, then allow)
    assert r.counters.authorize_events_by_tool["send_reply"] == 2
    assert [e.decision for e in r.ledger if e.kind == "authorize"] == ["approval required: deferred", "approved"]


def test_two_deferred_calls_of_one_response_pause_on_the_last_only(records):
    """parallel_approvals_split: the hook defers both gated calls of one response, but the CLI's ResultMessage has one
    `deferred_tool_use` (the last deferred call; the raw result frame has no other, probes/claude/parallel_defer.py)
    and the resume asks the hook again for that call only: the other is dropped from the resumed conversation, never
    asked about nor run. The framework's behaviour, measured: the human was asked about the refund alone."""
    r = records[("parallel_approvals_split", "default")]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    authorize = [(e.call_id, e.decision) for e in r.ledger if e.kind == "authorize"]
    assert authorize[:2] == [("send_1", "approval required: deferred"), ("refund_1", "approval required: deferred")]
    assert [p.call_id for p in r.segments[0].pending] == ["refund_1"]
    assert authorize[2:] == [("refund_1", "rejected")]  # the resume asks about the refund only
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    assert r.counters.tool_executions_by_tool.get("issue_refund", 0) == 0
    # the resumed request carries the read's and the refund's results; the reply's call is gone from it
    assert {t.call_id for t in r.requests[-1].tool_results} == {"ticket_1", "refund_1"}
    assert r.outcome == "incomplete"


def test_approved_call_runs_in_process_with_can_use_tool(records):
    r = records[("approval_approved_resume", "can-use-tool")]
    assert r.counters.resumes == 0
    # the decision was asked for when the CLI called can_use_tool, before the tool ran, not read up front
    kinds = [(e.kind, e.decision) for e in r.ledger if e.tool == "send_reply"]
    assert kinds == [("approval_request", "approve"), ("authorize", "approved"), ("call", None)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_max_turns_is_the_step_limit(records, variant):
    r = records[("runaway_step_limit", variant)]
    assert r.outcome == "limit_steps"
    signals = r.native.signals
    assert signals.subtype == "error_max_turns" and signals.limit_signal == "raised"
    assert signals.exception_type == "ResultError"  # query() raises after the error result
    assert r.limits["max_model_calls"].native == "max_turns=8"
    assert r.counters.model_requests_observed == 8
    assert r.counters.runtime_step_unit.startswith("turn")


@pytest.mark.parametrize("variant", VARIANTS)
def test_budget_is_the_cost_limit(records, variant):
    r = records[("cost_budget", variant)]
    assert r.outcome == "limit_budget"
    assert r.native.signals.subtype == "error_max_budget_usd"
    assert r.limits["max_cost_usd"].native == "max_budget_usd=0.05"
    assert r.unsupported == []


def test_token_budget_and_deadline_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("deadline_slow_model", "default")].unsupported == ["deadline_s"]
    assert records[("deadline_slow_tool", "default")].unsupported == ["deadline_s"]


def test_reported_cost_equals_the_served_usage_priced_by_the_table(records):
    """The CLI prices claude-sonnet-4-5 like harness/judge/prices.py: its total_cost_usd (summed per segment) equals the
    served usage × the price table, retries and resumes included."""
    compared = 0
    for key, r in records.items():
        if r.counters.cost_usd_reported is None:
            continue
        served = sum(cost_usd(q.model or "claude-sonnet-4-5", q.input_tokens, q.output_tokens) or 0
                     for q in r.requests if q.status == 200)
        if _broken_mid_stream(r):  # the CLI prices the broken answer by its own estimate: above the whole ones
            whole = sum(cost_usd(q.model or "claude-sonnet-4-5", q.input_tokens, q.output_tokens) or 0
                        for q in r.requests if q.status == 200 and q.wire_fault is None)
            assert r.counters.cost_usd_reported >= whole, key
        else:
            assert r.counters.cost_usd_reported == pytest.approx(served, abs=1e-9), key
        compared += 1
    assert compared >= len(records) - 2  # a run the CLI never finished reports no cost


@pytest.mark.parametrize("variant", VARIANTS)
def test_retries_are_reported_by_the_sdk(records, variant):
    """Each retried failure is an api_retry SystemMessage: with them the SDK reports every request."""
    r = records[("model_transient_error", variant)]
    assert r.outcome == "completed"
    assert r.counters.model_requests_observed == 5 and r.counters.model_retries_observed == 2
    assert r.counters.model_requests_reported == 5
    assert r.native.signals.extra["api_retry_messages"] == 2


@pytest.mark.parametrize("variant", VARIANTS)
def test_model_fatal_error_is_not_retried(records, variant):
    """A 500 with x-should-retry: false: one request, and the failed attempt is reported through the
    ResultMessage's api_error_status."""
    r = records[("model_fatal_error", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "model"
    assert r.counters.model_requests_observed == 1 and r.counters.model_requests_reported == 1
    assert r.native.signals.extra["api_error_status"] == 500
    assert r.counters.elapsed_s < 10


@pytest.mark.parametrize("variant", VARIANTS)
def test_model_outage_fails_after_the_cli_retries(records, variant):
    r = records[(SLOW, variant)]
    assert r.outcome == "failed"
    assert r.native.signals.failure == "model"
    assert r.counters.model_requests_observed == 11 and r.counters.model_retries_observed == 10
    # 10 api_retry messages + the final failed attempt (api_error_status)
    assert r.counters.model_requests_reported == 11


def test_tokens_are_exact_where_usage_lags(records):
    """`model_usage` counts every call; `usage` misses the last one of a run stopped by the budget."""
    for variant in VARIANTS:
        r = records[("cost_budget", variant)]
        assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
        assert r.counters.output_tokens_reported == r.counters.output_tokens_observed
        assert r.native.signals.extra["usage"]["input_tokens"] < r.counters.input_tokens_observed


def test_tokens_are_not_double_counted_across_resumes(records):
    compared = 0
    for key, r in records.items():
        if r.counters.input_tokens_reported is None or r.outcome in ("hung", "error"):
            continue
        if _broken_mid_stream(r):  # the broken answer's tokens: what the CLI read of it, or its estimate
            whole = [q for q in r.requests if q.status == 200 and q.wire_fault is None]
            assert sum(q.input_tokens for q in whole) <= r.counters.input_tokens_reported, key
            assert r.counters.input_tokens_reported <= r.counters.input_tokens_observed, key
            assert r.counters.output_tokens_reported >= sum(q.output_tokens for q in whole), key
        else:
            assert r.counters.input_tokens_reported == r.counters.input_tokens_observed, key
            assert r.counters.output_tokens_reported == r.counters.output_tokens_observed, key
        compared += 1
    assert compared >= len(records) - 2


def _broken_mid_stream(r) -> bool:
    """A response of the run was cut or broken mid-stream (the hostile wire): its message_start told the CLI
    the input tokens (the server logs those); the CLI reads no further, so the output tokens it counts for that
    answer are its own estimate ("with its output tokens estimated", its model_usage docs)."""
    return any(q.wire_fault in ("cut", "malformed") for q in r.requests)


def test_a_broken_stream_is_counted_from_what_reached_the_cli(records):
    """The CLI retries a broken answer and counts it, with the input tokens its message_start told and output
    tokens of the CLI's own estimate: a stream cut after its message_start (the connection drops a moment after
    the bytes that got through: probes/claude/fair.py cut), which the CLI closes with a message_stop of its own
    and retries with an api_retry message, is one request, not two; one with a broken event stops the reading
    before the message_delta's count, which the server logs as sent."""
    for variant in VARIANTS:
        cut, broken = records[("wire_cut_response", variant)], records[("wire_malformed_body", variant)]
        for r in (cut, broken):
            assert r.outcome == "completed" and r.counters.model_retries_observed == 1
            assert r.counters.model_requests_reported == r.counters.model_requests_observed == 4
        assert [q.wire_fault for q in cut.requests][0] == "cut" and cut.requests[0].input_tokens == 1000
        extra = cut.native.signals.extra
        assert (extra["api_retry_messages"], extra["model_responses"], extra["retries_of_started_responses"]) == (
            1, 4, 1)
        assert cut.counters.input_tokens_reported == cut.counters.input_tokens_observed == 4000
        assert 300 < cut.counters.output_tokens_reported < 400 and cut.counters.output_tokens_observed == 300
        assert broken.counters.input_tokens_reported == broken.counters.input_tokens_observed == 4000
        assert 300 < broken.counters.output_tokens_reported < broken.counters.output_tokens_observed == 400


STOPS = {"default": ("hook_stopped", "success"), "can-use-tool": ("aborted_tools", "error_during_execution")}


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_is_the_frameworks_own_stop(records, variant):
    """policy.deny "stop": hook deny + continue=false / Deny(interrupt=True); the CLI ends the run after 2
    requests and names the call in permission_denials."""
    r = records[("denied_action", variant)]
    signals = r.native.signals
    assert r.outcome == "denied" and signals.denied is True
    assert (signals.terminal_reason, signals.subtype) == STOPS[variant]
    assert r.counters.model_requests_observed == 2 and r.counters.model_requests_reported == 2
    assert r.counters.authorize_events_by_tool["delete_account"] == 1
    assert signals.extra["permission_denials"][0]["tool_name"].endswith("__delete_account")


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_tells_the_model(records, variant):
    """policy.deny "continue": hook deny / Deny(interrupt=False) (the SDK's default); the loop goes on."""
    r = records[("denied_action_continue", variant)]
    signals = r.native.signals
    assert r.outcome == "completed" and not signals.denied
    assert signals.terminal_reason == "completed"
    assert r.counters.model_requests_observed == 3 and r.counters.model_requests_reported == 3
    assert signals.extra["permission_denials"][0]["tool_name"].endswith("__delete_account")


def test_resume_twice_against_the_live_session_store_never_returns(records):
    """Both resumes use the task's one live config dir, as a Claude user's app does. The first runs the deferred
    send once and completes; the second finds nothing deferred, and the CLI makes no request and yields no
    ResultMessage (probes/claude/fair.py resume-twice), so the runner records `hung` at the hard timeout: the
    second resume is the record's last segment, `ended: hung`, and the task's time includes the wait."""
    r = records[("resume_twice", "default")]
    assert r.outcome == "hung" and "hard timeout" in (r.error_reason or "")
    assert [(s.kind, s.outcome_signals.ended) for s in r.segments] == [
        ("run", "paused"), ("resume", "returned"), ("resume", "hung")]
    assert r.segments[2].elapsed_s >= 60 and r.counters.elapsed_s == round(sum(s.elapsed_s for s in r.segments), 3)
    assert r.counters.tool_executions_by_tool["send_reply"] == 1 and r.counters.duplicate_effects == 0
    # no request after the first resume's: the pause (2 requests) + the first resume (2)
    assert r.counters.model_requests_observed == 4
    assert r.counters.approval_requests == 1  # one pause: the human was asked once


# ---------------------------------------------------------------- the caller's cancel (ClaudeSDKClient.interrupt())
# the terminal reason the CLI ends an interrupted turn with: a tool running, or a model request in flight
ABORTED_BY = {"cancel_during_tool": "aborted_tools", "cancel_during_model": "aborted_streaming",
              "cancel_then_resume": "aborted_tools"}
# how long the scripted work the cancel cuts would still have taken (a 5 s tool or model turn, cut 0.5 s in): a
# framework that waited for it ends no sooner; the bound is that, far above the ~0.1-0.3 s measured under load
STILL_TO_RUN_S = 4.5


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", sorted(ABORTED_BY))
def test_cancel_is_the_sdks_interrupt(suite, scenario, variant):
    """Both variants cancel with ClaudeSDKClient.interrupt(), the SDK's documented cancel (query() has none): the
    CLI ends the turn with error_during_execution and an aborted terminal reason, reported as it came, and the
    session is kept (a snapshot naming it) for a caller to continue."""
    records, root = suite
    r = records[(scenario, variant)]
    first = r.segments[0]
    signals = first.outcome_signals
    assert (signals.ended, signals.subtype, signals.terminal_reason) == (
        "cancelled", "error_during_execution", ABORTED_BY[scenario])
    assert first.cancel_sent_s is not None and signals.extra["interrupt"] == "sent"
    assert "interrupt()" in r.native.mechanisms["cancel"]
    assert r.native.settings["entry_point"].startswith("ClaudeSDKClient")
    # the framework stopped on the cancel, not at the end of the work it cut
    assert signals.extra["interrupt_to_closed_s"] < STILL_TO_RUN_S
    assert signals.extra["interrupt_to_result_s"] <= signals.extra["interrupt_to_closed_s"]
    session = json.loads((root / "runs" / r.run_id / "segment0" / "snapshot" / "session.json").read_text())
    assert session["kept_at"] == "cancel" and session["session_id"] == signals.extra["session_id"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_cancel_during_a_tool_abandons_the_call_and_keeps_the_usage(records, variant):
    """The CLI cancels the SDK MCP call at once (the ledger sees its caller go; the scripted call runs to its end
    there) and reports the one finished response's usage; no second request."""
    r = records[("cancel_during_tool", variant)]
    assert r.outcome == "cancelled"
    [call] = [e for e in r.ledger if e.kind == "call"]
    assert call.tool == "get_ticket" and call.caller_abandoned
    assert r.counters.abandoned_calls == 1 and r.counters.tool_executions == 1
    assert r.counters.model_requests_observed == 1 and r.counters.model_requests_reported == 1
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed == 1000
    assert r.counters.output_tokens_reported == r.counters.output_tokens_observed
    assert r.counters.cost_usd_reported == pytest.approx(r.counters.cost_usd_observed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cancel_during_a_model_request_drops_it_and_keeps_the_usage_before(records, variant):
    """The request in flight is dropped (the server never answered it: no 200); the usage reported is the first
    response's, the one the server served (a request cut before its answer has none to count)."""
    r = records[("cancel_during_model", variant)]
    assert r.outcome == "cancelled" and r.verdict in ("conforms", "deviates")
    assert r.counters.model_requests_observed == 2 and r.requests[1].status != 200
    assert r.counters.model_requests_reported == 1
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed == 1000
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1} and r.counters.abandoned_calls == 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_resume_after_cancel_continues_the_session_without_posting_again(records, variant):
    """The cancelled session resumed by id in another process with the sessions guide's follow-up prompt: its first
    request carries the finished post's result and the interrupted lookup's (the CLI wrote it as an is_error
    "stopped while running" result: probes/claude/cancel.py resume), so the scripted model looks the policy up
    again; the post is not repeated and the CLI does not re-run the lookup by itself."""
    r = records[("cancel_then_resume", variant)]
    assert [(s.kind, s.outcome_signals.ended) for s in r.segments] == [("run", "cancelled"), ("resume", "returned")]
    assert r.counters.resumes == 1 and r.outcome == "completed"
    assert r.native.settings["resume_after_cancel_prompt"] == "Continue where we left off"
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}
    assert r.counters.duplicate_effects == 0
    assert [e.caller_abandoned for e in r.ledger if e.kind == "call"] == [False, True, False]
    # the run's 2 requests, then the resume's: the whole conversation with both tool results, the lookup's no receipt
    assert [q.served_turn for q in r.requests] == ["post", "find_policy", "lookup_again", "answer_after_lookup_again"]
    assert {t.call_id: t.status for t in r.requests[2].tool_results}["policy_1"] == "none"
    resumed = r.segments[1].counters
    assert resumed.model_requests_reported == 2 and resumed.input_tokens_reported == 2000


# ---------------------------------------------------------------- the message mapping, on the SDK's own types
def _sdk():
    return pytest.importorskip("claude_agent_sdk")


def _result(sdk, **kw):
    fields = dict(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
                  session_id="s", terminal_reason="completed")
    return sdk.ResultMessage(**{**fields, **kw})


def _start(sdk, mid):
    return sdk.StreamEvent(uuid=mid, session_id="s", event={"type": "message_start", "message": {"id": mid}})


def test_empty_responses_are_counted():
    """The CLI streams no AssistantMessage for a response without content blocks (it asks again with a synthetic
    user message); the message_start stream event of each response is still there."""
    sdk = _sdk()
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _Segment

    seg = _Segment()
    stream = [_start(sdk, "msg_1"),
              sdk.AssistantMessage(content=[sdk.ToolUseBlock(id="toolu_t1", name="t", input={})], model="m",
                                   message_id="msg_1"),
              _start(sdk, "msg_2"), _start(sdk, "msg_3"),
              _result(sdk, num_turns=3, result="", model_usage={"m": {"inputTokens": 3000, "outputTokens": 300}})]
    for m in stream:
        ClaudeAgentAdapter._observe(seg, m)
    counters = ClaudeAgentAdapter._counters(seg, None)
    assert counters.model_requests_reported == 3 and counters.input_tokens_reported == 3000


def test_the_failed_attempt_that_ends_a_run_is_counted():
    """Retried failures are api_retry messages; the last failure is the ResultMessage's api_error_status (its
    synthetic AssistantMessage carries `error` and is not a response)."""
    sdk = _sdk()
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _Segment

    seg = _Segment()
    stream = [*[sdk.SystemMessage(subtype="api_retry", data={"attempt": i, "error_status": 500})
                for i in range(1, 11)],
              sdk.AssistantMessage(content=[sdk.TextBlock(text="API Error: 500")], model="m",
                                   message_id="uuid-1", error="server_error"),
              _result(sdk, is_error=True, api_error_status=500, terminal_reason="api_error", model_usage={})]
    for m in stream:
        ClaudeAgentAdapter._observe(seg, m)
    counters = ClaudeAgentAdapter._counters(seg, None)
    assert counters.model_requests_reported == 11 and counters.input_tokens_reported == 0


def test_resumed_cumulative_counters_count_only_their_growth():
    sdk = _sdk()
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _AtPause, _Segment

    seg = _Segment()
    ClaudeAgentAdapter._observe(seg, _start(sdk, "msg_3"))
    ClaudeAgentAdapter._observe(seg, _result(sdk, total_cost_usd=0.0135, usage={"input_tokens": 1000},
                                             model_usage={"m": {"inputTokens": 3000, "outputTokens": 300}}))
    counters = ClaudeAgentAdapter._counters(seg, _AtPause(cost_usd=0.009, input_tokens=2000, output_tokens=200))
    assert counters.input_tokens_reported == 1000 and counters.output_tokens_reported == 100
    assert counters.cost_usd_reported == pytest.approx(0.0045)
    unknown = ClaudeAgentAdapter._counters(seg, _AtPause(cost_usd=0.009))
    assert unknown.input_tokens_reported is None  # growth from an unknown base is unknown, not the raw total


def _cancel_segment(sdk, tmp_path, terminal_reason):
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _Segment
    from loopbench.harness.adapter import RunContext
    from loopbench.harness.scenario import load_scenarios

    scenario = next(s for s in load_scenarios() if s.id == "cancel_during_tool")
    ctx = RunContext(run_id="r", api_key="k", base_url="http://127.0.0.1:1", ledger_token="t", work_dir=tmp_path,
                     snapshot_dir=tmp_path / "snap", task_dir=tmp_path)
    seg = _Segment(interrupted=True)
    ClaudeAgentAdapter._observe(seg, _start(sdk, "msg_1"))
    subtype = "success" if terminal_reason == "completed" else "error_during_execution"
    ClaudeAgentAdapter._observe(seg, _result(sdk, subtype=subtype, is_error=subtype != "success",
                                             terminal_reason=terminal_reason, result="done"))
    return ClaudeAgentAdapter()._segment(scenario, ctx, seg, {}, {}, [], at_pause=None)


def test_an_interrupted_turn_is_cancelled_and_a_finished_one_is_not(tmp_path):
    """Cancelled only when the adapter interrupted AND the CLI says it aborted the turn on it: a run that ended
    on its own as the interrupt went out is mapped as usual."""
    sdk = _sdk()
    cut = _cancel_segment(sdk, tmp_path / "a", "aborted_tools")
    assert cut.signals.ended == "cancelled" and cut.snapshot is not None
    assert json.loads((Path(cut.snapshot) / "session.json").read_text())["kept_at"] == "cancel"
    done = _cancel_segment(sdk, tmp_path / "b", "completed")
    assert done.signals.ended == "returned" and done.snapshot is None and done.signals.final_text == "done"


def test_nothing_written_to_home(suite):
    _, root = suite
    home = Path(os.path.expanduser("~"))
    marker = root.name  # every cwd and config dir of the suite lies under root; the CLI names dirs after the cwd
    for place in (home / ".cache" / "claude-cli-nodejs", home / ".claude" / "projects"):
        if place.exists():
            assert not [p.name for p in place.iterdir() if marker in p.name], place


# ---------------------------------------------------------------- sub-agents (AgentDefinitions behind the Agent tool)
@pytest.mark.parametrize("variant", VARIANTS)
def test_sub_agent_is_an_agent_definition_reached_through_the_agent_tool(records, variant):
    r = records[("subagent_usage", variant)]
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert r.requests[0].tools_offered[0] == "Agent" and r.requests[1].tools_offered == ["mcp__loopbench__lookup_refund"]
    assert r.counters.tool_executions_by_agent == {"billing": 1}
    settings = r.native.settings
    assert settings["tools"] == ["Agent"] and "Agent" in settings["allowed_tools"]
    assert settings["agents"]["billing"]["tools"] == ["mcp__loopbench__lookup_refund"]
    assert "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS" in settings["env"]
    # scenarios without agents keep the old options: no built-in tool, no agents, no system prompt
    old = records[("support_draft_completes", variant)].native.settings
    assert old["tools"] == [] and "agents" not in old and "system_prompt" not in old
    assert "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS" not in old["env"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_usage_is_the_main_loops_and_model_usage_the_trees(records, variant):
    """Claim C09: the reported tokens (model_usage, as for every scenario) are the whole tree's, as served;
    `usage` holds the main loop's two requests only."""
    r = records[("subagent_usage", variant)]
    c, extra = r.counters, r.native.signals.extra
    assert (c.input_tokens_reported, c.output_tokens_reported) == (c.input_tokens_observed, c.output_tokens_observed)
    assert extra["model_usage_tree_tokens"] == {"input_tokens": c.input_tokens_observed,
                                                "output_tokens": c.output_tokens_observed}
    assert extra["usage"]["input_tokens"] == c.input_tokens_by_agent["main"]
    assert extra["usage"]["output_tokens"] == c.output_tokens_by_agent["main"]
    # the child's tool-call response is streamed; its final answer comes back as the Agent tool's result
    assert c.model_requests_reported == 2 and extra["child_model_responses"] == 1
    assert c.cost_usd_reported == pytest.approx(c.cost_usd_observed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_max_turns_does_not_count_a_sub_agents_turns(records, variant):
    """subagent_runaway: max_turns=8 on the main run; the child runs until the server's safety cap."""
    r = records[("subagent_runaway", variant)]
    assert r.limits["max_model_calls"].native == "max_turns=8"
    assert r.outcome == "capped"
    assert r.counters.model_requests_by_agent["research"] > 8
    assert r.native.signals.extra["num_turns"] == 2 and r.native.signals.subtype != "error_max_turns"


def test_a_deferred_call_inside_a_sub_agent_does_not_pause(records):
    """The hook is asked for the child's call and defers it; the CLI ends the child, the run completes, nothing
    is pending and nothing is resumed: the refund never runs."""
    r = records[("subagent_approval", "default")]
    assert r.counters.authorize_events_by_tool == {"issue_refund": 1}
    assert [e.agent for e in r.ledger if e.kind == "authorize"] == ["billing"]
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}
    assert r.native.signals.terminal_reason == "completed" and r.native.signals.pending == []
    assert r.counters.resumes == 0 and r.outcome == "incomplete"


def test_can_use_tool_decides_a_sub_agents_call_in_process(records):
    r = records[("subagent_approval", "can-use-tool")]
    assert r.counters.approval_requests == 1
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 3}
    assert r.verdict == "unsupported"  # the scenario's resume: this idiom cannot pause


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_sub_agents_tool_failure_is_its_own_to_answer(records, variant):
    r = records[("subagent_tool_failure", variant)]
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}
    assert r.native.signals.terminal_reason == "completed" and r.outcome == "incomplete"


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_sub_agents_tokens_are_outside_any_native_token_budget(records, variant):
    r = records[("subagent_token_budget", variant)]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed


# ---------------------------------------------------------------- structured answers (a scenario's `output`)
OUTPUT_TOOL = "StructuredOutput"
VALID_TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


def _output_requests(r) -> tuple[list[int | None], set[bool | None], list[list[str]]]:
    return ([q.output_attempt for q in r.requests], {q.output_constrained for q in r.requests if q.output_attempt},
            [q.tools_offered for q in r.requests])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["output_invalid_then_valid", "output_check_rejects"])
def test_the_cli_corrects_a_structured_answer_through_its_structured_output_tool(records, scenario, variant):
    """output_format: the CLI offers its StructuredOutput tool (the only tool that is no scenario tool), not strict,
    validates the answer itself (the enum; the check as the schema's pattern) and sends the model an error result:
    the model's correction is the second answer, and the run completes in 3 requests."""
    r = records[(scenario, variant)]
    assert r.outcome == "completed" and r.verdict == "conforms"
    attempts, constrained, offered = _output_requests(r)
    assert attempts == [None, 1, 2]
    assert constrained == {False}  # no strict tool, no output_format in the body: a real model could send the break
    assert offered == [[OUTPUT_TOOL, "mcp__loopbench__get_ticket"]] * 3
    assert r.counters.model_requests_observed == r.counters.model_requests_reported == 3
    assert r.counters.structured_answers_observed == 2
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1}
    s = r.native.signals
    assert s.ended == "returned" and s.subtype == "success" and s.failure is None
    assert s.final_output == VALID_TRIAGE and json.loads(s.final_text) == VALID_TRIAGE
    assert r.native.settings["output"]["output_format"]["type"] == "json_schema"
    assert r.native.mechanisms["structured_output"].startswith("ClaudeAgentOptions(output_format=")
    assert ("output_check" in r.native.mechanisms) == (scenario == "output_check_rejects")


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_never_valid_answer_is_stopped_by_max_turns_before_the_clis_own_cap(records, variant):
    """Each correction is a turn: max_turns=4 stops the run at 4 requests (3 rejected answers), before the CLI's
    MAX_STRUCTURED_OUTPUT_RETRIES (5, which alone stops it at 6 requests: probes/claude/structured.py never-valid)."""
    r = records[("output_never_valid", variant)]
    assert r.outcome == "limit_steps"
    attempts, constrained, _ = _output_requests(r)
    assert attempts == [None, 1, 2, 3] and constrained == {False}
    assert r.counters.model_requests_observed == r.counters.model_requests_reported == 4
    assert r.counters.structured_answers_observed == 3
    s = r.native.signals
    assert s.subtype == "error_max_turns" and s.limit == "steps" and s.exception_type == "ResultError"
    assert s.final_output is None and s.failure is None
    assert r.limits["max_model_calls"].native == "max_turns=4"
    assert set(r.native.mechanisms) == {"structured_output", "output_check"}


def test_the_check_is_a_pattern_in_the_output_format_schema_and_other_scenarios_get_none(tmp_path):
    """The options the CLI gets: output_format's schema is the output's JSON schema with the check as a pattern on
    its field; a scenario without `output` has no output_format (behaves as before)."""
    pytest.importorskip("claude_agent_sdk")
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _remove_cwd, _Segment
    from loopbench.harness.adapter import RunContext
    from loopbench.harness.scenario import load_scenarios

    scenarios = {s.id: s for s in load_scenarios()}
    for sid in ("output_check_rejects", "output_invalid_then_valid", "support_draft_completes"):
        ctx = RunContext(run_id="r", api_key="k", base_url="http://127.0.0.1:1", ledger_token="t",
                         work_dir=tmp_path / sid, snapshot_dir=tmp_path / sid / "snap", task_dir=tmp_path / sid)
        seg = _Segment()
        options, settings, _, _ = ClaudeAgentAdapter()._options(scenarios[sid], ctx, seg, decisions={})
        _remove_cwd(seg)
        spec = scenarios[sid].output
        if spec is None:
            assert options.output_format is None and "output" not in settings
            continue
        schema = options.output_format["schema"]
        assert options.output_format["type"] == "json_schema"
        want = spec.json_schema()
        if spec.check is not None:
            want["properties"][spec.check.field]["pattern"] = spec.check.pattern
        assert schema == want
        assert "pattern" not in json.dumps(spec.json_schema())  # the scenario's own schema is left as it was


def _output_segment(sdk, tmp_path, **result):
    from loopbench.adapters.claude_agent import ClaudeAgentAdapter, _Segment
    from loopbench.harness.adapter import RunContext
    from loopbench.harness.scenario import load_scenarios

    scenario = next(s for s in load_scenarios() if s.id == "output_never_valid")
    ctx = RunContext(run_id="r", api_key="k", base_url="http://127.0.0.1:1", ledger_token="t", work_dir=tmp_path,
                     snapshot_dir=tmp_path / "snap", task_dir=tmp_path)
    seg = _Segment()
    ClaudeAgentAdapter._observe(seg, _start(sdk, "msg_1"))
    ClaudeAgentAdapter._observe(seg, _result(sdk, **result))
    return ClaudeAgentAdapter()._segment(scenario, ctx, seg, {}, {}, [], at_pause=None)


def test_the_clis_spent_structured_output_retries_are_a_model_failure(tmp_path):
    """The ResultMessage the CLI ends with when MAX_STRUCTURED_OUTPUT_RETRIES runs out (shape recorded by
    probes/claude/structured.py never-valid): a model failure, no structured answer; a success carries it."""
    sdk = _sdk()
    message = ("Failed to provide valid structured output after 5 attempts — last StructuredOutput error: Output does "
               "not match required schema: /policy_id: must match pattern \"^POL-[0-9]+$\"")
    spent = _output_segment(sdk, tmp_path / "a", subtype="error_max_structured_output_retries", is_error=True,
                            terminal_reason="structured_output_retry_exhausted", errors=[message])
    assert spent.signals.failure == "model" and spent.signals.limit is None
    assert spent.signals.final_output is None and spent.signals.extra["errors"] == [message]
    done = _output_segment(sdk, tmp_path / "b", result=json.dumps(VALID_TRIAGE), structured_output=VALID_TRIAGE)
    assert done.signals.ended == "returned" and done.signals.failure is None
    assert done.signals.final_output == VALID_TRIAGE
    turns = _output_segment(sdk, tmp_path / "c", subtype="error_max_turns", is_error=True, terminal_reason="max_turns")
    assert turns.signals.limit == "steps" and turns.signals.failure is None
