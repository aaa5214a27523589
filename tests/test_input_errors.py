"""Input errors that help: the closest name for an unknown key, tool, scenario or framework; the value given for
a wrong type or a number out of range; a path into `script` by turn id; one message per problem."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.commands.common import select
from loopbench.harness.adapter import adapter_class
from loopbench.harness.errors import BadInput, close_matches, did_you_mean, shown
from loopbench.harness.scenario import SCENARIO_DIR, expand_paths, load_defaults, load_scenarios, parse_scenario

TIER = "unit"

GOOD = yaml.safe_load((SCENARIO_DIR / "support_draft_completes.yaml").read_text())


def _problems(edit: Any = None, data: dict[str, Any] | None = None) -> list[str]:
    """`field: reason` of each problem of support_draft_completes after `edit`, with the built-in defaults."""
    data = copy.deepcopy(GOOD if data is None else data)
    if edit:
        edit(data)
    _, problems = parse_scenario(data, "support_draft_completes.yaml", load_defaults(SCENARIO_DIR)[0])
    return [f"{p.field}: {p.reason}" for p in problems]


def _user_dir(tmp_path: Path, suite: str | None, tools: dict[str, Any]) -> Path:
    data = copy.deepcopy(GOOD)
    data["tools"] = tools
    (tmp_path / "support_draft_completes.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    if suite is not None:
        (tmp_path / "_suite.yaml").write_text(suite)
    return tmp_path


def _load_problems(directory: Path) -> list[str]:
    with pytest.raises(BadInput) as info:
        load_scenarios(expand_paths([directory]))
    return [f"{Path(p.file).name}: {p.field}: {p.reason}" for p in info.value.problems]


# ---------------------------------------------------------------- the shared helpers
def test_did_you_mean_names_the_closest_choice_or_nothing():
    assert did_you_mean("limts", ["model", "limits", "tools"]) == "did you mean 'limits'?"
    assert did_you_mean("nonsense", ["model", "limits", "tools"]) == ""
    assert did_you_mean("limits", ["limits"]) == ""  # the word itself is no suggestion
    assert close_matches("aproval_*", ["approval_pause", "approval_approved_resume", "cost_budget"], n=3)[0] \
        == "approval_pause"


def test_shown_echoes_a_value_the_way_the_file_wrote_it_and_cut_short():
    assert shown("ten") == "'ten'"
    assert (shown(True), shown(None), shown(float("inf"))) == ("true", "null", ".inf")
    long = shown("x" * 500)
    assert long.startswith("'xxxx") and long.endswith("... (500 characters)") and len(long) < 80


# ---------------------------------------------------------------- the cases
def test_an_unknown_key_suggests_the_field_it_most_likely_means():
    assert _problems(lambda d: d.update(limts={"max_model_calls": 3})) == ["limts: unknown key (did you mean 'limits'?)"]


def test_an_unknown_key_at_any_depth_suggests_from_that_level_s_fields():
    assert _problems(lambda d: d["script"][1]["after"].update(reslt="receipt")) == [
        "script[find_policy].after.reslt: unknown key (did you mean 'result'?)"]
    assert _problems(lambda d: d["expect"]["counters"].update(tool_executions={"mx": 3})) == [
        "expect.counters.tool_executions.mx: unknown key (did you mean 'max'?)"]
    # nothing close: the keys that level may have
    (found,) = _problems(lambda d: d["limits"].update(nonsense=1) if "limits" in d else d.update(
        limits={"nonsense": 1}))
    assert found.startswith("limits.nonsense: unknown key (allowed: max_model_calls, max_total_tokens")


def test_an_unknown_key_of_a_suite_file_suggests_the_key_it_most_likely_means(tmp_path):
    suite = ("extends: builtin\nlimts: {max_model_calls: 3}\nlimits: {max_model_cals: 3}\n"
             "model: {idd: claude}\n")
    found = _load_problems(_user_dir(tmp_path, suite, {"get_ticket": {}, "lookup_policy": {}}))
    assert found == [
        "_suite.yaml: limts: unknown key (did you mean 'limits'? a suite file has extends, model, limits, "
        "safety_cap, tools)",
        "_suite.yaml: model.idd: unknown key (did you mean 'id'?)",
        "_suite.yaml: limits.max_model_cals: unknown key (did you mean 'max_model_calls'?)",
    ]  # each reported once, in the suite file, not again in every scenario of the directory


def test_a_value_of_the_wrong_type_is_echoed():
    assert _problems(lambda d: d.update(limits={"max_model_calls": "ten"})) == [
        "limits.max_model_calls: Input should be a valid integer, got 'ten'"]
    assert _problems(lambda d: d.update(safety_cap=10**9)) == [
        "safety_cap: Input should be less than or equal to 10000, got 1000000000"]
    (long,) = _problems(lambda d: d.update(limits={"max_model_calls": "x" * 5000}))
    assert long.endswith("... (5,000 characters)") and len(long) < 150


def test_a_path_into_the_script_names_the_turn_by_its_id():
    data = copy.deepcopy(GOOD)
    data["script"][0]["id"] = "read"
    data["script"][0]["calls"][0]["tool"] = "get_tiket"
    assert _problems(data=data) == [
        "script[read].calls.0.tool: tool 'get_tiket' is not declared in tools: did you mean 'get_ticket'?"]
    # pydantic's problems too, and every turn's
    assert _problems(lambda d: d["script"][2].update(delay_s="x")) == [
        "script[draft].delay_s: Input should be a valid number, got 'x'"]


def test_a_turn_without_a_unique_id_keeps_its_index():
    def twice(d: dict[str, Any]) -> None:
        d["script"][2]["id"] = "find_policy"
        d["script"][2]["delay_s"] = -1

    found = _problems(twice)
    assert "script.2.id: duplicate turn id 'find_policy'" in found
    assert "script.2.delay_s: Input should be greater than or equal to 0, got -1" in found


@pytest.mark.parametrize(("edit", "expected"), [
    # a union's branches: the number is out of range; that it is not the literal `forever` is noise
    (lambda d: d["script"][0].update(repeat=0), "script[read_ticket].repeat: Input should be greater than or "
     "equal to 1, got 0"),
    (lambda d: d["script"][0].update(fail_first=[{"status": 500, "times": 0}]),
     "script[read_ticket].fail_first.0.times: Input should be greater than or equal to 1, got 0"),
    # a value of no branch's type: one problem naming them all
    (lambda d: d["script"][0].update(repeat="forver"),
     "script[read_ticket].repeat: must be an integer or one of forever, got 'forver' (did you mean 'forever'?)"),
    (lambda d: d["tools"].update(get_ticket={"behavior": [{"result": 3}]}),
     "tools.get_ticket.behavior.0.result: must be a string or a mapping, got 3"),
    (lambda d: d["expect"].update(outcome=["done"]), "expect.outcome.0: must be one of completed|"),
    # no `tools` mapping: that one problem, not one more for each tool a turn calls
    (lambda d: d.pop("tools"), "tools: required key is missing"),
    (lambda d: d.update(tools=["get_ticket"]), "tools: Input should be a valid dictionary, got ['get_ticket']"),
])
def test_one_message_per_problem(edit, expected):
    (found,) = _problems(edit)
    assert found.startswith(expected), found


def test_a_misspelt_tool_under_extends_builtin_suggests_the_catalogue_name(tmp_path):
    found = _load_problems(_user_dir(tmp_path, "extends: builtin\n", {"get_tiket": {}, "lookup_policy": {}}))
    (typo,) = [p for p in found if "tools.get_tiket:" in p]
    assert "did you mean 'get_ticket'?" in typo
    assert "extends: builtin" not in typo  # it is there already
    # the turn that calls get_ticket is told the catalogue has it
    assert "support_draft_completes.yaml: script[read_ticket].calls.0.tool: tool 'get_ticket' is not declared in " \
           "tools: the catalogue has it; add `get_ticket: {}` to tools" in found


def test_without_extends_a_misspelt_tool_suggests_the_builtin_name_and_extends(tmp_path):
    found = _load_problems(_user_dir(tmp_path, None, {"get_tiket": {}, "lookup_policy": {}}))
    (typo,) = [p for p in found if "tools.get_tiket:" in p]
    assert "did you mean 'get_ticket'? `extends: builtin` in that _suite.yaml adds the built-in catalogue" in typo


def test_an_unknown_scenario_glob_suggests_the_closest_ids():
    scenarios = load_scenarios()
    with pytest.raises(BadInput) as info:
        select(scenarios, ["suport_draft_completes", "zzz*"])
    assert [str(p).lstrip(": ") for p in info.value.problems] == [
        "--scenario suport_draft_completes: matches no scenario (did you mean 'support_draft_completes'? see "
        "`loopbench list`)",
        "--scenario zzz*: matches no scenario (see `loopbench list`)",
    ]
    result = CliRunner().invoke(app, ["run", "--scenario", "aproval_pause", "--out", "/tmp/lb-unused"])
    assert result.exit_code == 2 and "did you mean 'approval_pause'?" in result.output, result.output


def test_an_unknown_framework_or_variant_suggests_the_closest(doubles):
    result = CliRunner().invoke(app, ["run", "--framework", "langraph", "--out", "/tmp/lb-unused"])
    assert result.exit_code == 2
    assert "unknown framework 'langraph' (did you mean 'langgraph'?); available:" in result.output, result.output
    with pytest.raises(BadInput, match=r"double-onecall has no variant 'defualt' \(did you mean 'default'\?\); "
                                       r"available: default"):
        adapter_class("double-onecall", "defualt")


def test_a_run_that_would_fail_on_change_is_refused_before_anything_runs(tmp_path):
    """`change` is a diff's (two result sets); a run offered one FailOn vocabulary refuses it, naming diff."""
    result = CliRunner().invoke(app, ["run", "-f", "openai-agents", "-s", "support_draft_completes",
                                      "--fail-on", "change", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "--fail-on: change compares two result sets: use `loopbench diff" in result.output
    assert not (tmp_path / "out").exists()
