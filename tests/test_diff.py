"""diff_results: behaviour changes between two result sets, versions listed, timing with a tolerance."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from loopbench.harness.errors import BadInput, SchemaMismatch
from loopbench.reports.diff import diff_results

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"


def _edited(tmp_path: Path, edit: Callable[[dict], None], name: str = "new") -> Path:
    d = tmp_path / name
    shutil.copytree(DATA, d)
    f = d / "results.jsonl"
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    for r in recs:
        edit(r)
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def test_identical_results_are_unchanged() -> None:
    md, changed = diff_results(DATA, DATA / "results.jsonl")
    assert not changed
    assert "No behaviour change" in md and "No package version changes" in md


def test_a_changed_outcome_is_named(tmp_path: Path) -> None:
    def edit(r: dict) -> None:
        if r["scenario"] == "support_draft_completes" and r["framework"] == "langgraph":
            r["outcome"], r["outcome_rule"], r["verdict"] = "incomplete", 9, "deviates"
            r["deviations"] = [{"name": "outcome", "ideal": "completed", "observed": "incomplete", "note": ""}]

    md, changed = diff_results(DATA, _edited(tmp_path, edit))
    assert changed
    assert "| support_draft_completes | langgraph | outcome | completed | incomplete |" in md
    assert "| support_draft_completes | langgraph | verdict | conforms | deviates |" in md
    assert "| support_draft_completes | langgraph | deviations | none | outcome (new: outcome) |" in md
    assert "openai-agents | outcome" not in md


def test_counter_change_is_a_change(tmp_path: Path) -> None:
    def edit(r: dict) -> None:
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "openai-agents":
            r["counters"]["tool_executions_by_tool"]["search_kb"] = 7
            r["counters"]["tool_executions"] = 7

    md, changed = diff_results(DATA, _edited(tmp_path, edit))
    assert changed and "| runaway_step_limit | openai-agents | tool_executions | 8 | 7 |" in md
    assert "tool_executions_by_tool.search_kb | 8 | 7" in md


def test_version_change_alone_is_listed_not_a_failure(tmp_path: Path) -> None:
    def edit(r: dict) -> None:
        if r["framework"] == "openai-agents":
            r["framework_version"] = r["packages"]["openai-agents"] = "0.25.0"

    md, changed = diff_results(DATA, _edited(tmp_path, edit))
    assert not changed
    assert "| openai-agents | 0.24.0 | 0.25.0 |" in md


def test_timing_counters_are_left_out(tmp_path: Path) -> None:
    def slower_machine(r: dict) -> None:
        r["counters"]["cpu_s"] = 99.0
        r["counters"]["peak_rss_mb"] = 999.0
        if r["counters"]["elapsed_s"] is not None:
            r["counters"]["elapsed_s"] *= 3

    md, changed = diff_results(DATA, _edited(tmp_path, slower_machine, "slow"))
    assert not changed and "elapsed_s" not in md.split("## Behaviour changes")[1]

    def one_more_request(r: dict) -> None:  # a behaviour change next to a timing change is still found
        if r["scenario"] == "deadline_slow_model" and r["framework"] == "langgraph":
            r["counters"]["elapsed_s"] = 30.0
            r["counters"]["model_requests_observed"] += 1

    md, changed = diff_results(DATA, _edited(tmp_path, one_more_request, "more"))
    assert changed and "| deadline_slow_model | langgraph | model_requests_observed |" in md


def test_timing_deviation_alone_does_not_flip_the_verdict(tmp_path: Path) -> None:
    def edit(r: dict) -> None:  # the elapsed_s deviation disappears (a faster machine); nothing else changes
        if r["scenario"] == "deadline_slow_model":
            r["deviations"] = [d for d in r["deviations"] if d["name"] != "elapsed_s"]
            r["counters"]["elapsed_s"] -= 0.5

    _, changed = diff_results(DATA, _edited(tmp_path, edit))
    assert not changed


def test_what_is_set_aside_is_named_with_its_cells(tmp_path: Path) -> None:
    """A deviation derived from time that appears on one side only is not a change, but the cell is listed with
    both sides' deviations, and counted."""
    from loopbench.reports.diff import compare_results

    def edit(r: dict) -> None:
        if r["scenario"] == "support_draft_completes" and r["framework"] == "langgraph":
            r["deviations"].append({"name": "elapsed_s", "ideal": {"max": 0.1}, "observed": 0.4, "note": ""})

    new = _edited(tmp_path, edit)
    d = compare_results(DATA, new)
    assert not d.changed
    assert [(a.scenario, a.column, a.base, a.new) for a in d.set_aside] == [
        ("support_draft_completes", "langgraph", [], ["elapsed_s"])]
    md, _ = diff_results(DATA, new)
    assert "(1 cell(s) differ only there: listed below)" in md
    assert "| support_draft_completes | langgraph | – | elapsed_s |" in md.split("## Set aside")[1]
    md_same, _ = diff_results(DATA, DATA)
    assert "(0 cell(s) differ only there" in md_same


