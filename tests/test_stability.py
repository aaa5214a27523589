"""The stability check (`loopbench stability`, `make stability`): each repetition of each timing-sensitive cell
compared with the published one, the result stored as stability.json and shown in the report's Stability
section. The check itself runs beside a CPU hog for minutes and belongs to publishing, not to `make test`; here
its comparison is checked on doctored records, and the command end to end on a fast test double."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopbench.reports.load import load_records
from loopbench.reports.stability import StabilityCheck, read_check, stability_sentence
from loopbench.stability import compare_with_published, timing_sensitive
from tests.doubles import DOUBLES
from tests.edit_results import rewritten

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"


def _check(published, records) -> StabilityCheck:
    return compare_with_published(published, records, against="p", scenarios=["deadline_slow_model"],
                                  columns=["langgraph"], repetitions=1, cores=2, hog_processes=2)


@pytest.mark.process
def test_a_repetition_that_differs_from_its_published_cell_is_named(tmp_path):
    published = [r for r in load_records(DATA) if r.scenario == "deadline_slow_model"]
    assert published
    same = _check(published, published)
    assert same.holds and same.changed == [] and same.runs == len(published)

    def one_more_request(r: dict) -> None:
        if r["scenario"] == "deadline_slow_model" and r["framework"] == "langgraph":
            r["counters"]["model_requests_observed"] += 1
            r["repetition"] = 2
    moved = load_records(rewritten(DATA, tmp_path / "moved", one_more_request))
    check = _check(published, [r for r in moved if r.scenario == "deadline_slow_model"])
    assert not check.holds
    (change,) = [c for c in check.changed if c.column == "langgraph"]
    assert change.repetition == 2 and any(c.startswith("model_requests_observed:") for c in change.changes)
    assert "1 repetition(s) differed" in stability_sentence(check, None)


@pytest.mark.process
def test_a_cell_the_publication_lacks_is_not_a_pass():
    records = [r for r in load_records(DATA) if r.scenario == "deadline_slow_model"]
    check = _check([], records)
    assert not check.holds and check.missing


def test_the_storms_are_not_timing_sensitive_cells():
    from loopbench.harness.scenario import load_scenarios

    chosen = {s.id for s in timing_sensitive(load_scenarios())}
    assert {"deadline_slow_model", "deadline_slow_tool", "write_timeout_unknown"} <= chosen
    assert "model_outage" not in chosen


@pytest.mark.process
def test_the_command_stores_its_check_and_the_report_shows_it(tmp_path):
    """End to end on a test double: a first run is the 'publication'; the check against it holds (exit 0) and
    the report built from the publication with stability.json beside it says so; against a doctored
    publication it names the changed repetitions (exit 1)."""
    env = {**os.environ, "LOOPBENCH_EXTRA_ADAPTERS": ",".join(f"{k}={v}" for k, v in DOUBLES.items())}
    cli = [sys.executable, "-m", "loopbench.cli"]
    pub = tmp_path / "published"
    # the publication holds every cell the check will repeat: the suite's timing-sensitive scenarios
    from loopbench.harness.scenario import load_scenarios

    sensitive = [s.id for s in timing_sensitive(load_scenarios())]
    scenarios = [a for s in sensitive for a in ("-s", s)]
    first = subprocess.run([*cli, "run", "-f", "double-onecall", *scenarios, "--out", str(pub)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    ok = subprocess.run([*cli, "stability", "-f", "double-onecall", "--repeat", "2", "--no-hog", "--published",
                         str(pub), "--out", str(tmp_path / "check")], env=env, capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    check = read_check(tmp_path / "check")
    assert check is not None and check.holds and check.runs == 2 * len(sensitive) and check.repetitions == 2
    assert "every repetition matched its published cell (0 changed)" in ok.stdout
    (pub / "stability.json").write_text((tmp_path / "check" / "stability.json").read_text())
    report = subprocess.run([*cli, "report", str(pub), "--format", "md"], env=env, capture_output=True, text=True,
                            timeout=300)
    assert report.returncode == 0, report.stderr
    section = " ".join((pub / "report.md").read_text().split("## Stability")[1].split())  # wrapped prose: one line
    assert f"{2 * len(sensitive)} runs" in section and "compared with these results" in section

    def moved(r: dict) -> None:
        if r["scenario"] == "deadline_slow_tool":
            r["counters"]["model_requests_observed"] += 1
    doctored = rewritten(pub, tmp_path / "doctored", moved)
    bad = subprocess.run([*cli, "stability", "-f", "double-onecall", "--repeat", "1", "--no-hog", "--published",
                          str(doctored), "--out", str(tmp_path / "check2")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "changed: deadline_slow_tool × double-onecall r1: model_requests_observed" in bad.stdout
    stored = json.loads((tmp_path / "check2" / "stability.json").read_text())
    assert [c["scenario"] for c in stored["changed"]] == ["deadline_slow_tool"]
