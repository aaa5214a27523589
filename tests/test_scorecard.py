"""The answer first: each deviation's severity and words (reports/severity.py, documented in docs/policy.md),
the scorecard's roll-up per framework variant × category, a report against a baseline, and summary.json's
types and schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.record import Deviation, RunRecord
from loopbench.reports.baseline import compare_with
from loopbench.reports.build import build_reports
from loopbench.reports.cells import cells
from loopbench.reports.data import report_data
from loopbench.reports.load import load_records, load_results
from loopbench.reports.scorecard import scorecard, scorecard_frame
from loopbench.reports.severity import POLICY_END, POLICY_START, describe, severity_table_markdown, worst
from loopbench.reports.summary import Summary, summary
from tests.edit_results import rewritten

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports_small"


@pytest.fixture(scope="module")
def records() -> list[RunRecord]:
    return load_records(DATA)


def _dev(name: str, ideal, observed) -> Deviation:
    return Deviation(name=name, ideal=ideal, observed=observed)


@pytest.mark.parametrize(("dev", "severity", "words"), [
    (_dev("outcome", "limit_steps", "completed"), "high", "ran on past the limit"),
    (_dev("outcome", "limit_budget", "capped"), "high", "the harness's safety cap did"),
    (_dev("outcome", "awaiting_approval|denied", "completed"), "high", "did not pause for approval"),
    (_dev("outcome", "completed", "hung"), "critical", "hung"),
    (_dev("outcome", "completed", "failed"), "medium", "gave up on a failure"),
    (_dev("outcome", "incomplete", "completed"), "medium", "ended completed instead of incomplete"),
    (_dev("effects_by_tool.send_reply", 1, 2), "critical", "wrote send_reply 2× (intended 1)"),
    (_dev("effects_by_tool.send_reply", 1, 0), "medium", "wrote send_reply 0× (intended 1)"),
    (_dev("cost_usd_observed", "<= 0.05", 0.063), "high", "spent past the budget"),
    (_dev("abandoned_calls", 1, 0), "medium", "waited for the call in flight"),
    (_dev("model_requests_reported", 5, None), "low", "did not report model_requests_reported"),
    (_dev("something_new", 1, 2), "low", "something_new: 1 → 2"),
])
def test_each_deviation_kind_has_a_severity_and_words(records, dev, severity, words):
    got = describe(records[0], dev)
    assert got.severity == severity and words in got.words, got


def test_a_repeated_write_in_a_resumed_run_says_so(records):
    resumed = next(r for r in records if (r.counters.resumes or 0) > 0)
    fresh = next(r for r in records if not r.counters.resumes)
    dup = _dev("duplicate_effects", 0, 1)
    assert describe(resumed, dup).words.endswith("in a resumed run")
    assert not describe(fresh, dup).words.endswith("in a resumed run")


def test_the_worst_deviation_is_the_most_serious_one(records):
    r = next(x for x in records if x.deviations).model_copy(update={"deviations": [
        _dev("model_requests_observed", 3, 4), _dev("outcome", "limit_steps", "completed"),
        _dev("tool_executions", 2, 3)]})
    assert (worst(r).severity, worst(r).deviation) == ("high", "outcome")
    assert worst(r.model_copy(update={"deviations": []})) is None


def test_the_scorecard_rolls_up_each_category(records):
    card = scorecard(records)
    limits = card[("openai-agents", "limits")]
    # cost_budget, deadline_slow_model, resume_keeps_allowance, runaway_step_limit
    assert (limits.cells, limits.conforms, limits.unsupported, limits.errors) == (4, 1, 2, 0)
    # the worst deviation is a ⚠ cell's: cost_budget's high one is on an unsupported (⊘) cell
    assert limits.worst.severity == "medium" and limits.worst_scenario == "runaway_step_limit"
    assert limits.worst.words == "ran 8 tool calls (ideal 7)"
    assert card[("openai-agents", "baseline")].text() == "2 of 2 conform"
    frame = scorecard_frame(records).set_index("framework variant")
    assert list(frame.columns) == ["finishing", "limits", "approval", "model failure", "context"]
    assert frame.loc["langgraph", "approval"].startswith("2 of 3 conform, 1 deviate · high: went on after a denial")


def test_every_deviating_scenario_of_a_category_is_named(records):
    """Not only the worst: a second ⚠ cell of the same category is in the text, after the worst."""
    second = next(r for r in records if r.framework == "openai-agents" and r.scenario == "cost_budget")
    second = second.model_copy(update={"verdict": "deviates", "unsupported": [],
                                       "deviations": [_dev("model_requests_observed", 3, 4)]})
    card = scorecard([second if r.run_id == second.run_id else r for r in records])
    limits = card[("openai-agents", "limits")]
    assert [sc for sc, _, _ in limits.deviating] == ["runaway_step_limit", "cost_budget"]
    assert limits.text() == ("1 of 4 conform, 2 deviate, 1 unsupported · medium: ran 8 tool calls (ideal 7) — "
                             "runaway_step_limit · also ⚠ cost_budget")


def test_a_loopbench_error_is_not_counted_against_the_framework(records):
    broken = [r.model_copy(update={"verdict": "error", "outcome": "error"}) if r.scenario == "cost_budget" else r
              for r in records]
    limits = scorecard(broken)[("openai-agents", "limits")]
    assert (limits.cells, limits.errors, limits.judged, limits.conforms) == (4, 1, 3, 1)
    assert "1 error" in limits.text() and limits.worst_scenario != "cost_budget"


@pytest.mark.process
def test_the_worst_line_names_only_deviating_cells(records, tmp_path):
    """The most severe deviation of a category on an unsupported (⊘) cell is never its worst line: the worst comes
    from the ⚠ cells, and a category with only ⊘ cells among the rest has none."""
    by_cell = {(c.column, c.scenario): c.rep for c in cells(records)}
    card = scorecard(records)
    for (column, _), score in card.items():
        if score.worst_scenario is not None:
            assert by_cell[(column, score.worst_scenario)].verdict == "deviates", (column, score.worst_scenario)
    # a case where the most severe deviation is on an unsupported cell, and a category with no ⚠ cell
    sev = {(r.scenario, r.framework): worst(r) for r in records if r.deviations}
    assert sev[("cost_budget", "langgraph")].rank > sev[("runaway_step_limit", "langgraph")].rank
    only_unsupported = [r for r in records if r.scenario in ("cost_budget", "deadline_slow_model",
                                                              "resume_keeps_allowance")]
    limits = scorecard(only_unsupported)[("langgraph", "limits")]
    assert (limits.unsupported, limits.worst, limits.worst_scenario) == (2, None, None)
    assert limits.text() == "1 of 3 conform, 2 unsupported"
    # in the reports: the scorecard's limits cells name runaway_step_limit, never cost_budget
    d = tmp_path / "r"
    shutil.copytree(DATA, d)
    build_reports(d, {"md", "html"})
    md = (d / "report.md").read_text()
    scorecard_md = " ".join(md.split("## Scorecard")[1].split("\n## ")[0].split())  # wrapped prose: one line
    assert "— runaway_step_limit" in scorecard_md
    assert "cost_budget" not in scorecard_md and "deadline_slow_model" not in scorecard_md
    page = (d / "report.html").read_text()
    card_html = page.split('<table class="scorecard">')[1].split("</table>")[0]
    assert ">runaway_step_limit</a>" in card_html and "cost_budget" not in card_html


def test_docs_policy_holds_the_severity_table_exactly():
    policy = (ROOT / "docs" / "policy.md").read_text()
    start = policy.index(POLICY_START) + len(POLICY_START) + 1
    table = policy[start:policy.index(POLICY_END)]
    assert table == severity_table_markdown(), "run: python -m loopbench.reports.severity docs/policy.md"


# ---------------------------------------------------------------- against a baseline
def _doctored_baseline(tmp_path: Path) -> Path:
    """The fixture with one cell's outcome changed and one scenario missing: the baseline of a report."""
    def edit(r: dict) -> bool:
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "langgraph":
            r.update(outcome="capped", outcome_rule=3)
        return r["scenario"] != "huge_tool_output"

    return rewritten(DATA, tmp_path / "base", edit)


