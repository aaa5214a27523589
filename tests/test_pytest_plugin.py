"""The pytest plugin, in a pytest of its own (pytester, a subprocess): items per scenario × framework variant,
passing against the published baseline, failing with the cell and its change named against a doctored one,
an `error` run failing its item, `--loopbench-fail-on deviation` failing a deviating one (as `run --fail-on`),
each item's outcome and verdict in -v and leading its failure text, no warning opening the session, -k and -x as
pytest users expect, and a scenario directory of one's own."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from loopbench.fail_on import fail_on_kinds
from loopbench.harness.adapter import adapter_class
from loopbench.harness.scenario import load_scenarios
from loopbench.pytest_plugin import _reasons
from tests.edit_results import rewritten

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = ROOT / "reports" / "published"


# two scenarios of the suite, by names no other scenario's contains
NARROW_K = "support_draft or runaway_step"


def _others(selected: int) -> int:
    """The items -k deselects among one framework variant's: every scenario of the suite but the selected."""
    return len(load_scenarios()) - selected


def _doctored(tmp_path: Path, cells: set[tuple[str, str]]) -> Path:
    """The published results with each (scenario, framework) default-variant cell's outcome set to `capped`."""
    def edit(r: dict) -> None:
        if (r["scenario"], r["framework"]) in cells and r["variant"] == "default":
            r.update(outcome="capped", outcome_rule=3)

    return rewritten(PUBLISHED, tmp_path / "baseline", edit)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--loopbench", "-p", "no:cacheprovider", "-rA", *args, timeout=600)


def _failure_text(got: pytest.RunResult, name: str) -> list[str]:
    """The lines of `name`'s section under FAILURES (up to the next section)."""
    lines = got.outlines
    start = next(i for i, x in enumerate(lines) if x.strip("_ ") == name and x.startswith("_"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("_", "="))), len(lines))
    return lines[start + 1:end]


def _own_tool_choice(tmp_path: Path) -> Path:
    mine = tmp_path / "mine"
    shutil.copytree(ROOT / "tests" / "data" / "tool_choice", mine)
    return mine


def test_one_item_per_scenario_and_framework_variant(pytester):
    got = _run(pytester, "--collect-only", "-q", "--loopbench-framework", "langgraph")
    ids = [x for x in got.outlines if x.startswith("loopbench::")]
    assert len(ids) == len(load_scenarios()) * len(adapter_class("langgraph").idioms())
    assert "loopbench::approval_pause[langgraph:stategraph]" in ids and "loopbench::approval_pause[langgraph]" in ids


def test_against_the_published_baseline_the_items_pass_and_v_shows_their_verdicts(pytester):
    got = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", NARROW_K,
               "--loopbench-baseline", str(PUBLISHED), "-v")
    got.assert_outcomes(passed=2, deselected=_others(2))
    # a deviation is a finding, not a failure, under the default --loopbench-fail-on error (as `run`'s)
    got.stdout.fnmatch_lines(["*loopbench::runaway_step_limit[[]openai-agents[]] PASSED limit_steps (deviates)*",
                              "*loopbench::support_draft_completes[[]openai-agents[]] PASSED completed (conforms)*"],
                             consecutive=False)


def test_a_changed_cell_fails_with_the_change_named_and_x_stops_the_runner(pytester, tmp_path):
    base = _doctored(tmp_path, {("runaway_step_limit", "openai-agents"), ("support_draft_completes", "openai-agents")})
    got = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", NARROW_K,
               "--loopbench-baseline", str(base))
    got.assert_outcomes(failed=2, deselected=_others(2))
    text = _failure_text(got, "runaway_step_limit[openai-agents]")
    assert text[0] == "limit_steps (deviates): behaves differently from the baseline: outcome: capped → limit_steps"
    stopped = _run(pytester, "--loopbench-framework", "openai-agents:default", "-k", NARROW_K,
                   "--loopbench-baseline", str(base), "-x")
    stopped.assert_outcomes(failed=1, deselected=_others(2))


