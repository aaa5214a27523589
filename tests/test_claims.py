"""The documented claims: the predicate format, and verdicts (holds / refuted / not testable) with evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loopbench.harness.adapter import BUILTIN, adapter_class
from loopbench.harness.errors import BadInput
from loopbench.harness.record import Capabilities
from loopbench.reports.claims import CLAIMS_FILE, check_claims, evaluate, known_claim_ids, load_claims
from loopbench.reports.load import load_records

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"
RUNAWAY_OA = "runaway_step_limit-openai-agents-default-r1-254c8f"


@pytest.fixture(scope="module")
def records():
    return load_records(DATA)


def _claims_file(tmp_path: Path, predicate, framework: str = "openai-agents") -> Path:
    f = tmp_path / "claims.yaml"
    f.write_text(yaml.safe_dump({"claims": [{"id": "T1", "framework": framework, "text": "t", "source": "s",
                                             "scenarios": [], "predicate": predicate}]}))
    return f


def test_claims_file_keeps_every_claim_and_gives_predicates() -> None:
    claims = load_claims()
    # the seed claims C01-C18 (the article's, several frameworks' docs), then each added framework's own, by prefix
    assert [c.id for c in claims if c.id.startswith("C")] == [f"C{i:02d}" for i in range(1, 26)]
    prefixes = {cls.claim_prefix: fid for fid in BUILTIN if (cls := adapter_class(fid)).claim_prefix}
    for c in claims:
        if not c.id.startswith("C"):
            assert prefixes[c.id.rstrip("0123456789")] == c.framework, c.id
    assert len({c.id for c in claims}) == len(claims)
    assert {c.id for c in claims} == known_claim_ids()
    assert all(c.source and c.text for c in claims)
    assert [c.id for c in claims if not c.checks] == []  # C09 got its sub-agent scenario (subagent_usage)
    raw = yaml.safe_load(CLAIMS_FILE.read_text())["claims"]
    assert {c["id"]: c["scenarios"] for c in raw}["C03"] == ["approval_pause", "approval_approved_resume",
                                                             "approval_rejected_resume"]


def test_verdicts_on_the_fixture(records) -> None:
    res = {r.claim.id: r for r in check_claims(records)}
    # holds: openai-agents raises MaxTurnsExceeded past max_turns
    assert res["C02"].verdict == "holds" and res["C02"].evidence == [RUNAWAY_OA]
    assert res["C02"].versions == ["openai-agents 0.24.0"]
    # refuted: the synthesized langgraph runs raise MaxTurnsExceeded, not GraphRecursionError
    assert res["C15"].verdict == "refuted"
    assert "GraphRecursionError" in res["C15"].detail and "MaxTurnsExceeded" in res["C15"].detail
    assert res["C15"].evidence == ["runaway_step_limit-langgraph-default-r1-254c8f"]
    # not testable: no claude-agent-sdk runs; no predicate at all
    assert res["C04"].verdict == "not testable" and not res["C04"].evidence
    assert "no runs of scenario runaway_step_limit, framework claude-agent-sdk" in res["C04"].detail
    assert res["C09"].verdict == "not testable" and "no runs of scenario subagent_usage" in res["C09"].detail
    # a claim over all frameworks: the unstable langgraph repetition (completed) refutes C17
    assert res["C17"].verdict == "refuted"
    assert res["C17"].evidence == ["stops_without_finishing-langgraph-default-r2-a905c1"]


def test_never_holds_without_records(tmp_path: Path, records) -> None:
    f = _claims_file(tmp_path, [{"select": {"scenario": "no_such_scenario"}, "require": ["outcome == completed"]}])
    (r,) = check_claims(records, load_claims(f))
    assert r.verdict == "not testable" and r.evidence == []


def test_unmeasured_value_is_not_testable(tmp_path: Path, records) -> None:
    # openai-agents reports no cost: an ordering on null cannot decide the claim
    f = _claims_file(tmp_path, [{"select": {"scenario": "cost_budget"}, "require": ["counters.cost_usd_reported > 0"]}])
    (r,) = check_claims(records, load_claims(f))
    assert r.verdict == "not testable" and "not measured" in r.detail


def test_quantifier_any_and_variant_all(tmp_path: Path, records) -> None:
    f = _claims_file(tmp_path, [{"select": {"scenario": "stops_without_finishing", "framework": "all", "variant": "all"},
                                 "require": ["outcome == completed"], "quantifier": "any"}])
    (r,) = check_claims(records, load_claims(f))
    assert r.verdict == "holds" and r.evidence == ["stops_without_finishing-langgraph-default-r2-a905c1"]


def test_bad_predicates_are_refused_with_where(tmp_path: Path) -> None:
    f = _claims_file(tmp_path, [{"select": {"scenario": "x"}, "require": ["countres.tool_executions == 1",
                                                                          "__import__('os')", "outcome ="]}])
    with pytest.raises(BadInput) as exc:
        load_claims(f)
    msg = str(exc.value)
    assert "claims.0 (T1).predicate.0.require: condition 0 'countres.tool_executions == 1'" in msg
    assert "must start with a RunRecord field" in msg
    assert "condition 1 " in msg and "condition 2 " in msg
    # the same `file: field.path: reason` format as scenario files, for every problem at once
    with pytest.raises(BadInput) as exc:
        load_claims(_claims_file(tmp_path, [{"require": ["outcome == completed"]},
                                            {"select": {"scenario": "x", "colour": 1}, "require": []}]))
    msg = str(exc.value)
    assert "claims.0 (T1).predicate.0.select: required key is missing" in msg
    assert "claims.0 (T1).predicate.1.select.colour: unknown key" in msg
    assert "claims.0 (T1).predicate.1.require: at least one condition is required" in msg


def test_a_misspelt_field_path_is_refused_naming_the_claim_and_the_path(tmp_path: Path) -> None:
    """A path the record's schema does not have would read null, and a claim over it could hold by accident:
    every segment is checked when the file loads, free-form mappings (native.settings) excepted."""
    f = _claims_file(tmp_path, [{"select": {"scenario": "x"}, "require": [
        "counters.model_requests_observd == 1", "limits.max_modelcalls.neutral == 8",
        "native.signals.exception_typ == null", "outcome.kind == 1"]}])
    with pytest.raises(BadInput) as exc:
        load_claims(f)
    msg = str(exc.value)
    assert "claims.0 (T1).predicate.0.require" in msg
    assert ("'counters.model_requests_observd': counters has no field 'model_requests_observd' (did you mean "
            "'model_requests_observed'?)") in msg
    assert "'limits.max_modelcalls.neutral': limits has no key 'max_modelcalls'" in msg
    assert "'native.signals.exception_typ': native.signals has no field 'exception_typ'" in msg
    assert "'outcome.kind': outcome is a value" in msg
    for fine in ("native.settings.anything.below == 1", "segments[0].counters.model_requests_reported == 1",
                 "counters.tool_executions_by_tool.send_reply == 0", "native.signals.pending[0].tool == x"):
        load_claims(_claims_file(tmp_path, [{"select": {"scenario": "x"}, "require": [fine]}]))


def test_expression_language(records) -> None:
    rec = next(r for r in records if r.run_id == RUNAWAY_OA)
    assert evaluate("outcome == limit_steps", rec)[0] is True  # a bare word is a string
    assert evaluate('native.signals.exception_type == "MaxTurnsExceeded"', rec)[0] is True
    assert evaluate("counters.model_requests_observed == limits.max_model_calls.neutral", rec)[0] is True
    assert evaluate("counters.tool_executions_by_tool.send_reply == 0", rec)[0] is True  # never reached: 0
    assert evaluate("len(native.signals.pending) == 0 and native.signals.denied == false", rec)[0] is True
    assert evaluate("counters.tool_executions <= 2 * counters.model_requests_observed - 8", rec)[0] is True
    assert evaluate('"max_turns" in limits.max_model_calls.native', rec)[0] is True
    ok, seen, _ = evaluate("counters.runtime_steps > 3", rec)
    assert ok is None and seen["counters.runtime_steps"] is None


def test_variant_all_leaves_out_a_guarded_variant_and_a_check_can_name_it(tmp_path: Path, records) -> None:
    """A claim says what a framework does: a guarded variant's record (loopbench.guard's stop) is not its
    evidence under `variant: all`, only when the check names the variant."""
    (base,) = [r for r in records if r.run_id == RUNAWAY_OA]
    caps = Capabilities(native_limits=frozenset(), step_unit="turn", pause="snapshot", pause_survives_restart=True,
                        deny="a rejection", guard_of="default")
    guarded = base.model_copy(update={"variant": "guarded", "run_id": "runaway-guarded", "outcome": "limit_cost",
                                      "capabilities": caps})
    both = [base, guarded]
    select = {"scenario": "runaway_step_limit", "variant": "all"}
    (r,) = check_claims(both, load_claims(_claims_file(tmp_path, [{"select": select,
                                                                    "require": [f"outcome == {base.outcome}"]}])))
    assert r.verdict == "holds" and r.evidence == [RUNAWAY_OA]
    named = {**select, "variant": "guarded"}
    (r,) = check_claims(both, load_claims(_claims_file(tmp_path, [{"select": named,
                                                                   "require": [f"outcome == {base.outcome}"]}])))
    assert r.verdict == "refuted" and r.evidence == ["runaway-guarded"]
