"""The scorecard: framework variant × category, each cell the share of cells that conform and the most
serious deviation among its deviating (⚠) cells, in words (severity from `reports.severity`); unsupported (⊘)
cells are counted apart, never its worst deviation. The answer a report gives first."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import cells, columns
from loopbench.reports.severity import Described, worst

# the suite's categories in the order a reader meets them, with the words the report uses
CATEGORY_LABEL: dict[str, str] = {
    "baseline": "finishing", "limits": "limits", "approval": "approval", "denial": "denial",
    "tool_failure": "tool failure", "model_failure": "model failure", "stall": "stalls", "context": "context",
    "subagents": "sub-agents", "cancellation": "cancellation", "validation": "structured answers",
    "wire": "hostile wire",
}
UNCATEGORISED = "other"  # records older than the category field


def category_of(rec: RunRecord) -> str:
    return rec.category or UNCATEGORISED


def category_label(category: str) -> str:
    return CATEGORY_LABEL.get(category, category)


def category_order(records: list[RunRecord]) -> list[str]:
    present = {category_of(r) for r in records}
    return [c for c in CATEGORY_LABEL if c in present] + sorted(present - set(CATEGORY_LABEL))


@dataclass
class Score:
    column: str
    category: str
    cells: int = 0
    conforms: int = 0
    errors: int = 0  # loopbench broke: says nothing about the framework
    unsupported: int = 0  # the framework has no native control for something the scenario sets
    worst: Described | None = None  # the most serious deviation of a `deviates` cell
    worst_scenario: str | None = None
    worst_run: str | None = None
    scenarios: list[str] = field(default_factory=list)
    # every deviating (⚠) cell of the category: (scenario, its run, its most serious deviation), worst first
    deviating: list[tuple[str, str, Described]] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return self.cells - self.errors

    @property
    def share(self) -> float | None:
        return self.conforms / self.judged if self.judged else None

    @property
    def deviates(self) -> int:
        return self.judged - self.conforms - self.unsupported

    def counts(self) -> str:
        """`1 of 7 conform, 2 deviate, 4 unsupported`: every judged cell counted once (errors apart)."""
        parts = [f"{self.conforms} of {self.judged} conform"]
        parts += [f"{n} {what}" for n, what in ((self.deviates, "deviate"), (self.unsupported, "unsupported")) if n]
        return ", ".join(parts) + (f" · {self.errors} error" if self.errors else "")

    def text(self) -> str:
        head = self.counts()
        if self.worst is not None:
            head += f" · {self.worst.severity}: {self.worst.words} — {self.worst_scenario}"
        if others := [sc for sc, _, _ in self.deviating if sc != self.worst_scenario]:
            head += f" · also ⚠ {', '.join(others)}"
        return head


def scorecard(records: list[RunRecord]) -> dict[tuple[str, str], Score]:
    """(column, category) -> its Score, over each cell's representative run."""
    out: dict[tuple[str, str], Score] = {}
    for c in cells(records):
        rec = c.rep
        key = (c.column, category_of(rec))
        s = out.setdefault(key, Score(*key))
        s.cells += 1
        s.scenarios.append(c.scenario)
        if rec.verdict == "error":
            s.errors += 1
            continue
        s.conforms += rec.verdict == "conforms"
        s.unsupported += rec.verdict == "unsupported"
        if rec.verdict != "deviates":  # the worst deviation is a ⚠ cell's: an unsupported cell is counted apart
            continue
        w = worst(rec)
        if w is not None:
            s.deviating.append((c.scenario, rec.run_id, w))
        if w is not None and (s.worst is None or w.rank > s.worst.rank):
            s.worst, s.worst_scenario, s.worst_run = w, c.scenario, rec.run_id
    for s in out.values():
        s.deviating.sort(key=lambda d: -d[2].rank)  # stable: equal severities keep the cells' order
    return out


def scorecard_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per framework variant, one column per category: the Score's text ('' where none ran)."""
    card = scorecard(records)
    cats = category_order(records)
    rows = []
    for col in columns(records):
        row = {"framework variant": col}
        for cat in cats:
            s = card.get((col, cat))
            row[category_label(cat)] = s.text() if s else ""
        rows.append(row)
    return pd.DataFrame(rows)