def test_a_cell_whose_scenario_changed_is_listed_apart_not_as_a_behaviour_change(tmp_path: Path) -> None:
    """Both sides carry a scenario digest and they differ: the cell's differences are the edit's, listed apart;
    the same difference where the digests agree is a behaviour change."""
    from loopbench.reports.diff import compare_results

    def digest(value: str) -> Callable[[dict], None]:
        def edit(r: dict) -> None:
            r["scenario_digest"] = value if r["scenario"] == "runaway_step_limit" else "same"
        return edit

    def more_requests(r: dict) -> None:
        digest("edited")(r)
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "openai-agents":
            r["counters"]["model_requests_observed"] += 1

    base = _edited(tmp_path, digest("original"), "base")
    d = compare_results(base, _edited(tmp_path, more_requests, "new"))
    assert not d.changed and d.changed_cells == 0 and d.scenario_changed_cells == 2  # openai-agents and langgraph
    assert {(c.column, c.what) for c in d.scenario_changes} == {
        ("openai-agents", "model_requests_observed"), ("langgraph", "scenario")}
    assert {c.column for c in d.cells if c.scenario_changed} == {"openai-agents", "langgraph"}
    md = diff_results(base, _edited(tmp_path, more_requests, "new2"))[0]
    assert "## Cells whose scenario changed" in md and "2 cell(s) ran a different content" in md


def test_a_changed_count_in_an_unchanged_scenario_is_still_a_change(tmp_path: Path) -> None:
    def edit(r: dict) -> None:
        r["scenario_digest"] = "same"
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "openai-agents":
            r["counters"]["model_requests_observed"] += 1

    md, changed = diff_results(_edited(tmp_path, lambda r: r.update(scenario_digest="same"), "base"),
                               _edited(tmp_path, edit))
    assert changed and "| runaway_step_limit | openai-agents | model_requests_observed |" in md
    assert "## Cells whose scenario changed" not in md


def test_cells_on_one_side_are_listed(tmp_path: Path) -> None:
    def edit(r: dict) -> None:
        if r["framework"] == "langgraph" and r["scenario"] == "huge_tool_output":
            r["variant"] = "stategraph"

    md, changed = diff_results(DATA, _edited(tmp_path, edit))
    assert not changed
    assert "only in base: huge_tool_output × langgraph" in md
    # a framework variant the base never ran is one line, not a line per cell
    assert "only in new: framework variant langgraph:stategraph (1 cells)" in md


def test_one_sided_frameworks_and_scenarios_are_one_line_each_and_not_version_changes(tmp_path: Path) -> None:
    def only_openai(r: dict) -> None:
        if r["framework"] == "langgraph":
            r["framework"], r["packages"] = "other-fw", {"other-fw": "9.9"}
            r["framework_version"] = "9.9"
        if r["scenario"] == "cost_budget":
            r["scenario"] = "renamed_budget"

    md, changed = diff_results(DATA, _edited(tmp_path, only_openai))
    assert not changed
    one_sided = [x for x in md.splitlines() if x.startswith("- only in")]
    assert "- only in base: framework variant langgraph (11 cells)" in one_sided
    assert "- only in new: framework variant other-fw (11 cells)" in one_sided
    assert "- only in base: scenario cost_budget (1 cells)" in one_sided
    assert "- only in new: scenario renamed_budget (1 cells)" in one_sided
    assert len(one_sided) == 4, one_sided
    # langgraph ran only in base and other-fw only in new: no version change is claimed for either
    assert "| langgraph |" not in md.split("## Package versions")[1] and "other-fw" not in md.split(
        "## Package versions")[1].split("## Cells on one side only")[0]


def test_repetitions_compare_the_majority(tmp_path: Path) -> None:
    # base: langgraph stops_without_finishing r1 incomplete, r2 completed (tie: r1 shown). Adding a third
    # repetition that completes makes `completed` the majority: a change.
    d = tmp_path / "new"
    shutil.copytree(DATA, d)
    f = d / "results.jsonl"
    lines = f.read_text().splitlines()
    r2 = next(json.loads(x) for x in lines if "stops_without_finishing-langgraph-default-r2" in x)
    r2["repetition"], r2["run_id"] = 3, r2["run_id"].replace("-r2-", "-r3-")
    f.write_text("\n".join([*lines, json.dumps(r2)]) + "\n")
    md, changed = diff_results(DATA, d)
    assert changed and "| stops_without_finishing | langgraph | outcome | incomplete | completed | unstable" in md


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        diff_results(DATA, tmp_path / "missing")
    other = tmp_path / "notes.txt"
    other.write_text("hello\nworld\n")
    with pytest.raises(BadInput, match="not a results file"):
        diff_results(other, DATA)

    def edit(r: dict) -> None:
        r["schema_version"] = 99

    with pytest.raises(SchemaMismatch, match="schema_version 99"):
        diff_results(DATA, _edited(tmp_path, edit))


def test_prompt_sizes_are_compared_with_a_tolerance(tmp_path: Path) -> None:
    def few_bytes(r: dict) -> None:  # another working directory in a prompt
        if r["counters"]["max_request_growth_bytes"] is not None:
            r["counters"]["max_request_growth_bytes"] += 12

    _, changed = diff_results(DATA, _edited(tmp_path, few_bytes, "few"))
    assert not changed

    def huge(r: dict) -> None:  # a framework that stops truncating a 200 KiB tool output
        if r["scenario"] == "support_draft_completes" and r["counters"]["max_request_growth_bytes"] is not None:
            r["counters"]["max_request_growth_bytes"] += 200_000

    md, changed = diff_results(DATA, _edited(tmp_path, huge, "huge"))
    assert changed and "max_request_growth_bytes (tolerance" in md
