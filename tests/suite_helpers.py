"""Run (part of) the suite through the real runner, in-process, for adapter integration tests."""

from __future__ import annotations

import json
from pathlib import Path

from harness.adapter import resolve_selection
from harness.record import RunRecord
from harness.runner import RunPlan, run_suite
from harness.scenario import load_scenarios


def run_framework(framework: str, out_dir: Path, scenarios: list[str] | None = None, jobs: int = 2
                  ) -> dict[tuple[str, str], RunRecord]:
    """Every scenario (or the named ones) through every variant of `framework`; records by (scenario, variant)."""
    chosen = [s for s in load_scenarios() if scenarios is None or s.id in scenarios]
    plan = RunPlan(scenarios=chosen, variants=resolve_selection([framework]), jobs=jobs, out_dir=out_dir,
                   show_progress=False)
    run_suite(plan)
    records = [RunRecord.model_validate(json.loads(line)) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    return {(r.scenario, r.variant): r for r in records}
