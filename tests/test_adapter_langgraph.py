"""The LangGraph adapter through the real runner: the whole suite, every variant.

What this framework does natively: the signal mapping, and counters that must be measured (not null) and
consistent with the ledger; the facts every framework shares are in test_ground_truth.py. Every idiom but
`openai-compatible` drives ChatAnthropic over Anthropic Messages; `openai-compatible` drives ChatOpenAI over
Chat Completions with the same Claude model; `stream-messages` streams the default's graph with stream_mode
"messages" (ChatAnthropic then streams every request).
"""

from __future__ import annotations

import pytest

from loopbench.adapters.langgraph_agent import LangGraphAdapter
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario import load_scenarios
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("langgraph",)  # run alone, the suite run is this framework's only

# the native idioms; `guarded` (the default with loopbench.guard) is the guard's, tested with the other bindings
VARIANTS = ("default", "stategraph", "model-call-limit", "openai-compatible", "stream-messages", "tool-strategy")
# the variants that build create_agent
CREATE_AGENT = ("default", "model-call-limit", "openai-compatible", "stream-messages", "tool-strategy")
# the variants that limit calls so
RECURSION_LIMIT = ("default", "stategraph", "openai-compatible", "stream-messages", "tool-strategy")
# each variant's model class and the wire protocol the server saw it speak
ROUTE = {"default": ("langchain_anthropic.ChatAnthropic", "anthropic_messages"),
         "stategraph": ("langchain_anthropic.ChatAnthropic", "anthropic_messages"),
         "model-call-limit": ("langchain_anthropic.ChatAnthropic", "anthropic_messages"),
         "openai-compatible": ("langchain_openai.ChatOpenAI", "openai_chat"),
         "stream-messages": ("langchain_anthropic.ChatAnthropic", "anthropic_messages"),
         "tool-strategy": ("langchain_anthropic.ChatAnthropic", "anthropic_messages"),
         "guarded": ("langchain_anthropic.ChatAnthropic", "anthropic_messages")}


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("langgraph")


def test_the_variants_and_the_model_class_each_drives():
    """LangChain's registry picks ChatAnthropic for the scenario's Claude; `openai-compatible` sends the same
    Claude model through ChatOpenAI. Each idiom's tool-call ids carry its protocol's prefix."""
    idioms = LangGraphAdapter.idioms()
    assert tuple(idioms) == (*VARIANTS, "guarded")
    scenario = next(s for s in load_scenarios() if s.id == "support_draft_completes")
    for variant, cls in idioms.items():
        assert (cls.model_class, cls.model_provider) == (ROUTE[variant][0], "anthropic")
        assert cls.model_id(scenario) == scenario.model.id == "claude-sonnet-4-5"
        assert cls.call_id_prefix == ("call_" if variant == "openai-compatible" else "toolu_")


def test_model_requests_reported_counts_the_model_classes_responses_only():
    """One per response the chat model class produced: an AIMessage a middleware wrote (the deny hook's, the call
    limit's) is not one; a response with no content is one; tokens are None, never 0, when one lacks usage."""
    from langchain_core.messages import AIMessage, HumanMessage

    usage = {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100}
    claude = AIMessage(content=[], id="a1", usage_metadata=usage,
                       response_metadata={"model_provider": "anthropic", "stop_reason": "end_turn"})
    no_usage = AIMessage(content="hi", id="a2", response_metadata={"model_provider": "openai",
                                                                    "finish_reason": "stop"})
    written = AIMessage(content="Stopped: delete_account is denied by policy.", id="a3")
    old = AIMessage(content="earlier", id="a0", usage_metadata=usage, response_metadata={"stop_reason": "end_turn"})
    values = {"messages": [HumanMessage("x", id="h"), old, claude, written]}
    counters = LangGraphAdapter._counters(values, {"h", "a0"}, {1, 2})
    assert (counters.model_requests_reported, counters.input_tokens_reported, counters.output_tokens_reported) == (
        1, 1000, 100)
    counters = LangGraphAdapter._counters({"messages": [claude, no_usage, written]}, set(), {1})
    assert counters.model_requests_reported == 2
    assert counters.input_tokens_reported is None and counters.output_tokens_reported is None
    nothing = LangGraphAdapter._counters({"messages": [old]}, {"a0"}, set())  # a resume that ran no step
    assert (nothing.model_requests_reported, nothing.input_tokens_reported) == (0, 0)


