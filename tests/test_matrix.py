"""The version matrix: version specs checked before anything is built; the drift between releases found cell
by cell and said in words; and a two-release matrix of one framework built offline (from the checkout's uv
cache that `make test` fills, tests/offline_fixtures.py), with records of both versions, a drift report, its
environments reused by a second run, and a release the adapter cannot drive reported as unavailable, not
fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopbench.harness.adapter import BUILTIN, REGISTRY, adapter_class
from loopbench.harness.errors import BadInput
from loopbench.matrix import VersionSet, frameworks, npm_dependencies, parse_versions
from loopbench.reports.drift import drift, matrix_frame, render
from loopbench.reports.load import load_records
from tests import offline_fixtures

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports_small"


def test_version_specs_are_checked():
    assert parse_versions(["openai-agents=0.22.0, 0.24.0", "ai=7.0.30"]) == [
        VersionSet("openai-agents", "0.22.0"), VersionSet("openai-agents", "0.24.0"), VersionSet("ai", "7.0.30")]
    assert parse_versions(["ai=7.0.30"])[0].framework == "vercel-ai"
    for bad, reason in (("openai=1.0", "PKG one of"), ("langgraph", "PKG one of"), ("langgraph=1.0;rm", "not a version"),
                        ("langgraph=", "no version")):
        with pytest.raises(BadInput, match=reason):
            parse_versions([bad])


def test_the_packages_are_the_built_in_adapters_distributions():
    assert list(frameworks()) == [adapter_class(f).distribution for f in REGISTRY if f in BUILTIN]
    assert all(VersionSet(p, "1.0").framework == cls.id for p, cls in frameworks().items())


@pytest.mark.parametrize("package", [p for p, cls in frameworks().items() if cls.package_index == "npm"])
def test_an_npm_release_holds_its_companions_by_date_and_node_within_its_major(package):
    """The Node project's manifest for a release: the framework at that version, every other dependency (the
    adapter's companions) at the newest published by the release's day, Node within its locked major."""
    cls = frameworks()[package]
    locked = json.loads((cls.node_project.dir / "package.json").read_text())["dependencies"]
    held = npm_dependencies(locked, cls, "1.2.3")
    runtime = cls.node_project.runtime
    assert held == {p: "1.2.3" if p == package else f"^{v.split('.')[0]}" if p == runtime else "*"
                    for p, v in locked.items()}


def test_drift_names_each_change_at_the_release_it_happened():
    base = load_records(DATA)
    mine = [r for r in base if r.framework == "openai-agents"]
    newer = []
    for r in mine:
        upd: dict = {"framework_version": "0.25.0", "run_id": r.run_id + "-new"}
        if r.scenario == "runaway_step_limit":
            upd.update(outcome="capped", outcome_rule=3)
        if r.scenario == "approval_pause":
            upd["native"] = r.native.model_copy(update={"mechanisms": {"approval_pause": "a new approval API"}})
        newer.append(r.model_copy(update=upd))
    found = drift(mine + newer)
    assert {(d.scenario, d.before, d.after) for d in found} == {
        ("runaway_step_limit", "0.24.0", "0.25.0"), ("approval_pause", "0.24.0", "0.25.0")}
    words = {d.words() for d in found}
    assert "outcome: limit_steps → capped" in words
    assert "mechanism approval_pause: – → a new approval API" in words  # "an approval API appears"
    cols = list(matrix_frame(mine + newer).columns)
    assert cols == ["openai-agents 0.24.0", "openai-agents 0.25.0"]
    md, page = render(mine + newer, [])
    assert "| openai-agents | runaway_step_limit | 0.24.0 → 0.25.0 | outcome: limit_steps → capped |" in md
    assert "<h2>Drift</h2>" in page


def _matrix(tmp_path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPBENCH_CACHE": str(tmp_path / "cache"), "LOOPBENCH_MATRIX_OFFLINE": "1"}
    releases = ",".join([*offline_fixtures.matrix_releases(), "0.0.1"])
    return subprocess.run(
        [sys.executable, "-m", "loopbench.cli", "matrix", "--versions", f"openai-agents={releases}",
         "-s", "support_draft_completes", "-s", "runaway_step_limit", "-f", "openai-agents:default", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.process
def test_a_two_release_matrix_builds_runs_merges_and_reuses_its_environments(tmp_path):
    if (why := offline_fixtures.missing()) is not None:
        pytest.fail(why)
    other, locked = offline_fixtures.matrix_releases()
    out = tmp_path / "mx"
    done = _matrix(tmp_path, out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = load_records(out)
    assert {r.framework_version for r in records} == {other, locked}
    assert {(r.scenario, r.variant) for r in records} == {("support_draft_completes", "default"),
                                                         ("runaway_step_limit", "default")}
    assert all(r.packages["openai-agents"] == r.framework_version for r in records)
    sets = {s["version"]: s for s in json.loads((out / "sets.json").read_text())}
    assert sets[other]["status"] == sets[locked]["status"] == "ran"
    assert sets["0.0.1"]["status"] == "unavailable" and sets["0.0.1"]["reason"]  # reported, the matrix went on
    md = (out / "report.md").read_text()
    assert "## Drift" in md and "| openai-agents | 0.0.1 | openai-agents | unavailable |" in md
    assert f"openai-agents {other}" in md and f"openai-agents {locked}" in md
    again = _matrix(tmp_path, tmp_path / "mx2")
    assert again.returncode == 0, again.stderr[-2000:]
    reused = {s["version"]: s["reused_environment"] for s in json.loads((tmp_path / "mx2" / "sets.json").read_text())
              if s["status"] == "ran"}
    assert reused == {other: True, locked: True}


def test_an_npm_peer_range_is_read_the_way_npm_reads_it():
    """The companion pin (matrix.npm_companion) keeps only releases whose peer range admits the framework release."""
    from loopbench.matrix import _admits

    assert _admits(">=1.68.0-0 <2.0.0-0", "1.71.0") and not _admits(">=1.68.0-0 <2.0.0-0", "1.60.0")
    assert not _admits(">=0.21.2-0 <0.25.0-0", "1.71.0") and _admits(">=0.21.2-0 <0.25.0-0", "0.24.9")
    assert _admits("^1.2.0", "1.9.0") and not _admits("^1.2.0", "2.0.0") and not _admits("^0.2.0", "0.3.0")
    assert _admits("~1.2.0", "1.2.9") and not _admits("~1.2.0", "1.3.0")
    assert _admits("1.x", "1.5.0") and not _admits("1.x", "2.0.0") and _admits("*", "9.0.0")
    assert _admits("^0.9.0 || ^1.0.0", "1.4.0") and not _admits("^0.9.0 || ^1.0.0", "2.0.0")
