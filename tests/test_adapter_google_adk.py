"""The Google ADK adapter through the real runner: the whole suite, every variant.

What this framework does natively (signals, limits, confirmations, resumes); the facts every framework shares are
in test_ground_truth.py. probes/google_adk/fair.py (Gemini) and probes/google_adk/anthropic_llm.py (AnthropicLlm)
reproduce the findings against the raw SDK.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from loopbench.harness.record import RunRecord
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("google-adk",)  # run alone, the suite run is this framework's only

VARIANTS = ("default", "error-dict", "in-memory", "anthropic", "sse", "single-turn", "transfer")
# ADK's quick start: its Gemini class, the table's Gemini model
GEMINI = ("default", "error-dict", "in-memory", "sse", "single-turn", "transfer")
PERSISTENT = ("default", "error-dict", "anthropic", "sse", "single-turn", "transfer")  # SqliteSessionService
AGENT_TOOL = tuple(v for v in VARIANTS if v not in ("single-turn", "transfer"))  # sub-agents through AgentTool


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("google-adk")


@pytest.mark.parametrize("variant", GEMINI)
def test_the_quick_start_sends_the_tables_gemini_model_through_adks_gemini_class(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.outcome == "completed" and r.counters.model_requests_observed == 3
    assert {q.protocol for q in r.requests} == {"gemini_generate"}
    assert {q.model for q in r.requests} == {"gemini-2.5-flash"}  # not the scenario's Claude id
    assert r.native.settings["model_class"] == "google.adk.models.Gemini"
    assert r.native.settings["model"] == "gemini-2.5-flash"
    assert r.counters.model_requests_reported == 3 and r.counters.runtime_steps == 3
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed


def test_the_anthropic_variant_sends_the_scenarios_claude_through_anthropicllm(records):
    r = records[("support_draft_completes", "anthropic")]
    assert r.outcome == "completed" and r.counters.model_requests_observed == 3
    assert {q.protocol for q in r.requests} == {"anthropic_messages"}
    assert {q.model for q in r.requests} == {"claude-sonnet-4-5"}
    assert r.native.settings["model_class"] == "google.adk.models.anthropic_llm.AnthropicLlm"
    assert r.native.settings["max_retries"] == 2  # the anthropic client's default, read from the client ADK calls
    assert r.counters.model_requests_reported == 3 and r.counters.runtime_steps == 3
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.counters.output_tokens_reported == r.counters.output_tokens_observed


@pytest.mark.parametrize("scenario", ("support_draft_completes", "approval_pause"))
def test_the_session_store_is_the_variants_whatever_the_scenario(records, scenario):
    for variant in PERSISTENT:
        assert "SqliteSessionService" in records[(scenario, variant)].native.settings["session_service"], variant
    assert "InMemorySessionService" in records[(scenario, "in-memory")].native.settings["session_service"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_max_llm_calls_raises_before_the_call_past_the_limit(records, variant):
    """N calls are sent, the tool of the N-th response still runs, the (N+1)-th call is refused (ADK's counter
    counts it: increment, then check)."""
    r = records[("runaway_step_limit", variant)]
    assert r.outcome == "limit_steps" and r.native.signals.limit_signal == "raised"
    assert r.native.signals.exception_type == "LlmCallsLimitExceededError"
    assert r.limits["max_model_calls"].native == "RunConfig(max_llm_calls=8)"
    assert r.counters.model_requests_observed == 8 == r.counters.tool_executions
    assert r.counters.runtime_steps == 9


def test_the_default_limit_is_500_and_the_safety_cap_comes_first(records):
    r = records[("default_limits", "default")]
    assert r.limits["max_model_calls"].native == "max_llm_calls default (500)"
    assert r.outcome == "capped"


@pytest.mark.parametrize("variant", PERSISTENT)
def test_a_resume_is_a_new_invocation_with_a_fresh_budget(records, variant):
    r = records[("resume_keeps_allowance", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.counters.model_requests_observed == 3 + 4  # 4 more after the resume, against a limit of 4
    assert r.segments[1].outcome_signals.exception_type == "LlmCallsLimitExceededError"


@pytest.mark.parametrize("variant", PERSISTENT)
def test_the_confirmation_resumes_from_the_sqlite_session_in_another_process(records, variant):
    r = records[("approval_approved_resume", variant)]
    assert r.outcome == "completed" and [s.kind for s in r.segments] == ["run", "resume"]
    assert r.segments[0].pending[0].call_id == "send_1"
    assert r.counters.tool_executions_by_tool["send_reply"] == 1 and r.counters.approval_requests == 1
    # the require_confirmation callable: once at the pause, three times on the resume (asked once)
    assert r.counters.authorize_events_by_tool["send_reply"] == 4
    assert "SqliteSessionService" in r.native.settings["session_service"]


@pytest.mark.parametrize("variant", PERSISTENT)
def test_a_rejection_is_told_to_the_model_and_the_loop_goes_on(records, variant):
    r = records[("approval_rejected_resume", variant)]
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    assert r.counters.model_requests_observed == 5 and r.outcome == "incomplete"


@pytest.mark.parametrize("variant", PERSISTENT)
def test_resuming_the_same_confirmation_twice_runs_nothing_the_second_time(records, variant):
    r = records[("resume_twice", variant)]
    assert r.counters.resumes == 2 and r.counters.tool_executions_by_tool["send_reply"] == 1
    assert r.counters.duplicate_effects == 0 and r.counters.model_requests_observed == 4
    assert r.segments[2].counters.model_requests_reported == 0 and r.segments[2].counters.runtime_steps == 0


def test_the_in_memory_pause_does_not_survive_a_new_process(records):
    paused = records[("approval_pause", "in-memory")]
    assert paused.outcome == "awaiting_approval" and paused.capabilities.pause_survives_restart is False
    assert records[("approval_pause", "default")].capabilities.pause_survives_restart is True
    r = records[("approval_approved_resume", "in-memory")]
    assert r.segments[1].outcome_signals.exception_type == "SessionNotFoundError"
    assert r.outcome == "failed" and r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    # the resume raised before any event: ADK reported nothing, so nothing is counted (not a made-up 0) ...
    resumed = r.segments[1].counters
    assert resumed.model_requests_reported is None and resumed.tool_calls_requested is None
    assert resumed.input_tokens_reported is None and resumed.output_tokens_reported is None
    # ... and a total over a segment that reported nothing is unknown too
    assert r.segments[0].counters.model_requests_reported == 3 and r.counters.model_requests_reported is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_ends_on_the_skipped_function_response(records, variant):
    r = records[("denied_action", variant)]
    assert r.outcome == "denied" and r.native.signals.denied is True and r.native.signals.ended == "returned"
    assert r.counters.model_requests_observed == 2
    assert r.counters.authorize_events_by_tool["delete_account"] == 1
    assert "skip_summarization" in r.native.mechanisms["deny_stop"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_tells_the_model_and_goes_on(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert r.counters.model_requests_observed == 3
    assert "before_tool_callback" in r.native.mechanisms["deny_continue"]


@pytest.mark.parametrize("variant", GEMINI)
def test_no_retry_by_default(records, variant):
    """retry_options unset: neither ADK nor google-genai retries; the first error ends the run."""
    for scenario in ("model_transient_error", "model_outage", "model_fatal_error"):
        r = records[(scenario, variant)]
        assert r.outcome == "failed" and r.native.signals.failure == "model", scenario
        assert r.counters.model_requests_observed == 1 and r.counters.model_retries_observed == 0, scenario
        assert r.counters.model_requests_reported is None, scenario  # the failed call left no event


def test_the_anthropic_clients_default_retries_hide_behind_adk(records):
    """AnthropicLlm passes the user's client through: its max_retries=2 retries a 429 (after its retry-after) and
    a 500 inside one request, so ADK reports one event per response; an outage gets 1 + 2 requests."""
    r = records[("model_transient_error", "anthropic")]
    assert r.outcome == "completed" and [q.status for q in r.requests] == [429, 500, 200, 200, 200]
    assert r.counters.model_requests_reported == 3 and r.counters.model_retries_observed == 2
    outage = records[("model_outage", "anthropic")]
    assert outage.outcome == "failed" and outage.native.signals.failure == "model"
    assert outage.native.signals.exception_type == "InternalServerError"
    assert outage.counters.model_requests_observed == 3 and outage.counters.model_requests_reported is None
    assert outage.capabilities.retry_window_s == 2.0
    # the client obeys the provider's `x-should-retry: false`
    fatal = records[("model_fatal_error", "anthropic")]
    assert fatal.outcome == "failed" and fatal.counters.model_requests_observed == 1


@pytest.mark.parametrize("variant", ("default", "anthropic", "sse"))
def test_a_tool_exception_ends_the_run_and_an_error_dict_goes_on(records, variant):
    raised = records[("tool_transient_error", variant)]
    assert raised.outcome == "failed" and raised.native.signals.failure == "tool"
    assert raised.native.signals.exception_type == "ToolFailed"
    handled = records[("tool_transient_error", "error-dict")]
    assert handled.outcome == "completed" and handled.counters.tool_executions_by_tool["lookup_policy"] == 3


def test_budgets_and_deadlines_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("cost_budget", "default")].unsupported == ["max_cost_usd"]
    assert records[("deadline_slow_model", "default")].unsupported == ["deadline_s"]


def test_sse_streams_every_request_and_counts_the_aggregated_events(records):
    """StreamingMode.SSE: every request is :streamGenerateContent; ADK yields partial events (one per SSE chunk,
    the last carrying the response's usage) and one aggregated non-partial event per response. Counting the
    non-partial events reports what the server served, as the default does (probes/google_adk/sse_usage.py)."""
    for scenario in ("support_draft_completes", "approval_approved_resume", "parallel_tool_calls"):
        streamed, plain = records[(scenario, "sse")], records[(scenario, "default")]
        assert streamed.requests and all(q.stream for q in streamed.requests), scenario
        assert not any(q.stream for q in plain.requests), scenario
        assert streamed.native.settings["streaming_mode"] == "StreamingMode.SSE"
        assert streamed.capabilities.stream_of == "default"
        c = streamed.counters
        assert c.model_requests_reported == c.model_requests_observed == plain.counters.model_requests_reported
        assert c.input_tokens_reported == c.input_tokens_observed == plain.counters.input_tokens_reported
        assert c.output_tokens_reported == c.output_tokens_observed == plain.counters.output_tokens_reported
    extra = records[("support_draft_completes", "sse")].native.signals.extra
    # each response's last chunk carries its usage, as a partial event too: summing every event would double it
    assert extra["partial_events"] >= 3 and extra["partial_events_with_usage"] == 3
    assert "partial_events" not in records[("support_draft_completes", "default")].native.signals.extra


def test_sse_pauses_and_resumes_as_the_default(records):
    for scenario in ("approval_pause", "approval_approved_resume", "approval_rejected_resume", "resume_twice"):
        streamed, plain = records[(scenario, "sse")], records[(scenario, "default")]
        assert streamed.outcome == plain.outcome, scenario
        assert [s.kind for s in streamed.segments] == [s.kind for s in plain.segments], scenario
        assert streamed.counters.tool_executions_by_tool == plain.counters.tool_executions_by_tool, scenario


def _event(usage: object) -> SimpleNamespace:
    return SimpleNamespace(partial=False, author="assistant", usage_metadata=usage, finish_reason="STOP",
                           get_function_calls=lambda: [])


def test_a_response_whose_usage_lacks_a_count_leaves_that_total_unknown():
    from loopbench.adapters.google_adk import GoogleADKAdapter

    full = SimpleNamespace(prompt_token_count=1000, candidates_token_count=100)
    no_output = SimpleNamespace(prompt_token_count=1000, candidates_token_count=None)
    counters = GoogleADKAdapter._counters([_event(full), _event(no_output)], {}, known=True)
    assert counters.model_requests_reported == 2
    assert counters.input_tokens_reported == 2000 and counters.output_tokens_reported is None
    counters = GoogleADKAdapter._counters([_event(full), _event(None)], {}, known=True)
    assert counters.input_tokens_reported is None and counters.output_tokens_reported is None
    unknown = GoogleADKAdapter._counters([_event(full)], {}, known=False)
    assert unknown.model_requests_reported is None and unknown.input_tokens_reported is None


# ---- sub-agents: AgentTool(agent=LlmAgent) (agent as a tool), measured on the five subagent_* scenarios
# (probes/google_adk/agent_tool.py reproduces each finding against the raw SDK)


@pytest.mark.parametrize("variant", AGENT_TOOL)
def test_a_child_is_an_agent_tool_whose_usage_the_run_does_not_report(records, variant):
    """AgentTool runs the child in its own nested Runner and forwards none of its events: the parent's events
    report main's 2 responses (2000 / 200 tokens) of the 4 the server served (4000 / 400)."""
    r = records[("subagent_usage", variant)]
    c = r.counters
    assert r.outcome == "completed"
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert (c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (2, 2000, 200)
    assert c.input_tokens_by_agent == {"main": 2000, "billing": 2000}
    assert r.native.mechanisms["delegate"].startswith("AgentTool(agent=LlmAgent(")
    assert r.native.settings["subagents"]["billing"]["tool"] == "AgentTool(agent=LlmAgent(name='billing'))"


@pytest.mark.parametrize("variant", AGENT_TOOL)
def test_a_child_gets_max_llm_calls_with_a_counter_of_its_own(records, variant):
    """The parent's RunConfig(max_llm_calls=8) reaches the nested run, whose invocation counts afresh: research
    makes 8 calls after main's 1 (9 served), then its LlmCallsLimitExceededError leaves the parent's run."""
    r = records[("subagent_runaway", variant)]
    c = r.counters
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "LlmCallsLimitExceededError"
    assert c.model_requests_by_agent == {"main": 1, "research": 8}
    assert c.model_requests_observed == 9 and c.tool_executions_by_tool == {"search_kb": 8}
    assert c.model_requests_reported == 1 and c.runtime_steps == 1  # the parent's events and counter only
    assert r.limits["max_model_calls"].native == "RunConfig(max_llm_calls=8)"


@pytest.mark.parametrize("variant", AGENT_TOOL)
def test_a_confirmation_inside_a_child_cannot_pause_the_run(records, variant):
    """The child's require_confirmation asks once (one authorize event), its nested invocation ends on the
    adk_request_confirmation, and AgentTool answers the parent "... which AgentTool cannot resume.": no pause,
    no resume, issue_refund never runs; main answers from the error (incomplete)."""
    r = records[("subagent_approval", variant)]
    c = r.counters
    assert r.outcome == "incomplete" and r.native.signals.ended == "returned"
    assert [s.kind for s in r.segments] == ["run"] and not r.segments[0].pending
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_tool == {"lookup_refund": 1}
    assert c.authorize_events_by_tool == {"issue_refund": 1} and c.approval_requests == 0
    assert c.model_requests_reported == 2


@pytest.mark.parametrize("variant", ("default", "in-memory", "anthropic", "sse"))
def test_a_childs_raised_tool_error_ends_the_whole_run(records, variant):
    """The child's ToolFailed takes ADK's default path (no on_tool_error_callback) in the nested run, leaves
    AgentTool, and the parent's tool call re-raises it: failed, main 1 request, billing 1."""
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "tool"
    assert r.native.signals.exception_type == "ToolFailed"
    assert r.counters.model_requests_by_agent == {"main": 1, "billing": 1}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


def test_a_childs_error_dict_becomes_its_answer(records):
    r = records[("subagent_tool_failure", "error-dict")]
    assert r.outcome == "incomplete" and r.native.signals.failure is None
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}


def test_a_token_budget_over_a_child_is_unsupported(records):
    r = records[("subagent_token_budget", "default")]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 4}
    assert r.counters.input_tokens_observed == 6000 and r.counters.input_tokens_reported == 2000


