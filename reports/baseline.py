"""A report against a baseline: which cells changed, each change explained (was → now), and the cells present
on one side only summarized in a line per framework variant or scenario. The comparison is `diff`'s
(`reports.diff.cell_changes`), so a report and `loopbench diff` never disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import cells
from loopbench.reports.diff import cell_changes, one_sided_lines
from loopbench.reports.formatting import fmt
from loopbench.reports.load import Results

CellKey = tuple[str, str, str]  # scenario, framework, variant


@dataclass(frozen=True)
class Baseline:
    path: str
    changes: dict[CellKey, list[tuple[str, Any, Any]]]
    common: int  # cells on both sides
    one_sided: list[str]
    compared: frozenset[CellKey] = frozenset()  # the cells on both sides

    def explain(self, key: CellKey) -> list[str]:
        """Each change of a cell as `what: was → now`."""
        return [change_text(*c) for c in self.changes.get(key, [])]


def change_text(what: str, was: Any, now: Any) -> str:
    return f"{what}: {fmt(was, 60)} → {fmt(now, 60)}"


def compare_with(base: Results, records: list[RunRecord]) -> Baseline:
    cb = {c.key: c for c in cells(base.records)}
    cn = {c.key: c for c in cells(records)}
    both = frozenset(set(cb) & set(cn))
    return Baseline(path=str(base.path), changes=cell_changes(cb, cn), common=len(both),
                    one_sided=one_sided_lines(set(cb), set(cn)), compared=both)
