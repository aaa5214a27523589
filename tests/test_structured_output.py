"""Structured answers (a scenario's `output`, scenarios/README.md "Structured answers"): what a file may say, how
the scripted model serves the k-th answer (through the output tool or as text, constrained or not), and how the
judge reads the framework's structured answer. Pure: conversations are built by hand, no client, no process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopbench.harness.adapter import Adapter
from loopbench.harness.errors import ScriptViolation
from loopbench.harness.judge.counters import build_counters
from loopbench.harness.judge.outcome import completion_holds
from loopbench.harness.model_server.call_ids import OPENAI_ID_PREFIX as P
from loopbench.harness.model_server.script import Conversation, ToolResult, select
from loopbench.harness.record import SCHEMA_VERSION, Capabilities, RequestLogEntry, migrate
from loopbench.harness.scenario import Completion, load_scenarios
from loopbench.harness.scenario.model import OutputSpec

TIER = "unit"

SPEC: dict[str, Any] = {
    "name": "TicketTriage", "description": "d",
    "fields": {"ticket_id": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "urgent"]},
               "policy_id": {"type": "string"}},
    "check": {"field": "policy_id", "pattern": "^POL-[0-9]+$", "message": "cite a policy id"},
}
BROKEN = {"ticket_id": "T-1", "priority": "asap", "policy_id": "POL-7"}  # outside the enum: the schema's
REJECTED = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "the refund policy"}  # the check's
VALID = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


def _scenario(make_scenario, attempts: list[dict[str, Any]], **raw: Any):
    script = [{"id": "read", "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}}]},
              {"id": "triage", "after": {"call": "ticket_1"}, "output": attempts}]
    raw.setdefault("output", SPEC)
    raw.setdefault("tools", {"get_ticket": {}})
    raw.setdefault("completion", {"final_output": {"policy_id": "POL-7"}})
    return make_scenario(script, category="validation", **raw)


def _after_read(answers_after: int, offered: list[str], **conv: Any) -> Conversation:
    """The conversation once the ticket came back, with `answers_after` structured answers after it."""
    return Conversation(P, batches=[[P + "ticket_1"]], results=[ToolResult(P + "ticket_1", "Ticket T-1 ...")],
                        tools_offered=offered, answers=[[P + "ticket_1"]] + [[]] * answers_after, **conv)


# ---------------------------------------------------------------- the file
def test_the_schema_is_json_schema_with_every_field_required_and_nothing_else():
    schema = OutputSpec.model_validate(SPEC).json_schema()
    assert schema["required"] == ["ticket_id", "priority", "policy_id"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["priority"] == {"type": "string", "enum": ["low", "urgent"]}
    assert "pattern" not in json.dumps(schema)  # the check is the framework's validator, not the schema's


def test_problems_name_the_schema_and_the_check_apart():
    spec = OutputSpec.model_validate(SPEC)
    assert spec.problems(VALID) == []
    assert spec.problems(BROKEN) == ["priority: 'asap' is not one of low, urgent"]
    assert spec.problems(REJECTED) == ["check: cite a policy id"]
    assert spec.problems(REJECTED, check=False) == []
    assert spec.problems({"ticket_id": 1, "priority": "low"}) == ["ticket_id: 1 is not a string",
                                                                  "missing field 'policy_id'"]
    assert spec.problems({**VALID, "extra": True}) == ["unknown field 'extra'"]


@pytest.mark.parametrize(("change", "says"), [
    ({"check": {**SPEC["check"], "field": "nope"}}, "'nope' is not one of the fields"),
    ({"check": {**SPEC["check"], "pattern": "^(?=POL)"}}, "no flags or look-arounds"),
    ({"check": {**SPEC["check"], "pattern": "(unclosed"}}, "is not a regular expression"),
    ({"fields": {"n": {"type": "integer", "enum": ["1"]}}}, "only a string field takes one"),
    ({"fields": {"Bad Name": {"type": "string"}}}, "is not a field name"),
])
def test_a_bad_output_spec_is_refused_with_the_reason(change: dict[str, Any], says: str):
    with pytest.raises(ValueError, match=says):
        OutputSpec.model_validate({**SPEC, **change})


def test_an_output_turn_needs_the_schema_and_the_schema_needs_a_turn(make_scenario):
    with pytest.raises(AssertionError, match="declares no `output` schema"):
        make_scenario([{"id": "a", "output": [VALID]}])
    with pytest.raises(AssertionError, match="no turn answers with it"):
        make_scenario([{"id": "a", "text": "x"}], output=SPEC)
    with pytest.raises(AssertionError, match="no calls, no text"):
        make_scenario([{"id": "a", "output": [VALID], "text": "x"}], output=SPEC)
    with pytest.raises(AssertionError, match="not among the output's fields"):
        _scenario(make_scenario, [VALID], completion={"final_output": {"refund": 1}})


def test_the_suite_validation_scenarios_load_and_mean_what_their_titles_say():
    by_id = {s.id: s for s in load_scenarios() if s.category == "validation"}
    assert sorted(by_id) == ["output_check_rejects", "output_invalid_then_valid", "output_never_valid"]
    for sc in by_id.values():
        assert sc.output is not None
        turn = next(t for t in sc.script if t.output)
        problems = [sc.output.problems(a) for a in turn.output or []]
        if sc.id == "output_never_valid":
            assert all(p for p in problems) and all(not sc.output.problems(a, check=False) for a in turn.output or [])
        else:  # a first answer that fails, then one that passes schema and check
            assert problems[0] and problems[-1] == []


# ---------------------------------------------------------------- the scripted model
def test_the_first_answer_goes_to_the_one_tool_that_is_no_scenario_tool(make_scenario):
    sc = _scenario(make_scenario, [REJECTED, VALID])
    served = select(sc, _after_read(0, ["get_ticket", "final_result"]))
    assert [(c.tool, c.args, c.output) for c in served.calls] == [("final_result", REJECTED, True)]
    assert served.calls[0].id == "out_triage_1" and served.output_attempt == 1 and served.text is None


def test_without_an_output_tool_the_answer_is_its_json_text(make_scenario):
    sc = _scenario(make_scenario, [REJECTED, VALID])
    served = select(sc, _after_read(0, ["get_ticket"]))
    assert served.calls == [] and json.loads(served.text or "") == REJECTED


def test_a_correction_is_served_only_when_the_earlier_answer_comes_back(make_scenario):
    sc = _scenario(make_scenario, [REJECTED, VALID])
    assert json.loads(select(sc, _after_read(1, ["get_ticket"])).text or "") == VALID
    assert select(sc, _after_read(1, ["get_ticket"])).output_attempt == 2
    # past the last attempt the last one repeats
    assert json.loads(select(sc, _after_read(5, ["get_ticket"])).text or "") == VALID


def test_a_constrained_answer_passes_over_what_the_schema_rules_out(make_scenario):
    sc = _scenario(make_scenario, [BROKEN, VALID])
    plain = select(sc, _after_read(0, ["get_ticket"]))
    assert json.loads(plain.text or "") == BROKEN and plain.output_constrained is False
    strict = select(sc, _after_read(0, ["get_ticket"], strict_format=True))
    assert json.loads(strict.text or "") == VALID and strict.output_constrained is True
    # a strict output tool, not a strict text format, constrains an answer given through that tool
    tool = select(sc, _after_read(0, ["get_ticket", "out"], strict_format=True))
    assert tool.calls[0].args == BROKEN and tool.output_constrained is False
    assert select(sc, _after_read(0, ["get_ticket", "out"], strict_tools=frozenset({"out"}))).calls[0].args == VALID
    # the check is no schema's: a constrained request still gets the answer the validator will reject
    rejected = _scenario(make_scenario, [REJECTED, VALID])
    assert json.loads(select(rejected, _after_read(0, ["get_ticket"], strict_format=True)).text or "") == REJECTED


def test_a_constrained_request_with_no_answer_that_fits_is_a_violation(make_scenario):
    sc = _scenario(make_scenario, [BROKEN])
    with pytest.raises(ScriptViolation, match="no answer of the script from attempt 1 on fits it"):
        select(sc, _after_read(0, ["get_ticket"], strict_format=True))


def test_two_candidate_output_tools_are_a_violation(make_scenario):
    sc = _scenario(make_scenario, [VALID])
    with pytest.raises(ScriptViolation, match="which one is the output tool is unclear"):
        select(sc, _after_read(0, ["get_ticket", "a", "b"]))


def test_the_prefixed_scenario_tools_are_not_taken_for_the_output_tool(make_scenario):
    sc = _scenario(make_scenario, [VALID])
    served = select(sc, _after_read(0, ["mcp__loopbench__get_ticket", "StructuredOutput"]))
    assert served.calls[0].tool == "StructuredOutput"


# ---------------------------------------------------------------- judging
def test_completion_reads_the_structured_answer():
    c = Completion(final_output={"policy_id": "POL-7"})
    assert completion_holds(c, None, [], VALID) == (True, "completion evidence holds")
    assert completion_holds(c, None, [], None) == (False, "no structured answer")
    assert completion_holds(c, json.dumps(VALID), [], REJECTED)[1] == (
        "structured answer has policy_id='the refund policy', not 'POL-7'")


def _request(seq: int, attempt: int | None, status: int = 200) -> RequestLogEntry:
    return RequestLogEntry(seq=seq, t_s=0, protocol="openai_chat", path="/", stream=False, model="m", messages=1,
                           tools_offered=[], prompt_bytes=1, status=status, output_attempt=attempt)


def test_structured_answers_are_counted_only_where_the_scenario_has_them():
    requests = [_request(1, None), _request(2, 1), _request(3, 2), _request(4, 3, status=500)]
    kw: dict[str, Any] = dict(model_id="m", requests=requests, ledger=[], segments=[], elapsed_s=None, cpu_s=None,
                              peak_rss_mb=None)
    assert build_counters(**kw, structured=True).structured_answers_observed == 2
    assert build_counters(**kw).structured_answers_observed is None


def test_a_v6_record_reads_as_the_current_schema_without_made_up_answers():
    assert SCHEMA_VERSION == 7
    assert migrate({"schema_version": 6, "x": 1}) == {"schema_version": 7, "x": 1}


class _NoStructure(Adapter):
    id = "nostructure"
    about = "no structured output"
    capabilities = Capabilities(native_limits=frozenset(), step_unit="s", pause="none", pause_survives_restart=False,
                                deny="none")
    distribution = "nothing"
    mechanism_table = {"structured_output": "output_type=", "output_check": "unsupported: no validator hook"}

    async def run(self, scenario, ctx):  # pragma: no cover - never started
        raise AssertionError

    async def resume(self, scenario, snapshot, decisions, ctx):  # pragma: no cover
        raise AssertionError


def test_an_idiom_without_a_validator_does_not_run_a_scenario_with_a_check(make_scenario):
    with_check = _scenario(make_scenario, [VALID])
    assert _NoStructure.inexpressible(with_check) == ["output_check"]
    without = _scenario(make_scenario, [VALID], output={k: v for k, v in SPEC.items() if k != "check"})
    assert _NoStructure.inexpressible(without) == []
    assert _NoStructure.mechanisms(without, _NoStructure.mechanism_table) == {"structured_output": "output_type="}