def test_an_error_run_fails_its_item_and_your_own_scenarios_run(pytester, doubles, tmp_path):
    mine = _own_tool_choice(tmp_path)
    assert "double-crash" in os.environ["LOOPBENCH_EXTRA_ADAPTERS"]  # the subprocess pytest inherits the doubles
    got = _run(pytester, "--loopbench-scenarios", str(mine), "--loopbench-framework", "double-crash",
               "--loopbench-framework", "double-onecall", "-k", "forced_first", "-v")
    got.assert_outcomes(passed=1, failed=1, deselected=2)
    got.stdout.fnmatch_lines(["*loopbench::forced_first_tool[[]double-crash[]] FAILED error (error)*",
                              "*loopbench::forced_first_tool[[]double-onecall[]] PASSED incomplete (unsupported)*"],
                             consecutive=True)
    text = _failure_text(got, "forced_first_tool[double-crash]")
    assert text[0] == "error (error): RuntimeError: adapter bug on purpose", text
    assert text[1].startswith("run forced_first_tool-double-crash-default-r1-") and "`loopbench show " in text[1]


def test_node_ids_read_loopbench_from_a_directory_that_is_not_the_rootdir(pytester, doubles, tmp_path,
                                                                          monkeypatch):
    """pytest shows node ids relative to the directory it started in, and the rootdir is not always that one: with
    scenarios of one's own beside it (pytest counts `--loopbench-scenarios ../mine` among the paths that place
    the rootdir: their common parent), or started in a subdirectory of the project. Either way every line names
    an item `loopbench::<scenario>[<column>]`, never `../loopbench::...`: -v, the short summary, the progress."""
    beside = _own_tool_choice(tmp_path)  # a sibling of pytester's directory
    shutil.copytree(beside, pytester.path / "scenarios")
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    for cwd, scenarios in ((pytester.path, str(beside)), (sub, "../scenarios")):
        monkeypatch.chdir(cwd)
        for verbose in (True, False):
            got = _run(pytester, "--loopbench-scenarios", scenarios, "--loopbench-framework", "double-onecall",
                       *(["-v"] if verbose else []))
            got.assert_outcomes(passed=2)
            named = [x for x in got.outlines if "loopbench" in x and "forced_" in x]
            assert named and all(re.search(r"(^| )loopbench::forced_\w+\[double-onecall\]", x) for x in named), named
            if verbose:
                got.stdout.fnmatch_lines(["loopbench::forced_first_tool[[]double-onecall[]] PASSED *",
                                          "loopbench::forced_later_tool[[]double-onecall[]] PASSED *"])
            else:
                got.stdout.fnmatch_lines(["loopbench .. *"])  # the progress line: the suite's path, then a dot each
            assert "../loopbench" not in got.stdout.str(), got.stdout.str()


def test_fail_on_deviation_fails_a_deviating_item_as_run_fail_on_does(pytester, doubles, tmp_path):
    """double-onecall's run does not conform (it stops after one call; it cannot express tool_choice, so the base
    records the cell unsupported): the default passes it (above); with --loopbench-fail-on deviation, which fails
    any verdict but conforms, it fails, led by its outcome and verdict, then its top deviations."""
    mine = _own_tool_choice(tmp_path)
    got = _run(pytester, "--loopbench-scenarios", str(mine), "--loopbench-framework", "double-onecall",
               "--loopbench-fail-on", "deviation", "-v")
    got.assert_outcomes(failed=2)
    got.stdout.fnmatch_lines(["*loopbench::forced_first_tool[[]double-onecall[]] FAILED incomplete (unsupported)*"])
    text = _failure_text(got, "forced_first_tool[double-onecall]")
    assert text[0] == ("incomplete (unsupported): fails --loopbench-fail-on deviation: outcome: completed→incomplete; "
                       "model_requests_observed: 2→1; tool_choice: read_ticket: required→read_ticket: auto"), text
    # the short summary line: the plain word, then the failure text, led by the outcome and verdict
    got.stdout.fnmatch_lines(["FAILED *loopbench::forced_later_tool[[]double-onecall[]] - Failed: incomplete (*"])


