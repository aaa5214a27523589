"""`report`, `show` and `diff`: the commands that read a results set (a directory or its results.jsonl; by default
results/latest)."""

from __future__ import annotations

from pathlib import Path

from loopbench.commands import exit_policy
from loopbench.commands.choices import DiffFormat
from loopbench.commands.common import err, out, results_or_latest, say_open, warnings_printed, write_reports
from loopbench.harness.record import FailOn


def report(results: Path | None, formats: str, baseline: Path | None) -> None:
    """The comparison reports of `results`, marked against `baseline` when one is given."""
    say_open(write_reports(results_or_latest(results), formats, baseline))


def show(run_id: str, results: Path | None) -> None:
    """One run's record, trace and request log, readably: at the terminal's width in a terminal, each table at its
    full width when piped (no id or header cut or folded)."""
    from loopbench.reports.show import show_run

    terminal = out.is_terminal
    with warnings_printed():
        print(show_run(results_or_latest(results), run_id, color=terminal, width=out.width if terminal else None))


def diff(base: Path, new: Path | None, *, html_file: Path | None, junit: Path | None, output: DiffFormat,
         framework: list[str] | None, fail_on: list[FailOn] | None) -> int:
    """The behaviour changes from `base` to `new` (printed, and as HTML/JUnit when asked); the exit code: 1 when
    it fails `--fail-on` (by default: a cell changed), else 0."""
    from loopbench.reports.diff import compare_results, diff_markdown

    with warnings_printed():
        newer = results_or_latest(new)
        d = compare_results(base, newer, framework)
        if html_file is not None:
            from loopbench.reports.build import html_against

            html_file.write_text(html_against(newer, base), encoding="utf-8")
        kinds = list(fail_on or [FailOn.change])
        failed = d.changed if "change" in kinds else False
        if {"error", "deviation"} & set(kinds):
            from loopbench.reports.junit import failing
            from loopbench.reports.load import load_records

            mine = [r for r in load_records(newer) if not framework
                    or any(sel in (r.framework, f"{r.framework}:{r.variant}") for sel in framework)]
            failed = failed or any(failing(r, kinds) for r in mine)
    print(d.model_dump_json(indent=2) if output is DiffFormat.json else diff_markdown(d))
    if junit is not None:
        from loopbench.reports.junit import diff_junit, write

        write(diff_junit(d), junit)
        err.print(f"JUnit XML: {junit}", highlight=False, soft_wrap=True)
    if html_file is not None:
        err.print(f"HTML report with the changes marked: {html_file}", highlight=False, soft_wrap=True)
    return exit_policy.exit_code(bool(failed))