def test_in_the_sse_variant_only_the_parent_streams(records):
    """AgentTool forces the nested run's RunConfig to StreamingMode.NONE."""
    r = records[("subagent_usage", "sse")]
    assert [(q.agent, q.stream) for q in r.requests] == [
        ("main", True), ("billing", False), ("billing", False), ("main", True)]


# ---- sub-agents: the single-turn variant, sub_agents=[LlmAgent(mode='single_turn')] run inline


def test_single_turn_children_run_inside_the_parents_invocation_and_usage(records):
    r = records[("subagent_usage", "single-turn")]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (
        c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert r.native.mechanisms["delegate"].startswith("LlmAgent(sub_agents=[LlmAgent(")
    assert "sub_agents" in r.native.settings["delegation"]


def test_single_turn_children_share_the_tasks_llm_call_counter(records):
    """One counter for the tree: 8 requests under max_llm_calls=8; the research's refused call comes back to
    main as an error text and main's next call is refused too (ADK's counter 10), then the limit error leaves."""
    r = records[("subagent_runaway", "single-turn")]
    c = r.counters
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "LlmCallsLimitExceededError"
    assert c.model_requests_by_agent == {"main": 1, "research": 7}
    assert c.model_requests_reported == c.model_requests_observed == 8
    assert c.runtime_steps == 10


def test_single_turn_pauses_on_the_childs_confirmation_and_the_resume_continues_the_child(records):
    r = records[("subagent_approval", "single-turn")]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert [(p.call_id, p.tool) for p in r.segments[0].pending] == [("refund_issue_1", "issue_refund")]
    assert c.model_requests_by_agent == {"main": 2, "billing": 3}
    assert c.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}
    assert c.model_requests_reported == c.model_requests_observed == 5