def test_no_warning_opens_the_session_and_a_bad_fail_on_is_refused(pytester):
    """pytest-asyncio warns when nothing sets asyncio_default_fixture_loop_scope (pytester's directory has no
    configuration, as a CI job's often has none): the plugin says `fixture-scope`, what unset means; a value of
    one's own is kept."""
    got = _run(pytester, "--collect-only", "-q", "--loopbench-framework", "openai-agents:default")
    assert got.ret == 0
    assert "Warning" not in got.stdout.str() + got.stderr.str(), got.stderr.str()
    header = _run(pytester, "--collect-only", "--loopbench-framework", "openai-agents:default",
                  "-o", "asyncio_default_fixture_loop_scope=function")
    header.stdout.fnmatch_lines(["asyncio: *asyncio_default_fixture_loop_scope=function*"])
    bad = _run(pytester, "--collect-only", "--loopbench-fail-on", "deviations")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--loopbench-fail-on: invalid choice: 'deviations'" in bad.stderr.str(), bad.stderr.str()


def test_the_reasons_an_item_fails_follow_run_fail_on_and_name_the_top_three():
    """Without a subprocess: `run --fail-on`'s default and choices, a hung run failing whatever the choice, and
    a long list of deviations or changes cut to three."""
    def record(outcome: str, verdict: str, n: int = 0, reason: str | None = None) -> SimpleNamespace:
        devs = [SimpleNamespace(name=f"d{i}", ideal=i, observed=i + 1) for i in range(n)]
        return SimpleNamespace(outcome=outcome, verdict=verdict, deviations=devs, error_reason=reason)

    assert fail_on_kinds(None) == fail_on_kinds([]) == ["error"]
    assert fail_on_kinds(["deviation", "error", "deviation"]) == ["deviation", "error"]
    default, strict = fail_on_kinds(None), fail_on_kinds(["deviation"])
    assert _reasons(record("capped", "deviates", 5), default, []) == []  # a finding, not a failure
    assert _reasons(record("capped", "deviates", 5), strict, []) == [
        "fails --loopbench-fail-on deviation: d0: 0→1; d1: 1→2; d2: 2→3 (+2 more)"]
    assert _reasons(record("completed", "conforms"), strict, []) == []
    assert _reasons(record("error", "error", reason="boom"), strict, []) == ["boom"]  # an error run deviates too
    assert _reasons(record("hung", "deviates", 1, "killed after 61 s"), default, []) == [
        "the run hung: killed after 61 s"]
    changes = [("outcome", "capped", "completed"), ("verdict", "deviates", "conforms"), ("deviations", "a", "b"),
               ("tool_executions", 1, 2)]
    assert _reasons(record("completed", "conforms"), default, changes) == [
        "behaves differently from the baseline: outcome: capped → completed; verdict: deviates → conforms; "
        "deviations: a → b (+1 more)"]


def test_a_baseline_change_of_the_deviations_names_each_once():
    """`loopbench diff`'s deviations cell is both lists, then what is new and gone in them: the failure text
    names the two lists (was → now) and no name twice."""
    from loopbench.reports.cells import cells
    from loopbench.reports.diff import compare_cells
    from loopbench.reports.load import load_records

    record = next(r for r in load_records(PUBLISHED) if r.deviations and r.variant == "default")
    names = ", ".join(sorted({d.name for d in record.deviations}))
    clean = record.model_copy(update={"deviations": []})
    (base,), (new,) = cells([clean]), cells([record])
    default = fail_on_kinds(None)
    gained = _reasons(record, default, [c for c in compare_cells(base, new) if c[0] == "deviations"])
    assert gained == [f"behaves differently from the baseline: deviations: none → {names}"]
    lost = _reasons(clean, default, [c for c in compare_cells(new, base) if c[0] == "deviations"])
    assert lost == [f"behaves differently from the baseline: deviations: {names} → none"]
    both = [("deviations", "a, b", "b, c (new: c; gone: a)"), ("deviations", "a, b", "a (gone: b)")]
    assert _reasons(clean, default, both) == [
        "behaves differently from the baseline: deviations: a, b → b, c; deviations: a, b → a"]
