"""The OpenAI Agents SDK adapter through the real runner: the whole suite, every variant.

What this framework does natively (signals, limits, resumes); the facts every framework shares are in test_ground_truth.py.
"""

from __future__ import annotations

import pytest

from loopbench.harness.record import RunRecord
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("openai-agents",)  # run alone, the suite run is this framework's only

VARIANTS = ("default", "handled-max-turns", "chat-completions", "stream")
# variant -> the model class it drives, the model it sends, the protocol that carries it: the quick start's
# Responses model with the model table's OpenAI model; the Chat Completions route with the scenario's Claude
ROUTES = {
    "default": ("agents.OpenAIResponsesModel", "gpt-4.1", "openai_responses"),
    "handled-max-turns": ("agents.OpenAIResponsesModel", "gpt-4.1", "openai_responses"),
    "chat-completions": ("agents.OpenAIChatCompletionsModel", "claude-sonnet-4-5", "openai_chat"),
    "stream": ("agents.OpenAIResponsesModel", "gpt-4.1", "openai_responses"),
}


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("openai-agents")


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_sends_its_model_through_its_model_class(records, variant):
    """Every record names the model class and the model; every request the server saw came over that class's
    protocol with that model, and is priced by it (gpt-4.1: $2 / $8 per million tokens; Claude: $3 / $15)."""
    model_class, model, protocol = ROUTES[variant]
    runs = [r for (_, v), r in records.items() if v == variant]
    assert len(runs) >= 25
    for r in runs:
        assert (r.native.settings["model_class"], r.native.settings["model"]) == (model_class, model), r.scenario
        assert {(e.protocol, e.model) for e in r.requests} == {(protocol, model)}, r.scenario
    r = records[("support_draft_completes", variant)]
    assert r.counters.cost_usd_observed == pytest.approx(
        {"gpt-4.1": 3 * (1000 * 2 + 100 * 8), "claude-sonnet-4-5": 3 * (1000 * 3 + 100 * 15)}[model] / 1e6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_request_resends_the_whole_conversation(records, variant):
    """No previous_response_id / conversation (the SDK's defaults; probes/openai/responses_wire.py): each request
    carries the prompt, every call and every output so far (1, 3, 5 items or messages); only run_streamed streams."""
    r = records[("support_draft_completes", variant)]
    assert [e.messages for e in r.requests] == [1, 3, 5]
    assert {e.stream for e in r.requests} == {variant == "stream"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_approved_resume_is_a_resume_from_the_saved_run_state(records, variant):
    """The approval is applied to the RunState saved at the pause (completed, sent once, in another process:
    test_ground_truth)."""
    r = records[("approval_approved_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.counters.resumes == 1


def test_max_turns_raises_in_default_and_is_handled_in_the_variant(records):
    raised = records[("runaway_step_limit", "default")]
    handled = records[("runaway_step_limit", "handled-max-turns")]
    assert raised.outcome == handled.outcome == "limit_steps"
    assert raised.native.signals.exception_type == "MaxTurnsExceeded"
    assert raised.native.signals.limit_signal == "raised"
    assert handled.native.signals.limit_signal == "handled"
    assert "limit reported as an answer" in [d.name for d in handled.deviations]
    assert raised.limits["max_model_calls"].native == "max_turns=8"
    assert raised.counters.model_requests_observed == 8


@pytest.mark.parametrize("variant", VARIANTS)
def test_hidden_client_retries_are_visible(records, variant):
    """The openai client retries the 429 and the 500 inside one model response: the SDK counts responses (3),
    the server saw 5 (probes/openai/responses_wire.py)."""
    r = records[("model_transient_error", variant)]
    assert r.counters.model_requests_observed == 5 and r.counters.model_retries_observed == 2
    assert r.counters.model_requests_reported == 3 == r.counters.runtime_steps


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_failed_run_reports_no_count_rather_than_zero(records, variant):
    """An outage: the client's 2 retries, then InternalServerError out of the run with no run_data: the SDK
    reports nothing, so the record has null, not an uncounted 0."""
    r = records[("model_outage", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "model"
    assert r.native.signals.exception_type == "InternalServerError"
    assert r.counters.model_requests_observed == 3
    assert r.counters.model_requests_reported is None and r.counters.input_tokens_reported is None


def test_budgets_and_deadlines_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("cost_budget", "default")].unsupported == ["max_cost_usd"]
    assert records[("deadline_slow_model", "default")].unsupported == ["deadline_s"]
    assert records[("token_budget", "default")].verdict in ("unsupported", "conforms")


def test_resume_twice_is_measured(records):
    r = records[("resume_twice", "default")]
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool["send_reply"] >= 1
    assert r.counters.duplicate_effects == r.counters.tool_executions_by_tool["send_reply"] - 1


def test_denied_action_is_checked_at_the_guardrail(records):
    """The denied tool never runs (test_ground_truth); the tool input guardrail saw the call."""
    for scenario in ("denied_action", "denied_action_continue"):
        r = records[(scenario, "default")]
        assert r.counters.authorize_events_by_tool.get("delete_account", 0) >= 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_raises_the_guardrail_tripwire(records, variant):
    r = records[("denied_action", variant)]
    assert r.outcome == "denied" and r.native.signals.denied is True
    assert r.native.signals.exception_type == "ToolInputGuardrailTripwireTriggered"
    assert r.counters.model_requests_observed == 2
    assert "raise_exception" in r.native.mechanisms["deny_stop"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_rejects_the_content_and_goes_on(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert r.counters.model_requests_observed == 3
    assert "reject_content" in r.native.mechanisms["deny_continue"]


def test_turns_are_reported_after_max_turns_exceeded(records):
    """MaxTurnsExceeded has no turn counter; its run_data.raw_responses holds one response per finished turn."""
    r = records[("runaway_step_limit", "default")]
    assert r.native.signals.exception_type == "MaxTurnsExceeded"
    assert r.counters.runtime_steps == 8 == r.counters.model_requests_observed
    assert r.counters.runtime_step_unit == "turn"


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_tool_error_worded_by_the_sdk_is_still_an_error(records, variant):
    """The SDK's fixed error text carries no loopbench marker; the server classes the result from the ledger."""
    r = records[("tool_transient_error", variant)]
    assert r.outcome == "completed"
    assert r.counters.model_requests_observed == 5
    assert r.counters.tool_executions_by_tool["lookup_policy"] == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_huge_tool_output_is_sent_back_whole(records, variant):
    """The SDK keeps no tool output out of the next request on either protocol: a 200 KiB output grows it by more."""
    r = records[("huge_tool_output", variant)]
    assert r.counters.max_request_growth_bytes > 200_000


def test_stream_is_the_streaming_idiom_of_the_default():
    from loopbench.harness.adapter import adapter_class

    cls, default = adapter_class("openai-agents", "stream"), adapter_class("openai-agents")
    assert cls.capabilities.stream_of == "default" and default.capabilities.stream_of is None
    assert cls.capabilities.model_copy(update={"stream_of": None}) == default.capabilities


@pytest.mark.parametrize("scenario", ["support_draft_completes", "approval_approved_resume", "tool_fatal_error",
                                      "runaway_step_limit"])
def test_run_streamed_sends_the_default_requests_with_stream_true(records, scenario):
    """Every request of the streamed run (both segments of a resume) says stream: true, and only that: each body is
    the default's plus `,"stream":true` (14 bytes)."""
    default, streamed = records[(scenario, "default")], records[(scenario, "stream")]
    assert streamed.requests and all(q.stream for q in streamed.requests)
    assert [(q.messages, q.prompt_bytes - 14) for q in streamed.requests] == [
        (q.messages, q.prompt_bytes) for q in default.requests]


def test_the_streamed_run_reports_what_the_server_served(records):
    """Usage comes from each stream's response.completed event: the same counts as Runner.run, on every scenario
    but the caller's cancels, where the two idioms stop differently (a cancelled Runner.run task returns nothing:
    the cancel tests below)."""
    for (scenario, variant), r in records.items():
        if variant != "stream" or r.category == "cancellation" or scenario == "wire_cut_response":
            continue
        d = records[(scenario, "default")].counters
        c = r.counters
        assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported, c.runtime_steps) == (
            d.model_requests_reported, d.input_tokens_reported, d.output_tokens_reported, d.runtime_steps), scenario
        if c.input_tokens_reported is not None:
            assert (c.input_tokens_reported, c.output_tokens_reported) == (c.input_tokens_observed,
                                                                           c.output_tokens_observed), scenario


def test_a_cut_answer_is_retried_by_the_client_but_ends_the_streamed_run(records):
    """The openai client retries a plain body cut short inside its own retry loop; a stream is cut after the
    client handed it over, so Runner.run_streamed fails with the transport's error (tests/
    test_server_wire_faults.py, the same on the raw client)."""
    plain, streamed = records[("wire_cut_response", "default")], records[("wire_cut_response", "stream")]
    assert plain.outcome == "completed" and plain.counters.model_retries_observed == 1
    assert streamed.outcome == "failed" and streamed.native.signals.failure == "model"
    assert [q.wire_fault for q in streamed.requests] == ["cut"]


def test_max_turns_is_raised_out_of_stream_events(records):
    r = records[("runaway_step_limit", "stream")]
    assert r.outcome == "limit_steps" and r.native.signals.exception_type == "MaxTurnsExceeded"
    assert r.counters.runtime_steps == 8 == r.counters.model_requests_observed == r.counters.model_requests_reported


# ---- sub-agents: Agent.as_tool (agents as tools), measured on the five subagent_* scenarios


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_child_is_an_agent_tool_whose_usage_the_run_reports(records, variant):
    """The child answers through `Agent.as_tool`; its nested run adds to the parent's Usage object, so the run's
    reported usage is the whole tree's (4 requests, 4000 / 400 tokens: what the server served)."""
    r = records[("subagent_usage", variant)]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (
        c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert r.native.mechanisms["delegate"].startswith("Agent(instructions=...")
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_child_gets_the_sdk_default_max_turns_not_the_tasks(records, variant):
    """as_tool's nested run uses DEFAULT_MAX_TURNS (10), not the parent's max_turns=8; the child's
    MaxTurnsExceeded reaches the parent as the default tool error text and the parent answers
    (probes/openai/subagent_max_turns.py)."""
    r = records[("subagent_runaway", variant)]
    c = r.counters
    assert r.outcome == "incomplete" and r.native.signals.ended == "returned"
    assert c.model_requests_by_agent == {"main": 2, "research": 10}
    assert c.model_requests_reported == c.model_requests_observed == 12
    assert c.runtime_steps == 2  # the parent's turns
    assert r.native.settings["max_turns"] == 8
    assert r.native.settings["subagents"]["research"]["max_turns"] == 10


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_approval_inside_a_child_pauses_the_run_and_resumes_the_child(records, variant):
    """The child's needs_approval surfaces in the parent's interruptions; the saved RunState holds the nested
    run, and the resume continues the child (lookup_refund not re-run) before the parent answers."""
    r = records[("subagent_approval", variant)]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert [(p.call_id, p.tool) for p in r.segments[0].pending] == [("refund_issue_1", "issue_refund")]
    assert c.model_requests_by_agent == {"main": 2, "billing": 3}
    assert c.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}
    assert c.model_requests_reported == c.model_requests_observed == 5


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_childs_failed_tool_comes_back_as_the_childs_answer(records, variant):
    """The child's tool error goes to the child (the SDK's default error text); the child answers, the parent
    answers from that: the run returns (incomplete), no failure reaches the task."""
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "incomplete" and r.native.signals.failure is None
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


def test_a_token_budget_over_a_child_is_unsupported(records):
    r = records[("subagent_token_budget", "default")]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 4}
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed == 6000


def test_in_the_stream_variant_only_the_parent_streams(records):
    """as_tool runs the child with Runner.run unless on_stream is given (left at its default): the parent's requests
    stream, the child's do not; the counts are the default's."""
    r = records[("subagent_usage", "stream")]
    assert [(q.agent, q.stream) for q in r.requests] == [
        ("main", True), ("billing", False), ("billing", False), ("main", True)]


# ---- the caller's cancel: Runner.run's task cancelled (no cancel API); the stream variant's result.cancel()
NOT_STREAMED = ("default", "handled-max-turns", "chat-completions")
CANCEL_IN_FLIGHT = {"cancel_during_tool": 1, "cancel_during_model": 2}  # scenario -> requests the server saw


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", sorted(CANCEL_IN_FLIGHT))
def test_a_cancel_stops_the_run_at_once(records, scenario, variant):
    """The cancel lands 0.5 s into a 5 s tool call or model request: the run stops on it, well before the 5 s (a
    wide margin), and the tool in flight is cancelled with the run (the ledger sees its caller go)."""
    r = records[(scenario, variant)]
    assert r.outcome == "cancelled" and r.native.signals.ended == "cancelled"
    assert r.counters.elapsed_s < 4.0
    assert r.counters.model_requests_observed == CANCEL_IN_FLIGHT[scenario]
    assert r.counters.tool_executions_by_tool == {"get_ticket": 1}
    assert r.counters.abandoned_calls == (1 if scenario == "cancel_during_tool" else 0)


@pytest.mark.parametrize("variant", NOT_STREAMED)
@pytest.mark.parametrize("scenario", [*sorted(CANCEL_IN_FLIGHT), "cancel_then_resume"])
def test_a_cancelled_runner_run_returns_nothing_so_it_reports_nothing_and_is_not_resumed(records, scenario, variant):
    """Cancelling Runner.run's task raises CancelledError with no RunResult: no usage (null, not 0) and nothing to
    continue from, so cancel_then_resume stays cancelled after the post (probes/openai/cancel_kept.py A)."""
    r = records[(scenario, variant)]
    assert r.native.signals.exception_type == "CancelledError"
    assert r.counters.model_requests_reported is None and r.counters.input_tokens_reported is None
    assert [s.kind for s in r.segments] == ["run"]
    if scenario == "cancel_then_resume":
        assert r.outcome == "cancelled"
        assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 1}


@pytest.mark.parametrize("scenario", sorted(CANCEL_IN_FLIGHT))
def test_a_cancelled_stream_keeps_the_usage_of_the_responses_it_finished(records, scenario):
    """RunResultStreaming.cancel() (immediate): the usage of the first response is kept, whether the cancel came
    during the tool it asked for or during the next request (which had no usage yet)."""
    r = records[(scenario, "stream")]
    assert r.native.signals.terminal_reason == "RunResultStreaming.cancel()"
    assert (r.counters.model_requests_reported, r.counters.input_tokens_reported) == (1, 1000)


def test_a_cancelled_stream_is_continued_from_to_input_list_without_the_turn_in_flight(records):
    """to_input_list() after cancel() keeps the finished turn (the post and its output) but drops the turn in
    flight, the lookup call whose response had arrived (openai-agents-python #1895's lost history;
    probes/openai/cancel_kept.py B): the continued run asks the model for that turn again and runs the lookup
    again; the post is not repeated. Its usage is its own (a fresh Usage: to_input_list carries none)."""
    r = records[("cancel_then_resume", "stream")]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    cancelled, resumed = r.segments
    assert cancelled.outcome_signals.ended == "cancelled" and cancelled.counters.model_requests_reported == 2
    first_resumed = r.requests[2]
    assert [t.call_id for t in first_resumed.tool_results] == ["post_1"]
    assert first_resumed.served_turn == "find_policy"
    assert r.outcome == "completed"
    assert r.counters.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 2}
    assert resumed.counters.model_requests_reported == 2 and not resumed.counters.cumulative


# ---- structured answers (a scenario's `output`): Agent(output_type=<pydantic model>), the SDK's strict schema

OUTPUT_SCENARIOS = ("output_invalid_then_valid", "output_check_rejects", "output_never_valid")
REJECTED = ("output_check_rejects", "output_never_valid")
TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_the_answer_is_asked_for_with_the_sdks_strict_schema_and_no_output_tool(records, scenario, variant):
    """output_type with the default AgentOutputSchema(strict_json_schema=True): the Responses API's text.format and
    Chat Completions' response_format, both strict, so the server treats each answer as constrained; no output tool
    is offered (the answer is the message's text); the check is a pydantic validator in no schema."""
    from loopbench.harness.adapter import adapter_class

    r = records[(scenario, variant)]
    answers = [q for q in r.requests if q.output_attempt is not None]
    assert answers and all(q.output_constrained is True for q in answers), scenario
    assert all(q.tools_offered == ["get_ticket"] for q in r.requests)
    output = r.native.settings["output"]
    assert output["schema"].startswith("AgentOutputSchema(strict_json_schema=True)")
    assert output["output_type"].startswith("TicketTriage (pydantic model")
    assert output["retries"].startswith("none") and output["invalid_final_output_handler"] is False
    assert (output["check"] == "AfterValidator on policy_id") is (scenario in REJECTED)
    table = adapter_class("openai-agents", variant).mechanism_table
    assert r.native.mechanisms["structured_output"] == table["structured_output"]
    wire = "response_format" if variant == "chat-completions" else "text.format"
    assert wire in table["structured_output"] and "strict: true" in table["structured_output"]
    assert r.native.mechanisms.get("output_check") == (table["output_check"] if scenario in REJECTED else None)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_broken_answer_never_comes_under_the_strict_schema(records, variant):
    """The strict schema rules the enum-breaking first object out: the valid one is the first answer, the run
    returns it validated (model_dump(mode="json")) with its JSON text, in 2 requests the SDK reports."""
    import json

    r = records[("output_invalid_then_valid", variant)]
    assert r.outcome == "completed", r.error_reason
    assert r.counters.model_requests_observed == 2 == r.counters.model_requests_reported
    assert r.counters.structured_answers_observed == 1 and r.counters.runtime_steps == 2
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "returned" and signals.final_output == TRIAGE
    assert signals.final_text is not None and json.loads(signals.final_text) == TRIAGE
    assert signals.limit is None and r.counters.tool_executions_by_tool["get_ticket"] == 1


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", REJECTED)
def test_an_answer_the_validator_rejects_raises_without_a_correction(records, scenario, variant):
    """The SDK asks for no correction: the validator's ValueError becomes ModelBehaviorError after the first
    answer (2 requests, 1 answer; never_valid's max_turns=4 never comes into it), redacted by default (the check's
    message is not in it) and with no run_data: no usage, no turns (probes/openai/output_invalid.py)."""
    r = records[(scenario, variant)]
    assert r.outcome == "failed", r.error_reason
    assert r.counters.model_requests_observed == 2 and r.counters.structured_answers_observed == 1
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "raised" and signals.failure == "model" and signals.limit is None
    assert signals.exception_type == "ModelBehaviorError"
    assert signals.exception_message == "Invalid JSON when parsing model output"
    assert signals.final_output is None and signals.final_text is None
    c = r.counters
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported, c.runtime_steps) == (
        None, None, None, None)
    assert c.input_tokens_observed == 2000 and c.tool_executions_by_tool["get_ticket"] == 1


def test_the_step_limit_is_translated_but_never_reached(records):
    r = records[("output_never_valid", "default")]
    assert r.limits["max_model_calls"].native == "max_turns=4"
    assert r.native.settings["max_turns"] == 4 and r.counters.model_requests_observed < 4
    handled = records[("output_never_valid", "handled-max-turns")]
    assert handled.native.signals.limit_signal is None and "error_handler_fired" not in handled.native.signals.extra


def _output_scenario(scenario_id: str):
    from loopbench.harness.scenario import load_scenarios

    return next(s for s in load_scenarios() if s.id == scenario_id)


def test_the_output_model_is_strict_and_its_check_is_in_no_schema():
    """The pydantic model: every field required, nothing else allowed, the enum a Literal; the SDK's strict schema
    of it has no pattern (the check is the validator's alone), and the validator raises the scenario's message."""
    import json

    from agents import AgentOutputSchema
    from agents.exceptions import ModelBehaviorError

    from loopbench.adapters.openai_agents import output_model

    spec = _output_scenario("output_check_rejects").output
    model = output_model(spec)
    schema = AgentOutputSchema(model)
    assert schema.is_strict_json_schema()
    js = schema.json_schema()
    assert js["additionalProperties"] is False and sorted(js["required"]) == sorted(spec.fields)
    assert js["properties"]["priority"]["enum"] == ["low", "normal", "urgent"] and "pattern" not in json.dumps(js)
    assert schema.validate_json(json.dumps(TRIAGE)).model_dump(mode="json") == TRIAGE
    for bad in ({**TRIAGE, "policy_id": "the refund policy"}, {**TRIAGE, "priority": "asap"}, {**TRIAGE, "x": 1}):
        with pytest.raises(ModelBehaviorError):
            schema.validate_json(json.dumps(bad))
    with pytest.raises(ValueError, match="policy_id must be a policy id"):
        model(**{**TRIAGE, "policy_id": "the refund policy"})


def test_the_max_turns_handler_declines_when_the_answer_is_structured():
    """handled-max-turns answers a max_turns stop with a fixed text, which is no TicketTriage (the SDK would raise
    UserError validating it): with an output type it declines, so the SDK raises MaxTurnsExceeded; without one it
    answers as before."""
    from loopbench.adapters.openai_agents import HANDLED_ANSWER, OpenAIAgentsHandledMaxTurns

    for scenario_id, answer in (("output_never_valid", None), ("runaway_step_limit", HANDLED_ANSWER)):
        handled: list[bool] = []
        kwargs, _ = OpenAIAgentsHandledMaxTurns()._run_kwargs(_output_scenario(scenario_id), handled)
        result = kwargs["error_handlers"]["max_turns"](None)
        assert (None if result is None else result.final_output) == answer
        assert handled == ([] if answer is None else [True])