def test_a_baseline_marks_and_explains_each_change(records, tmp_path):
    b = compare_with(load_results(_doctored_baseline(tmp_path)), records)
    assert list(b.changes) == [("runaway_step_limit", "langgraph", "default")]
    assert b.explain(("runaway_step_limit", "langgraph", "default")) == ["outcome: capped → limit_steps"]
    assert b.common == 20 and b.one_sided == ["only in new: scenario huge_tool_output (2 cells)"]


@pytest.mark.process
def test_report_and_diff_html_with_a_baseline(tmp_path):
    base = _doctored_baseline(tmp_path)
    new = tmp_path / "new"
    shutil.copytree(DATA, new)
    build_reports(new, {"md", "json"}, baseline=base)
    md = (new / "report.md").read_text()
    prose = " ".join(md.split())  # wrapped prose, as one line
    assert "## Changes against the baseline" in md and "**1 of 20 common cell(s) changed**" in prose
    assert "- runaway_step_limit × langgraph: outcome: capped → limit_steps" in md
    matrix = md.split("## Comparison matrix")[1].split("\n## ")[0]
    marked = [x for x in matrix.splitlines() if x.startswith("|") and "⇄" in x]
    assert len(marked) == 1 and marked[0].startswith("| runaway_step_limit ") and marked[0].count("⇄") == 1
    cells = {(c["scenario"], c["column"]): c for c in json.loads((new / "summary.json").read_text())["matrix"]}
    assert cells[("runaway_step_limit", "langgraph")]["changes"] == ["outcome: capped → limit_steps"]
    assert cells[("runaway_step_limit", "openai-agents")]["changes"] == []
    assert cells[("huge_tool_output", "langgraph")]["changes"] is None  # not in the baseline
    html_file = tmp_path / "changes.html"
    done = CliRunner().invoke(app, ["diff", str(base), str(new), "--html", str(html_file)])
    assert done.exit_code == 1, done.output  # a behaviour change
    page = html_file.read_text()
    assert page.count('class="v-deviates changed"') + page.count('class="v-conforms changed"') == 1
    assert "⇄ outcome: capped → limit_steps" in page