def test_single_turn_turns_a_childs_raised_tool_error_into_text_for_the_parent(records):
    r = records[("subagent_tool_failure", "single-turn")]
    assert r.outcome == "incomplete" and r.native.signals.failure is None
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 1}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


# ---- sub-agents: the transfer variant, chat-mode sub_agents reached by transfer_to_agent (a handoff)


def test_transfer_hands_the_conversation_to_the_child_which_answers(records):
    """The child answers the user; main is not called again. Its requests are the run's: reported = served."""
    r = records[("subagent_usage", "transfer")]
    c = r.counters
    assert r.outcome == "completed"
    assert [q.agent for q in r.requests] == ["main", "billing", "billing"]
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (
        c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (3, 3000, 300)
    assert r.native.mechanisms["delegate"].startswith("LlmAgent(sub_agents=[LlmAgent(...)]) -> transfer_to_agent")


def test_transfer_shares_the_counter_pauses_in_the_child_and_raises_its_tool_error(records):
    runaway = records[("subagent_runaway", "transfer")]
    assert runaway.outcome == "limit_steps" and runaway.counters.model_requests_by_agent == {"main": 1, "research": 7}
    assert runaway.counters.runtime_steps == 9
    approval = records[("subagent_approval", "transfer")]
    assert approval.outcome == "completed" and [s.kind for s in approval.segments] == ["run", "resume"]
    assert approval.counters.model_requests_by_agent == {"main": 1, "billing": 3}
    assert approval.counters.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}
    assert approval.segments[1].counters.runtime_steps is not None  # read from the child, the agent that resumes
    failure = records[("subagent_tool_failure", "transfer")]
    assert failure.outcome == "failed" and failure.native.signals.exception_type == "ToolFailed"
    assert failure.counters.model_requests_by_agent == {"main": 1, "billing": 1}


