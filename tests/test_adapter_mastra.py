"""The Mastra adapter: the whole suite through the real runner (both variants).

Integration assertions are what Mastra does natively: the signal mapping, the pause kept in the task's LibSQL
store and resumed by run id in another Node driver, what its units allowed (recorded and consistent with the
ledger and the server). The facts every framework shares are in test_ground_truth.py; the Node driver's
process plumbing is the Vercel adapter's `NodeDriver`, tested in test_adapter_vercel.py.
"""

from __future__ import annotations

import pytest

from loopbench.adapters.mastra_agent import MastraAdapter
from loopbench.harness.record import RunRecord
from tests.suite_helpers import run_framework

VARIANTS = ("default", "stream")

pytestmark = pytest.mark.skipif(MastraAdapter.unavailable_reason() is not None,
                                reason=str(MastraAdapter.unavailable_reason()))


def _reported_tokens(r: RunRecord, variant: str) -> int | None:
    """generate() sends plain requests and reports their usage; stream() through the router's OpenAI-compatible
    `url` sends no `stream_options.include_usage`, so no usage comes back and the tokens stay unknown."""
    return r.counters.input_tokens_observed if variant == "default" else None


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("mastra")


def test_versions_come_from_the_locked_node_packages(records):
    r = records[("support_draft_completes", "default")]
    assert r.framework_version is not None and r.framework_version.startswith("1.")
    assert r.packages["node"].startswith("22.")
    assert r.native.settings["node"].startswith("v22.")


def test_every_scenario_runs_on_every_variant_without_an_error(records):
    assert {v for _, v in records} == set(VARIANTS)
    broken = {k: r.outcome for k, r in records.items() if r.outcome in ("error", "script_error")}
    assert broken == {}


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_reports_steps_and_tokens(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.outcome == "completed"
    assert r.counters.runtime_step_unit == "step" and r.counters.runtime_steps == 3
    assert r.counters.input_tokens_reported == _reported_tokens(r, variant)
    assert r.counters.model_requests_reported is None  # Mastra reports steps, not requests


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pause_suspends_with_the_call_id(records, variant):
    r = records[("approval_pause", variant)]
    assert r.outcome == "awaiting_approval"
    seg = r.segments[-1]
    assert seg.outcome_signals.finish_reason == "suspended"
    assert [p.call_id for p in seg.pending] and seg.pending[0].tool == "send_reply"
    assert r.counters.authorize_events_by_tool.get("send_reply", 0) >= 1  # the requireApproval function ran


@pytest.mark.parametrize("variant", VARIANTS)
def test_approved_resume_runs_in_another_node_driver_from_the_task_store(records, variant):
    r = records[("approval_approved_resume", variant)]
    assert r.outcome == "completed" and [s.kind for s in r.segments] == ["run", "resume"]
    pids = [s.outcome_signals.extra.get("driver_pid") for s in r.segments]
    assert None not in pids and pids[0] != pids[1]
    run_ids = [s.outcome_signals.extra.get("run_id") for s in r.segments]
    assert run_ids[0] is not None and run_ids[0] == run_ids[1]  # the same Mastra run, resumed from storage
    # the resumed result holds the whole run: cumulative counters add up to the server's count
    assert r.counters.runtime_steps == r.counters.model_requests_observed == 4
    assert r.counters.input_tokens_reported == _reported_tokens(r, variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_step_limit_is_inferred_at_max_steps(records, variant):
    r = records[("runaway_step_limit", variant)]
    assert r.limits["max_model_calls"].native == "maxSteps: 8"
    assert r.outcome == "limit_steps"
    signals = r.native.signals
    assert signals.limit == "steps" and signals.limit_signal == "inferred"
    assert r.counters.runtime_steps == r.counters.model_requests_observed == 8


@pytest.mark.parametrize("variant", VARIANTS)
def test_default_limits_show_mastras_default_of_five_steps(records, variant):
    r = records[("default_limits", variant)]
    assert r.limits["max_model_calls"].native == "maxSteps not set (Mastra default stepCountIs(5))"
    assert r.outcome == "limit_steps" and r.counters.model_requests_observed == 5


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_resume_gets_a_fresh_step_allowance(records, variant):
    """maxSteps counts the steps of each call: the resumed call runs 4 more (6 requests for a limit of 4)."""
    r = records[("resume_keeps_allowance", variant)]
    assert r.outcome == "limit_steps"
    assert r.counters.model_requests_observed == 6
    assert r.segments[-1].outcome_signals.extra["steps_seen_by_onStepFinish"] == 4


def test_deadlines_are_native(records):
    for variant in VARIANTS:
        for scenario in ("deadline_slow_model", "deadline_slow_tool"):
            r = records[(scenario, variant)]
            assert r.outcome == "limit_deadline"
            assert r.native.signals.limit_signal == "raised"
            assert r.limits["deadline_s"].native.startswith("modelSettings.timeout: {totalMs:")


def test_budgets_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("cost_budget", "default")].unsupported == ["max_cost_usd"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_ends_the_loop_after_the_denied_step(records, variant):
    r = records[("denied_action", variant)]
    signals = r.native.signals
    assert r.outcome == "denied" and signals.denied is True
    assert signals.extra["denied_signal"] == "inferred"
    assert signals.limit is None
    assert r.counters.model_requests_observed == 2
    assert r.counters.tool_executions_by_tool.get("delete_account", 0) == 0
    assert r.counters.authorize_events_by_tool.get("delete_account", 0) >= 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_tells_the_model_and_goes_on(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert "stopWhen" not in r.native.settings


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_429_is_not_retried_by_default(records, variant):
    """The Agent's maxRetries defaults to 0 (adapters/mastra/probes/no_default_retry.mjs)."""
    r = records[("model_transient_error", variant)]
    assert r.outcome == "failed" and r.native.signals.failure == "model"
    assert r.native.signals.exception_type == "AI_APICallError"
    assert r.counters.model_requests_observed == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_second_resume_of_the_same_pause_finds_no_suspended_run(records, variant):
    r = records[("resume_twice", variant)]
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool["send_reply"] == 1 and r.counters.duplicate_effects == 0
    last = r.segments[-1].outcome_signals
    assert last.ended == "raised" and last.extra["thrown"].get("id") == "AGENT_RESUME_NO_SNAPSHOT_FOUND"
