"""Timing-sensitive cells hold on a loaded machine: every scenario whose cells depend on the clock (a deadline,
a scripted delay or timeout) runs once per framework variant beside a CPU hog of one busy process per core,
and each run's cell must match the published one. The hog is bounded in time and killed afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.record import RunRecord
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios
from loopbench.reports.cells import cells
from loopbench.reports.diff import compare_cells

PUBLISHED = Path(__file__).resolve().parent.parent / "reports" / "published" / "results.jsonl"
HOG_LIFETIME_S = 600  # a bound even if this test is killed before its finally runs


@pytest.fixture
def cpu_hog() -> Iterator[int]:
    """One busy process per core for the length of the test."""
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {HOG_LIFETIME_S}\n"
                              "while time.time() < end: pass"]) for _ in range(cores)]
    try:
        yield cores
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def _records(path: Path) -> list[RunRecord]:
    return [RunRecord.model_validate(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]


def test_timing_sensitive_cells_match_the_published_ones_beside_a_cpu_hog(tmp_path, cpu_hog):
    timed = [s for s in load_scenarios() if s.timing_sensitive and "slow" not in s.tags]
    assert {s.id for s in timed} >= {"deadline_slow_model", "deadline_slow_tool"}
    variants = [(f, v) for f, v in resolve_selection([]) if adapter_class(f).unavailable_reason() is None]
    cores = os.cpu_count() or 1
    summary = run_suite(RunPlan(scenarios=timed, variants=variants, jobs=cores, max_jobs=cores + 1,
                                out_dir=tmp_path, show_progress=False))
    assert summary.records == len(timed) * len(variants)
    published = {c.key: c for c in cells(r for r in _records(PUBLISHED) if r.scenario in {s.id for s in timed})}
    changed = []
    for record in _records(tmp_path / "results.jsonl"):
        (one,) = cells([record])
        if one.key not in published:
            changed.append(f"{one.key}: not in the published results")
        elif changes := compare_cells(published[one.key], one):
            changed.append(f"{one.key} r{record.repetition}: " + "; ".join(f"{w} {a} -> {b}" for w, a, b in changes))
    assert not changed, f"under a {cpu_hog}-process CPU hog:\n" + "\n".join(changed)
