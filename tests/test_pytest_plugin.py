"""The pytest plugin, in a pytest of its own (pytester, a subprocess): items per scenario × framework variant,
passing against the published baseline, failing with the cell and its change named against a doctored one,
an `error` run failing its item, -k and -x as pytest users expect, and a scenario directory of one's own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.edit_results import rewritten

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "reports" / "published"


def _doctored(tmp_path: Path, cells: set[tuple[str, str]]) -> Path:
    """The published results with each (scenario, framework) default-variant cell's outcome set to `capped`."""
    def edit(r: dict) -> None:
        if (r["scenario"], r["framework"]) in cells and r["variant"] == "default":
            r.update(outcome="capped", outcome_rule=3)

    return rewritten(PUBLISHED, tmp_path / "baseline", edit)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--loopbench", "-p", "no:cacheprovider", "-rA", *args, timeout=600)


def test_one_item_per_scenario_and_framework_variant(pytester):
    got = _run(pytester, "--collect-only", "-q", "--loopbench-framework", "langgraph")
    ids = [x for x in got.outlines if x.startswith("loopbench::")]
    assert len(ids) == 27 * 3
    assert "loopbench::approval_pause[langgraph:stategraph]" in ids and "loopbench::approval_pause[langgraph]" in ids


def test_against_the_published_baseline_the_items_pass(pytester):
    got = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", "support_draft or runaway",
               "--loopbench-baseline", str(PUBLISHED))
    got.assert_outcomes(passed=2, deselected=25)


def test_a_changed_cell_fails_with_the_change_named_and_x_stops_the_runner(pytester, tmp_path):
    base = _doctored(tmp_path, {("runaway_step_limit", "openai-agents"), ("support_draft_completes", "openai-agents")})
    got = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", "support_draft or runaway",
               "--loopbench-baseline", str(base))
    got.assert_outcomes(failed=2, deselected=25)
    got.stdout.fnmatch_lines(["*runaway_step_limit[[]openai-agents[]] behaves differently from the baseline: "
                              "outcome: capped → limit_steps*"])
    stopped = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", "support_draft or runaway",
                   "--loopbench-baseline", str(base), "-x")
    stopped.assert_outcomes(failed=1, deselected=25)


def test_an_error_run_fails_its_item_and_your_own_scenarios_run(pytester, doubles, tmp_path):
    mine = tmp_path / "mine"
    shutil.copytree(ROOT / "tests" / "data" / "tool_choice", mine)
    assert "double-crash" in os.environ["LOOPBENCH_EXTRA_ADAPTERS"]  # the subprocess pytest inherits the doubles
    got = _run(pytester, "--loopbench-scenarios", str(mine), "--loopbench-framework", "double-crash",
               "--loopbench-framework", "double-onecall", "-k", "forced_first")
    got.assert_outcomes(passed=1, failed=1, deselected=2)
    got.stdout.fnmatch_lines(["*forced_first_tool[[]double-crash[]]: error:*"])
