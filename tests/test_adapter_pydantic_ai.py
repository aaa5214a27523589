"""The Pydantic AI adapter through the real runner: the whole suite, every variant.

What this framework does natively (signals, limits, resumes); the facts every framework shares are in test_ground_truth.py.
"""

from __future__ import annotations

import pytest

from loopbench.harness.adapter import adapter_class
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario import SCENARIO_DIR, load_scenarios
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("pydantic-ai",)  # run alone, the suite run is this framework's only

VARIANTS = ("default", "iter", "conversation", "openai-chat", "raise-fatal", "stream-events", "delegate-no-usage")
# AnthropicModel + AnthropicProvider; openai-chat: OpenAIChatModel
ANTHROPIC = ("default", "iter", "conversation", "raise-fatal", "stream-events", "delegate-no-usage")
# a fatal tool error is pydantic-ai's ToolFailed
TOOL_FAILED = ("default", "iter", "conversation", "openai-chat", "stream-events", "delegate-no-usage")
SHARED_USAGE = tuple(v for v in VARIANTS if v != "delegate-no-usage")  # the docs' usage=ctx.usage
MODEL_CLASS = {v: "pydantic_ai.models.anthropic.AnthropicModel" for v in ANTHROPIC} | {
    "openai-chat": "pydantic_ai.models.openai.OpenAIChatModel"}


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("pydantic-ai")


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_declares_its_model_class_and_sends_the_scenarios_claude(variant):
    """openai-chat deliberately sends the scenario's Claude id through the OpenAI provider (its point: an
    OpenAI-compatible endpoint serving Claude), so every variant's provider fact is anthropic."""
    cls = adapter_class("pydantic-ai", variant)
    assert cls.model_class == MODEL_CLASS[variant] and cls.model_provider == "anthropic"
    [scenario] = load_scenarios([SCENARIO_DIR / "support_draft_completes.yaml"])
    assert cls.model_id(scenario) == "claude-sonnet-4-5"


