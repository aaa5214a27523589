"""Build the reports of a results directory: DIR/report.md, DIR/report.html (one self-contained file),
DIR/matrix.csv, DIR/summary.json, and the pictures as PNG files beside them.

Every report starts with the answer: the scorecard (framework variant × category: the share of cells that
conform and the most serious deviation in words), then the changes against a baseline when one is given,
the comparison matrix (scenarios by category, with their titles; every deviating or unsupported cell says in
words what deviates: a numbered note under its table in Markdown, in the cell in HTML), the glossary (every
outcome and verdict of the record's vocabulary, every mark), how to read it, the framework's cost per model
call, mechanisms, units, accounting, the documented claims about the frameworks of the run, stability,
pictures, the environment (date, loopbench revision, Python/Node, every framework package and version), and
(HTML) every run's details.

This module is the entry: which formats, written where. What the reports show is computed in
reports/data.py and laid out by reports/markdown_report.py, reports/html_report.py and reports/summary.py
(summary.json); matrix.csv is the matrix as is. It re-exports nothing: a name is imported from its own module.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.reports.data import Pictures, ReportData, draw_elsewhere, report_data
from loopbench.reports.html_report import render_html
from loopbench.reports.load import load_results
from loopbench.reports.markdown_report import render_markdown
from loopbench.reports.summary import render_json

FORMATS = frozenset({"md", "html", "csv", "json"})


def render_csv(data: ReportData) -> str:
    """matrix.csv: the comparison matrix as is, less its `key_items` column."""
    return data.matrix.drop(columns=["key_items"], errors="ignore").to_csv(index=False)


def html_against(new: Path, base: Path) -> str:
    """The HTML report of `new` with its changes against `base` marked (no pictures: `loopbench diff --html`)."""
    return render_html(report_data(load_results(new), baseline=load_results(base)))


def build_reports(dir: Path, formats: set[str] | frozenset[str] = FORMATS, *,  # noqa: A002 - the CLI's name
                  claims_file: Path | None = None, baseline: Path | None = None) -> list[Path]:
    """Write the reports of the results in `dir` (a results directory, or a results.jsonl whose directory
    gets the reports): report.md, report.html, matrix.csv, summary.json (those in `formats`), and the
    pictures as PNG files beside the Markdown/HTML; with `baseline` (results), the changes against it marked.
    Returns the paths written.

    Raises BadInput for an unknown format or bad results (see reports.load)."""
    unknown = set(formats) - FORMATS
    if unknown:
        raise BadInput([InputProblem("", "formats", f"unknown format(s) {sorted(unknown)}; "
                                                    f"choose from {sorted(FORMATS)}")])
    want_pictures = bool({"md", "html"} & set(formats))
    # the pictures are half the report's time (matplotlib's import alone ~3 s): a process of its own draws them
    # from the same results, started first, while this one renders the rest
    drawing = draw_elsewhere(Path(dir)) if want_pictures else None
    try:
        results = load_results(dir)
        base = load_results(baseline) if baseline is not None else None
    except BaseException:
        if drawing is not None:
            drawing.kill()
            drawing.wait()
        raise
    out_dir = results.dir
    written: list[Path] = []

    def write(name: str, text: str) -> None:
        p = out_dir / name
        p.write_text(text, encoding="utf-8")
        written.append(p)

    data = report_data(results, claims_file, baseline=base)
    if drawing is not None:
        data = dataclasses.replace(data, plots=Pictures(drawing, out_dir))
    if "csv" in formats:
        write("matrix.csv", render_csv(data))
    if "html" in formats:
        write("report.html", render_html(data))
    written.extend(out_dir / name for name, _, _ in data.plots)
    if "md" in formats:
        write("report.md", render_markdown(data))
    if "json" in formats:
        write("summary.json", render_json(data))
    return written
