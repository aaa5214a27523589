"""Scenario loading and every validation error class."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from loopbench.harness.errors import BadInput
from loopbench.harness.scenario import SCENARIO_DIR, load_scenarios, scenario_files
from loopbench.reports.claims import known_claim_ids

TIER = "unit"

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
        load_scenarios([path], claim_ids=known_claim_ids())
    return [f"{p.field}: {p.reason}" for p in info.value.problems]


def test_the_whole_suite_loads_with_every_scenario():
    scenarios = load_scenarios()
    assert len(scenarios) == 48
    assert len(scenario_files()) == 48
    assert len({s.id for s in scenarios}) == 48


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
    assert problems_of(path) == ["tools.get_ticket.approval: must be one of none|required|deny, got 'maybe'"]


def test_unknown_key_is_an_error(suite_copy: Path):
    data = good()
    data["limitz"] = {"max_model_calls": 3}
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == ["limitz: unknown key (did you mean 'limits'?)"]


def test_undeclared_tool_in_a_turn(suite_copy: Path):
    data = good()
    data["script"][0]["calls"][0]["tool"] = "send_fax"
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "script[read_ticket].calls.0.tool: tool 'send_fax' is not declared in tools"
    ]


def test_duplicate_call_ids(suite_copy: Path):
    data = good()
    data["script"][1]["calls"][0]["id"] = "ticket_1"
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert any(m.startswith("script[find_policy].calls.0.id: duplicate call id 'ticket_1'") for m in msgs)


@pytest.mark.parametrize("cancel,message", [
    ({"during": "tool", "tool": "send_fax"}, "cancel.tool: tool 'send_fax' is not declared in tools"),
    ({"during": "model", "turn": "nope"}, "cancel.turn: no turn has id 'nope'"),
    ({"during": "tool", "turn": "draft"}, "cancel: cancel during: tool names the `tool` whose first call "
     "it waits for (and no `turn`)"),
    ({"during": "model", "turn": "draft", "after_s": -1}, "cancel.after_s: Input should be greater than or equal to 0, got -1"),
])
def test_a_cancel_names_what_it_waits_for(suite_copy: Path, cancel, message):
    data = good()
    data["cancel"] = cancel
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [message]


def test_a_cancel_resumed_task_cannot_also_resume_approval_pauses(suite_copy: Path):
    data = good()
    data["cancel"] = {"during": "tool", "tool": "get_ticket", "resume": True}
    data["resumes"] = [{"pause": 1, "decisions": {"ticket_1": "approve"}}]
    (msg,) = problems_of(write(suite_copy, "support_draft_completes", data))
    assert msg.startswith("cancel.resume: a task resumed after its cancel cannot also resume approval pauses")


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
    assert msg.startswith("line ") and "YAML: " in msg


def test_step_needs_exactly_one_kind(suite_copy: Path):
    data = good()
    data["tools"]["get_ticket"] = {"behavior": [{"result": "x", "error": {"kind": "fatal", "message": "m"}}]}
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert msgs == ["tools.get_ticket.behavior.0: a step has exactly one of result|error|timeout (got ['result', 'error'])"]


def test_repeating_turn_ids_need_n(suite_copy: Path):
    data = good()
    data["script"][0]["repeat"] = "forever"
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert msgs == ["script[read_ticket]: every call id of a repeating turn must contain {n}"]


def test_after_must_name_a_scripted_call(suite_copy: Path):
    data = good()
    data["script"][2]["after"]["call"] = "ghost"
    assert problems_of(write(suite_copy, "support_draft_completes", data)) == [
        "script[draft].after.call: no scripted call has id 'ghost'"
    ]


def test_a_misspelt_call_id_gets_the_closest_one(suite_copy: Path):
    """Every reference to a call id (a turn's `after.call`, a resume's decision) suggests the id it most likely
    means, as a misspelt key, tool, scenario or framework does; so does a cancel's misspelt turn id."""
    data = good()
    data["script"][1]["after"]["call"] = "ticket_l"
    data["resumes"] = [{"pause": 1, "decisions": {"polcy_1": "approve"}}]
    data["cancel"] = {"during": "model", "turn": "drafts"}
    msgs = problems_of(write(suite_copy, "support_draft_completes", data))
    assert "script[find_policy].after.call: no scripted call has id 'ticket_l' (did you mean 'ticket_1'?)" in msgs
    assert "resumes.0.decisions.polcy_1: no scripted call has this id (did you mean 'policy_1'?)" in msgs
    assert "cancel.turn: no turn has id 'drafts' (did you mean 'draft'?)" in msgs


def test_step_for_call_follows_times_and_repeats_the_last():
    sc = next(s for s in load_scenarios() if s.id == "support_draft_completes")
    spec = sc.tools["get_ticket"].model_copy(update={
        "behavior": [
            sc.tools["get_ticket"].behavior[0].model_copy(update={"result": "a", "times": 2}),
            sc.tools["get_ticket"].behavior[0].model_copy(update={"result": "b"}),
        ]
    })
    assert [spec.step_for_call(n).result for n in (1, 2, 3, 4)] == ["a", "a", "b", "b"]


# ---------------------------------------------------------------- hostile files: refused, never crash the runner
def _with(edit) -> dict:
    data = good()
    edit(data)
    return data