def test_only_raise_fatal_changes_the_fatal_tool_errors_mechanism():
    default = adapter_class("pydantic-ai").mechanism_table
    for variant in VARIANTS:
        table = adapter_class("pydantic-ai", variant).mechanism_table
        assert table["tool_error_recoverable"] == default["tool_error_recoverable"]
        assert table["tool_error_recoverable"].startswith("the tool raises ModelRetry")
        expected = "the tool raises ToolFailed" if variant in TOOL_FAILED else "the tool raises an ordinary exception"
        assert table["tool_error_fatal"].startswith(expected), variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_record_names_the_model_class_and_the_model_the_server_saw(records, variant):
    for scenario in ("support_draft_completes", "approval_approved_resume"):
        r = records[(scenario, variant)]
        assert r.native.settings["model_class"] == MODEL_CLASS[variant]
        assert r.native.settings["model"] == "claude-sonnet-4-5"
        assert {q.model for q in r.requests} == {"claude-sonnet-4-5"}  # every segment's requests


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pauses_with_deferred_tool_requests_and_resumes_in_another_process(records, variant):
    paused = records[("approval_pause", variant)]
    assert paused.outcome == "awaiting_approval" and paused.native.signals.ended == "paused"
    assert paused.native.signals.extra["deferred_approvals"] == 1
    assert [p.call_id for p in paused.segments[0].pending] == ["send_1"]
    r = records[("approval_approved_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"] and r.outcome == "completed"
    assert r.counters.tool_executions_by_tool["send_reply"] == 1
    # requires_approval=True is static: no user approval code runs, so no authorize event
    assert r.counters.authorize_events_by_tool.get("send_reply", 0) == 0


def test_the_default_request_limit_applies_when_none_is_set(records):
    r = records[("default_limits", "default")]
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "UsageLimitExceeded"
    assert r.limits["max_model_calls"].native == "request_limit default (50)"
    assert r.counters.model_requests_observed == 50


@pytest.mark.parametrize("variant", VARIANTS)
def test_request_limit_is_checked_before_the_next_request_after_the_tools_ran(records, variant):
    """8 requests, and the 8th response's tool call still runs: the check is at the start of the next step."""
    r = records[("runaway_step_limit", variant)]
    assert r.outcome == "limit_steps" and r.native.signals.limit_signal == "raised"
    assert r.limits["max_model_calls"].native == "request_limit=8"
    assert r.counters.model_requests_observed == 8 and r.counters.tool_executions == 8


def test_agent_run_exceptions_carry_no_usage_but_the_iter_run_does(records):
    assert records[("runaway_step_limit", "default")].counters.model_requests_reported is None
    it = records[("runaway_step_limit", "iter")]
    assert it.counters.model_requests_reported == 8 and it.counters.runtime_steps == 8
    assert it.counters.runtime_step_unit == "request"


def test_the_token_budget_is_checked_after_each_response(records):
    r = records[("token_budget", "default")]
    assert r.outcome == "limit_budget" and r.native.signals.exception_type == "UsageLimitExceeded"
    assert "total_tokens_limit" in (r.native.signals.exception_message or "")
    assert r.counters.model_requests_observed == 3  # the crossing response was paid for
    assert r.unsupported == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_speaks_its_providers_protocol_and_maps_its_call_ids(records, variant):
    path = "/v1/chat/completions" if variant == "openai-chat" else "/v1/messages"
    r = records[("approval_pause", variant)]
    assert {q.path for q in r.requests} == {path}
    assert [p.call_id for p in r.segments[0].pending] == ["send_1"]  # toolu_send_1 / call_send_1, neutral
    # the two calls run concurrently: the ledger's order is theirs
    assert sorted(e.call_id for e in records[("parallel_tool_calls", variant)].ledger) == ["policy_1", "ticket_1"]


@pytest.mark.parametrize("variant", ANTHROPIC)
def test_the_cost_limit_is_enforced_after_the_response_that_crosses_it_under_the_anthropic_provider(records, variant):
    """genai-prices prices claude-sonnet-4-5 under 'anthropic': $0.021 a response, so the 3rd crosses $0.05."""
    r = records[("cost_budget", variant)]
    assert r.limits["max_cost_usd"].native == "cost_limit=0.05"
    assert r.outcome == "limit_budget" and r.native.signals.exception_type == "UsageLimitExceeded"
    assert "cost_limit" in (r.native.signals.exception_message or "")
    assert r.counters.model_requests_observed == 3 and r.counters.cost_usd_observed == pytest.approx(0.063)
    assert not any(n.startswith("CostNotFoundWarning") for n in r.native.notes)
    # agent.run's UsageLimitExceeded carries no usage; agent.iter's run.usage and the run_stream_events handle's
    # usage have the cost it checked
    expected = pytest.approx(0.063) if variant in ("iter", "stream-events") else None
    assert r.counters.cost_usd_reported == expected


def test_a_completed_run_reports_the_cost_only_where_the_provider_prices_the_model(records):
    assert records[("support_draft_completes", "default")].counters.cost_usd_reported == pytest.approx(0.0135)
    assert records[("support_draft_completes", "openai-chat")].counters.cost_usd_reported is None


def test_the_cost_limit_is_not_enforced_for_a_model_genai_prices_cannot_price(records):
    r = records[("cost_budget", "openai-chat")]  # claude-sonnet-4-5 under provider 'openai': no price
    assert r.limits["max_cost_usd"].native == "cost_limit=0.05"
    assert r.outcome == "completed" and r.counters.cost_usd_reported is None
    assert r.counters.cost_usd_observed == pytest.approx(0.063)
    assert any(n.startswith("CostNotFoundWarning") for n in r.native.notes)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("scenario", "timeout"), [("deadline_slow_model", 3.5), ("deadline_slow_tool", 2.0)])
def test_the_deadline_is_the_run_timeout(records, scenario, timeout, variant):
    r = records[(scenario, variant)]
    assert r.outcome == "limit_deadline" and r.native.signals.exception_type == "RunTimedOut"
    assert r.limits["deadline_s"].native == f"timeout={timeout}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["deadline_slow_model", "deadline_slow_tool"])
