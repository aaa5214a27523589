"""The Mastra adapter: the whole suite through the real runner (every variant).

Integration assertions are what Mastra does natively: the model router's route for each variant (the scenario's
Claude over Anthropic Messages by default, over Chat Completions in `openai-compatible`), the signal mapping, the
pause kept in the task's LibSQL store and resumed by run id in another Node driver, what its units allowed
(recorded and consistent with the ledger and the server). The facts every framework shares are in
test_ground_truth.py; the Node driver's process plumbing is adapters/node/ (`NodeDriver`), tested in
test_adapter_vercel.py and test_node_protocol.py. The driver's `prepare` (the task's Mastra instance and LibSQL store built and initialised
before the segment's clock) is tested here without the suite too, against a server and ledger of the module's own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopbench.adapters.mastra_agent import MastraAdapter, MastraAnswer, Prepared
from loopbench.adapters.node import adapter as node_adapter
from loopbench.adapters.node.driver import NodeDriver
from loopbench.adapters.node.protocol import PROTOCOL_VERSION, ErrorAnswer, PrepareAnswer, PrepareRequest
from loopbench.harness.adapter import RunContext, adapter_class
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario import Scenario, load_scenarios
from tests.conftest import MiniHarness
from tests.suite_helpers import run_framework

SUITE_FRAMEWORKS = ("mastra",)  # run alone, the suite run is this framework's only

VARIANTS = ("default", "stream", "openai-compatible")  # the unguarded idioms the behaviour tests pin
IDIOMS = (*VARIANTS, "guarded")
# the wire protocol each variant's model route speaks (the server's request log says which one arrived)
PROTOCOL = {"default": "anthropic_messages", "stream": "anthropic_messages", "openai-compatible": "openai_chat"}

pytestmark = pytest.mark.skipif(MastraAdapter.unavailable_reason() is not None,
                                reason=str(MastraAdapter.unavailable_reason()))


@pytest.fixture(scope="module")
def records(suite_run) -> dict[tuple[str, str], RunRecord]:
    return run_framework("mastra")


# ---- the driver's prepare, without the suite: a server and a ledger of this module's own, a driver of each test's
@pytest.fixture
def fresh_driver(monkeypatch: pytest.MonkeyPatch) -> Iterator[NodeDriver]:
    """A driver of its own (not the module's), installed as the one the adapter uses."""
    d = MastraAdapter.new_driver()
    monkeypatch.setitem(node_adapter._drivers, MastraAdapter.id, d)
    yield d
    d.close()


@pytest.fixture(scope="module")
def scenarios() -> dict[str, Scenario]:
    return {s.id: s for s in load_scenarios()}


def new_ctx(h: MiniHarness, scenario: Scenario, tmp_path: Path) -> RunContext:
    return h.context(scenario, tmp_path)


def started_event(ctx: RunContext) -> dict[str, Any]:
    lines = (ctx.work_dir / "driver-events.jsonl").read_text().splitlines()
    return next(e for e in map(json.loads, lines) if e["event"] == "started")


def test_prepare_builds_the_store_before_the_segment_which_uses_and_releases_it(fresh_driver, harness, scenarios,
                                                                                tmp_path):
    """The store's opening and init are the prepare's (before the worker's clock): the run answer carries no set-up
    time, and the instance goes with its segment."""
    sc = scenarios["support_draft_completes"]
    ctx = new_ctx(harness, sc, tmp_path)
    adapter = MastraAdapter()
    asyncio.run(adapter.prepare(sc, ctx))
    assert (ctx.task_dir / "mastra.db").exists()  # opened and initialised before the segment
    assert adapter._prepared is not None and adapter._prepared.driver_pid == fresh_driver.pid
    key = adapter._prepared.key
    result = asyncio.run(adapter.segment(sc, ctx))
    assert result.signals.ended == "returned" and len(harness.server.requests(ctx.run_id)) == 3
    assert "setup_s" not in result.signals.extra and not result.notes
    assert result.settings["storage"].endswith("initialised by the prepare request, before the segment")
    started = started_event(ctx)
    assert started["prepared"] == key and "setup_ms" not in started
    # released with its segment: a request naming it again is refused
    again = fresh_driver.request(adapter._payload(sc, ctx, "run", prepared=key), MastraAnswer).answer
    assert isinstance(again, ErrorAnswer) and "no prepared instance" in again.error


def test_a_run_not_prepared_builds_its_instance_inside_and_says_so(fresh_driver, harness, scenarios, tmp_path):
    sc = scenarios["support_draft_completes"]
    unprepared = new_ctx(harness, sc, tmp_path)
    result = asyncio.run(MastraAdapter().run(sc, unprepared))
    assert result.signals.ended == "returned"
    assert result.signals.extra["setup_s"] > 0 and "inside the run request" in result.settings["storage"]
    # prepared in a driver that is gone (pid -1 is no driver): built inside the request, with a note
    lost = new_ctx(harness, sc, tmp_path)
    adapter = MastraAdapter()
    adapter._prepared = Prepared(key="p0", driver_pid=-1, store_existed=False)
    result = asyncio.run(adapter.run(sc, lost))
    assert result.signals.ended == "returned" and result.signals.extra["setup_s"] > 0
    assert any("is gone with that driver" in n for n in result.notes)


def test_prepare_requests_are_validated_matched_and_kept_only_a_few(fresh_driver, harness, scenarios, tmp_path):
    hello = fresh_driver.ensure()
    assert hello.protocol == PROTOCOL_VERSION
    keep = hello.prepared_keep
    assert keep >= 1

    def refused(payload: Any) -> str:
        answer = fresh_driver.request(payload, MastraAnswer).answer
        assert isinstance(answer, ErrorAnswer)
        return answer.error

    assert "missing field" in refused({"op": "prepare", "variant": "default"})
    sc = scenarios["support_draft_completes"]
    adapter = MastraAdapter()
    ctxs = [new_ctx(harness, sc, tmp_path) for _ in range(keep + 1)]
    answers = []
    for c in ctxs:
        answer = fresh_driver.request(PrepareRequest(**adapter._setup(sc, c)), PrepareAnswer).answer
        assert isinstance(answer, PrepareAnswer) and answer.setup_ms >= 0
        answers.append(answer)
    assert [a.held for a in answers] == [*range(1, keep + 1), keep]  # a prepare whose segment never came ...
    assert answers[-1].evicted == [answers[0].prepared]  # ... is closed when newer ones push it out
    assert "no prepared instance" in refused(adapter._payload(sc, ctxs[0], "run", prepared=answers[0].prepared))
    # a run naming another segment's instance is refused (the instance stays for its own segment)
    other = refused(adapter._payload(sc, ctxs[1], "run", prepared=answers[2].prepared))
    assert "built for another segment" in other and "run_id" in other and "task_dir" in other
    bad_key = adapter._payload(sc, ctxs[1], "run").model_dump(mode="json")
    assert "`prepared`" in refused({**bad_key, "prepared": 7})
    assert fresh_driver.alive() and fresh_driver.starts == 1


def test_a_resume_needs_the_tasks_store_from_before_its_prepare(fresh_driver, harness, scenarios, tmp_path):
    """The prepare opens (so creates) the task's mastra.db: the resume checks the store that was there before."""
    sc = scenarios["approval_approved_resume"]
    ctx = new_ctx(harness, sc, tmp_path)
    adapter = MastraAdapter()
    asyncio.run(adapter.prepare(sc, ctx))
    assert (ctx.task_dir / "mastra.db").exists()
    with pytest.raises(FileNotFoundError, match="mastra.db"):
        asyncio.run(adapter.resume(sc, ctx.snapshot_dir, {"x": "approve"}, ctx))


def test_the_variants_are_the_default_route_its_stream_and_the_openai_compatible_route():
    assert tuple(MastraAdapter.idioms()) == IDIOMS
    for variant in IDIOMS:
        cls = adapter_class("mastra", variant)
        assert cls.model_provider == "anthropic"
        assert cls.model_class is not None and cls.model_class.startswith("Mastra model router: ")
    assert "anthropic/<model>" in str(MastraAdapter.model_class)
    assert "openai/<model>" in str(adapter_class("mastra", "openai-compatible").model_class)


def test_the_tool_error_mechanisms_are_the_drivers_words_and_the_tables(records):
    """The driver reports how it applied each intent; the class table says the same for the ones it does not
    rename per scenario (the deny intents name the denied tool)."""
    seen = 0
    for (sid, variant), r in records.items():
        table = adapter_class("mastra", variant).mechanism_table
        for intent, how in r.native.mechanisms.items():
            if not intent.startswith("deny_"):
                assert how == table[intent], (sid, variant, intent)
                seen += intent.startswith("tool_error_")
    assert seen > 0  # the suite has tool errors of both kinds


def test_versions_come_from_the_locked_node_packages(records):
    r = records[("support_draft_completes", "default")]
    assert r.framework_version is not None and r.framework_version.startswith("1.")
    assert r.packages["node"].startswith("22.")
    assert r.native.settings["node"].startswith("v22.")


def test_every_scenario_runs_on_every_variant_without_an_error(records):
    assert {v for _, v in records} == set(IDIOMS)
    broken = {k: r.outcome for k, r in records.items() if r.outcome in ("error", "script_error")}
    assert broken == {}


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_sends_the_scenarios_claude_over_its_routes_protocol(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.native.settings["model"] == "claude-sonnet-4-5"
    assert r.native.settings["model_class"] == adapter_class("mastra", variant).model_class
    assert {q.protocol for q in r.requests} == {PROTOCOL[variant]}
    assert {q.model for q in r.requests} == {"claude-sonnet-4-5"}


@pytest.mark.parametrize("variant", VARIANTS)
def test_storage_is_the_variants_whatever_the_scenario(records, variant):
    for scenario in ("support_draft_completes", "deadline_slow_model", "approval_pause"):
        assert records[(scenario, variant)].native.settings["storage"].startswith("LibSQLStore("), scenario


def test_every_segment_is_prepared_so_its_elapsed_excludes_the_stores_init(records):
    """The worker times `prepare` apart (`prepare_s`): the Mastra instance and its store's init are there, and the
    run answer carries no set-up time of its own (no `extra.setup_s`: nothing was built inside the segment)."""
    for (sid, variant), r in records.items():
        assert "initialised by the prepare request" in r.native.settings["storage"], (sid, variant)
        for seg in r.segments:
            assert seg.prepare_s is not None and seg.prepare_s > 0, (sid, variant, seg.kind)
            assert "setup_s" not in seg.outcome_signals.extra, (sid, variant, seg.kind)


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_reports_steps_requests_and_tokens(records, variant):
    """Every route reports usage: Anthropic Messages (generate and stream) and the OpenAI-compatible generate()
    (its stream would not: probes/stream_no_usage.mjs)."""
    r = records[("support_draft_completes", variant)]
    assert r.outcome == "completed"
    assert r.counters.runtime_step_unit == "step" and r.counters.runtime_steps == 3
    assert r.counters.model_requests_reported == r.counters.model_requests_observed == 3  # one per result.steps
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed
    assert r.counters.output_tokens_reported == r.counters.output_tokens_observed


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_run_that_threw_reports_no_count(records, variant):
    """A throw leaves no result: the counters are unknown. The steps onStepFinish saw stay in extra, and they count
    no model calls either: the failed call finished an 'error' step, the step the deadline cut finished none."""
    for scenario, finish_reasons in (("model_transient_error", ["error"]), ("deadline_slow_tool", [])):
        r = records[(scenario, variant)]
        seg = r.segments[-1]
        assert seg.outcome_signals.ended == "raised", scenario
        assert seg.counters.model_requests_reported is None and r.counters.model_requests_reported is None
        assert [s["finish_reason"] for s in seg.outcome_signals.extra["steps"]] == finish_reasons, scenario
        assert r.counters.model_requests_observed == 1, scenario


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pause_suspends_with_the_call_id(records, variant):
    r = records[("approval_pause", variant)]
    assert r.outcome == "awaiting_approval"
    seg = r.segments[-1]
    assert seg.outcome_signals.finish_reason == "suspended"
    assert [p.call_id for p in seg.pending] and seg.pending[0].tool == "send_reply"
    assert r.counters.authorize_events_by_tool.get("send_reply", 0) >= 1  # the requireApproval function ran
    # result.steps holds the two finished steps; the suspension reports the response that asked for send_reply
    assert seg.outcome_signals.extra["steps_seen_by_onStepFinish"] == 2
    assert r.counters.model_requests_reported == r.counters.model_requests_observed == 3


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
    assert [s.counters.model_requests_reported for s in r.segments] == [3, 4]  # cumulative: 3, then the whole run
    assert r.counters.model_requests_reported == 4
    assert r.counters.input_tokens_reported == r.counters.input_tokens_observed


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


@pytest.mark.parametrize("variant", VARIANTS)
def test_deadlines_are_native(records, variant):
    for scenario, requests in (("deadline_slow_model", 2), ("deadline_slow_tool", 1)):
        r = records[(scenario, variant)]
        assert r.outcome == "limit_deadline", scenario
        assert r.native.signals.limit_signal == "raised"
        assert r.limits["deadline_s"].native.startswith("modelSettings.timeout: {totalMs:")
        assert r.counters.model_requests_observed == requests, scenario


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


# ---- sub-agents: a supervisor Agent's `agents`, offered as agent-<child> tools (the five subagent_* scenarios)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_child_is_an_agent_tool_whose_usage_the_run_does_not_report(records, variant):
    """Mastra offers the child as agent-billing, running the child's own generate/stream; totalUsage is the
    parent's 2 steps (2000/200) of the 4 requests served (4000/400), and the tool's result carries no usage
    (adapters/mastra/probes/subagent_usage.mjs)."""
    r = records[("subagent_usage", variant)]
    c = r.counters
    assert r.outcome == "completed"
    assert c.model_requests_by_agent == {"main": 2, "billing": 2}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert [q.agent for q in r.requests] == ["main", "billing", "billing", "main"]
    assert (c.model_requests_reported, c.input_tokens_reported, c.output_tokens_reported) == (2, 2000, 200)
    assert (c.model_requests_observed, c.input_tokens_observed, c.output_tokens_observed) == (4, 4000, 400)
    assert [(s["agent"], s["call_id"], s["input_tokens"]) for s in r.native.signals.extra["subagent_runs"]] == [
        ("billing", "ask_billing_1", None)]
    assert r.native.mechanisms["delegate"].startswith("new Agent({..., agents:")
    assert r.native.signals.extra["steps"][0]["tool_calls"] == [{"call_id": "ask_billing_1", "tool": "agent-billing"}]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_child_runs_under_its_own_default_steps_not_the_tasks(records, variant):
    """The parent's maxSteps: 8 is the parent's; the child runs under Mastra's default stepCountIs(5) (the model
    leaves the tool's optional maxSteps null): research 5 + main 2, and the parent answers."""
    r = records[("subagent_runaway", variant)]
    c = r.counters
    assert r.outcome == "incomplete" and r.native.signals.ended == "returned" and r.native.signals.limit is None
    assert c.model_requests_by_agent == {"main": 2, "research": 5}
    assert c.tool_executions_by_tool == {"search_kb": 5}
    assert r.native.settings["maxSteps"] == 8
    assert "stepCountIs(5)" in r.native.settings["subagents"]["research"]["maxSteps"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_an_approval_inside_a_child_pauses_the_run_and_the_resume_continues_the_child(records, variant):
    """The child's requireApproval suspends the parent on its delegation call; the driver reports the child's own
    call (nested in suspendPayload / the child's forwarded chunk) and resumes through the delegation's id: the
    child goes on from its approved call (lookup_refund once), then the parent answers."""
    r = records[("subagent_approval", variant)]
    c = r.counters
    assert r.outcome == "completed" and r.verdict == "conforms"
    assert [s.kind for s in r.segments] == ["run", "resume"]
    assert [(p.call_id, p.tool) for p in r.segments[0].pending] == [("refund_issue_1", "issue_refund")]
    assert r.segments[0].outcome_signals.extra["pending_via_delegation"] == {"refund_issue_1": "ask_billing_1"}
    assert c.model_requests_by_agent == {"main": 2, "billing": 3}
    assert c.tool_executions_by_tool == {"lookup_refund": 1, "issue_refund": 1}


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_childs_failed_tool_comes_back_as_the_childs_answer(records, variant):
    r = records[("subagent_tool_failure", variant)]
    assert r.outcome == "incomplete" and r.native.signals.failure is None
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 2}
    assert r.counters.tool_executions_by_tool == {"lookup_refund": 1}


def test_a_token_budget_over_a_child_is_unsupported(records):
    r = records[("subagent_token_budget", "default")]
    assert r.unsupported == ["max_total_tokens"] and r.outcome == "completed"
    assert r.counters.model_requests_by_agent == {"main": 2, "billing": 4}
    assert (r.counters.input_tokens_reported, r.counters.input_tokens_observed) == (2000, 6000)


# ------------------------------------------------------------------ the caller's cancel
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_cancel_in_a_model_request_ends_with_onabort_and_keeps_the_steps_before(records, variant):
    """The driver aborts the AbortController whose signal generate/stream got: Mastra returns (it does not throw)
    with finishReason 'aborted' and calls onAbort with the finished step, whose usage is still reported."""
    r = records[("cancel_during_model", variant)]
    seg = r.segments[0]
    assert r.outcome == "cancelled", r.error_reason
    signals = seg.outcome_signals
    assert signals.exception_type is None and signals.finish_reason == "aborted"
    assert signals.terminal_reason == ("onAbort + abort part" if variant == "stream" else "onAbort")
    cancel = signals.extra["cancel"]
    assert cancel["told"] and cancel["aborted"] and cancel["at_s"] == pytest.approx(seg.cancel_sent_s)
    assert cancel["on_abort"]["steps"] == 1 and cancel["steps_source"] == "onAbort steps"
    c = r.counters
    assert c.model_requests_observed == 2 and c.model_requests_reported == 1 and c.tool_executions == 1
    assert c.input_tokens_reported == 1000 and c.output_tokens_reported == 100
    # the model would have taken 5 s: a run that waited for it ends after that (wide margin)
    assert c.elapsed_s is not None and c.elapsed_s < 4.5
    assert r.native.mechanisms["cancel"] == adapter_class("mastra", variant).mechanism_table["cancel"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["cancel_during_tool", "cancel_then_resume"])
def test_a_cancel_in_a_tool_stops_the_run_with_a_normal_result(records, scenario, variant):
    """The tool got Mastra's abortSignal and passed it to its ledger request (the ledger sees the call abandoned),
    and the run stops at once, but Mastra returns a normal result: finishReason 'tool-calls', no onAbort, no abort
    chunk, no error (adapters/mastra/probes/abort_in_tool.mjs). Nothing it returned says cancelled, so the run is
    mapped as it returned, with a note; it kept nothing to resume from, so no resume runs."""
    r = records[(scenario, variant)]
    assert [s.kind for s in r.segments] == ["run"] and r.counters.resumes == 0
    seg = r.segments[0]
    signals = seg.outcome_signals
    assert seg.cancel_sent_s is not None and signals.ended == "returned" and r.outcome == "incomplete"
    assert signals.finish_reason == "tool-calls"
    cancel = signals.extra["cancel"]
    assert cancel["told"] and cancel["aborted"] and cancel["on_abort"] is None
    assert cancel["abort_part"] is (False if variant == "stream" else None)
    assert any("Mastra returned a normal result" in n for n in r.native.notes)
    c = r.counters
    assert c.abandoned_calls == 1 and c.elapsed_s is not None and c.elapsed_s < 4.5
    if scenario == "cancel_then_resume":
        assert c.tool_executions_by_tool == {"post_to_portal": 1, "lookup_policy": 1}


# ---- structured answers (a scenario's `output`)
OUTPUT_SCENARIOS = ("output_invalid_then_valid", "output_check_rejects", "output_never_valid")
TRIAGE = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", OUTPUT_SCENARIOS)
def test_the_answer_schema_goes_as_structured_output_in_direct_mode(records, scenario, variant):
    """`structuredOutput: {schema}` with no structuring model: Mastra's direct mode hands the schema to the model
    call as its responseFormat, which both routes send constrained (output_config.format, a strict response_format):
    the server sends no output tool; the check is a zod refinement in no schema the provider sees."""
    r = records[(scenario, variant)]
    answers = [q for q in r.requests if q.output_attempt is not None]
    assert answers and all(q.output_constrained is True for q in answers), scenario
    assert all(q.tools_offered == ["get_ticket"] for q in r.requests)
    output = r.native.settings["output"]
    api = "stream" if variant == "stream" else "generate"
    assert output["api"] == f"structuredOutput: {{schema}} in agent.{api}() options -> result.object"
    assert output["mode"].startswith("direct") and output["errorStrategy"] == "not set (Mastra default 'strict')"
    assert output["schema"].startswith("z.strictObject({") and output["retries"].startswith("none")
    table = adapter_class("mastra", variant).mechanism_table
    assert r.native.mechanisms["structured_output"] == table["structured_output"]
    # the record keeps the intents the scenario states: output_check only where the scenario has a check
    assert r.native.mechanisms.get("output_check") == (table["output_check"] if scenario != "output_invalid_then_valid"
                                                       else None)
    assert f"agent.{api}(prompt" in table["structured_output"]
    assert (".refine(" in output["check"]) is (scenario != "output_invalid_then_valid")


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_broken_answer_is_never_sent_under_the_constrained_format(records, variant):
    r = records[("output_invalid_then_valid", variant)]
    assert r.outcome == "completed", r.error_reason
    assert r.counters.model_requests_observed == 2 and r.counters.structured_answers_observed == 1
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "returned" and signals.final_output == TRIAGE
    assert signals.final_text is not None and json.loads(signals.final_text) == TRIAGE
    assert r.counters.model_requests_reported == 2 and r.counters.input_tokens_reported == 2000


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", ["output_check_rejects", "output_never_valid"])
def test_an_answer_the_refinement_rejects_raises_a_mastra_error_with_no_correction(records, scenario, variant):
    """Direct mode validates the final text and, under errorStrategy 'strict', ends the run with an error chunk:
    generate() / getFullOutput() throw MastraError STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED after the read and one
    answer; no correction is asked. It is the model's failure (an id Mastra counts as a structured-output format
    error), and a throw reports no count: the two steps onStepFinish saw stay in extra."""
    r = records[(scenario, variant)]
    assert r.outcome == "failed", r.error_reason
    c = r.counters
    assert c.model_requests_observed == 2 and c.structured_answers_observed == 1
    assert [q.output_attempt for q in r.requests] == [None, 1]
    signals = r.native.signals
    assert signals.ended == "raised" and signals.failure == "model" and signals.final_output is None
    thrown = signals.extra["thrown"]
    assert thrown["constructor"] == "MastraError" and thrown["id"] == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"
    assert thrown["domain"] == "AGENT" and thrown["category"] == "SYSTEM"
    # measured: the Anthropic route's error wraps the ZodError; the OpenAI-compatible route's has no cause (its
    # validator took the Standard Schema branch of validateValue, which attaches none)
    assert thrown.get("cause", {}).get("name") == (None if variant == "openai-compatible" else "ZodError")
    assert "policy_id must be a policy id such as POL-7" in (signals.exception_message or "")
    assert c.model_requests_reported is None and c.input_tokens_reported is None
    assert [s["finish_reason"] for s in signals.extra["steps"]] == ["tool-calls", "error"]
