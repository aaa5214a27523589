"""Cells: one (scenario, framework, variant) and its repetitions, and the columns of the comparison.

With several repetitions of a cell, the cell shows its **majority behaviour**: the (outcome, verdict) pair
most repetitions share, ties broken by the lowest repetition; the representative run is the lowest repetition
with that pair. A cell whose repetitions disagree on outcome or verdict is marked unstable. `diff` uses the same
representative.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable
from dataclasses import dataclass

from loopbench.harness.record import RunRecord, column_of

__all__ = ["Cell", "cells", "column_of", "column_sort_key", "columns", "representative"]


def column_sort_key(framework: str, variant: str) -> tuple[str, int, str]:
    """Frameworks by id, each default variant first: no framework is ranked above another by name."""
    return (framework, 0 if variant == "default" else 1, variant)


@dataclass
class Cell:
    scenario: str
    framework: str
    variant: str
    records: list[RunRecord]  # every repetition, by repetition
    rep: RunRecord  # the representative run (majority behaviour; ties: lowest repetition)
    unstable: bool

    @property
    def column(self) -> str:
        return column_of(self.framework, self.variant)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.framework, self.variant)


def _signature(r: RunRecord) -> tuple[str, str]:
    return (r.outcome, r.verdict)


def representative(records: list[RunRecord]) -> tuple[RunRecord, bool]:
    """The majority (outcome, verdict) run of a cell's repetitions (ties: lowest repetition), and instability."""
    ordered = sorted(records, key=lambda r: (r.repetition, r.started_at))
    tally = Tally(_signature(r) for r in ordered)
    best = max(tally.values())
    for r in ordered:  # first (lowest repetition) run whose signature has the top count
        if tally[_signature(r)] == best:
            return r, len(tally) > 1
    raise AssertionError("no records")  # pragma: no cover


def cells(records: Iterable[RunRecord]) -> list[Cell]:
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.scenario, r.framework, r.variant), []).append(r)
    out = []
    for (s, f, v), recs in groups.items():
        rep, unstable = representative(recs)
        out.append(Cell(s, f, v, sorted(recs, key=lambda r: r.repetition), rep, unstable))
    out.sort(key=lambda c: (c.scenario, column_sort_key(c.framework, c.variant)))
    return out


def columns(records: Iterable[RunRecord]) -> list[str]:
    pairs = {(r.framework, r.variant) for r in records}
    return [column_of(f, v) for f, v in sorted(pairs, key=lambda p: column_sort_key(*p))]
