"""The version matrix's report: the suite with a column per framework version, and the drift table — for each
cell, the version at which its outcome, verdict, a counter, a native signal, a limit translation, a mechanism
or an unsupported intent changed, each change in words (was → now). Built on `diff`'s cell comparison."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from packaging.version import InvalidVersion, Version

from loopbench.harness.record import RunRecord, column_of
from loopbench.reports.cells import Cell, cells, column_sort_key
from loopbench.reports.diff import compare_cells
from loopbench.reports.formatting import VERDICT_MARK, fmt
from loopbench.reports.html_report import CSS, html_table
from loopbench.reports.markdown_report import md_table


def _version_key(v: str | None) -> tuple[int, Any]:
    try:
        return (0, Version(v or ""))
    except InvalidVersion:
        return (1, v or "")


@dataclass(frozen=True)
class Drift:
    scenario: str
    column: str  # framework variant
    before: str  # version
    after: str
    what: str
    was: Any
    now: Any

    def words(self) -> str:
        return f"{self.what}: {fmt(self.was, 70)} → {fmt(self.now, 70)}"


def by_version(records: list[RunRecord]) -> dict[tuple[str, str], dict[str, dict[str, Cell]]]:
    """(framework, variant) -> version -> scenario -> cell (each version's records judged as their own set)."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.framework, r.variant, r.framework_version or "?"), []).append(r)
    out: dict[tuple[str, str], dict[str, dict[str, Cell]]] = {}
    for (f, v, ver), recs in groups.items():
        out.setdefault((f, v), {})[ver] = {c.scenario: c for c in cells(recs)}
    return {k: dict(sorted(vs.items(), key=lambda kv: _version_key(kv[0])))
            for k, vs in sorted(out.items(), key=lambda kv: column_sort_key(*kv[0]))}


def _extra_changes(a: Cell, b: Cell) -> list[tuple[str, Any, Any]]:
    """What `diff` does not compare but a release can change: the native mechanism of each intent, and what the
    adapter could not express."""
    out: list[tuple[str, Any, Any]] = []
    ma, mb = a.rep.native.mechanisms, b.rep.native.mechanisms
    for intent in sorted(set(ma) | set(mb)):
        if ma.get(intent) != mb.get(intent):
            out.append((f"mechanism {intent}", ma.get(intent), mb.get(intent)))
    if sorted(a.rep.unsupported) != sorted(b.rep.unsupported):
        out.append(("unsupported", ", ".join(sorted(a.rep.unsupported)) or "none",
                    ", ".join(sorted(b.rep.unsupported)) or "none"))
    return out


def drift(records: list[RunRecord]) -> list[Drift]:
    """Every change between consecutive versions of each framework variant, cell by cell."""
    out: list[Drift] = []
    for (f, v), versions in by_version(records).items():
        ordered = list(versions)
        for before, after in zip(ordered, ordered[1:], strict=False):
            for scenario in sorted(set(versions[before]) & set(versions[after])):
                a, b = versions[before][scenario], versions[after][scenario]
                for what, was, now in compare_cells(a, b) + _extra_changes(a, b):
                    out.append(Drift(scenario, column_of(f, v), before, after, what, was, now))
    return out


def matrix_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Scenario × (framework variant, version): the verdict mark and the outcome."""
    table: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for (f, v), versions in by_version(records).items():
        for ver, scen in versions.items():
            col = f"{column_of(f, v)} {ver}"
            columns.append(col)
            for sid, c in scen.items():
                table.setdefault(sid, {})[col] = f"{VERDICT_MARK.get(c.rep.verdict, '')} {c.rep.outcome}"
    df = pd.DataFrame.from_dict(table, orient="index").reindex(columns=columns).sort_index().fillna("not run")
    df.index.name = "scenario"
    return df


def drift_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per cell and release step: every change of that step, in words, outcome and verdict first."""
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for d in drift(records):
        grouped.setdefault((d.column, d.scenario, d.before, d.after), []).append(d.words())
    rows = [{"framework variant": col, "scenario": scen, "versions": f"{before} → {after}",
             "what changed": "; ".join(changes)} for (col, scen, before, after), changes in grouped.items()]
    return pd.DataFrame(rows, columns=["framework variant", "scenario", "versions", "what changed"])


def render(records: list[RunRecord], sets: list[dict[str, Any]]) -> tuple[str, str]:
    """(report.md, report.html) of a matrix results set and its `sets.json`."""
    status = pd.DataFrame([{"package": s["package"], "version": s["version"], "framework": s["framework"],
                            "status": s["status"], "runs": s["runs"], "reason": s.get("reason") or ""}
                           for s in sets])
    matrix = matrix_frame(records)
    drifts = drift_frame(records)
    intro = ("Each framework release runs the same suite in an environment of its own (the project's lock with "
             "that one package re-resolved). The drift table lists, for each cell, the release at which its "
             "outcome, verdict, a counter, a native signal, a limit translation, a mechanism or an unsupported "
             "intent changed, compared with the release before it (timing counters are not compared).")
    md = "\n".join([
        "# loopbench version matrix", "", intro, "", "## Releases", "", md_table(status),
        "## Drift", "", md_table(drifts) if not drifts.empty else "No cell changed between releases.\n",
        "## Matrix", "", md_table(matrix, index=True)])
    body = (f"<h1>loopbench version matrix</h1><p>{html.escape(intro)}</p><h2>Releases</h2>{html_table(status)}"
            f"<h2>Drift</h2>{html_table(drifts) if not drifts.empty else '<p>No cell changed between releases.</p>'}"
            f"<h2>Matrix</h2>{html_table(matrix.reset_index())}")
    page = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">'
            f"<title>loopbench version matrix</title><style>{CSS}</style></head><body>{body}</body></html>\n")
    return md + "\n", page


def write_report(out: Path) -> list[Path]:
    from loopbench.reports.load import load_records

    records = load_records(out) if (out / "results.jsonl").stat().st_size else []
    sets = json.loads((out / "sets.json").read_text()) if (out / "sets.json").exists() else []
    md, page = render(records, sets)
    (out / "report.md").write_text(md, encoding="utf-8")
    (out / "report.html").write_text(page, encoding="utf-8")
    return [out / "report.md", out / "report.html"]
