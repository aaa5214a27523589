"""The whole suite through the real runner, run once per test session and shared by the adapter tests and the
published-results check (every framework, every variant, every scenario)."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.record import RunRecord
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios

# the slots `loopbench run` picks by default (a compute slot per core; the slow runs get waiting slots of their
# own), so the published cells are checked under the schedule users get
SUITE_JOBS = os.cpu_count() or 1


@cache
def full_suite() -> Path:
    """Run the suite once (every available framework and variant); the results directory."""
    out = Path(tempfile.mkdtemp(prefix="loopbench-suite-"))
    variants = [(f, v) for f, v in resolve_selection([]) if adapter_class(f).unavailable_reason() is None]
    run_suite(RunPlan(scenarios=load_scenarios(), variants=variants, jobs=SUITE_JOBS, out_dir=out,
                      show_progress=False))
    return out


def suite_records() -> list[RunRecord]:
    lines = (full_suite() / "results.jsonl").read_text().splitlines()
    return [RunRecord.model_validate(json.loads(line)) for line in lines]


def run_framework(framework: str) -> dict[tuple[str, str], RunRecord]:
    """The shared suite's records of one framework, by (scenario, variant)."""
    return {(r.scenario, r.variant): r for r in suite_records() if r.framework == framework}
