"""The report data: everything a report shows, computed once from the results (`ReportData`, `report_data`),
with the pictures drawn by a process of their own and waited for on first use. The renderers
(reports/markdown_report.py, reports/html_report.py, reports/summary.py) only lay it out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.agents import accounting_across_agents
from loopbench.reports.answers import Answer, answers
from loopbench.reports.baseline import Baseline, CellKey, compare_with
from loopbench.reports.cells import cells, column_of, columns
from loopbench.reports.claims import CLAIMS_FILE, ClaimResult, check_claims, claims_about, load_claims
from loopbench.reports.frames import (
    accounting_details,
    accounting_frame,
    capabilities_frame,
    conformance_frame,
    environment,
    matrix_frame,
    mechanisms_frame,
    stability_frame,
    units_frame,
)
from loopbench.reports.guarded import native_vs_guarded
from loopbench.reports.load import Results
from loopbench.reports.scorecard import Score, scorecard, scorecard_frame
from loopbench.reports.severity import reasons as reasons_of
from loopbench.reports.stability import StabilityCheck, read_check, stability_sentence
from loopbench.reports.streaming import streamed_vs_not

Picture = tuple[str, str, bytes]  # (file name, title, PNG bytes)
KeyItem = tuple[str, str, str | None]  # (counter label, value, the ideal when the cell deviated on it)


@dataclass
class ReportData:
    results: Results
    env: dict[str, Any]
    matrix: pd.DataFrame
    units: pd.DataFrame
    mechanisms: pd.DataFrame
    capabilities: pd.DataFrame
    accounting: pd.DataFrame
    accounting_diffs: pd.DataFrame
    # each streaming idiom beside the idiom it streams: the pairs, and every cell where they differ
    streaming_pairs: pd.DataFrame
    streaming_diffs: pd.DataFrame
    # each guarded idiom beside the idiom it guards: the pairs, the cells still deviating when guarded (and why),
    # and the hooks each framework lacks
    guarded_pairs: pd.DataFrame
    guarded_remaining: pd.DataFrame
    guarded_lacks: pd.DataFrame
    # scenarios with sub-agents: per idiom, what its reported tokens cover; and each cell's counts per agent
    agents_summary: pd.DataFrame
    agents_cells: pd.DataFrame
    conformance: pd.DataFrame
    stability: pd.DataFrame
    claims: list[ClaimResult]
    plots: Sequence[Picture]
    scorecard: pd.DataFrame
    scores: dict[tuple[str, str], Score]
    baseline: Baseline | None = None
    # the stability check stored beside the results (`make stability`), if any
    stability_check: StabilityCheck | None = None
    # each deviating (⚠) or unsupported (⊘) cell's deviations in words (its representative run's)
    reasons: dict[CellKey, list[str]] = field(default_factory=dict)
    # the chooser's questions, answered per framework's default idiom (reports/answers.py)
    answers: list[Answer] = field(default_factory=list)

    @property
    def records(self) -> list[Any]:
        return self.results.records


def draw_elsewhere(results: Path) -> subprocess.Popen[str]:
    """`python -m loopbench.reports.plots`: the pictures of the same results, drawn beside them."""
    return subprocess.Popen([sys.executable, "-m", "loopbench.reports.plots", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Pictures(Sequence[Picture]):
    """The pictures another process is drawing, waited for on first use."""

    def __init__(self, proc: subprocess.Popen[str], out_dir: Path) -> None:
        self._proc, self._out_dir = proc, out_dir
        self._done: list[Picture] | None = None

    def _all(self) -> list[Picture]:
        if self._done is None:
            out, err = self._proc.communicate()
            if self._proc.returncode != 0:
                raise RuntimeError(f"drawing the pictures failed (exit {self._proc.returncode}): {err[-1500:]}")
            drawn = json.loads(out)
            self._done = [(name, title, (self._out_dir / name).read_bytes()) for name, title in drawn]
        return self._done

    @overload
    def __getitem__(self, i: int) -> Picture: ...

    @overload
    def __getitem__(self, i: slice) -> list[Picture]: ...

    def __getitem__(self, i: int | slice) -> Picture | list[Picture]:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())


def report_data(results: Results, claims_file: Path | None = None, baseline: Results | None = None) -> ReportData:
    """Everything the reports show but the pictures (`build_reports` has them drawn by another process)."""
    recs = results.records
    # the claims about the frameworks of this run only (and those about every framework)
    claims = claims_about(load_claims(claims_file or CLAIMS_FILE), {r.framework for r in recs})
    streaming_pairs, streaming_diffs = streamed_vs_not(recs)
    guarded_pairs, guarded_remaining, guarded_lacks = native_vs_guarded(recs)
    agents_summary, agents_cells = accounting_across_agents(recs)
    return ReportData(
        reasons=cell_reasons(recs), answers=answers(recs),
        scorecard=scorecard_frame(recs), scores=scorecard(recs),
        baseline=compare_with(baseline, recs) if baseline is not None else None,
        results=results, env=environment(recs), matrix=matrix_frame(recs), units=units_frame(recs),
        mechanisms=mechanisms_frame(recs), capabilities=capabilities_frame(recs),
        accounting=accounting_frame(recs), accounting_diffs=accounting_details(recs),
        streaming_pairs=streaming_pairs, streaming_diffs=streaming_diffs,
        guarded_pairs=guarded_pairs, guarded_remaining=guarded_remaining, guarded_lacks=guarded_lacks,
        agents_summary=agents_summary, agents_cells=agents_cells,
        conformance=conformance_frame(recs), stability=stability_frame(recs),
        claims=check_claims(recs, claims), plots=[], stability_check=read_check(results.dir),
    )


def cell_reasons(records: list[RunRecord]) -> dict[CellKey, list[str]]:
    """What each deviating or unsupported cell deviates in, in words, and why an error cell is one
    (`severity.reasons` of its representative)."""
    return {c.key: reasons_of(c.rep) for c in cells(records)
            if c.rep.verdict in ("deviates", "unsupported", "error")}


def stability_paragraphs(data: ReportData) -> list[str]:
    """The Stability section's text, for every format: the stored stability check (under load, against which
    publication), then the repetitions of this run."""
    out = []
    if data.stability_check is not None:
        revisions = {r.environment.get("loopbench_revision") for r in data.records}
        out.append(stability_sentence(data.stability_check, next(iter(revisions)) if len(revisions) == 1 else None))
    else:
        out.append("No stability check under load is stored with these results (`make stability` runs one).")
    if data.stability.empty:
        out.append("Every cell of this run ran once (run with `--repeat N` to check stability).")
    else:
        n_unstable = int((~data.stability["stable"]).sum())
        out.append(f"{len(data.stability)} cell(s) of this run ran more than once; {n_unstable} unstable.")
    return out


def abouts(data: ReportData) -> dict[str, str]:
    """Each framework variant's description, as its adapter declared it in the records."""
    out: dict[str, str] = {}
    for r in data.records:
        if r.variant_about:
            out.setdefault(column_of(r.framework, r.variant), r.variant_about)
    return {c: out[c] for c in columns(data.records) if c in out}


COMPACT_ITEMS = 2  # counters a compact cell shows: the deviating ones first


def compact_items(items: list[KeyItem]) -> list[KeyItem]:
    """The one or two counters that matter in a cell: those it deviated on, else the scenario's first keys."""
    bad = [i for i in items if i[2] is not None]
    return (bad + [i for i in items if i[2] is None])[:COMPACT_ITEMS]
