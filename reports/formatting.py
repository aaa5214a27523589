"""Formatting for the reports: values, counter labels, deviations, verdict marks."""

from __future__ import annotations

import json
from typing import Any

from loopbench.harness.record import Counters, RunRecord, counter_label

VERDICTS = ("conforms", "deviates", "unsupported", "error")


VERDICT_MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}


COUNTER_FIELDS = tuple(Counters.model_fields)


def fmt(v: Any, width: int = 80) -> str:
    """A value for a table: null is '–' (unknown, never zero); floats short; structures as compact JSON."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, dict | list | tuple):
        s = json.dumps(v, separators=(",", ":"), ensure_ascii=False, default=str)
    else:
        s = str(v)
    return s if len(s) <= width else s[: width - 1] + "…"


label = counter_label  # a counter's short label, from the record's counter metadata


def is_counter(name: str) -> bool:
    return name.partition(".")[0] in COUNTER_FIELDS


def counter_value(rec: RunRecord, name: str) -> Any:
    try:
        return rec.counters.get(name)
    except AttributeError:
        return None


def deviation_text(d: Any) -> str:
    return f"{d.name}: {fmt(d.ideal, 40)}→{fmt(d.observed, 40)}"


def outcome_ideal(rec: RunRecord) -> str | None:
    """The outcome the scenario's ideal asks when the run's outcome deviates from it (its `outcome` deviation's
    ideal, `a|b` for several acceptable ones), else None: a deviating outcome is marked ✗ in every report."""
    return next((fmt(d.ideal, 60) for d in rec.deviations if d.name == "outcome"), None)