def test_at_the_deadline_run_usage_counts_the_responses_received_not_the_request_in_flight(records, scenario,
                                                                                          variant):
    """RunTimedOut.usage (iter: run.usage) is pydantic-ai's own count: one per response committed, so a request the
    timeout cut in flight (no full answer in the server's log) is in no count (probes/pydantic_ai/fair.py deadline)."""
    r = records[(scenario, variant)]
    answered = sum(q.status == 200 and q.error is None for q in r.requests)
    assert r.counters.model_requests_reported == r.counters.runtime_steps == answered
    in_flight = {"deadline_slow_model": 1, "deadline_slow_tool": 0}[scenario]
    assert r.counters.model_requests_observed == answered + in_flight


def test_a_timed_out_tool_call_is_abandoned(records):
    assert records[("deadline_slow_tool", "default")].counters.abandoned_calls == 1


@pytest.mark.parametrize("fresh_variant", ["default", "iter", "openai-chat", "stream-events"])
def test_message_history_resumes_get_a_fresh_request_limit_and_the_conversation_keeps_it(records, fresh_variant):
    fresh = records[("resume_keeps_allowance", fresh_variant)]
    kept = records[("resume_keeps_allowance", "conversation")]
    assert fresh.outcome == kept.outcome == "limit_steps"
    assert fresh.counters.model_requests_observed == 3 + 4  # 3 before the pause, a new allowance of 4 after
    assert kept.counters.model_requests_observed == 4
    assert kept.segments[-1].counters.cumulative and not fresh.segments[-1].counters.cumulative


