"""Result history: runs without --out keep every result set, results/latest points to the newest with a record,
an explicit --out that holds results asks for --continue or --force, and show/report/diff read the latest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.results.history import point_latest

TIER = "unit"

RUN = ["run", "-f", "double-onecall", "-s", "support_draft_completes", "--jobs", "1"]


@pytest.fixture
def here(tmp_path, monkeypatch, doubles) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*extra: str):
    return CliRunner().invoke(app, [*RUN, *extra])


def _run_ids(results: Path) -> list[str]:
    return [json.loads(x)["run_id"] for x in (results / "results.jsonl").read_text().splitlines()]


@pytest.mark.process
def test_two_runs_without_out_keep_both_result_sets_and_latest_points_to_the_newest(here):
    first = _run()
    assert first.exit_code == 0, first.output
    second = _run("-s", "approval_pause")
    assert second.exit_code == 0, second.output
    sets = sorted(p for p in (here / "results").iterdir() if p.name != "latest")
    assert len(sets) == 2 and all((p / "results.jsonl").exists() for p in sets)
    latest = here / "results" / "latest"
    assert latest.is_symlink() and latest.resolve() == sets[1].resolve()
    assert len(_run_ids(sets[0])) == 1 and len(_run_ids(sets[1])) == 2
    # show, report and diff read the latest by default
    run_id = _run_ids(sets[1])[0]
    shown = CliRunner().invoke(app, ["show", run_id])
    assert shown.exit_code == 0 and run_id in shown.output, shown.output
    assert CliRunner().invoke(app, ["report", "--format", "md"]).exit_code == 0
    assert (sets[1] / "report.md").exists() and not (sets[0] / "report.md").read_text() == ""
    diffed = CliRunner().invoke(app, ["diff", str(sets[0])])
    assert diffed.exit_code == 0 and str(sets[0]) in diffed.output and "latest" in diffed.output, diffed.output


@pytest.mark.process
def test_latest_moves_only_once_the_new_run_has_a_record(here):
    assert _run().exit_code == 0
    before = (here / "results" / "latest").resolve()
    refused = _run("-f", "nosuch")
    assert refused.exit_code == 2
    assert (here / "results" / "latest").resolve() == before


@pytest.mark.process
def test_an_existing_out_needs_continue_or_force(here):
    out = here / "mine"
    assert _run("--out", str(out)).exit_code == 0
    again = _run("--out", str(out))
    assert again.exit_code == 2 and "already holds results" in again.output and "--force" in again.output
    assert len(_run_ids(out)) == 1
    forced = _run("--out", str(out), "--force")
    assert forced.exit_code == 0 and (out / "results.previous.jsonl").exists()
    cont = _run("--out", str(out), "--continue")
    assert cont.exit_code == 0 and "(1 already there)" in cont.output


@pytest.mark.process
def test_continue_without_out_finishes_the_latest(here):
    assert _run().exit_code == 0
    latest = (here / "results" / "latest").resolve()
    cont = _run("-s", "approval_pause", "--continue")
    assert cont.exit_code == 0 and "(1 already there)" in cont.output, cont.output
    assert len(_run_ids(latest)) == 2 and (here / "results" / "latest").resolve() == latest


def test_no_results_yet_is_a_clear_error(here):
    for args in (["show", "x"], ["report"], ["diff", "somewhere"], [*RUN, "--continue"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and "no results yet" in result.output, (args, result.output)


def test_a_latest_directory_from_before_history_is_kept_under_a_name(here):
    old = here / "results" / "latest"
    old.mkdir(parents=True)
    (old / "results.jsonl").write_text("{}\n")
    target = here / "results" / "new"
    target.mkdir()
    point_latest(target, here / "results")
    kept = [p for p in (here / "results").iterdir() if p.name.endswith("-was-latest")]
    assert len(kept) == 1 and (kept[0] / "results.jsonl").read_text() == "{}\n"
    assert (here / "results" / "latest").resolve() == target.resolve()
