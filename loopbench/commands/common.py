"""What the commands share: the two consoles, the scenarios a command runs on, the results it reads, and writing
the reports (for `report`, and for `run` once it has records)."""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from loopbench.commands.exit_policy import UNWRITABLE
from loopbench.harness.errors import BadInput
from loopbench.harness.scenario import Scenario, load_scenarios
from loopbench.reports.claims import known_claim_ids

out = Console()
err = Console(stderr=True)


def load_suite(paths: list[Path] | None, files: list[Path] | None = None) -> list[Scenario]:
    """The scenarios of `files`, else of `--scenarios` (directories or files), else the built-in suite; BadInput
    for bad files, and for a script an ideal loop cannot finish (harness/run/ideal.py: the dry run that keeps
    a scenario's own bug from being blamed on a framework)."""
    from loopbench.harness.run.ideal import script_problems
    from loopbench.harness.scenario import expand_paths

    chosen = files if files else expand_paths(paths) if paths else None
    scenarios = load_scenarios(chosen, claim_ids=known_claim_ids())
    if problems := [p for s in scenarios for p in script_problems(s)]:
        raise BadInput(problems)
    return scenarios


def select(scenarios: list[Scenario], globs: list[str]) -> list[Scenario]:
    """The scenarios whose id matches any of `--scenario`'s globs (all of them without one); BadInput naming a
    glob that matches none."""
    if not globs:
        return scenarios
    chosen = [s for s in scenarios if any(fnmatch.fnmatchcase(s.id, g) for g in globs)]
    unmatched = [g for g in globs if not any(fnmatch.fnmatchcase(s.id, g) for s in scenarios)]
    if unmatched:
        raise BadInput(f"--scenario {' '.join(unmatched)}: matches no scenario (see `loopbench list`)")
    return chosen


@contextmanager
def warnings_printed() -> Iterator[None]:
    """Warnings about the inputs (a torn last line skipped) as `warning ...` lines, not Python's format."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                err.print(f"[yellow]warning[/yellow] {w.message}", highlight=False, soft_wrap=True)


def results_or_latest(results: Path | None) -> Path:
    """The results a command was given, or results/latest (BadInput when there are none yet)."""
    from loopbench.harness.results.history import latest_results

    return results if results is not None else latest_results()


def write_reports(results: Path, formats: str, baseline: Path | None = None) -> None:
    """Build the reports of `results` in the comma-separated `formats` and name them; a full disk while writing
    them is exit 3 (the results themselves are intact)."""
    from loopbench.reports.build import build_reports

    with warnings_printed():
        try:
            paths = build_reports(results, {f.strip() for f in formats.split(",") if f.strip()}, baseline=baseline)
        except OSError as exc:  # a full disk while writing a report: the results themselves are intact
            err.print(f"[red]error[/red] {exc.filename or results}: cannot write the reports: {exc.strerror or exc}; "
                      f"the results are intact: `loopbench report {results}` once there is room",
                      highlight=False, soft_wrap=True)
            raise typer.Exit(UNWRITABLE) from None
    out.print("reports written:")
    for path in paths:
        out.print(f"  {path}")