@pytest.mark.parametrize("variant", VARIANTS)
def test_resuming_the_same_history_twice_runs_the_approved_call_twice(records, variant):
    r = records[("resume_twice", variant)]
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool["send_reply"] == 2 and r.counters.duplicate_effects == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_recoverable_tool_error_is_a_model_retry_within_the_tools_budget_of_one(records, variant):
    r = records[("tool_transient_error", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "tool"
    assert r.native.signals.exception_type == "UnexpectedModelBehavior"
    assert "exceeded max retries count of 1" in (r.native.signals.exception_message or "")
    assert r.counters.tool_executions_by_tool["lookup_policy"] == 2


@pytest.mark.parametrize("variant", TOOL_FAILED)
def test_a_fatal_tool_error_is_tool_failed_and_the_loop_goes_on(records, variant):
    r = records[("tool_fatal_error", variant)]
    assert r.native.signals.ended == "returned" and r.outcome == "incomplete"
    assert r.counters.model_requests_observed == 4
    assert r.counters.tool_executions_by_tool["lookup_policy"] == 2
    assert r.native.mechanisms["tool_error_fatal"].startswith("the tool raises ToolFailed")


def test_raise_fatal_ends_the_run_on_a_fatal_tool_error(records):
    """The docs' third path: an ordinary exception propagates out of the agent run, which ends on it."""
    r = records[("tool_fatal_error", "raise-fatal")]
    assert r.outcome == "failed" and r.native.signals.failure == "tool"
    assert r.native.signals.exception_type == "ToolFailed"  # loopbench's, raised from the tool: not pydantic-ai's
    assert r.counters.model_requests_observed == 2 and r.counters.tool_executions_by_tool["lookup_policy"] == 1
    assert r.counters.model_requests_reported is None  # agent.run's exception carries no usage
    assert r.native.mechanisms["tool_error_fatal"].startswith("the tool raises an ordinary exception")


@pytest.mark.parametrize("scenario", ["tool_transient_error", "write_timeout_unknown"])
def test_raise_fatal_keeps_the_defaults_cells_where_no_error_is_fatal(records, scenario):
    default, raised = records[(scenario, "default")], records[(scenario, "raise-fatal")]
    assert (raised.outcome, raised.counters.model_requests_observed) == (
        default.outcome, default.counters.model_requests_observed)
    assert raised.native.mechanisms == default.native.mechanisms


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_raises_from_the_tool(records, variant):
    r = records[("denied_action", variant)]
    assert r.outcome == "denied" and r.native.signals.denied is True
    assert r.native.signals.exception_type == "ToolDenied"
    assert r.counters.model_requests_observed == 2
    assert r.counters.authorize_events_by_tool["delete_account"] == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_is_answered_inline_with_tool_denied(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert r.counters.model_requests_observed == 3
    assert r.counters.authorize_events_by_tool["delete_account"] == 1
    assert "HandleDeferredToolCalls" in r.native.mechanisms["deny_continue"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_hidden_client_retries_are_not_in_run_usage(records, variant):
    """429 then 500: the anthropic / openai client retries both (max_retries=2) behind pydantic-ai's back."""
    r = records[("model_transient_error", variant)]
    assert r.outcome == "completed"
    assert r.counters.model_requests_observed == 5 and r.counters.model_retries_observed == 2
    assert r.counters.model_requests_reported == 3  # RunUsage.requests: committed responses only


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_failing_model_is_a_model_failure_with_unknown_counts(records, variant):
    for scenario in ("model_fatal_error", "model_outage"):
        r = records[(scenario, variant)]
        assert r.outcome == "failed" and r.native.signals.failure == "model", scenario
        assert r.native.signals.extra.get("status_code") == 500
        assert r.counters.model_requests_reported is None  # the failed requests are in no RunUsage
    assert records[("model_fatal_error", variant)].counters.model_requests_observed == 1  # x-should-retry: false
    assert records[("model_outage", variant)].counters.model_requests_observed == 3  # the client's 2 retries


def test_stream_events_is_the_streaming_idiom_of_the_default():
    cls = adapter_class("pydantic-ai", "stream-events")
    assert cls.capabilities.stream_of == "default" and adapter_class("pydantic-ai").capabilities.stream_of is None
    assert cls.capabilities.model_copy(update={"stream_of": None}) == adapter_class("pydantic-ai").capabilities


def test_stream_events_sends_what_agent_run_sends(records):
    """agent.run already streams inside AnthropicModel (no max_tokens: stream: true), so run_stream_events changes
    nothing on the wire: the same requests, byte for byte, every one streamed."""
    for scenario in ("support_draft_completes", "approval_approved_resume", "tool_fatal_error"):
        default, streamed = records[(scenario, "default")], records[(scenario, "stream-events")]
        assert all(q.stream for q in streamed.requests), scenario
        assert [(q.prompt_bytes, q.messages) for q in streamed.requests] == [
            (q.prompt_bytes, q.messages) for q in default.requests], scenario


def test_the_stream_events_handle_reports_usage_after_a_raise(records):
    """The handle's usage is readable after the run raised, where agent.run's exceptions carry none: the counts match
    what the server served."""
    for scenario in ("runaway_step_limit", "default_limits", "denied_action", "tool_transient_error"):
        assert records[(scenario, "default")].counters.model_requests_reported is None, scenario
        c = records[(scenario, "stream-events")].counters
        assert c.model_requests_reported == c.model_requests_observed == c.runtime_steps, scenario
        assert (c.input_tokens_reported, c.output_tokens_reported) == (c.input_tokens_observed,
                                                                       c.output_tokens_observed), scenario


def test_streamed_the_token_limit_trips_mid_response_and_loses_its_output_tokens(records):
    """agent.run checks total_tokens_limit after the whole response (31500 = 3 x 10,500); the streamed idiom checks it
    after every stream event, so the 3rd response trips it at message_start (input tokens only), before the
    message_delta carrying its 500 output tokens is read: 1,000 output tokens reported where the server sent 1,500
    (probes/pydantic_ai/stream_token_limit.py)."""
    default, streamed = records[("token_budget", "default")], records[("token_budget", "stream-events")]
    assert default.outcome == streamed.outcome == "limit_budget"
    assert "total_tokens=31500" in (default.native.signals.exception_message or "")
    assert "total_tokens=31000" in (streamed.native.signals.exception_message or "")
    c = streamed.counters
    assert c.model_requests_reported == c.model_requests_observed == 3
    assert (c.input_tokens_reported, c.input_tokens_observed) == (30_000, 30_000)
    assert (c.output_tokens_reported, c.output_tokens_observed) == (1_000, 1_500)


# ---------------------------------------------------------------- sub-agents: the docs' agent delegation
def test_every_variant_delegates_through_a_tool_running_the_child_and_only_one_forgets_the_usage():
    for variant in VARIANTS:
        row = adapter_class("pydantic-ai", variant).mechanism_table["delegate"]
        assert row.startswith("agent delegation"), variant
        assert ("usage=ctx.usage" in row and "await child.run(task, usage=ctx.usage)" in row) == (
            variant in SHARED_USAGE), variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_child_is_its_own_agent_reached_by_a_tool_named_after_it(records, variant):
    """The server tells the child's requests by its instructions and serves the delegation as a call to the tool
    named `billing`: the child's two requests, the parent's two, the child's tool run on the ledger."""
    r = records[("subagent_usage", variant)]
    assert r.outcome == "completed" and r.violations == []
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert r.counters.tool_executions_by_agent == {"billing": 1}
    assert set(r.native.settings["delegate"]) == {"billing"}
    assert r.native.settings["delegate"]["billing"]["usage_limits"].startswith("none passed")


@pytest.mark.parametrize("variant", SHARED_USAGE)
def test_with_usage_ctx_usage_the_run_reports_the_childs_tokens_too(records, variant):
    c = records[("subagent_usage", variant)].counters
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (4, 4000, 400)
    assert (c.input_tokens_observed, c.output_tokens_observed) == (4000, 400)


def test_without_usage_the_run_reports_the_parents_tokens_only(records):
    r = records[("subagent_usage", "delegate-no-usage")]
    c = r.counters
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (2, 2000, 200)
    assert (c.input_tokens_observed, c.output_tokens_observed) == (4000, 400)
    # the child's own result.usage, which the parent's does not include
    assert r.native.signals.extra["usage_children"] == {"requests": 2, "input_tokens": 2000, "output_tokens": 200}


@pytest.mark.parametrize("variant", SHARED_USAGE)
def test_the_parents_request_limit_does_not_stop_the_child_its_default_50_does(records, variant):
    """request_limit=8 is checked at the parent's steps; the child's run (no usage_limits passed, the docs' idiom)
    checks UsageLimits()'s default 50 against the shared RunUsage: 1 + 49 (probes/pydantic_ai/delegation.py)."""
    r = records[("subagent_runaway", variant)]
    assert r.native.settings["usage_limits"] == {"request_limit": 8}
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "UsageLimitExceeded"
    assert "request_limit of 50" in (r.native.signals.exception_message or "")
    assert r.counters.model_requests_by_agent == {"main": 1, "research": 49}
    assert r.counters.tool_executions_by_tool == {"search_kb": 49}


def test_without_usage_the_child_runs_to_the_safety_cap(records):
    """The child counts from 0 on its own: its 50th request is the tree's 51st, past loopbench's cap."""
    r = records[("subagent_runaway", "delegate-no-usage")]
    assert r.outcome == "capped" and r.counters.model_requests_by_agent == {"main": 1, "research": 50}


@pytest.mark.parametrize("variant", SHARED_USAGE)
def test_the_token_budget_is_checked_after_the_child_returns(records, variant):
    """The child has no token limit: its 4 requests run; the parent raises before its next request."""
    r = records[("subagent_token_budget", variant)]
    assert r.outcome == "limit_budget" and "total_tokens=5500" in (r.native.signals.exception_message or "")
    assert r.counters.model_requests_by_agent == {"main": 1, "billing": 4}
    assert r.counters.total_tokens_observed == 5500


def test_without_usage_the_token_budget_never_sees_the_child(records):
    c = records[("subagent_token_budget", "delegate-no-usage")].counters
    assert c.model_requests_by_agent == {"main": 2, "billing": 4} and c.total_tokens_observed == 6600
    assert (c.input_tokens_reported, c.output_tokens_reported) == (2000, 200)
    assert records[("subagent_token_budget", "delegate-no-usage")].outcome == "completed"


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_approval_inside_the_child_ends_the_child_not_the_parent(records, variant):
    """The child's run ends with a DeferredToolRequests output; the delegation returns it as the tool's result: no
    pause reaches the caller, the refund is never asked for nor issued, the parent answers."""
    r = records[("subagent_approval", variant)]
    assert r.native.signals.ended == "returned" and r.outcome == "incomplete"
    assert [s.kind for s in r.segments] == ["run"]
    assert r.native.signals.extra["child_deferred_outputs"] == [
        {"agent": "billing", "approvals": ["issue_refund"], "calls": []}]
    assert r.counters.approval_requests == 0 and "issue_refund" not in r.counters.tool_executions_by_tool
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}


@pytest.mark.parametrize("variant", TOOL_FAILED)
def test_a_childs_fatal_tool_error_is_the_childs_to_answer(records, variant):
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "incomplete" and r.native.signals.ended == "returned"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}


def test_raise_fatal_ends_the_whole_tree_on_a_childs_fatal_tool_error(records):
    r = records[("subagent_tool_failure", "raise-fatal")]
    assert r.outcome == "failed" and r.native.signals.exception_type == "ToolFailed"
    assert r.counters.model_requests_by_agent == {"main": 1, "billing": 1}


# ---- the caller's cancel: CancellationToken / the handle's cancel() -> RunCancelled(messages, usage)
CANCEL_IN_FLIGHT = {"cancel_during_tool": 1, "cancel_during_model": 2}  # scenario -> requests the server saw


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", sorted(CANCEL_IN_FLIGHT))
def test_a_cancel_stops_the_run_at_once_with_run_cancelled_and_its_usage(records, scenario, variant):
    """The cancel lands 0.5 s into a 5 s tool call or model request: the run stops on it (RunCancelled, not
    the 5 s wait: a wide margin), and RunCancelled.usage reports the one response answered before it (the request
    in flight has no usage yet); the tool in flight is cancelled: the ledger sees its caller go."""
    r = records[(scenario, variant)]
    assert r.outcome == "cancelled" and r.native.signals.ended == "cancelled"
    assert r.native.signals.exception_type == "RunCancelled"
    assert r.counters.elapsed_s < 4.0
    assert r.segments[0].cancel_sent_s is not None
    assert r.counters.model_requests_observed == CANCEL_IN_FLIGHT[scenario]
    assert (r.counters.model_requests_reported, r.counters.input_tokens_reported) == (1, 1000)
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1}
    assert r.counters.abandoned_calls == (1 if scenario == "cancel_during_tool" else 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancelled_run_is_continued_from_its_messages_without_repeating_the_post(records, variant):
    """RunCancelled.all_messages() keeps the finished post and the lookup call in flight; the resume
    (message_history, or the conversation variant's Conversation) sends both results again, the lookup's as
    pydantic-ai's synthesized 'interrupted' return. The abandoned 5 s lookup's own result never reached the
    framework, so the model answers the 'interrupted' text (no receipt) and looks the policy up again: the post runs
    once, the lookup twice (the abandoned run and the new call)."""
    r = records[("cancel_then_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    cancelled, resumed = r.segments
    assert cancelled.outcome_signals.ended == "cancelled"
    assert (cancelled.counters.model_requests_reported, cancelled.counters.input_tokens_reported) == (2, 2000)
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}
    assert r.counters.abandoned_calls == 1
    first_resumed = r.requests[2]
    assert [(t.call_id, t.status) for t in first_resumed.tool_results] == [("post_1", "receipt"),
                                                                           ("policy_1", "none")]
    assert first_resumed.served_turn == "lookup_again" and r.outcome == "completed"
    assert resumed.outcome_signals.ended == "returned"
    # the lookup again and the answer; the conversation variant's count carries the cancelled run's 2
    assert resumed.counters.model_requests_reported == (4 if variant == "conversation" else 2)
    assert resumed.counters.cumulative == (variant == "conversation")


def test_each_idiom_cancels_the_way_its_docs_show():
    from loopbench.adapters.pydantic_ai_agent import PydanticAIAdapter

    idioms = PydanticAIAdapter.idioms()
    assert idioms["default"].mechanism_table["cancel"].startswith("agent.run(cancellation_token=CancellationToken())")
    assert idioms["iter"].mechanism_table["cancel"].startswith("run.cancel() on the agent.iter() handle")
    assert idioms["stream-events"].mechanism_table["cancel"].startswith("events.cancel()")
    assert "conversation=Conversation(" in idioms["conversation"].mechanism_table["resume_after_cancel"]


# ---- structured answers (a scenario's `output`): Agent(output_type=<pydantic model>), the output tool final_result,
# the check an @agent.output_validator raising ModelRetry, the Agent's default output retries (1)

OUTPUT_SCENARIOS = ("output_invalid_then_valid", "output_check_rejects", "output_never_valid")
CHECKED = ("output_check_rejects", "output_never_valid")
TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}
# the stream-events handle and agent.iter's run keep the usage after a raise; agent.run's exception carries none
USAGE_AFTER_RAISE = ("iter", "stream-events")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_the_answer_is_a_call_to_the_output_tool_final_result(records, scenario, variant):
    """A model output type is ToolOutput on both model classes: final_result is offered beside get_ticket on every
    request; AnthropicModel sends it without strict (the server serves every object), OpenAIChatModel with strict
    (constrained: a broken object is passed over); the check is the output validator, in no schema."""
    r = records[(scenario, variant)]
    assert all(q.tools_offered == ["get_ticket", "final_result"] for q in r.requests), scenario
    answers = [q for q in r.requests if q.output_attempt is not None]
    assert answers and all(q.output_constrained is (variant == "openai-chat") for q in answers)
    output = r.native.settings["output"]
    assert output["output_type"] == "TicketTriage (pydantic model, extra='forbid')"
    assert output["mode"].endswith("the output tool final_result") and output["output_retries"] == 1
    assert output["retries"].startswith("not set: the Agent's default (1")
    assert (output["check"] == "@agent.output_validator on policy_id raising ModelRetry(message)") is (
        scenario in CHECKED)
    assert r.native.settings["output_type"] == "TicketTriage"
    table = adapter_class("pydantic-ai", variant).mechanism_table
    assert r.native.mechanisms["structured_output"] == table["structured_output"]
    assert ("strict: true" in table["structured_output"]) is (variant == "openai-chat")
    assert r.native.mechanisms.get("output_check") == (table["output_check"] if scenario in CHECKED else None)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["output_invalid_then_valid", "output_check_rejects"])
def test_a_rejected_answer_is_sent_back_and_its_correction_completes_the_run(records, scenario, variant):
    """A schema failure (the enum) and the validator's ModelRetry each get a retry prompt within the output retry
    budget of 1: the second answer is valid, 3 requests in all, each in RunUsage.requests; under the openai-chat
    variant's strict tool the enum-breaking object never comes (2 requests, 1 answer)."""
    import json

    r = records[(scenario, variant)]
    assert r.outcome == "completed", r.error_reason
    constrained = variant == "openai-chat" and scenario == "output_invalid_then_valid"
    expected = 2 if constrained else 3
    assert r.counters.model_requests_observed == expected == r.counters.model_requests_reported
    assert r.counters.runtime_steps == expected and r.counters.structured_answers_observed == expected - 1
    assert [q.output_attempt for q in r.requests] == ([None, 1] if constrained else [None, 1, 2])
    signals = r.native.signals
    assert signals.ended == "returned" and signals.final_output == TRIAGE and signals.limit is None
    assert signals.final_text is not None and json.loads(signals.final_text) == TRIAGE
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1}