@pytest.mark.parametrize("edit, field, reason", [
    (lambda d: d.setdefault("limits", {}).update(deadline_s=float("inf")), "limits.deadline_s", "less than or equal"),
    (lambda d: d.setdefault("limits", {}).update(deadline_s=1e300), "limits.deadline_s", "less than or equal"),
    (lambda d: d["script"][0].update(delay_s=1e300), "script[read_ticket].delay_s", "less than or equal"),
    (lambda d: d["script"][0].update(repeat=0), "script[read_ticket].repeat", "greater than or equal"),
    (lambda d: d.update(safety_cap=10**9), "safety_cap", "less than or equal"),
    (lambda d: d.update(tools={**d["tools"], "get_ticket": {"behavior": [{"result": "x", "size_bytes": 10**13}]}}),
     "tools.get_ticket.behavior.0.size_bytes", "less than or equal"),
])
def test_numbers_that_reach_a_sleep_an_allocation_or_a_count_are_bounded(suite_copy, edit, field, reason):
    path = write(suite_copy, "support_draft_completes", _with(edit))
    found = problems_of(path)
    assert any(p.startswith(f"{field}:") and reason in p for p in found), found


def test_duplicate_keys_alias_bombs_and_bad_bytes_are_refused_with_the_file(suite_copy):
    text = GOOD.read_text()
    cases = {
        "duplicate key": text.replace("prompt:", "prompt: first\nprompt:", 1),
        "more than 100 aliases": "a: &a [x, x]\n" + "".join(f"b{i}: &b{i} [*a, *a]\n" for i in range(60)),
    }
    for reason, body in cases.items():
        path = suite_copy / "support_draft_completes.yaml"
        path.write_text(body)
        msg = str(pytest.raises(BadInput, load_scenarios, [path]).value)
        assert str(path) in msg and reason in msg and "line " in msg, msg
    path.write_bytes(text.encode("utf-16"))
    assert "UTF-16 text" in str(pytest.raises(BadInput, load_scenarios, [path]).value)
    path.write_bytes(text.encode() + b"\nnote: \xff\xfe\n")
    assert "not UTF-8" in str(pytest.raises(BadInput, load_scenarios, [path]).value)
    path.write_bytes(b"# " + b"x" * 2_000_000 + b"\n")
    assert "larger than the 1,000,000 bytes" in str(pytest.raises(BadInput, load_scenarios, [path]).value)


def test_turns_that_can_never_be_served_and_bad_tool_names_are_refused(suite_copy):
    def self_waiting(d):
        d["script"][1]["after"] = {"call": d["script"][1]["calls"][0]["id"], "result": "receipt"}

    found = problems_of(write(suite_copy, "support_draft_completes", _with(self_waiting)))
    assert any("waits on its own call" in p for p in found), found

    def orphan(d):
        d["script"].append({"id": "never", "after": {"call": "ghost_1", "result": "receipt"}, "text": "x"})
        d["script"].append({"id": "ghost", "after": {"call": "never_1", "result": "receipt"},
                            "calls": [{"id": "ghost_1", "tool": "get_ticket", "args": {}}]})
        d["script"][-2]["calls"] = [{"id": "never_1", "tool": "get_ticket", "args": {}}]
        d["script"][-2].pop("text")

    found = problems_of(write(suite_copy, "support_draft_completes", _with(orphan)))
    assert sum("can never be served" in p for p in found) == 2, found

    for bad in ("send reply", "../etc", "émail", "x" * 41, "1tool"):
        def rename(d, bad=bad):
            d["tools"][bad] = {"description": "d", "parameters": {"type": "object", "properties": {}},
                               "kind": "read", "behavior": [{"result": "r"}]}

        found = problems_of(write(suite_copy, "support_draft_completes", _with(rename)))
        assert any(p.startswith(f"tools.{bad}:") and "a tool name is" in p for p in found), (bad, found)


def test_expect_outcome_may_list_the_acceptable_outcomes(suite_copy):
    from loopbench.harness.judge.verdict import compare
    from loopbench.harness.record import Counters

    data = good()
    data["expect"]["outcome"] = ["awaiting_approval", "denied"]
    (sc,) = load_scenarios([write(suite_copy, "support_draft_completes", data)])
    assert sc.expect.outcomes == ("awaiting_approval", "denied")
    assert not [d for d in compare(sc.expect, "denied", Counters(), []) if d.name == "outcome"]
    (dev,) = [d for d in compare(sc.expect, "completed", Counters(), []) if d.name == "outcome"]
    assert (dev.ideal, dev.observed) == ("awaiting_approval|denied", "completed")
    for bad, reason in (([], "must be non-empty"), (["denied", "denied"], "each named once"),
                        (["denied", "done"], "must be one of")):
        data["expect"]["outcome"] = bad
        found = problems_of(write(suite_copy, "support_draft_completes", data))
        assert any(p.startswith("expect") and reason in p for p in found), (bad, found)


def test_schema_and_reference_problems_are_reported_in_one_pass(suite_copy):
    """A bad category (schema) does not hide a bad claim id, a call id no turn makes or a counter typo."""
    data = good()
    data.update(category="nope", claims=["C99"])
    data["script"][1]["after"]["call"] = "ghost_1"
    data["expect"].setdefault("counters", {})["tool_runs"] = 1
    found = problems_of(write(suite_copy, "support_draft_completes", data))
    for expected in ("category: must be one of", "claims.0: unknown claim id 'C99'",
                     "script[find_policy].after.call: no scripted call has id 'ghost_1'",
                     "expect.counters.tool_runs: not a RunRecord counter name"):
        assert any(p.startswith(expected) for p in found), (expected, found)
