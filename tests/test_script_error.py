"""A scenario's own fault is named as such: a run whose scripted model met a request its script cannot answer
is `script_error` (rule SCRIPT_ERROR, verdict error) on every framework variant, with the file, the turn and
what was unanswered in its reason, never a framework's `failed`; and the ideal loop's dry run catches the same
bug before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopbench.harness.adapter import resolve_selection
from loopbench.harness.judge.outcome import OutcomeRule
from loopbench.harness.record import RunRecord
from loopbench.harness.run.ideal import script_problems, walk
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import expand_paths, load_scenarios
from loopbench.reports.load import load_records
from tests.suite_helpers import extra_records

BUG_DIR = Path(__file__).resolve().parent / "data" / "script_bug"


def _bug(sid: str = "policy_retry_bug"):
    return next(s for s in load_scenarios(expand_paths([BUG_DIR])) if s.id == sid)


def test_the_ideal_loop_finds_the_unanswered_result_and_the_turn_no_path_reaches():
    found = walk(_bug())
    assert found.ending == "no answer" and found.served == ["read", "policy", "retry"]
    problems = {p.field: p.reason for p in script_problems(_bug())}
    assert set(problems) == {"script[retry]", "script[give_up].after"}
    assert "(policy_2: receipt)" in problems["script[retry]"]
    assert all(p.file.endswith("policy_retry_bug.yaml") for p in script_problems(_bug()))


def test_the_built_in_suite_has_no_script_an_ideal_loop_cannot_finish():
    assert {s.id: script_problems(s) for s in load_scenarios() if script_problems(s)} == {}


@pytest.fixture(scope="module")
def bug_records(suite_run) -> dict[tuple[str, str], RunRecord]:
    """The runtime bug on every variant: run beside the shared suite, in its warm workers (tests/suite_helpers.py)."""
    return {(r.framework, r.variant): r for r in extra_records() if r.scenario == "ticket_answer_bug"}


@pytest.mark.parametrize("framework,variant", resolve_selection([]))
def test_a_script_bug_is_the_scenarios_error_on_every_framework(bug_records, framework, variant):
    """The ticket's receipt has no answer in the script: every framework sends it back, none is to blame."""
    r = bug_records[(framework, variant)]
    assert (r.outcome, r.outcome_rule, r.verdict) == ("script_error", OutcomeRule.SCRIPT_ERROR, "error"), (
        r.outcome, r.error_reason, r.violations)
    reason = r.error_reason or ""
    assert "ticket_answer_bug.yaml" in reason and "after turn 'read'" in reason and "ticket_1: receipt" in reason


def test_the_dry_run_flags_the_runtime_bug_too():
    assert [p.field for p in script_problems(_bug("ticket_answer_bug"))] == ["script[read]", "script[apologise].after"]


def test_validate_and_run_refuse_the_script_bug_before_anything_runs(tmp_path):
    from typer.testing import CliRunner

    from loopbench.cli import app

    runner = CliRunner()
    checked = runner.invoke(app, ["validate", "--scenarios", str(BUG_DIR)])
    assert checked.exit_code == 2
    assert "policy_retry_bug.yaml: script[retry]: an ideal loop gets no answer" in checked.output
    assert "script[give_up].after: waits for policy_2" in checked.output  # the turn no path reaches
    ran = runner.invoke(app, ["run", "--scenarios", str(BUG_DIR), "-f", "openai-agents:default",
                              "--out", str(tmp_path / "out")])
    assert ran.exit_code == 2 and not (tmp_path / "out" / "results.jsonl").exists()


def test_the_scenarios_fault_is_said_in_the_progress_line_the_report_and_junit(tmp_path, capsys):
    from loopbench.reports.build import build_reports
    from loopbench.reports.junit import run_junit

    plan = RunPlan(scenarios=[_bug("ticket_answer_bug")], variants=[("openai-agents", "default")], jobs=1,
                   out_dir=tmp_path, show_progress=True, terminal=False)
    run_suite(plan)
    line = next(x for x in capsys.readouterr().out.splitlines() if "ticket_answer_bug × openai-agents" in x)
    assert "→ script_error (the scenario's script:" in line and "after turn 'read'" in line
    build_reports(tmp_path, {"md", "html"})
    md = (tmp_path / "report.md").read_text()
    cell = next(x for x in md.splitlines() if x.startswith("| ticket_answer_bug "))
    note = cell.split("[")[-1].split("]")[0]
    assert "✖ script_error" in cell and f"- [{note}] script_error: the scenario's script:" in md
    assert "script_error: the scenario&#x27;s script:" in (tmp_path / "report.html").read_text() or \
        "script_error: the scenario's script:" in (tmp_path / "report.html").read_text()
    xml = run_junit(load_records(tmp_path), ["error"]).tostring().decode()
    assert 'type="script_error"' in xml and "after turn" in xml