@pytest.mark.parametrize("variant", VARIANTS)
def test_never_valid_fails_when_the_output_retries_are_spent_before_the_step_limit(records, variant):
    """The second rejected answer spends the budget (1): UnexpectedModelBehavior('Exceeded maximum output retries
    (1)') after 3 requests (2 answers), a failure of the model's answer (not the tool-retry mapping, whose exception
    also has a ModelRetry in its chain); request_limit=4 is never reached (probes/pydantic_ai/output_retries.py)."""
    r = records[("output_never_valid", variant)]
    assert r.outcome == "failed", r.error_reason
    assert r.limits["max_model_calls"].native == "request_limit=4"
    assert r.counters.model_requests_observed == 3 and r.counters.structured_answers_observed == 2
    assert [q.output_attempt for q in r.requests] == [None, 1, 2]
    signals = r.native.signals
    assert signals.ended == "raised" and signals.failure == "model" and signals.limit is None
    assert signals.exception_type == "UnexpectedModelBehavior"
    assert signals.exception_message == "Exceeded maximum output retries (1)"
    assert signals.extra["output_retries_exhausted"] is True and "tool_retries_exhausted" not in signals.extra
    assert signals.final_output is None and signals.final_text is None
    # every response had arrived: the idioms that keep the usage after a raise report all 3
    reported = 3 if variant in USAGE_AFTER_RAISE else None
    assert r.counters.model_requests_reported == reported and r.counters.runtime_steps == reported
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1}


