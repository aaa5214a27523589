"""The Vercel AI SDK adapter: the whole suite through the real runner (every variant), then the Node driver
itself (protocol errors, a driver killed mid-run, start-up paid once per worker).

Integration assertions are what this framework does natively: the signal mapping; what the SDK's own units
allowed is asserted to be recorded, and consistent with the ledger and the server, rather than pinned. The
facts every framework shares are in test_ground_truth.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopbench.adapters.node import adapter as node_adapter
from loopbench.adapters.node.driver import DriverDied, NodeDriver
from loopbench.adapters.node.protocol import PROTOCOL_VERSION, DriverError, ErrorAnswer, Ping, Pong
from loopbench.adapters.vercel_ai import TOOL_ERROR_THROWN, VercelAIAdapter, VercelAnswer
from loopbench.harness.adapter import RunContext, adapter_class
from loopbench.harness.own_work import OWN_WORK
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario import Scenario, load_scenarios
from tests.conftest import MiniHarness
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("vercel-ai",)  # run alone, the suite run is this framework's only

VARIANTS = ("default", "tool-loop-agent", "stream-text", "tool-loop-agent-stream", "openai-compatible")
STREAMED = {"stream-text": "default", "tool-loop-agent-stream": "tool-loop-agent"}  # each streams that one's loop
# the provider each variant reaches Claude through: its model class, the driver's words, the wire protocol
ROUTES = {
    "default": ("@ai-sdk/anthropic createAnthropic(...)", "createAnthropic(", "anthropic_messages"),
    "tool-loop-agent": ("@ai-sdk/anthropic createAnthropic(...)", "createAnthropic(", "anthropic_messages"),
    "stream-text": ("@ai-sdk/anthropic createAnthropic(...)", "createAnthropic(", "anthropic_messages"),
    "tool-loop-agent-stream": ("@ai-sdk/anthropic createAnthropic(...)", "createAnthropic(", "anthropic_messages"),
    "openai-compatible": ("@ai-sdk/openai createOpenAI(...).chat (an OpenAI-compatible endpoint)", "createOpenAI(",
                          "openai_chat"),
}

pytestmark = pytest.mark.skipif(VercelAIAdapter.unavailable_reason() is not None,
                                reason=str(VercelAIAdapter.unavailable_reason()))


# ------------------------------------------------------------------ the suite through the real runner
@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("vercel-ai")


def test_versions_come_from_the_locked_node_packages(records):
    r = records[("support_draft_completes", "default")]
    assert r.framework_version is not None and r.framework_version.startswith("7.")
    assert r.packages["node"].startswith("22.")
    assert r.packages["@ai-sdk/anthropic"] and r.packages["@ai-sdk/openai"]
    assert r.native.settings["node"].startswith("v22.")


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_sends_the_scenarios_claude_through_its_provider(records, variant):
    """The default idioms drive Claude through @ai-sdk/anthropic (Anthropic Messages), the `openai-compatible`
    variant through @ai-sdk/openai's Chat Completions model; every request of every run goes that way."""
    model_class, provider, protocol = ROUTES[variant]
    for (scenario, v), r in records.items():
        if v != variant:
            continue
        assert r.native.settings["model_class"] == model_class, scenario
        assert r.native.settings["provider"].startswith(provider), scenario
        assert {q.protocol for q in r.requests} <= {protocol}, scenario
        assert {q.model for q in r.requests if q.model} <= {"claude-sonnet-4-5"}, scenario


@pytest.mark.parametrize("variant", VARIANTS)
def test_only_the_streaming_entry_points_stream_their_requests(records, variant):
    """The main agent's requests: a sub-agent's are its own loop's (never streamed, below)."""
    streamed = {q.stream for (_, v), r in records.items() if v == variant for q in r.requests if q.agent == "main"}
    assert streamed == {variant in STREAMED}, variant


@pytest.mark.parametrize("variant", sorted(STREAMED))
def test_in_a_streaming_variant_only_the_parent_streams(records, variant):
    """The delegation tool's execute awaits the child's generateText / ToolLoopAgent.generate (the docs' subagent):
    the parent's requests stream, the child's do not; the counts are the non-streamed loop's."""
    r = records[("subagent_usage", variant)]
    assert [(q.agent, q.stream) for q in r.requests] == [
        ("main", True), ("billing", False), ("billing", False), ("main", True)]
    assert r.counters.model_requests_by_agent == records[("subagent_usage", STREAMED[variant])].counters.model_requests_by_agent


