"""Streamed vs not: each streaming idiom beside the idiom whose loop it streams (`Capabilities.stream_of`), cell
by cell: what differs between the two for the same scenario — outcome, pause, final text, the counters the server
and the ledger observed, and what the framework reported — in words. Only the records are read."""

from __future__ import annotations

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import Cell, cells, column_of

# (words, counter): what is compared besides the outcome, the pause and the final text
COMPARED: tuple[tuple[str, str], ...] = (
    ("requests observed", "model_requests_observed"),
    ("requests reported", "model_requests_reported"),
    ("tool runs", "tool_executions"),
    ("input tokens reported", "input_tokens_reported"),
    ("output tokens reported", "output_tokens_reported"),
    ("input tokens served", "input_tokens_observed"),
    ("output tokens served", "output_tokens_observed"),
    ("cost reported $", "cost_usd_reported"),
    ("resumes", "resumes"),
)
DIFF_COLUMNS = ["framework", "streamed", "not streamed", "scenario", "differences"]
PAIR_COLUMNS = ["framework", "streamed", "not streamed", "scenarios compared", "cells differing"]


def stream_pairs(records: list[RunRecord]) -> list[tuple[str, str, str]]:
    """(framework, streaming variant, the variant it streams) for every streaming idiom in the records whose
    counterpart ran too, in column order."""
    ran = {(r.framework, r.variant) for r in records}
    pairs = {(r.framework, r.variant, r.capabilities.stream_of) for r in records
             if r.capabilities is not None and r.capabilities.stream_of is not None}
    return sorted((f, v, of) for f, v, of in pairs if (f, of) in ran)


def _pending(c: Cell) -> list[str]:
    last = c.rep.segments[-1] if c.rep.segments else None
    return sorted(f"{p.tool}({p.call_id})" for p in last.pending) if last else []


def _final_text(c: Cell) -> str | None:
    last = c.rep.segments[-1] if c.rep.segments else None
    return last.outcome_signals.final_text if last else None


def _show(v: object) -> str:
    return "null" if v is None else str(v)


def differences(streamed: Cell, plain: Cell) -> list[str]:
    """Each way the streamed cell's representative run differs from the plain one's, as `what: plain → streamed`."""
    out = []
    if streamed.rep.outcome != plain.rep.outcome:
        out.append(f"outcome: {plain.rep.outcome} → {streamed.rep.outcome}")
    if _pending(streamed) != _pending(plain):
        out.append(f"pending at the end: {', '.join(_pending(plain)) or 'none'} → "
                   f"{', '.join(_pending(streamed)) or 'none'}")
    a, b = _final_text(plain), _final_text(streamed)
    if a != b:
        out.append("final text: " + ("none" if a is None else f"{len(a)} chars") + " → "
                   + ("none" if b is None else f"{len(b)} chars") + ("" if a is None or b is None else " (differs)"))
    for words, key in COMPARED:
        x, y = getattr(plain.rep.counters, key), getattr(streamed.rep.counters, key)
        if x != y:
            out.append(f"{words}: {_show(x)} → {_show(y)}")
    return out


def streamed_vs_not(records: list[RunRecord]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs, differing cells): per streaming idiom, how many scenarios both idioms ran and how many differ; and
    every differing cell with its differences in words."""
    by_key = {(c.scenario, c.framework, c.variant): c for c in cells(records)}
    pair_rows, diff_rows = [], []
    for framework, variant, of in stream_pairs(records):
        streamed_col, plain_col = column_of(framework, variant), column_of(framework, of)
        scenarios = sorted(s for s, f, v in by_key if (f, v) == (framework, variant) and (s, f, of) in by_key)
        differing = 0
        for sid in scenarios:
            found = differences(by_key[(sid, framework, variant)], by_key[(sid, framework, of)])
            if found:
                differing += 1
                diff_rows.append({"framework": framework, "streamed": streamed_col, "not streamed": plain_col,
                                  "scenario": sid, "differences": "; ".join(found)})
        pair_rows.append({"framework": framework, "streamed": streamed_col, "not streamed": plain_col,
                          "scenarios compared": len(scenarios), "cells differing": differing})
    return pd.DataFrame(pair_rows, columns=PAIR_COLUMNS), pd.DataFrame(diff_rows, columns=DIFF_COLUMNS)