# ---- the caller's cancel: run_async's abort_signal; the session continued with the user's next message
KEEPS_SESSIONS = tuple(v for v in VARIANTS if v != "in-memory")


def _abandoned(r: RunRecord, tool: str) -> list[bool]:
    return [e.caller_abandoned for e in r.ledger if e.kind == "call" and e.tool == tool]


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_abort_during_a_tool_seals_its_call_and_ends_the_run(records, variant):
    """The abort 0.5 s into the 5 s get_ticket: run_async ends without waiting for it (a wide margin under 5 s),
    its call sealed with ADK's INVOCATION_ABORTED response (probes/google_adk/abort.py tool)."""
    r = records[("cancel_during_tool", variant)]
    seg = r.segments[0]
    sig = seg.outcome_signals
    assert (r.outcome, sig.ended, sig.terminal_reason) == ("cancelled", "cancelled", "INVOCATION_ABORTED")
    assert seg.cancel_sent_s is not None and seg.elapsed_s < 4.5
    assert sig.extra["sealed_calls"] == [{"call_id": "ticket_1", "tool": "get_ticket"}]
    assert _abandoned(r, "get_ticket") == [True]
    assert r.counters.model_requests_observed == r.counters.model_requests_reported == 1
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.native.mechanisms["cancel"].startswith("Runner.run_async(..., abort_signal=asyncio.Event())")


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_abort_during_a_model_request_reports_the_responses_before_it(records, variant):
    """No call dangles: one content-less abort event; the request in flight left no event, so the reported count
    and usage are the first response's, as the server served it (probes/google_adk/abort.py model)."""
    r = records[("cancel_during_model", variant)]
    sig = r.segments[0].outcome_signals
    assert (r.outcome, sig.terminal_reason, sig.extra["abort_events"], sig.extra["sealed_calls"]) == (
        "cancelled", "INVOCATION_ABORTED", 1, [])
    assert r.segments[0].elapsed_s < 4.5
    assert r.counters.model_requests_observed == 2 and r.counters.model_requests_reported == 1
    first = r.requests[0]
    assert (r.counters.input_tokens_reported, r.counters.output_tokens_reported) == (
        first.input_tokens, first.output_tokens)