def test_neutral_tool_choices_become_what_each_model_class_takes():
    anthropic, openai = LangGraphAdapter, LangGraphAdapter.idioms()["openai-compatible"]
    assert [anthropic._native_tool_choice(c) for c in ("required", "none", "auto", "lookup_policy")] == [
        "any", {"type": "none"}, "auto", "lookup_policy"]
    assert [openai._native_tool_choice(c) for c in ("required", "none", "auto", "lookup_policy")] == [
        "required", "none", "auto", "lookup_policy"]


def test_stream_messages_streams_every_request_and_reports_what_was_served(records):
    """stream_mode "messages" attaches a streaming callback handler: ChatAnthropic (streaming=False, untouched)
    streams every request; its merged AIMessages carry message_delta's usage, what the server served, and the
    counts equal the non-streamed default's (probes/langgraph/stream_messages.py)."""
    for scenario in ("support_draft_completes", "approval_approved_resume", "model_transient_error",
                     "runaway_step_limit"):
        streamed, plain = records[(scenario, "stream-messages")], records[(scenario, "default")]
        assert streamed.requests and all(q.stream for q in streamed.requests), scenario
        assert not any(q.stream for q in plain.requests), scenario
        assert streamed.native.settings["stream_mode"] == ["debug", "values", "messages"]
        assert streamed.capabilities.stream_of == "default"
        c, p = streamed.counters, plain.counters
        assert (c.model_requests_observed, c.model_requests_reported, c.runtime_steps) == (
            p.model_requests_observed, p.model_requests_reported, p.runtime_steps), scenario
        assert c.input_tokens_reported == c.input_tokens_observed == p.input_tokens_reported, scenario
        assert c.output_tokens_reported == c.output_tokens_observed == p.output_tokens_reported, scenario
        assert streamed.outcome == plain.outcome, scenario
    extra = records[("support_draft_completes", "stream-messages")].native.signals.extra
    assert extra["message_chunks"] > 0
    assert "message_chunks" not in records[("support_draft_completes", "default")].native.signals.extra