# ---------------------------------------------------------------- summary.json
def test_summary_json_has_real_types_and_matches_its_committed_schema(tmp_path):
    committed = json.loads((ROOT / "docs" / "summary.schema.json").read_text())
    assert committed == Summary.model_json_schema(), "docs/summary.schema.json is stale: loopbench schema summary"
    d = tmp_path / "r"
    shutil.copytree(DATA, d)
    build_reports(d, {"json"})
    doc = json.loads((d / "summary.json").read_text())
    jsonschema.validate(doc, committed)
    cell = next(c for c in doc["matrix"] if c["scenario"] == "runaway_step_limit")
    assert type(cell["counters"]["model_requests_observed"]) is int
    assert isinstance(cell["counters"]["tool_executions_by_tool"], dict)  # nested, not a JSON string
    cost = doc["cost_per_model_call"][0]
    assert type(cost["cells"]) is int and type(cost["conforms"]) is int

    def strings(v):
        if isinstance(v, dict):
            for x in v.values():
                yield from strings(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings(x)
        elif isinstance(v, str):
            yield v
    assert not [s for s in strings(doc) if s.startswith(("{", "[")) and s.endswith(("}", "]"))]


def test_summary_is_the_report_data(records):
    s = summary(report_data(load_results(DATA)))
    assert len(s.matrix) == 22 and {x.category for x in s.scorecard} == {
        "baseline", "limits", "approval", "model_failure", "context"}


def test_list_shows_what_each_variant_is_and_the_claims():
    done = CliRunner().invoke(app, ["list", "--json"])
    listed = json.loads(done.output)
    lg = next(f for f in listed["frameworks"] if f["id"] == "langgraph")
    assert "hand-built StateGraph" in lg["about"]["stategraph"]
    assert {c["id"] for c in listed["claims"]} >= {"C01", "C02"}
    assert all(c["text"] for c in listed["claims"])
