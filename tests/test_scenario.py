"""Scenario loading and every validation error class."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from loopbench.harness.errors import BadInput
from loopbench.harness.scenario import SCENARIO_DIR, load_scenarios, scenario_files

GOOD = SCENARIO_DIR / "support_draft_completes.yaml"


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    shutil.copy(SCENARIO_DIR / "_suite.yaml", tmp_path / "_suite.yaml")
    return tmp_path


def write(dirpath: Path, name: str, data: dict) -> Path:
    path = dirpath / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def good() -> dict:
    return yaml.safe_load(GOOD.read_text())


def problems_of(path: Path) -> list[str]:
    with pytest.raises(BadInput) as info:
        load_scenarios([path])
    return [f"{p.field}: {p.reason}" for p in info.value.problems]


def test_the_whole_suite_loads_with_27_scenarios():
    scenarios = load_scenarios()
    assert len(scenarios) == 27
    assert len(scenario_files()) == 27
    assert len({s.id for s in scenarios}) == 27


def test_suite_defaults_are_inherited_and_overridable(suite_copy: Path):
    data = good()
    data["tools"]["lookup_policy"] = {"kind": "write"}
    sc = load_scenarios([write(suite_copy, "support_draft_completes", data)])[0]
    assert sc.limits.max_model_calls == 8
    assert sc.model.id == "claude-sonnet-4-5"
    assert sc.model.usage.input_tokens == 1000
    assert sc.tools["lookup_policy"].kind == "write"  # overridden
    assert sc.tools["lookup_policy"].description.startswith("Look up")  # inherited


def test_bad_approval_value_names_file_field_and_choices(suite_copy: Path):
    data = good()
    data["tools"]["get_ticket"] = {"approval": "maybe"}
    path = write(suite_copy, "support_draft_completes", data)
    assert problems_of(path) == ["tools.get_ticket.approval: must be one of none|required|deny"]


def test_unknown_key_is_an_error(suite_copy: Path):
    data = good()
    data["limitz"] = {"max_model_calls": 3}
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == ["limitz: unknown key"]


def test_undeclared_tool_in_a_turn(suite_copy: Path):
    data = good()
    data["script"][0]["calls"][0]["tool"] = "send_fax"
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "script.0.calls.0.tool: tool 'send_fax' is not declared in tools"
    ]


def test_duplicate_call_ids(suite_copy: Path):
    data = good()
    data["script"][1]["calls"][0]["id"] = "ticket_1"
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert any(m.startswith("script.1.calls.0.id: duplicate call id 'ticket_1'") for m in msgs)


def test_decision_for_unknown_call_id(suite_copy: Path):
    data = good()
    data["resumes"] = [{"pause": 1, "decisions": {"nope_1": "approve"}}]
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "resumes.0.decisions.nope_1: no scripted call has this id"
    ]


def test_unknown_claim_id(suite_copy: Path):
    data = good()
    data["claims"] = ["C01", "C99"]
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "claims.1: unknown claim id 'C99' (see reports/claims.yaml)"
    ]


def test_unknown_counter_name_in_expect(suite_copy: Path):
    data = good()
    data["expect"]["counters"]["model_calls"] = 3
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "expect.counters.model_calls: not a RunRecord counter name"
    ]


def test_every_error_is_reported_not_only_the_first(suite_copy: Path):
    data = good()
    data["category"] = "nonsense"
    data["tools"]["get_ticket"] = {"approval": "maybe"}
    data["extra"] = 1
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert len(msgs) == 3
    assert any(m.startswith("category: must be one of") for m in msgs)


def test_problems_from_several_files_are_all_reported(suite_copy: Path):
    a = good()
    a["category"] = "nonsense"
    b = good()
    b["id"] = "other"
    b["prompt"] = None
    paths = [write(suite_copy, "support_draft_completes", a), write(suite_copy, "other", b)]
    with pytest.raises(BadInput) as info:
        load_scenarios(paths)
    files = {Path(p.file).name for p in info.value.problems}
    assert files == {"support_draft_completes.yaml", "other.yaml"}


def test_id_must_match_file_name(suite_copy: Path):
    assert problems_of(write(suite_copy, "renamed", good())) == ["id: must match the file name ('renamed')"]


def test_yaml_syntax_error_gives_the_line(suite_copy: Path):
    path = suite_copy / "broken.yaml"
    path.write_text("id: broken\ntitle: [unclosed\n")
    (msg,) = problems_of(path)
    assert msg.startswith("line ") and "YAML syntax error" in msg


def test_step_needs_exactly_one_kind(suite_copy: Path):
    data = good()
    data["tools"]["get_ticket"] = {"behavior": [{"result": "x", "error": {"kind": "fatal", "message": "m"}}]}
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert msgs == ["tools.get_ticket.behavior.0: a step has exactly one of result|error|timeout (got ['result', 'error'])"]


def test_repeating_turn_ids_need_n(suite_copy: Path):
    data = good()
    data["script"][0]["repeat"] = "forever"
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert msgs == ["script.0: every call id of a repeating turn must contain {n}"]


def test_after_must_name_a_scripted_call(suite_copy: Path):
    data = good()
    data["script"][2]["after"]["call"] = "ghost"
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "script.2.after.call: no scripted call has id 'ghost'"
    ]


def test_step_for_call_follows_times_and_repeats_the_last():
    sc = next(s for s in load_scenarios() if s.id == "support_draft_completes")
    spec = sc.tools["get_ticket"].model_copy(update={
        "behavior": [
            sc.tools["get_ticket"].behavior[0].model_copy(update={"result": "a", "times": 2}),
            sc.tools["get_ticket"].behavior[0].model_copy(update={"result": "b"}),
        ]
    })
    assert [spec.step_for_call(n).result for n in (1, 2, 3, 4)] == ["a", "a", "b", "b"]