def _ledger_count(r: RunRecord, kind: str, tool: str) -> int:
    return sum(1 for e in r.ledger if e.kind == kind and e.tool == tool)


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_counts_supersteps_and_reports_tokens(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.counters.runtime_step_unit == "superstep" and r.counters.runtime_steps
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.counters.output_tokens_reported == r.counters.output_tokens_observed
    assert r.counters.model_requests_reported == r.counters.model_requests_observed == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_idiom_drives_its_model_class_over_its_protocol(records, variant):
    """The model class LangChain's registry picks for Claude (ChatAnthropic, Anthropic Messages), or ChatOpenAI
    against an OpenAI-compatible endpoint; the scenario's Claude model either way, with the class's defaults."""
    model_class, protocol = ROUTE[variant]
    for scenario in ("support_draft_completes", "approval_approved_resume"):
        r = records[(scenario, variant)]
        assert r.native.settings["model_class"] == model_class and r.native.settings["model"] == "claude-sonnet-4-5"
        assert {(q.protocol, q.model) for q in r.requests} == {(protocol, "claude-sonnet-4-5")}
        client = r.native.settings["model_client"]
        assert (client["max_retries"], client["timeout"], client["streaming"]) == (2, None, False)


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pause_keeps_the_scripted_call_id(records, variant):
    """The pause and its one pending send_reply are test_ground_truth's; its id is the interrupt's mapping."""
    r = records[("approval_pause", variant)]
    pending = r.segments[-1].pending[0]
    assert pending.call_id is not None and not pending.call_id.startswith(("call_", "toolu_"))
    served = {c for req in r.requests for c in req.calls_served}
    assert pending.call_id in served  # the scripted id the server sent


@pytest.mark.parametrize("variant", VARIANTS)
def test_approved_resume_is_a_resume_from_the_checkpoint(records, variant):
    """Completed, sent once, in another process: test_ground_truth. Here: a Command(resume=...) segment."""
    r = records[("approval_approved_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.counters.resumes == 1


@pytest.mark.parametrize("variant", RECURSION_LIMIT)
def test_recursion_limit_raises_and_supersteps_sit_next_to_model_calls(records, variant):
    r = records[("runaway_step_limit", variant)]
    assert r.outcome == "limit_steps"
    assert r.native.signals.exception_type == "GraphRecursionError"
    assert r.native.signals.limit_signal == "raised"
    translation = r.limits["max_model_calls"]
    assert translation.native.startswith("recursion_limit=") and translation.formula
    k = int(translation.native.split("=")[1])
    assert r.native.settings["recursion_limit"] == k  # top level of the config, not inside `configurable`
    # the formula was derived so that the limit allows exactly the neutral number of model calls: verified here
    assert r.counters.model_requests_observed == translation.neutral
    assert r.counters.runtime_step_unit == "superstep"
    assert r.counters.runtime_steps == k  # counted from the stream: every allowed superstep ran
    assert r.counters.runtime_steps != r.counters.model_requests_observed


def test_model_call_limit_middleware_returns_the_limit_as_an_answer(records):
    r = records[("runaway_step_limit", "model-call-limit")]
    assert r.outcome == "limit_steps"
    assert r.native.signals.limit_signal == "handled" and r.native.signals.ended == "returned"
    assert "limit reported as an answer" in [d.name for d in r.deviations]
    assert r.limits["max_model_calls"].native.startswith("ModelCallLimitMiddleware(")
    assert "recursion_limit" not in r.native.settings
    assert r.counters.model_requests_observed == r.limits["max_model_calls"].neutral


@pytest.mark.parametrize("variant", VARIANTS)
def test_interrupt_sibling_replay_counts_are_measured_through_the_ledger(records, variant):
    r = records[("interrupt_sibling_replay", variant)]
    assert r.outcome == "completed" and r.counters.resumes == 1
    authorize = r.counters.authorize_events_by_tool.get("send_reply")
    sibling = r.counters.tool_executions_by_tool.get("get_ticket")
    assert authorize is not None and sibling is not None
    assert authorize == _ledger_count(r, "authorize", "send_reply") >= 1
    assert sibling == _ledger_count(r, "call", "get_ticket") >= 1
    assert r.counters.tool_executions_by_tool["send_reply"] == 1
    # re-executions on resume = what the ledger saw beyond the one check / the one execution
    assert authorize - 1 >= 0 and sibling - 1 >= 0
    authorize_ids = {e.call_id for e in r.ledger if e.kind == "authorize"}
    assert authorize_ids == {"send_1"}


@pytest.mark.parametrize("variant", CREATE_AGENT)
def test_hitl_predicate_reruns_are_callback_invocations_not_requests(records, variant):
    """langchain re-runs the `when` predicate when the resume re-runs the after_model node (2 authorize
    events), but the human is asked once: one approval request (probes/langgraph/hitl_predicate_rerun.py)."""
    r = records[("interrupt_sibling_replay", variant)]
    assert r.counters.authorize_events_by_tool["send_reply"] == 2
    assert r.counters.approval_requests_by_tool == {"send_reply": 1}
    assert not any(d.name.startswith("approval_requests") for d in r.deviations)


def test_stategraph_resume_reruns_the_tools_node(records):
    """interrupt() inside a ToolNode tool: the whole node restarts on resume (C16), measured in the ledger."""
    r = records[("interrupt_sibling_replay", "stategraph")]
    pause_seg, _ = r.segments
    assert pause_seg.outcome_signals.pending[0].call_id == "send_1"
    # each execution of the node checks approval once: the ledger says how many times the node ran
    assert r.counters.authorize_events_by_tool["send_reply"] == r.counters.tool_executions_by_tool["get_ticket"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_resume_twice_against_one_live_checkpointer_runs_nothing_the_second_time(records, variant):
    """One AsyncSqliteSaver per thread in the task dir (not a restored copy): the second Command(resume=...)
    finds nothing pending and the graph returns the current state (probes/langgraph/resume_twice_live.py)."""
    r = records[("resume_twice", variant)]
    assert r.counters.resumes == 2 and r.outcome == "completed"
    assert r.counters.tool_executions_by_tool["send_reply"] == 1 and r.counters.duplicate_effects == 0
    assert r.counters.model_requests_observed == 4
    _, first, second = r.segments
    assert first.outcome_signals.extra["pending_before_resume"] == 1
    assert second.outcome_signals.ended == "returned"
    assert second.outcome_signals.extra["pending_before_resume"] == 0
    assert second.counters.model_requests_reported == 0 and second.counters.runtime_steps == 0
    assert r.counters.model_requests_reported == 4  # the no-op segment's real 0 keeps the total known
    assert "task dir" in r.native.settings["checkpointer"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_resume_keeps_allowance_is_measured(records, variant):
    r = records[("resume_keeps_allowance", variant)]
    assert r.outcome == "limit_steps" and r.counters.resumes == 1
    assert sum(s.counters.model_requests_reported or 0 for s in r.segments) == r.counters.model_requests_reported
    assert all(s.counters.runtime_steps for s in r.segments)


@pytest.mark.parametrize("variant", VARIANTS)
def test_tool_errors_propagate_out_of_the_graph(records, variant):
    r = records[("tool_fatal_error", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "tool"
    assert r.counters.tool_executions_by_tool["lookup_policy"] == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_model_errors_are_model_failures_and_retries_are_visible(records, variant):
    r = records[("model_fatal_error", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "model"
    # the graph raised in a model call: the state holds no trace of the request(s), so the count is unknown,
    # never the 0 AI messages it holds (probes/langgraph/model_error_count.py)
    assert r.counters.model_requests_observed >= 1
    assert r.counters.model_requests_reported is None and r.segments[0].counters.model_requests_reported is None
    assert r.counters.input_tokens_reported is None
    # the provider said not to retry (x-should-retry: false): both model classes' clients honour it
    assert r.counters.model_requests_observed == 1
    if ("model_outage", variant) in records:  # tagged slow: present in a full run
        outage = records[("model_outage", variant)]
        assert outage.counters.model_requests_reported is None
        assert outage.counters.model_requests_observed == 3  # the client's default max_retries=2
    # 429, 500, then three answers: the client's two retries are inside one model call and leave no message, so
    # the framework reports its three responses of the five requests (probes/langgraph/anthropic_counts.py)
    t = records[("model_transient_error", variant)]
    assert t.counters.model_requests_observed == 5 and t.counters.model_retries_observed == 2
    assert t.counters.model_requests_reported == 3
    assert t.counters.input_tokens_reported == t.counters.input_tokens_observed


def test_budgets_and_deadlines_are_unsupported_not_dropped(records):
    for variant in VARIANTS:
        assert records[("token_budget", variant)].unsupported == ["max_total_tokens"]
        assert records[("cost_budget", variant)].unsupported == ["max_cost_usd"]
        assert records[("deadline_slow_model", variant)].unsupported == ["deadline_s"]
        assert records[("deadline_slow_tool", variant)].unsupported == ["deadline_s"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_denied_action_is_checked_once(records, variant):
    """The denied tool never runs (test_ground_truth); the policy check ran exactly once."""
    for scenario in ("denied_action", "denied_action_continue"):
        r = records[(scenario, variant)]
        assert r.counters.authorize_events_by_tool.get("delete_account", 0) == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_ends_the_run_by_the_frameworks_own_signal(records, variant):
    """policy.deny "stop": create_agent -> an after_model hook jumping to the end; stategraph -> the tool raises
    (probes/langgraph/deny_stop.py). 2 requests, `denied` mapped from the jump / the exception."""
    r = records[("denied_action", variant)]
    signals = r.native.signals
    assert r.outcome == "denied" and signals.denied is True
    assert r.counters.model_requests_observed == 2
    if variant == "stategraph":
        assert signals.ended == "raised" and signals.exception_type == "ToolDenied"
    else:
        assert signals.ended == "returned" and signals.extra["deny_node"] == "DenyByPolicy.after_model"


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_tells_the_model_and_goes_on(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert r.counters.model_requests_observed == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_rejected_resume_never_sends(records, variant):
    r = records[("approval_rejected_resume", variant)]
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    assert r.segments[1].decisions == {"send_1": "reject"}


def test_default_limits_leave_the_framework_default(records):
    for variant in VARIANTS:
        r = records[("default_limits", variant)]
        assert "recursion_limit" not in r.native.settings
        assert "default" in r.limits["max_model_calls"].native


# ---- sub-agents: a @tool per child invoking its compiled agent (the docs' subagents / tool-calling pattern),
# measured on the five subagent_* scenarios (probes/langgraph/subagent_tool.py)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_childs_usage_is_missing_from_the_reported_counts(records, variant):
    """The parent's state holds the parent's AIMessages only: the reported requests and tokens are the main
    agent's (2 of 4 requests, 2000 / 200 of the 4000 / 400 served); the extra UsageMetadataCallbackHandler, whose
    callbacks the child inherits, saw the whole tree."""
    r = records[("subagent_usage", variant)]
    c = r.counters
    assert r.outcome == "completed"
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert (c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (2, 2000, 200)
    assert {d.name for d in r.deviations} >= {"input_tokens_reported", "output_tokens_reported"}
    tree = r.native.signals.extra["usage_callback"]
    assert (tree["input_tokens"], tree["output_tokens"]) == (4000, 400)
    assert r.native.mechanisms["delegate"].startswith("a @tool named after the child")
    assert set(r.native.settings["subagents"]) == {"billing"}


@pytest.mark.parametrize("variant", CREATE_AGENT)
def test_a_create_agent_child_keeps_its_own_recursion_limit(records, variant):
    """create_agent binds recursion_limit 9999 to the child's graph, which wins over the parent's config: the child
    runs until the server's safety cap (its 400 ends the run), the task's 8-call limit never reaches it."""
    from loopbench.harness.scenario import load_scenarios

    cap = next(s for s in load_scenarios() if s.id == "subagent_runaway").safety_cap
    r = records[("subagent_runaway", variant)]
    c = r.counters
    assert r.outcome == "capped" and r.native.signals.failure == "model"
    assert c.model_requests_by_agent == {"main": 1, "research": cap}
    assert c.model_requests_reported == 1  # the main agent's one response; the child's are not the parent's
    assert r.native.settings["subagents"]["research"]["recursion_limit"] == 9999


def test_a_stategraph_child_gets_a_fresh_copy_of_the_parents_recursion_limit(records):
    """The hand-built child binds no limit and inherits the parent's recursion_limit as a budget of its own: 8
    research calls after main's 1 (9 of the task's 8), then GraphRecursionError out of the whole run."""
    r = records[("subagent_runaway", "stategraph")]
    c = r.counters
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "GraphRecursionError"
    assert c.model_requests_by_agent == {"main": 1, "research": 8}
    assert c.model_requests_observed == 9 and c.model_requests_reported == 1
    assert r.native.settings["recursion_limit"] == 15
    assert r.native.settings["subagents"]["research"]["recursion_limit"] is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_approval_inside_a_child_pauses_the_run_and_the_resume_continues_it(records, variant):
    """The child's gate interrupts the whole run; its call id is read from the child's checkpoint; the resume (a new
    process) re-runs the parent's tool and the child continues from its checkpoint: lookup_refund is not re-run."""
    r = records[("subagent_approval", variant)]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert [(p.call_id, p.tool) for p in r.segments[0].outcome_signals.pending] == [("refund_issue_1", "issue_refund")]
    assert c.model_requests_by_agent == {"main": 2, "billing": 3}
    assert c.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "billing", "main"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_childs_tool_failure_ends_the_run_as_a_tool_failure(records, variant):
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "failed" and r.verdict == "conforms"
    assert r.native.signals.failure == "tool" and r.native.signals.exception_type == "ToolFailed"
    assert r.counters.model_requests_by_agent == {"main": 1, "billing": 1}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_token_budget_over_a_child_is_unsupported(records, variant):
    r = records[("subagent_token_budget", variant)]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 4}
    assert r.counters.input_tokens_reported == 2000 and r.counters.input_tokens_observed == 6000


def test_in_stream_messages_the_child_streams_too(records):
    """The "messages" mode's handler is a callback, inherited by the child's run: every request streams."""
    r = records[("subagent_usage", "stream-messages")]
    assert [(q.agent, q.stream) for q in r.requests] == [
        ("main", True), ("billing", True), ("billing", True), ("main", True)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_scenarios_without_agents_get_no_sub_agent_machinery(records, variant):
    r = records[("support_draft_completes", variant)]
    assert "subagents" not in r.native.settings and "usage_callback" not in r.native.signals.extra
    assert "delegate" not in r.native.mechanisms
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed


# ---- the caller's cancel: the asyncio task driving astream is cancelled; the thread continues from its checkpoint
def _abandoned(r: RunRecord, tool: str) -> list[bool]:
    return [e.caller_abandoned for e in r.ledger if e.kind == "call" and e.tool == tool]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancel_during_a_tool_cancels_the_task_and_abandons_the_call(records, variant):
    """The 5 s get_ticket is cancelled 0.5 s in: the run stops without waiting for it (a wide margin under 5 s),
    the ledger sees its caller go, and the reported counts are the one response finished before the cancel."""
    r = records[("cancel_during_tool", variant)]
    seg = r.segments[0]
    assert (r.outcome, seg.outcome_signals.ended, seg.outcome_signals.exception_type) == (
        "cancelled", "cancelled", "CancelledError")
    assert seg.cancel_sent_s is not None and seg.elapsed_s < 4.5
    assert _abandoned(r, "get_ticket") == [True]
    assert seg.outcome_signals.extra["in_flight"] == ["tools"] and seg.outcome_signals.extra["next"] == ["tools"]
    assert r.counters.model_requests_observed == r.counters.model_requests_reported == 1
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.native.mechanisms["cancel"].startswith("cancel the asyncio task driving graph.astream")


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancel_during_a_model_request_keeps_the_usage_of_the_responses_before_it(records, variant):
    """The second request (5 s) is in flight at the cancel: no message comes of it, so the reported count is the
    first response, with that response's usage as the server served it."""
    r = records[("cancel_during_model", variant)]
    seg = r.segments[0]
    assert (r.outcome, seg.outcome_signals.ended) == ("cancelled", "cancelled") and seg.elapsed_s < 4.5
    assert seg.outcome_signals.extra["in_flight"] == ["model"] and seg.outcome_signals.extra["next"] == ["model"]
    assert r.counters.model_requests_observed == 2 and r.counters.model_requests_reported == 1
    first = r.requests[0]
    assert (r.counters.input_tokens_reported, r.counters.output_tokens_reported) == (
        first.input_tokens, first.output_tokens)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_resume_after_a_cancel_reruns_the_interrupted_tools_superstep(records, variant):
    """astream(None, config) on the thread in a new process: the `tools` superstep the cancel interrupted runs
    again (the abandoned lookup a second time); the post, checkpointed a superstep earlier, is not repeated
    (probes/langgraph/cancel_resume.py)."""
    r = records[("cancel_then_resume", variant)]
    cancelled, resumed = r.segments
    assert (cancelled.outcome_signals.ended, resumed.kind, resumed.outcome_signals.ended) == (
        "cancelled", "resume", "returned")
    assert resumed.outcome_signals.extra["first_step_tasks"] == ["tools"]
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}
    assert _abandoned(r, "lookup_policy") == [True, False] and r.counters.duplicate_effects == 0
    assert (r.outcome, r.counters.resumes) == ("completed", 1)
    # per segment: the resume reports its own response only (the checkpoint's earlier ones are excluded)
    assert [s.counters.model_requests_reported for s in r.segments] == [2, 1]


# ---- structured answers (scenario `output`): create_agent(response_format=<pydantic model>) -> AutoStrategy ->
# ProviderStrategy for both model classes (no retry); `tool-strategy` ToolStrategy (a correction per rejection, no
# budget of its own); `stategraph` the how-to's "bind output as tool" + respond node (no retry)
# (probes/langgraph/structured_output.py)
VALID = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}
OUTPUT_SCENARIOS = ("output_invalid_then_valid", "output_check_rejects", "output_never_valid")
_PROVIDER_ANTHROPIC = {  # output_config.format: a constrained answer, the schema-breaking attempt never served
    "output_invalid_then_valid": ("completed", [None, 1], True, None),
    "output_check_rejects": ("failed", [None, 1], True, "StructuredOutputValidationError"),
    "output_never_valid": ("failed", [None, 1], True, "StructuredOutputValidationError"),
}
# variant -> scenario -> (outcome, output_attempt per request, the answers constrained, exception type)
OUTPUT_TRUTH: dict[str, dict[str, tuple[str, list[int | None], bool, str | None]]] = {
    "default": _PROVIDER_ANTHROPIC, "model-call-limit": _PROVIDER_ANTHROPIC, "stream-messages": _PROVIDER_ANTHROPIC,
    # response_format json_schema strict false: the broken answer is served, and rejected
    "openai-compatible": {s: ("failed", [None, 1], False, "StructuredOutputValidationError") for s in OUTPUT_SCENARIOS},
    "stategraph": {s: ("failed", [None, 1], False, "ValidationError") for s in OUTPUT_SCENARIOS},
    "tool-strategy": {
        "output_invalid_then_valid": ("completed", [None, 1, 2], False, None),
        "output_check_rejects": ("completed", [None, 1, 2], False, None),
        # a correction is one model->model superstep: recursion_limit 7 (4 calls) lets 5 answers through
        "output_never_valid": ("limit_steps", [None, 1, 2, 3, 4, 5], False, "GraphRecursionError"),
    },
}


def test_the_output_truth_covers_every_variant():
    assert set(OUTPUT_TRUTH) == set(VARIANTS)


def test_the_output_model_is_the_schema_with_the_check_as_its_validator():
    """pydantic.create_model: every field required, nothing else allowed, the enum a Literal, and the check an
    AfterValidator raising the scenario's message (the JSON schema holds no check)."""
    import pydantic

    from loopbench.adapters.langgraph_agent import output_model

    spec = next(s for s in load_scenarios() if s.id == "output_check_rejects").output
    model = output_model(spec)
    schema = model.model_json_schema()
    assert (schema["title"], schema["description"], schema["additionalProperties"]) == (
        "TicketTriage", spec.description, False)
    assert schema["required"] == list(spec.fields) and schema["properties"]["priority"]["enum"] == [
        "low", "normal", "urgent"]
    assert "pattern" not in schema["properties"]["policy_id"]
    assert model(**VALID).model_dump(mode="json") == VALID
    for bad, words in (({**VALID, "policy_id": "the refund policy"}, spec.check.message),
                       ({**VALID, "priority": "asap"}, "priority"), ({**VALID, "extra": 1}, "extra")):
        with pytest.raises(pydantic.ValidationError, match=words):
            model(**bad)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_structured_answers_what_each_idiom_does_with_an_invalid_one(records, variant, scenario):
    outcome, attempts, constrained, exception = OUTPUT_TRUTH[variant][scenario]
    r = records[(scenario, variant)]
    signals, c = r.native.signals, r.counters
    assert r.outcome == outcome
    assert [q.output_attempt for q in r.requests] == attempts
    assert [q.output_constrained for q in r.requests[1:]] == [constrained] * (len(attempts) - 1)
    assert c.model_requests_observed == len(attempts)
    assert c.structured_answers_observed == len(attempts) - 1
    assert c.tool_executions_by_tool == {"get_ticket": 1}
    assert signals.exception_type == exception
    # every response is reported, the rejected one too (it rides on StructuredOutputValidationError: ai_message)
    assert c.model_requests_reported == c.model_requests_observed
    assert c.input_tokens_reported == c.input_tokens_observed and c.output_tokens_reported == c.output_tokens_observed
    # the answer's tool calls are the answer, not tool calls requested: get_ticket's one
    assert r.segments[-1].counters.tool_calls_requested == 1
    if outcome == "completed":
        assert signals.ended == "returned" and signals.final_output == VALID
    elif outcome == "failed":  # the answer failed validation: the model's failure, no answer returned
        assert (signals.ended, signals.failure, signals.final_output) == ("raised", "model", None)
    else:
        assert (signals.limit, signals.limit_signal, signals.final_output) == ("steps", "raised", None)
    assert set(r.native.mechanisms) == ({"structured_output", "output_check"} if scenario != "output_invalid_then_valid"
                                        else {"structured_output"})


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_output_settings_say_the_strategy_and_what_a_rejection_does(records, variant):
    output = records[("output_check_rejects", variant)].native.settings["output"]
    assert output["check"] == "AfterValidator on policy_id"
    if variant == "stategraph":
        assert output["tool_choice"] == "any (the how-to's)"
        assert "no retry" in output["on_invalid_answer"]
    elif variant == "tool-strategy":
        assert output["resolves_to"].startswith("ToolStrategy(handle_errors=True)")
    else:  # AutoStrategy resolved as langchain resolves it, for ChatAnthropic and ChatOpenAI alike
        assert output["resolves_to"] == "ProviderStrategy(strict=None)" and "no retry" in output["on_invalid_answer"]
    mechanism = records[("output_check_rejects", variant)].native.mechanisms["structured_output"]
    assert ("ToolStrategy" in mechanism) == (variant == "tool-strategy")
    assert ("respond node" in mechanism) == (variant == "stategraph")


def test_tool_strategy_corrections_pass_the_call_limit(records):
    """Each rejected answer goes back as an error ToolMessage (the next request carries the answer's call with no
    receipt) and costs one model->model superstep, while the translation budgets two per call: 6 requests under a
    4-call limit, every allowed superstep run, then GraphRecursionError."""
    r = records[("output_never_valid", "tool-strategy")]
    translation = r.limits["max_model_calls"]
    assert (translation.neutral, translation.native) == (4, "recursion_limit=7")
    assert r.counters.runtime_steps == 7 and r.counters.model_requests_observed == 6 > translation.neutral
    assert [len(q.tool_results) for q in r.requests] == [0, 1, 2, 3, 4, 5]
    assert r.requests[-1].tool_results[-1].call_id == "out_triage_4"
    assert "model_requests_observed" in [d.name for d in r.deviations]
    # without a structured answer the variant is the default: the same cells
    for scenario in ("support_draft_completes", "runaway_step_limit", "denied_action"):
        mine, default = records[(scenario, "tool-strategy")], records[(scenario, "default")]
        assert (mine.outcome, mine.counters.model_requests_observed) == (
            default.outcome, default.counters.model_requests_observed), scenario
        assert "output" not in mine.native.settings


def test_the_stategraph_answer_fails_in_its_respond_node(records):
    """The how-to's respond node builds Model(**args): one more superstep after the answering call, and its
    ValidationError (a schema break or the check) ends the run."""
    for scenario in OUTPUT_SCENARIOS:
        r = records[(scenario, "stategraph")]
        assert r.counters.runtime_steps == 4  # model, tools, model, respond
        assert r.requests[-1].tools_offered == ["get_ticket", "TicketTriage"] and r.requests[-1].tool_choice == "required"