def _scenario(scenario_id: str):
    return next(s for s in load_scenarios() if s.id == scenario_id)


def test_the_output_model_has_no_check_and_the_validator_raises_model_retry_with_its_message():
    """The model: every field required, nothing else allowed, the enum a Literal, no pattern (the check is the
    validator's alone); the validator raises ModelRetry(message), passes a valid answer and any other output."""
    import json

    from pydantic import ValidationError
    from pydantic_ai import DeferredToolRequests, ModelRetry

    from loopbench.adapters.pydantic_ai_agent import _check_validator, output_model

    spec = _scenario("output_check_rejects").output
    model = output_model(spec)
    js = model.model_json_schema()
    assert js["additionalProperties"] is False and sorted(js["required"]) == sorted(spec.fields)
    assert js["properties"]["priority"]["enum"] == ["low", "normal", "urgent"] and "pattern" not in json.dumps(js)
    for bad in ({**TRIAGE, "priority": "asap"}, {**TRIAGE, "x": 1}):
        with pytest.raises(ValidationError):
            model(**bad)
    check = _check_validator(spec)
    assert check(model(**TRIAGE)).model_dump() == TRIAGE
    with pytest.raises(ModelRetry, match="policy_id must be a policy id"):
        check(model(**{**TRIAGE, "policy_id": "the refund policy"}))
    deferred = DeferredToolRequests()
    assert check(deferred) is deferred


