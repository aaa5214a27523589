"""Accounting across agents: for every cell of a scenario with sub-agents, the model calls and tokens the server
served to the main agent and to the whole tree (its ground truth per agent), beside the tokens the framework
reported for the run, and which of the two the report covers. Only the records are read."""

from __future__ import annotations

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import Cell, cells

MAIN = "main"  # the main agent's id in the per-agent counters (harness/scenario/model.py MAIN_AGENT)
COLUMNS = ["scenario", "framework", "outcome", "requests main", "requests children", "tokens served main",
           "tokens served tree", "tokens reported", "reported covers"]
SUMMARY_COLUMNS = ["framework", "cells", "tree", "main loop", "neither", "not reported", "children never ran"]


def has_agents(r: RunRecord) -> bool:
    """A record of a scenario with sub-agents (its requests are attributed to agents)."""
    return r.category == "subagents" or bool(r.counters.model_requests_by_agent)


def _tokens(by_agent_in: dict[str, int], by_agent_out: dict[str, int], agent: str) -> int:
    return by_agent_in.get(agent, 0) + by_agent_out.get(agent, 0)


def coverage(r: RunRecord) -> str:
    """What the framework's reported tokens cover: `tree` (every agent's), `main loop` (the main agent's alone),
    `neither`, `not reported`; a run whose children made no request cannot tell the two apart."""
    c = r.counters
    if c.input_tokens_reported is None or c.output_tokens_reported is None:
        return "not reported"
    reported = c.input_tokens_reported + c.output_tokens_reported
    tree = (c.input_tokens_observed or 0) + (c.output_tokens_observed or 0)
    main = _tokens(c.input_tokens_by_agent, c.output_tokens_by_agent, MAIN)
    if tree == main:
        return "children never ran"
    if reported == tree:
        return "tree"
    if reported == main:
        return "main loop"
    return "neither"


def _row(cell: Cell) -> dict[str, object]:
    r = cell.rep
    c = r.counters
    reported = (None if c.input_tokens_reported is None or c.output_tokens_reported is None
                else c.input_tokens_reported + c.output_tokens_reported)
    return {
        "scenario": cell.scenario, "framework": cell.column, "outcome": r.outcome,
        "requests main": c.model_requests_by_agent.get(MAIN, 0),
        "requests children": sum(n for a, n in c.model_requests_by_agent.items() if a != MAIN),
        "tokens served main": _tokens(c.input_tokens_by_agent, c.output_tokens_by_agent, MAIN),
        "tokens served tree": (c.input_tokens_observed or 0) + (c.output_tokens_observed or 0),
        "tokens reported": "not reported" if reported is None else reported,
        "reported covers": coverage(r),
    }


def accounting_across_agents(records: list[RunRecord]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per framework variant: how many sub-agent cells its reported tokens cover the tree, the main loop alone,
    neither; every cell that ran, in detail). Cells not run (an idiom with no sub-agents) are left out."""
    ran = [c for c in cells(r for r in records if has_agents(r)) if c.rep.outcome != "not_run"]
    detail = pd.DataFrame([_row(c) for c in sorted(ran, key=lambda c: (c.scenario, c.column))], columns=COLUMNS)
    summary = []
    for column in sorted({c.column for c in ran}):
        mine = [coverage(c.rep) for c in ran if c.column == column]
        summary.append({"framework": column, "cells": len(mine),
                        **{k: mine.count(k) for k in SUMMARY_COLUMNS[2:]}})
    return pd.DataFrame(summary, columns=SUMMARY_COLUMNS), detail
