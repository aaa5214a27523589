"""What the commands share: the two consoles (and a table on stdout that a pipe does not cut), the scenarios a
command runs on, the results it reads, and writing the reports (for `report`, and for `run` once it has
records)."""

from __future__ import annotations

import fnmatch
import io
import shlex
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from loopbench.commands.exit_policy import UNWRITABLE
from loopbench.harness.errors import BadInput, InputProblem, did_you_mean
from loopbench.harness.scenario import Scenario, load_scenarios
from loopbench.reports.claims import known_claim_ids

out = Console()
err = Console(stderr=True)
# piped or redirected, a table is laid out in this many columns: it takes only the width it needs, never less
PIPE_WIDTH = 100_000


def print_tables(*tables: Table) -> None:
    """Tables on stdout. In a terminal as rich lays them out at the terminal's width (unchanged). Piped or
    redirected (`loopbench list | grep ...`, a CI log, a file): `plain`, a blank line between tables, so no id,
    header or cell is cut short (`approval_approved…`) or folded over lines (`prot` / `ocol`), whatever width the
    terminal around the pipe has."""
    if out.is_terminal:
        for table in tables:
            out.print(table)
        return
    out.file.write("\n".join(plain(table) for table in tables))
    out.file.flush()


def plain(table: Table) -> str:
    """A table as plain text for a pipe: its title on a line of its own, then the header and one line per row in
    columns two spaces apart (no box), every cell at its full width, no trailing spaces."""
    wide = Console(file=io.StringIO(), width=PIPE_WIDTH, color_system=None, highlight=False)
    title = table.title
    table.title, table.box, table.show_edge, table.pad_edge = None, None, False, False
    with wide.capture() as captured:
        if title is not None:
            wide.print(title, soft_wrap=True)
        wide.print(table)
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def shown(path: Path) -> str:
    """`path` as one types it here: relative to the working directory when it is inside it, quoted for a shell
    when it has to be."""
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(Path.cwd().resolve())
        except (ValueError, OSError):
            pass
    return shlex.quote(str(path))


def say_open(written: list[Path]) -> None:
    """The line that ends a command that wrote reports: `open DIR/report.html` (nothing without an HTML report)."""
    html = next((p for p in written if p.name == "report.html"), None)
    if html is not None:
        out.print(f"open {shown(html)}", markup=False, highlight=False, soft_wrap=True)


def load_suite(paths: list[Path] | None, files: list[Path] | None = None) -> list[Scenario]:
    """The scenarios of `files`, else of `--scenarios` (directories or files), else the built-in suite; BadInput
    for bad files, and for a script an ideal loop cannot finish (harness/run/ideal.py: the dry run that keeps
    a scenario's own bug from being blamed on a framework)."""
    from loopbench.harness.run.ideal import refuse_script_bugs
    from loopbench.harness.scenario import expand_paths

    chosen = files if files else expand_paths(paths) if paths else None
    return refuse_script_bugs(load_scenarios(chosen, claim_ids=known_claim_ids()))


def select(scenarios: list[Scenario], globs: list[str]) -> list[Scenario]:
    """The scenarios whose id matches any of `--scenario`'s globs (all of them without one); BadInput naming
    each glob that matches none, with the ids closest to it."""
    if not globs:
        return scenarios
    chosen = [s for s in scenarios if any(fnmatch.fnmatchcase(s.id, g) for g in globs)]
    unmatched = [g for g in globs if not any(fnmatch.fnmatchcase(s.id, g) for s in scenarios)]
    if unmatched:
        hints = {g: did_you_mean(g, [s.id for s in scenarios], n=3) for g in unmatched}
        raise BadInput([InputProblem("", "", f"--scenario {g}: matches no scenario ({hint + ' ' if hint else ''}see "
                                     "`loopbench list`)") for g, hint in hints.items()])
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


def write_reports(results: Path, formats: str, baseline: Path | None = None) -> list[Path]:
    """Build the reports of `results` in the comma-separated `formats`, name them and return their paths (the
    caller ends with `say_open`); a full disk while writing them is exit 3 (the results themselves are intact)."""
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
        out.print(f"  {path}", markup=False, soft_wrap=True)
    return paths
