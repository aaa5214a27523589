"""The OpenAI Agents SDK adapter through the real runner: the whole suite, both variants.

What this framework does natively (signals, limits, resumes); the facts every framework shares are in test_ground_truth.py.
"""

from __future__ import annotations

import pytest

from loopbench.harness.record import RunRecord
from tests.suite_helpers import run_framework

VARIANTS = ("default", "handled-max-turns")


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("openai-agents")


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


def test_hidden_client_retries_are_visible(records):
    r = records[("model_transient_error", "default")]
    assert r.counters.model_requests_observed == 5 and r.counters.model_retries_observed == 2
    assert r.counters.model_requests_reported is not None


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


def test_a_tool_error_worded_by_the_sdk_is_still_an_error(records):
    """The SDK's fixed error text carries no loopbench marker; the server classes the result from the ledger."""
    r = records[("tool_transient_error", "default")]
    assert r.outcome == "completed"
    assert r.counters.model_requests_observed == 5
    assert r.counters.tool_executions_by_tool["lookup_policy"] == 3