@pytest.mark.parametrize("variant", KEEPS_SESSIONS)
def test_the_session_continued_after_an_abort_holds_the_sealed_call_and_repeats_no_write(records, variant):
    """A new run_async on the same SqliteSessionService session, in another process: the model's next request
    carries the sealed lookup_policy call's response (the abort error, not a receipt: ADK does not replay the
    call), so the scripted model looks the policy up again; the post is not repeated."""
    r = records[("cancel_then_resume", variant)]
    cancelled, resumed = r.segments
    assert (cancelled.outcome_signals.ended, resumed.kind, resumed.outcome_signals.ended) == (
        "cancelled", "resume", "returned")
    assert cancelled.outcome_signals.extra["sealed_calls"] == [{"call_id": "policy_1", "tool": "lookup_policy"}]
    after = [q for q in r.requests if q.t_s > r.requests[1].t_s]
    assert after[0].served_turn == "lookup_again"
    assert {t.call_id: t.status for t in after[0].tool_results}["policy_1"] == "none"
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}
    assert _abandoned(r, "lookup_policy") == [True, False] and r.counters.duplicate_effects == 0
    assert (r.outcome, r.counters.resumes) == ("completed", 1)


def test_the_in_memory_session_dies_with_the_cancelled_process(records):
    """Nothing is kept across processes, so the idiom cannot continue a cancelled task: the scenario is not run
    and the cell says resume_after_cancel is unsupported (its cancel is measured by cancel_during_*)."""
    r = records[("cancel_then_resume", "in-memory")]
    assert r.outcome == "not_run" and r.verdict == "unsupported"
    assert r.unsupported == ["resume_after_cancel"] and r.counters.model_requests_observed == 0
    assert records[("cancel_during_tool", "in-memory")].outcome == "cancelled"