@pytest.mark.parametrize(("variant", "of"), STREAMED.items())
def test_a_streamed_loop_is_the_loop_it_streams_but_for_a_timeout_in_a_tool(records, variant, of):
    """streamText / ToolLoopAgent.stream read to the end end every scenario as generateText / generate do, with the
    same requests, tool runs and reported counts, but for three things measured: a timeout that passes while a tool
    runs (the main agent's, or a sub-agent's inside a delegation, before or after a resume) leaves the stream no
    step to report (adapters/vercel/probes/stream_timeout_in_tool.mjs), and so does a cancel there
    (probes/abort_in_tool.mjs); a broken wire meets a stream where generateText reads a whole body; and a rejected
    structured answer leaves the stream its text (adapters/vercel/probes/output_invalid.mjs)."""
    from loopbench.reports.cells import cells
    from loopbench.reports.streaming import differences

    by = {c.key: c for c in cells(list(records.values()))}
    differ = {sid: differences(by[(sid, "vercel-ai", variant)], by[(sid, "vercel-ai", of)])
              for (sid, v) in records if v == variant}
    cut_in_a_tool = ["requests reported: 1 → null", "input tokens reported: 1000 → null",
                     "output tokens reported: 100 → null"]
    # a cancel in a tool: onAbort gives no step where generateText's onStepEnd got the cut one; resumed after it,
    # the stream's kept steps lack the cut lookup, which the model asks for again, where generateText's kept step
    # holds the abort as the lookup's error, which the model answers by looking it up again: the same requests
    # and runs, one reported step fewer
    assert differ.pop("cancel_then_resume") == ["requests reported: 4 → 3", "input tokens reported: 4000 → 3000",
                                                "output tokens reported: 400 → 300"]
    # the hostile wire: generateText retries a plain body cut mid-way, a cut stream fails the run; a broken event
    # fails both, the stream after reporting the step whose usage it had read (generateText's body: no step)
    cut_wire = ["outcome: completed → failed", "final text: 76 chars → none", "requests observed: 4 → 1",
                "requests reported: 3 → null", "tool runs: 2 → 0", "input tokens reported: 3000 → null",
                "output tokens reported: 300 → null", "input tokens served: 3000 → 1000",
                "output tokens served: 300 → 0"]
    broken_event = ["requests reported: null → 1", "input tokens reported: null → 1000",
                    "output tokens reported: null → 100", "input tokens served: 0 → 1000",
                    "output tokens served: 0 → 100"]
    # a deadline that passes in a tool after a resume: as before one, the stream has no step to report
    after_resume = ["requests reported: 3 → null", "input tokens reported: 3000 → null",
                    "output tokens reported: 300 → null"]
    # a structured answer its refinement rejects: generateText throws and gives nothing else, the stream ends
    # normally (its text the rejected answer's JSON) and its `output` rejects: the same failure, with a text
    rejected_answer = ["final text: none → 76 chars"]
    assert {sid: d for sid, d in differ.items() if d} == {"deadline_slow_tool": cut_in_a_tool,
                                                         "subagent_deadline": cut_in_a_tool,
                                                         "cancel_during_tool": cut_in_a_tool,
                                                         "resume_then_deadline": after_resume,
                                                         "wire_cut_response": cut_wire,
                                                         "wire_malformed_body": broken_event,
                                                         "output_check_rejects": rejected_answer,
                                                         "output_never_valid": rejected_answer}
    cut = records[("deadline_slow_tool", variant)]
    assert cut.outcome == "limit_deadline" and cut.native.signals.exception_type == "TimeoutError"
    assert cut.counters.model_requests_observed == 1 and cut.counters.runtime_steps == 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_reports_steps_and_tokens(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.counters.runtime_step_unit == "step" and r.counters.runtime_steps == 3
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.counters.output_tokens_reported == r.counters.output_tokens_observed
    # one per step of result.steps: a step is one model response
    assert r.counters.model_requests_reported == r.counters.model_requests_observed == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pause_keeps_the_call_id_and_checks_at_the_sdk(records, variant):
    """The pause and its one pending send_reply are test_ground_truth's; its id is the SDK's approval request's."""
    r = records[("approval_pause", variant)]
    pending = r.segments[-1].pending[0]
    assert pending.call_id is not None
    assert r.counters.authorize_events_by_tool.get("send_reply", 0) >= 1  # recorded at the SDK's check


@pytest.mark.parametrize("variant", VARIANTS)
def test_approved_resume_runs_in_another_node_driver(records, variant):
    """Completed, sent once, in another worker: test_ground_truth. Here: the Node side of it."""
    r = records[("approval_approved_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.counters.resumes == 1
    # the Node drivers are different processes too (one per worker)
    pids = [s.outcome_signals.extra.get("driver_pid") for s in r.segments]
    assert None not in pids and pids[0] != pids[1]


@pytest.mark.parametrize("variant", VARIANTS)
def test_what_is_step_count_8_allowed_is_recorded(records, variant):
    r = records[("runaway_step_limit", variant)]
    assert r.limits["max_model_calls"].native == "stopWhen: isStepCount(8)"
    assert r.outcome == "limit_steps"
    signals = r.native.signals
    assert signals.limit_signal == "inferred" and signals.finish_reason == "tool-calls"
    assert "exception_type" not in signals  # no error, no flag: the limit is inferred
    c = r.counters
    assert c.runtime_steps == 8
    assert c.model_requests_observed == c.runtime_steps  # no retries here: one request per step
    assert c.model_requests_reported == c.runtime_steps
    assert c.tool_executions is not None and c.tool_executions == c.tool_executions_by_tool["search_kb"]
    assert c.tool_calls_requested is not None and c.tool_calls_requested >= c.tool_executions


@pytest.mark.parametrize("variant", VARIANTS)
def test_default_limits_show_the_sdk_default(records, variant):
    r = records[("default_limits", variant)]
    native = r.limits["max_model_calls"].native
    assert native.startswith("stopWhen not set (SDK default isStepCount(")
    default = int(native.split("isStepCount(")[1].split(")")[0])
    assert r.outcome == "limit_steps" and r.counters.runtime_steps == default
    assert r.counters.model_requests_observed == default


def test_deadlines_are_native_and_abort_the_tool_call(records):
    for variant in VARIANTS:
        model = records[("deadline_slow_model", variant)]
        tool = records[("deadline_slow_tool", variant)]
        for r in (model, tool):
            assert r.outcome == "limit_deadline"
            assert r.native.signals.exception_type == "TimeoutError"
            deadline = r.limits["deadline_s"].neutral
            assert isinstance(deadline, float | int)
            assert r.limits["deadline_s"].native == f"timeout: {{totalMs: {round(deadline * 1000)}}}"
            assert "deadline_s" not in r.unsupported
            # it threw: no result, so the count is the steps the SDK reported to onStepEnd before the timeout
            c = r.counters
            if variant in STREAMED and r is tool:  # a stream cut in a tool reported no step: unknown, not 0
                assert c.runtime_steps == 0 and c.model_requests_reported is None
                continue
            assert c.model_requests_reported == c.runtime_steps and c.runtime_steps is not None
            assert c.model_requests_observed is not None and 1 <= c.runtime_steps <= c.model_requests_observed
        assert tool.counters.abandoned_calls == 1  # the abortSignal reached the ledger


def test_budgets_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("cost_budget", "default")].unsupported == ["max_cost_usd"]


def test_denied_action_is_checked_and_named_by_the_driver(records):
    """The denied tool never runs (test_ground_truth); the check ran and the driver names the denied call."""
    for variant in VARIANTS:
        for scenario in ("denied_action", "denied_action_continue"):
            r = records[(scenario, variant)]
            assert r.counters.authorize_events_by_tool.get("delete_account", 0) >= 1
            assert r.native.signals.extra["denied_calls"][0]["tool"] == "delete_account"


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_stop_ends_the_loop_with_has_tool_call(records, variant):
    r = records[("denied_action", variant)]
    signals = r.native.signals
    assert r.outcome == "denied" and signals.denied is True
    assert signals.extra["denied_signal"] == "inferred"  # ai@7 returns normally: no exception, no flag
    assert signals.limit is None  # the step-limit inference does not claim this stop
    assert r.counters.model_requests_observed == 2 and r.counters.runtime_steps == 2
    assert r.native.settings["stopWhen"] == '[isStepCount(8), hasToolCall("delete_account")]'
    assert "hasToolCall(delete_account)" in r.native.mechanisms["deny_stop"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_deny_continue_tells_the_model_and_goes_on(records, variant):
    r = records[("denied_action_continue", variant)]
    assert r.outcome == "completed" and not r.native.signals.denied
    assert r.counters.model_requests_observed == 3
    assert "hasToolCall" not in r.native.settings["stopWhen"]


def test_model_errors_are_failures(records):
    r = records[("model_fatal_error", "default")]
    assert r.outcome == "failed" and r.native.signals.failure == "model"
    assert r.counters.model_requests_observed is not None and r.counters.model_requests_observed >= 1


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["model_fatal_error", "model_outage"])
def test_a_500_takes_the_sdks_own_backoff(records, scenario, variant):
    """ai@7 retries a 500 twice (2 s, then 4 s) whatever the provider, and neither provider reads
    `x-should-retry`; a 500 carries no retry hint, so that backoff is what a run costs
    (adapters/vercel/probes/anthropic_route.mjs, retry_headers.mjs). It threw before any step: nothing reported."""
    r = records[(scenario, variant)]
    assert r.outcome == "failed"
    assert r.native.signals.exception_type == "AI_RetryError"
    assert r.native.signals.extra["thrown"]["attempts"] == 3  # the RetryError lists its attempts, not steps
    assert r.counters.model_requests_observed == 3
    assert r.counters.model_requests_reported is None
    assert r.counters.elapsed_s is not None and r.counters.elapsed_s >= 5.5


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_429_then_a_500_are_retried_by_the_hint_each_provider_sends(records, variant):
    """A 429 then a 500 on the first call, then three turns: the SDK's retries are in no result (3 steps
    reported, 5 requests seen). Anthropic's 429 carries `retry-after: 1`, which the SDK honours; the OpenAI-style
    429 carries no hint: the SDK's own 2 s (harness/model_server/provider_errors.py)."""
    r = records[("model_transient_error", variant)]
    assert r.outcome == "completed"
    assert (r.counters.model_requests_reported, r.counters.model_requests_observed) == (3, 5)
    first, second = r.requests[0], r.requests[1]
    assert (first.status, second.status) == (429, 500)
    gap = second.t_s - first.t_s
    if ROUTES[variant][2] == "anthropic_messages":
        assert 0.9 <= gap < 1.8, gap  # retry-after: 1
    else:
        assert gap >= 1.9, gap  # no hint: 2 s


def test_tool_errors_are_thrown_from_execute_as_the_driver_says(records):
    """The driver reports its own words for both tool-error intents, the adapter's table's."""
    for variant in VARIANTS:
        fatal = records[("tool_fatal_error", variant)].native.mechanisms
        timeout = records[("write_timeout_unknown", variant)].native.mechanisms
        assert fatal["tool_error_fatal"] == TOOL_ERROR_THROWN
        assert timeout["tool_error_recoverable"] == TOOL_ERROR_THROWN


def test_resume_twice_is_measured(records):
    r = records[("resume_twice", "default")]
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool["send_reply"] >= 1
    assert r.counters.duplicate_effects == r.counters.tool_executions_by_tool["send_reply"] - 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_rejection_then_an_approval_resume_the_same_conversation(records, variant):
    """rejection_fallback_write: two resumes of one task. The snapshot keeps `responseMessages` (every step, and the
    execution-denied result the SDK makes from the rejection before its first step), so the second resume sends a
    whole conversation (it raised AI_MissingToolResultsError for the rejected call when only the last step's
    `response.messages` was kept)."""
    r = records[("rejection_fallback_write", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume", "resume"]
    assert [s.outcome_signals.exception_type for s in r.segments] == [None, None, None]
    assert r.outcome == "completed"
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool.get("issue_refund", 0) == 0
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 1
    # each request after the first carries the lookup's result (the paused segment's earlier step was kept), and the
    # last one the rejected refund's result next to the reply's
    seen = [{t.call_id for t in q.tool_results} for q in r.requests]
    assert all("look_1" in ids for ids in seen[1:]), seen
    assert {"look_1", "refund_1", "send_1"} <= seen[-1], seen


# ------------------------------------------------------------------ sub-agents (the five subagent_* scenarios)
TOOL_LOOP_AGENTS = ("tool-loop-agent", "tool-loop-agent-stream")  # a ToolLoopAgent child; the others generateText


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_child_is_a_tool_running_its_own_loop_whose_usage_the_run_does_not_report(records, variant):
    """The subagents docs' tool: the child answers through its own generateText / ToolLoopAgent; the run's
    result.usage is the parent's 2 steps (2000/200) where the server served 4 requests (4000/400); the child's
    own result has the rest (adapters/vercel/probes/subagent_usage.mjs)."""
    r = records[("subagent_usage", variant)]
    c = r.counters
    assert r.outcome == "completed"
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (2, 2000, 200)
    assert (c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert r.native.signals.extra["subagent_runs"] == [{
        "agent": "billing", "call_id": "ask_billing_1", "steps": 2, "finish_reason": "stop", "input_tokens": 2000,
        "output_tokens": 200, "pending_approvals": []}]
    child = "new ToolLoopAgent(" if variant in TOOL_LOOP_AGENTS else "generateText("
    assert r.native.mechanisms["delegate"].startswith("a tool per child") and child in r.native.mechanisms["delegate"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_parents_step_limit_does_not_reach_the_child(records, variant):
    """The child's loop has its own stopWhen (ToolLoopAgent's default isStepCount(20); the generateText child gets
    it stated, since generateText's own isStepCount(1) ends at the first tool call): research 20 + main 2 requests
    against the task's 8; the child's text is empty and the parent answers."""
    r = records[("subagent_runaway", variant)]
    c = r.counters
    assert r.outcome == "incomplete" and r.native.signals.ended == "returned" and r.native.signals.limit is None
    assert c.model_requests_by_agent == {"main": 2, "research": 20}
    assert c.tool_executions_by_tool == {"search_kb": 20}
    assert c.runtime_steps == 2 == c.model_requests_reported
    stop = r.native.settings["subagents"]["research"]["stopWhen"]
    assert stop.startswith("not set (ToolLoopAgent default: isStepCount(20))" if variant in TOOL_LOOP_AGENTS
                           else "isStepCount(20) (ToolLoopAgent's default")
    assert [(s["steps"], s["finish_reason"]) for s in r.native.signals.extra["subagent_runs"]] == [(20, "tool-calls")]


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_approval_inside_a_child_never_pauses_the_run(records, variant):
    """The child's toolApproval ends the child's call with its approval request unanswered; the tool returns the
    child's empty text and the parent answers: one segment, issue_refund never runs (incomplete)."""
    r = records[("subagent_approval", variant)]
    c = r.counters
    assert r.outcome == "incomplete" and [s.kind for s in r.segments] == ["run"]
    assert r.native.signals.ended == "returned" and not r.native.signals.pending
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_tool == {"lookup_refund": 1}
    assert [s["pending_approvals"] for s in r.native.signals.extra["subagent_runs"]] == [["refund_issue_1"]]
    assert r.native.settings["subagents"]["billing"]["toolApproval"] == {"issue_refund": "user-approval"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_childs_failed_tool_comes_back_as_the_childs_answer(records, variant):
    """The child's tool error is a tool-error part the child sees; it answers, the parent answers from that: the
    run returns, no failure reaches the task."""
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "incomplete" and r.native.signals.failure is None
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


def test_a_token_budget_over_a_child_is_unsupported(records):
    r = records[("subagent_token_budget", "default")]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 4}
    assert (r.counters.input_tokens_reported, r.counters.input_tokens_observed) == (2000, 6000)


# ------------------------------------------------------------------ the driver itself
@pytest.fixture
def fresh_driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[NodeDriver]:
    """A driver of its own (not the module's), installed as the one the adapter uses."""
    d = VercelAIAdapter.new_driver()
    monkeypatch.setitem(node_adapter._drivers, VercelAIAdapter.id, d)
    yield d
    d.close()


@pytest.fixture(scope="module")
def scenarios() -> dict[str, Scenario]:
    return {s.id: s for s in load_scenarios()}


def new_ctx(h: MiniHarness, scenario: Scenario, tmp_path: Path) -> RunContext:
    return h.context(scenario, tmp_path)


def test_malformed_messages_get_error_replies_and_the_driver_keeps_serving(fresh_driver):
    hello = fresh_driver.ensure()
    assert hello.protocol == PROTOCOL_VERSION and hello.node.startswith("v22.")
    pid = fresh_driver.pid
    for line in ("this is not json", "[1, 2]", '{"op": "run"}'):
        fresh_driver.send_raw(line)
        reply = fresh_driver.unrouted.get(timeout=10)
        assert reply.type == "error" and reply.id is None and "malformed" in reply.error

    def refused(payload: dict) -> str:
        answer = fresh_driver.request(payload, VercelAnswer).answer
        assert isinstance(answer, ErrorAnswer)
        return answer.error

    assert "unknown op" in refused({"op": "fly"})
    assert "missing field" in refused({"op": "run", "variant": "default"})
    whole = {"op": "run", "variant": "default", "api": "generateText", "provider": "anthropic", "base_url": "x",
             "api_key": "k", "run_id": "r", "ledger_token": "t", "model_id": "m", "prompt": "p", "tools": [],
             "snapshot_dir": "s"}
    for field in ("provider", "api"):
        assert f"unknown {field}" in refused({**whole, field: "nope"})
    pong = fresh_driver.request(Ping(), Pong).answer
    assert isinstance(pong, Pong) and pong.pid == pid
    assert fresh_driver.pid == pid and fresh_driver.alive() and fresh_driver.starts == 1


def test_an_incomplete_request_from_the_adapter_is_raised_not_recorded_as_behaviour(fresh_driver, harness, scenarios,
                                                                                   tmp_path):
    sc = scenarios["approval_approved_resume"]
    ctx = new_ctx(harness, sc, tmp_path)
    with pytest.raises(DriverError, match="ENOENT|no such file"):
        asyncio.run(VercelAIAdapter().resume(sc, tmp_path / "missing-snapshot", {"x": "approve"}, ctx))
    assert fresh_driver.alive()


def test_driver_killed_mid_run_reports_the_run_and_restarts(fresh_driver, harness, scenarios, tmp_path):
    fresh_driver.ensure()
    first_pid = fresh_driver.pid
    assert first_pid is not None
    slow = scenarios["deadline_slow_model"]  # its first model response takes longer than the kill delay
    killer = threading.Timer(0.5, os.kill, args=(first_pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(DriverDied) as died:
        asyncio.run(VercelAIAdapter().run(slow, new_ctx(harness, slow, tmp_path)))
    killer.join()
    assert "SIGKILL" in str(died.value) and str(first_pid) in str(died.value) and "in flight" in str(died.value)

    ok = scenarios["support_draft_completes"]
    result = asyncio.run(VercelAIAdapter().run(ok, new_ctx(harness, ok, tmp_path)))
    assert result.signals.ended == "returned" and "POL-7" in (result.signals.final_text or "")
    assert fresh_driver.pid != first_pid and fresh_driver.starts == 2
    assert result.signals.extra["driver_pid"] == fresh_driver.pid


def test_node_start_up_is_paid_once_per_worker(fresh_driver, harness, scenarios, tmp_path):
    sc = scenarios["support_draft_completes"]
    times: list[float] = []
    pids: list[int | None] = []
    for _ in range(6):
        ctx = new_ctx(harness, sc, tmp_path)
        t0 = time.perf_counter()
        result = asyncio.run(VercelAIAdapter().run(sc, ctx))  # the first one starts the driver
        times.append(time.perf_counter() - t0)
        pids.append(fresh_driver.pid)
        assert result.signals.ended == "returned"
        assert harness.server.requests(ctx.run_id) and len(harness.server.requests(ctx.run_id)) == 3
    first, warm = times[0], times[1:]
    print(f"\nfirst run (driver start + run): {first:.3f} s; warm runs: {', '.join(f'{t:.3f}' for t in warm)} s")
    assert len(set(pids)) == 1 and fresh_driver.starts == 1
    assert statistics.median(warm) < first


def test_the_python_side_of_a_run_is_loopbenchs_own_cpu(fresh_driver, harness, scenarios, tmp_path):
    """The framework runs in Node (its CPU comes back as the driver's `cpu_us`), so the worker's own CPU over a
    segment is loopbench's: the cost per model call must not charge it to the SDK."""
    sc = scenarios["support_draft_completes"]
    fresh_driver.ensure()
    OWN_WORK.take()
    c0 = time.process_time()
    result = asyncio.run(VercelAIAdapter().run(sc, new_ctx(harness, sc, tmp_path)))
    python_side, own = time.process_time() - c0, OWN_WORK.take()
    assert result.signals.ended == "returned"
    assert result.live_child_cpu_s > 0 and result.live_child_own_cpu_s > 0  # the driver's, reported apart
    # all of this process's CPU for the run but asyncio.run's own set-up, and the (server's) ledger serving in
    # this test process
    assert 0 < own <= python_side and own >= 0.2 * python_side, (own, python_side)


# ------------------------------------------------------------------ the caller's cancel
GENERATE_VARIANTS = [v for v in VARIANTS if v not in STREAMED]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["cancel_during_tool", "cancel_during_model"])
def test_the_callers_cancel_aborts_the_run_through_its_abort_signal(records, scenario, variant):
    """The driver aborts its AbortController when the ledger says cancel; every loop API stops on it at once and
    throws the abort (the streaming ones after onAbort and an abort part)."""
    r = records[(scenario, variant)]
    seg = r.segments[0]
    assert r.outcome == "cancelled", r.error_reason
    assert seg.cancel_sent_s is not None
    signals = seg.outcome_signals
    assert signals.exception_type == "AbortError"
    cancel = signals.extra["cancel"]
    assert cancel["told"] and cancel["aborted"] and cancel["at_s"] == pytest.approx(seg.cancel_sent_s)
    streamed = variant in STREAMED
    assert (cancel["on_abort"] is not None) is streamed
    assert cancel["abort_part"] is (True if streamed else None)
    assert signals.terminal_reason == ("onAbort + abort part" if streamed else None)
    # the tool (or the model) would have taken 5 s: a run that waited for it ends after that (wide margin)
    assert r.counters.elapsed_s is not None and r.counters.elapsed_s < 4.5
    assert r.native.mechanisms["cancel"] == adapter_class("vercel-ai", variant).mechanism_table["cancel"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancel_in_a_tool_abandons_it_and_reports_what_the_sdk_kept(records, variant):
    """The tool got the SDK's abortSignal and passed it to its ledger request: the ledger sees the call abandoned.
    generateText has no onAbort; its onStepEnd still gets the step whose tool was aborted (with its usage), while
    streamText's onAbort gives no step (adapters/vercel/probes/abort_in_tool.mjs): nothing reported, not 0."""
    r = records[("cancel_during_tool", variant)]
    c = r.counters
    assert c.model_requests_observed == 1 and c.abandoned_calls == 1
    assert [e.caller_abandoned for e in r.ledger if e.tool == "get_ticket"] == [True]
    cancel = r.segments[0].outcome_signals.extra["cancel"]
    if variant in STREAMED:
        assert cancel["on_abort"] == {"steps": 0} and cancel["steps_source"] == "onAbort steps"
        assert c.model_requests_reported is None and c.input_tokens_reported is None
    else:
        assert cancel["steps"] == 1 and cancel["steps_source"] == "onStepEnd callbacks"
        assert c.model_requests_reported == 1 and c.input_tokens_reported == c.input_tokens_observed == 1000


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancel_in_a_model_request_keeps_the_usage_of_the_steps_before(records, variant):
    r = records[("cancel_during_model", variant)]
    c = r.counters
    assert c.model_requests_observed == 2 and c.tool_executions == 1 and c.abandoned_calls == 0
    # the first response's step finished before the cancel: every idiom reports it; the cut request is in none
    assert c.model_requests_reported == 1 and c.input_tokens_reported == 1000 and c.output_tokens_reported == 100


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_resume_after_the_cancel_continues_from_the_steps_kept_without_posting_again(records, variant):
    """The resume sends the prompt plus the kept steps' response messages in a new call: the committed post is in
    them, so it is not repeated. streamText's onAbort dropped the step in flight, so the model asks for the lookup
    again; generateText's onStepEnd kept it with the abort as its tool error, which the model answers by looking the
    policy up again (the abandoned lookup's own result never reached the framework: the model sees the error)."""
    r = records[("cancel_then_resume", variant)]
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert r.segments[0].outcome_signals.ended == "cancelled" and r.counters.resumes == 1
    assert r.counters.tool_executions_by_tool["post_to_portal"] == 1
    resumed = [q for q in r.requests if q.t_s > r.requests[1].t_s]
    first = {t.call_id for t in resumed[0].tool_results}
    if variant in STREAMED:
        assert r.outcome == "completed"
        assert first == {"post_1"} and r.counters.tool_executions_by_tool["lookup_policy"] == 2
    else:
        assert first == {"post_1", "policy_1"} and r.counters.tool_executions_by_tool["lookup_policy"] == 2
        assert resumed[0].served_turn == "lookup_again" and r.outcome == "completed"


# ------------------------------------------------------------------ structured answers (a scenario's `output`)
OUTPUT_SCENARIOS = ("output_invalid_then_valid", "output_check_rejects", "output_never_valid")
TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_the_answer_schema_goes_as_output_object_with_the_providers_strict_format(records, scenario, variant):
    """Output.object with a zod schema: both providers constrain the answer to it (@ai-sdk/anthropic's native
    output_config.format, @ai-sdk/openai's strict response_format), so the server sends no output tool and treats
    the answer as constrained; the check is a zod refinement in no schema the provider sees."""
    r = records[(scenario, variant)]
    answers = [q for q in r.requests if q.output_attempt is not None]
    assert answers and all(q.output_constrained is True for q in answers), scenario
    assert all(q.tools_offered == ["get_ticket"] for q in r.requests)  # no output tool
    output = r.native.settings["output"]
    assert output["api"].startswith(("generateText({", "streamText({", "new ToolLoopAgent({"))
    assert "Output.object({schema, name, description})" in output["api"]
    assert output["schema"].startswith("z.strictObject({") and 'z.enum(["low","normal","urgent"])' in output["schema"]
    assert output["retries"].startswith("none")
    table = adapter_class("vercel-ai", variant).mechanism_table
    assert r.native.mechanisms["structured_output"] == table["structured_output"]
    # the record keeps the intents the scenario states: output_check only where the scenario has a check
    assert r.native.mechanisms.get("output_check") == (table["output_check"] if scenario != "output_invalid_then_valid"
                                                       else None)
    has_check = scenario != "output_invalid_then_valid"
    assert (output["check"] != "none") is has_check and (".refine(" in output["check"]) is has_check


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_broken_answer_is_never_sent_under_the_strict_format(records, variant):
    """The strict format rules out the enum-breaking first object: the valid one is served on the first ask, and
    the run completes in 2 requests with the validated object as final_output and its JSON as the text."""
    r = records[("output_invalid_then_valid", variant)]
    assert r.outcome == "completed", r.error_reason
    assert r.counters.model_requests_observed == 2 and r.counters.structured_answers_observed == 1
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "returned" and signals.final_output == TRIAGE
    assert signals.final_text is not None and json.loads(signals.final_text) == TRIAGE
    assert r.counters.model_requests_reported == 2 and r.counters.tool_executions_by_tool["get_ticket"] == 1


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["output_check_rejects", "output_never_valid"])
def test_an_answer_the_refinement_rejects_throws_with_no_correction(records, scenario, variant):
    """No retry in the SDK: the first answer failing the zod refinement throws NoObjectGeneratedError (generateText
    itself; streamText's `output` when read), after the read and that one answer; the correction (POL-7 in
    output_check_rejects) is never asked for. The steps onStepEnd saw are the counts and the tokens."""
    r = records[(scenario, variant)]
    assert r.outcome == "failed", r.error_reason
    c = r.counters
    assert c.model_requests_observed == 2 and c.structured_answers_observed == 1
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "raised" and signals.failure == "model"
    assert signals.exception_type == "AI_NoObjectGeneratedError"
    assert signals.exception_message == "No object generated: response did not match schema."
    assert signals.final_output is None
    assert signals.extra["thrown"]["cause"]["name"] == "AI_TypeValidationError"
    assert "policy id such as POL-7" in signals.extra["thrown"]["cause"]["message"]
    assert c.model_requests_reported == 2 and c.input_tokens_reported == c.input_tokens_observed == 2000
    if variant in STREAMED:  # the stream ended normally: reading result.output threw
        assert signals.extra["output_error"]["name"] == "AI_NoObjectGeneratedError"
        assert signals.finish_reason == "stop"
    else:
        assert "output_error" not in signals.extra