def test_a_structured_answer_combines_with_the_deferred_output_of_an_approval():
    """A scenario with both a tool that needs approval and an output: output_type=[<model>, DeferredToolRequests];
    without an approval, the model alone; a child agent never gets the main agent's output."""
    from pydantic_ai import DeferredToolRequests

    from loopbench.adapters.pydantic_ai_agent import PydanticAIAdapter
    from loopbench.harness.ledger.http import LedgerClient
    from loopbench.harness.scenario.model import MAIN_AGENT

    spec = _scenario("output_check_rejects").output
    paused = _scenario("approval_pause").model_copy(update={"output": spec})
    ledger = LedgerClient("http://127.0.0.1:1", "token", "run")
    settings: dict = {}
    kwargs = PydanticAIAdapter()._agent_kwargs(paused, ledger, settings, MAIN_AGENT)
    model, deferred = kwargs["output_type"]
    assert model.__name__ == "TicketTriage" and deferred is DeferredToolRequests
    assert settings["output_type"] == "[TicketTriage, DeferredToolRequests]"
    plain = PydanticAIAdapter()._agent_kwargs(_scenario("output_check_rejects"), ledger, {}, MAIN_AGENT)
    assert plain["output_type"].__name__ == "TicketTriage"
    assert PydanticAIAdapter()._agent_kwargs(_scenario("approval_pause"), ledger, {}, MAIN_AGENT)[
        "output_type"] == [str, DeferredToolRequests]


