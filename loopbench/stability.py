"""The stability check (`loopbench stability`, `make stability`): do the timing-sensitive cells hold on a busy
machine? Every timing-sensitive scenario (a deadline, a scripted delay or timeout: `Scenario.timing_sensitive`)
× every selected framework variant runs `repeat` times beside a CPU hog of one busy process per core, on the
slots a plain `loopbench run` would use, and each repetition is compared on its own with the published cell,
the way `loopbench diff` compares cells. The result (reports/stability.py) is written beside the runs and,
by `make stability`, beside the publication, where the report's Stability section shows it.

It is a check of the machine-independence of the published cells, not a test: it takes minutes (the scenarios
wait on purpose) and belongs to publishing, not to `make test`."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.record import RunRecord, column_of
from loopbench.harness.run.environment import environment
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import Scenario, load_scenarios
from loopbench.reports.cells import cells
from loopbench.reports.diff import compare_cells
from loopbench.reports.load import load_results
from loopbench.reports.stability import StabilityChange, StabilityCheck, write_check

HOG_LIFETIME_S = 3600  # a bound on the hog even if this process is killed before it can stop it


@contextmanager
def cpu_hog(processes: int) -> Iterator[int]:
    """`processes` busy Python processes for the length of the block (each also ends itself after an hour)."""
    code = f"import time\nend = time.time() + {HOG_LIFETIME_S}\nwhile time.time() < end: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(processes)]
    try:
        yield processes
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def timing_sensitive(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios whose cells depend on the clock, but the retry storms (`slow`: minutes of a framework's own
    backoff, whose count does not race a limit)."""
    return [s for s in scenarios if s.timing_sensitive and "slow" not in s.tags]


def run_stability(published: Path, out_dir: Path, *, repeat: int = 3, selection: list[str] | None = None,
                  hog: bool = True, show_progress: bool = True) -> StabilityCheck:
    """Run the check into `out_dir` (results.jsonl of every repetition, then stability.json)."""
    base = load_results(published)
    scenarios = timing_sensitive(load_scenarios())
    if not scenarios:
        raise BadInput([InputProblem("scenarios", "", "no timing-sensitive scenario to check")])
    variants = [(f, v) for f, v in resolve_selection(selection or []) if adapter_class(f).unavailable_reason() is None]
    cores = os.cpu_count() or 1
    plan = RunPlan(scenarios=scenarios, variants=variants, jobs=cores, max_jobs=cores + 1, repeat=repeat,
                   out_dir=out_dir, show_progress=show_progress)
    with cpu_hog(cores if hog else 0) as hogs:
        run_suite(plan)
    check = compare_with_published(base.records, load_results(out_dir).records, against=str(base.path),
                                   scenarios=[s.id for s in scenarios],
                                   columns=[column_of(f, v) for f, v in variants], repetitions=repeat,
                                   cores=cores, hog_processes=hogs)
    write_check(check, out_dir)
    return check


def compare_with_published(published_records: list[RunRecord], records: list[RunRecord], *, against: str,
                           scenarios: list[str], columns: list[str], repetitions: int, cores: int,
                           hog_processes: int) -> StabilityCheck:
    """Each repetition of each cell compared on its own with the published cell (`diff`'s comparison)."""
    wanted = set(scenarios)
    published = {c.key: c for c in cells(r for r in published_records if r.scenario in wanted)}
    changed: list[StabilityChange] = []
    missing: set[str] = set()
    for record in records:
        (one,) = cells([record])
        if one.key not in published:
            missing.add(f"{record.scenario} × {one.column}")
        elif found := compare_cells(published[one.key], one):
            changed.append(StabilityChange(scenario=record.scenario, column=one.column,
                                           repetition=record.repetition,
                                           changes=[f"{w}: {a} -> {b}" for w, a, b in found]))
    revisions = {r.environment.get("loopbench_revision") for r in published_records}
    return StabilityCheck(
        checked_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        loopbench_revision=environment().get("loopbench_revision"), against=against,
        against_revision=next(iter(revisions)) if len(revisions) == 1 else None, cores=cores,
        hog_processes=hog_processes, repetitions=repetitions, scenarios=sorted(wanted), columns=columns,
        runs=len(records), changed=changed, missing=sorted(missing))