# ---- structured answers: LlmAgent(output_schema=<pydantic model>, output_key=...) (scenario `output`);
# probes/google_adk/output_schema.py reproduces each finding against the raw SDK

TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


@pytest.mark.parametrize("scenario", ("output_invalid_then_valid", "output_check_rejects"))
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_rejected_set_model_response_goes_back_to_the_model_which_corrects_it(records, variant, scenario):
    """With tools, on models that cannot pair a response schema with tools (the Gemini API, AnthropicLlm), ADK
    offers set_model_response and answers a call that fails validation (the enum, or the AfterValidator's
    ValueError) with an error dict: the model answers again, the second answer is the run's."""
    r = records[(scenario, variant)]
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert r.counters.model_requests_observed == 3 and r.counters.structured_answers_observed == 2
    assert [q.output_attempt for q in r.requests] == [None, 1, 2]
    assert not any(q.output_constrained for q in r.requests if q.output_attempt)  # no strict declaration
    assert all("set_model_response" in q.tools_offered for q in r.requests)
    s = r.native.signals
    assert s.final_output == TRIAGE and json.loads(s.final_text or "") == TRIAGE
    assert s.extra["output_rejections"] == 1
    assert r.counters.model_requests_reported == 3 and r.counters.runtime_steps == 3
    assert r.segments[0].counters.tool_calls_requested == 1  # get_ticket; set_model_response is the answer
    out = r.native.settings["output"]
    assert out["output_key"] == "structured_answer" and out["output_schema_and_tools"] is False
    assert "set_model_response" in out["path"]
    assert r.native.mechanisms["structured_output"].startswith("LlmAgent(output_schema=")
    if scenario == "output_check_rejects":  # the intent is recorded where the scenario has a check
        assert "AfterValidator" in r.native.mechanisms["output_check"]
        assert out["check"] == "AfterValidator on policy_id raising ValueError"
    else:
        assert "output_check" not in r.native.mechanisms and out["check"] is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrections_count_against_max_llm_calls_and_adk_has_no_budget_of_its_own(records, variant):
    """Every answer fails the check: ADK asks again each time, each correction one more LLM call under the
    invocation's counter: 4 requests (1 read + 3 answers), then LlmCallsLimitExceededError before a 5th."""
    r = records[("output_never_valid", variant)]
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "LlmCallsLimitExceededError"
    assert r.limits["max_model_calls"].native == "RunConfig(max_llm_calls=4)"
    assert r.counters.model_requests_observed == 4 and r.counters.structured_answers_observed == 3
    assert [q.output_attempt for q in r.requests] == [None, 1, 2, 3]
    assert r.counters.runtime_steps == 5 and r.counters.model_requests_reported == 4
    assert r.native.signals.final_output is None and r.native.signals.extra["output_rejections"] == 3
    assert r.counters.tool_executions_by_tool["get_ticket"] == 1