def test_spent_output_retries_are_a_model_failure_and_a_tools_are_a_tool_failure():
    """Both exceptions are UnexpectedModelBehavior raised from a ModelRetry: pydantic-ai's words tell them apart
    (_tool_execution.py 'Exceeded maximum output retries'; tool_manager.py 'Tool ... exceeded max retries count');
    a request limit met by corrections stays the step limit."""
    from pydantic_ai import ModelRetry
    from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded

    from loopbench.adapters.pydantic_ai_agent import PydanticAIAdapter

    def raised(message: str) -> UnexpectedModelBehavior:
        exc = UnexpectedModelBehavior(message)
        exc.__cause__ = ModelRetry("policy_id must be a policy id")
        return exc

    output = PydanticAIAdapter._raised(raised("Exceeded maximum output retries (1)"), {})
    assert (output.failure, output.extra) == ("model", {"output_retries_exhausted": True})
    older = PydanticAIAdapter._raised(raised("Exceeded maximum retries (1) for output validation"), {})
    assert older.failure == "model"
    tool = PydanticAIAdapter._raised(raised("Tool 'lookup_policy' exceeded max retries count of 1"), {})
    assert (tool.failure, tool.extra) == ("tool", {"tool_retries_exhausted": True})
    limit = PydanticAIAdapter._raised(UsageLimitExceeded("The next request would exceed the request_limit of 4"), {})
    assert (limit.limit, limit.limit_signal, limit.failure) == ("steps", "raised", None)
