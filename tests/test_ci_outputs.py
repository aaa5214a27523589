"""What a CI job reads: JUnit XML from `run` and `diff` (read back with junitparser), `diff --format json`
(round-trips through its model; its committed schema is current), `--fail-on`, `diff -f`, and progress as
plain lines when stdout is not a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml, Properties, Skipped
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.reports.diff import DiffOut, compare_results
from tests.edit_results import rewritten

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports_small"
CASES = ROOT / "tests" / "data" / "tool_choice"


def _cases(path: Path) -> dict[tuple[str, str], object]:
    xml = JUnitXml.fromfile(str(path))
    return {(c.classname, c.name): c for suite in xml for c in suite}


@pytest.mark.process
def test_run_writes_junit_and_fails_by_fail_on(tmp_path, doubles):
    runner = CliRunner()
    out = tmp_path / "out"
    args = ["run", "--scenarios", str(CASES), "-f", "double-onecall", "-f", "double-crash", "--jobs", "1"]
    done = runner.invoke(app, [*args, "--out", str(out), "--junit", str(tmp_path / "run.xml")])
    assert done.exit_code == 1, done.output  # the crashing double's runs are errors: the default --fail-on
    cases = _cases(tmp_path / "run.xml")
    assert len(cases) == 4
    crashed = cases[("double-crash", "forced_first_tool")]
    assert isinstance(crashed.result[0], Error) and "error" in crashed.result[0].message
    one = cases[("double-onecall", "forced_first_tool")]
    assert one.is_passed
    props = {p.name: p.value for p in one.child(Properties)}
    assert props["outcome"] and props["verdict"] and props["run_id"].startswith("forced_first_tool-double-onecall")

    only_ok = runner.invoke(app, ["run", "--scenarios", str(CASES), "-f", "double-onecall", "--jobs", "1",
                                  "--out", str(tmp_path / "ok"), "--junit", str(tmp_path / "ok.xml")])
    deviating = [c for c in _cases(tmp_path / "ok.xml").values() if c.result]
    assert only_ok.exit_code == 0 and not deviating, only_ok.output  # deviations pass by default
    strict = runner.invoke(app, ["run", "--scenarios", str(CASES), "-f", "double-onecall", "--jobs", "1",
                                 "--out", str(tmp_path / "strict"), "--junit", str(tmp_path / "strict.xml"),
                                 "--fail-on", "deviation"])
    records = [json.loads(x) for x in (tmp_path / "strict" / "results.jsonl").read_text().splitlines()]
    not_conforming = {r["scenario"] for r in records if r["verdict"] != "conforms"}
    assert not_conforming, "the double deviates somewhere, or this check could not fail"
    assert strict.exit_code == 1
    failed = {name for (_, name), c in _cases(tmp_path / "strict.xml").items()
              if c.result and isinstance(c.result[0], Failure)}
    assert failed == not_conforming


def _doctored(tmp_path: Path) -> Path:
    def edit(r: dict) -> bool:
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "langgraph":
            r.update(outcome="capped", outcome_rule=3)
        return not (r["scenario"] == "huge_tool_output" and r["framework"] == "langgraph")

    return rewritten(DATA, tmp_path / "new", edit)


def test_diff_json_round_trips_and_its_schema_is_committed(tmp_path):
    new = _doctored(tmp_path)
    done = CliRunner().invoke(app, ["diff", str(DATA), str(new), "--format", "json"])
    assert done.exit_code == 1
    parsed = DiffOut.model_validate_json(done.stdout)
    assert parsed == compare_results(DATA, new)
    assert parsed.changed and parsed.changed_cells == 1 and parsed.common_cells == 21
    (change,) = [c for c in parsed.changes if c.what == "outcome"]
    assert (change.scenario, change.column, change.base, change.new) == ("runaway_step_limit", "langgraph",
                                                                         "limit_steps", "capped")
    schema = json.loads((ROOT / "docs" / "diff.schema.json").read_text())
    assert schema == DiffOut.model_json_schema(), "docs/diff.schema.json is stale: loopbench schema diff"
    jsonschema.validate(json.loads(done.stdout), schema)


def test_diff_junit_fail_on_and_framework_selection(tmp_path):
    new = _doctored(tmp_path)
    runner = CliRunner()
    done = runner.invoke(app, ["diff", str(DATA), str(new), "--junit", str(tmp_path / "diff.xml")])
    assert done.exit_code == 1
    cases = _cases(tmp_path / "diff.xml")
    failed = [k for k, c in cases.items() if c.result and isinstance(c.result[0], Failure)]
    assert failed == [("langgraph", "runaway_step_limit")]
    assert "outcome: limit_steps → capped" in cases[failed[0]].result[0].message
    skipped = [k for k, c in cases.items() if c.result and isinstance(c.result[0], Skipped)]
    assert skipped == [("one side only", "only in base: huge_tool_output × langgraph")]
    # only openai-agents compared: no change there
    assert runner.invoke(app, ["diff", str(DATA), str(new), "-f", "openai-agents"]).exit_code == 0
    # the same results, no change, but deviations in NEW fail --fail-on deviation
    assert runner.invoke(app, ["diff", str(DATA), str(DATA)]).exit_code == 0
    assert runner.invoke(app, ["diff", str(DATA), str(DATA), "--fail-on", "deviation"]).exit_code == 1
    assert runner.invoke(app, ["diff", str(DATA), str(DATA), "--fail-on", "error"]).exit_code == 0
    bad = runner.invoke(app, ["diff", str(DATA), str(DATA), "-f", "nope"])
    assert bad.exit_code == 2 and "'nope' ran in neither result set" in bad.output


@pytest.mark.process
def test_progress_without_a_terminal_is_a_line_per_run_and_a_summary(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "loopbench.cli", "run", "-f", "openai-agents:default", "-s", "support_*",
         "-s", "approval_pause", "--out", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "loopbench: 2 run(s) to do" in lines
    assert any(x.startswith("loopbench: starting workers in") for x in lines)
    runs = [x for x in lines if x.startswith("[")]
    assert len(runs) == 2 and runs[-1].startswith("[2/2] ✓ conforms")
    assert "· 0 in flight" in runs[-1]
    assert any(x.startswith("loopbench: 2 of 2 run(s) done in") and x.endswith("✓2") for x in lines)
    assert any(x.startswith("writing the reports") for x in lines)