def test_the_output_schema_is_a_pydantic_model_with_the_check_as_an_after_validator():
    from pydantic import ValidationError

    from loopbench.adapters.google_adk import _output_schema
    from loopbench.harness.scenario import load_scenarios

    spec = next(s for s in load_scenarios() if s.id == "output_check_rejects").output
    assert spec is not None
    model = _output_schema(spec)
    assert model.__name__ == "TicketTriage"
    assert model.model_validate(TRIAGE).model_dump() == TRIAGE
    for bad, why in (({**TRIAGE, "policy_id": "the refund policy"}, spec.check.message if spec.check else ""),
                     ({**TRIAGE, "priority": "asap"}, "literal_error"), ({**TRIAGE, "x": 1}, "extra_forbidden")):
        with pytest.raises(ValidationError, match=why) as caught:
            model.model_validate(bad)
        assert caught.value.title == "TicketTriage"  # what _invalid_answer reads as the answer's failure
    assert model.model_json_schema()["additionalProperties"] is False


def test_an_answer_that_fails_validate_schema_is_the_models_failure():
    """Without tools ADK validates the final text with validate_schema, which raises the output model's
    ValidationError out of run_async (probes/google_adk/output_schema.py no-tools): failure="model"; another
    model's ValidationError stays failure="other"."""
    from pydantic import ValidationError

    from loopbench.adapters.google_adk import GoogleADKAdapter, _output_schema
    from loopbench.harness.scenario import load_scenarios

    spec = next(s for s in load_scenarios() if s.id == "output_check_rejects").output
    assert spec is not None
    try:
        _output_schema(spec).model_validate_json(json.dumps({**TRIAGE, "policy_id": "none"}))
    except ValidationError as exc:
        caught = exc
    wrapped = RuntimeError("node failed")
    wrapped.__cause__ = caught
    adapter = GoogleADKAdapter()
    for exc in (caught, wrapped):
        signals = adapter._raised(exc, {"output_name": "TicketTriage"})
        assert signals.ended == "raised" and signals.failure == "model"
    assert adapter._raised(caught, {}).failure == "other"  # no output in the scenario: not an answer's failure
