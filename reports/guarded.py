"""Native vs guarded: each guarded idiom (`Capabilities.guard_of`) beside the idiom it guards, cell by cell — how
many cells conform natively and with loopbench.guard installed through the framework's own hooks — and, for each
cell that still deviates when guarded, why: the extension point the framework lacks (`Capabilities.guard_lacks`),
a matter outside the policy (a count the framework reports itself, a task that sets no allowance), the framework's
own end short of the ideal (the guard is a restraint: it stops, refuses or pauses, it cannot make a loop retry or go
on), or a gap of the guard's own. Only the records are read.

Which extension point a deviation needs is read from the deviation alone (its counter, or for the outcome the
ideal's outcome): the table below, the same for every framework.
"""

from __future__ import annotations

import pandas as pd

from loopbench.harness.record import Deviation, RunRecord
from loopbench.reports.cells import Cell, cells, column_of

# a counter's deviation -> the extension points that reach it (the first word of a dotted name: `x_by_tool.t`)
COUNTER_HOOKS: dict[str, tuple[str, ...]] = {
    "model_requests_observed": ("before_model_call",),
    "total_tokens_observed": ("before_model_call", "model_usage"),
    "cost_usd_observed": ("before_model_call", "model_usage"),
    "input_tokens_observed": ("before_model_call", "model_usage"),
    "output_tokens_observed": ("before_model_call", "model_usage"),
    "tool_executions": ("before_tool_call",),
    "tool_executions_by_tool": ("before_tool_call",),
    "effects_by_tool": ("before_tool_call",),
    "duplicate_effects": ("before_tool_call",),
    "max_request_growth_bytes": ("tool_result",),
    "approval_requests": ("pause",),
    "approval_requests_by_tool": ("pause",),
    "pending_approvals": ("pause",),
    "pending_calls": ("pause",),
    "resumes": ("pause",),
    "elapsed_s": ("deadline",),
    "model_requests_by_agent": ("sub_agent", "before_model_call"),
}
# the ideal's outcome -> the extension points a loop needs to end that way
OUTCOME_HOOKS: dict[str, tuple[str, ...]] = {
    "limit_steps": ("before_model_call",), "limit_budget": ("before_model_call", "model_usage"),
    "limit_deadline": ("deadline",), "awaiting_approval": ("pause",), "denied": ("before_tool_call",),
    "stalled": ("after_tool_call",), "failed": ("after_tool_call",),
}
# deviations no hook of the policy reaches: what the framework itself counts or does
OUTSIDE: dict[str, str] = {
    "model_requests_reported": "the framework's own count of requests: the guard counts its own, it does not change "
                               "what the framework reports",
    "input_tokens_reported": "the framework's own token count",
    "output_tokens_reported": "the framework's own token count",
    "abandoned_calls": "what the framework does with calls in flight on the caller's cancel",
    "structured_answers_observed": "the framework's own validation retries of a structured answer",
    "retry_after_wait_min_s": "the provider client's own retry waits",
    "limit reported as an answer": "the framework's own limit handler",
}
PAIR_COLUMNS = ["framework", "guarded", "native", "scenarios compared", "native conforms", "guarded conforms",
                "cells the guard fixed", "still deviating"]
REMAINING_COLUMNS = ["framework", "guarded", "scenario", "deviations", "why"]
LACKS_COLUMNS = ["framework", "hook it lacks", "what the policy cannot do there"]


def guard_pairs(records: list[RunRecord]) -> list[tuple[str, str, str]]:
    """(framework, guarded variant, the variant it guards) for each guarded idiom whose counterpart ran too."""
    ran = {(r.framework, r.variant) for r in records}
    pairs = {(r.framework, r.variant, r.capabilities.guard_of) for r in records
             if r.capabilities is not None and r.capabilities.guard_of is not None}
    return sorted((f, v, of) for f, v, of in pairs if (f, of) in ran)


def hooks_for(d: Deviation) -> tuple[str, ...]:
    """The extension points a loop needs to avoid deviation `d` (for the outcome: to end as the ideal does)."""
    if d.name == "outcome":
        ideal = d.ideal if isinstance(d.ideal, list) else [d.ideal]
        return tuple(dict.fromkeys(h for o in ideal for h in OUTCOME_HOOKS.get(str(o), ())))
    return COUNTER_HOOKS.get(d.name.split(".", 1)[0], ())


NO_ALLOWANCE = ("outside the policy: the task sets no allowance, and the guard enforces the task's and invents none "
                "(the scenario asks for the framework's own default)")
SHORT = ("beyond a restraint: the framework ended the task itself ({observed}) short of the ideal, with no guard stop "
         "(the guard refuses, stops or pauses; it cannot make a loop retry, resume or go on)")
GAP = "the framework has the hooks: the guard does not reach this yet"


def _below(d: Deviation) -> bool:
    """A counter the loop stayed under: fewer requests, runs or answers than the ideal."""
    number = (int, float)
    return (d.name != "outcome" and isinstance(d.ideal, number) and isinstance(d.observed, number)
            and not isinstance(d.ideal, bool) and d.observed < d.ideal)


def _ideal_outcomes(d: Deviation) -> set[str]:
    return {part for o in (d.ideal if isinstance(d.ideal, list) else [d.ideal]) for part in str(o).split("|")}


def why(c: Cell) -> str:
    """Why a guarded cell still deviates, deviation by deviation: a matter outside the policy, the missing hook the
    framework declares, the framework's own end short of the ideal (a restraint cannot make a loop do more), or the
    guard's own gap."""
    rep = c.rep
    lacks = rep.capabilities.guard_lacks if rep.capabilities is not None else {}
    # in a scenario with sub-agents every deviation may come from a child's loop: the sub-agent hooks count too
    tree = ("sub_agent",) if set(rep.counters.model_requests_by_agent or {}) - {"main"} else ()
    no_allowance = all(t.neutral is None for t in rep.limits.values())
    # the loop did less than the ideal and the guard stopped nothing: the framework's own end, not an overrun
    short = (rep.native.signals is None or rep.native.signals.guard is None) and any(
        _below(d) or (d.name == "outcome" and "completed" in _ideal_outcomes(d)) for d in rep.deviations)
    reasons: list[str] = []
    for d in rep.deviations:
        key = d.name.split(".", 1)[0]
        missing = [h for h in (*tree, *hooks_for(d)) if h in lacks]
        if key in OUTSIDE:
            text = f"outside the policy: {OUTSIDE[key]}"
        elif d.name == "outcome" and d.observed == "capped" and no_allowance:
            text = NO_ALLOWANCE
        elif missing:
            text = f"missing hook `{missing[0]}`: {lacks[missing[0]]}"
        elif short and (d.name == "outcome" or _below(d)):
            text = SHORT.format(observed=rep.outcome)
        else:
            text = GAP
        if text not in reasons:
            reasons.append(text)
    return "; ".join(reasons)


def native_vs_guarded(records: list[RunRecord]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(pairs, remaining, lacks): per guarded idiom its conformance beside the native idiom's; each cell that
    still deviates when guarded, with why; and each framework's declared missing hooks."""
    by_key = {(c.scenario, c.framework, c.variant): c for c in cells(records)}
    pair_rows, remaining_rows, lacks_rows = [], [], []
    for framework, variant, of in guard_pairs(records):
        guarded_col, native_col = column_of(framework, variant), column_of(framework, of)
        scenarios = sorted(s for s, f, v in by_key if (f, v) == (framework, variant) and (s, f, of) in by_key)
        native_ok = sum(by_key[(s, framework, of)].rep.verdict == "conforms" for s in scenarios)
        guarded_ok = sum(by_key[(s, framework, variant)].rep.verdict == "conforms" for s in scenarios)
        fixed = sum(by_key[(s, framework, variant)].rep.verdict == "conforms"
                    and by_key[(s, framework, of)].rep.verdict != "conforms" for s in scenarios)
        for sid in scenarios:
            g = by_key[(sid, framework, variant)]
            if g.rep.verdict != "conforms":
                remaining_rows.append({"framework": framework, "guarded": guarded_col, "scenario": sid,
                                       "deviations": ", ".join(d.name for d in g.rep.deviations) or g.rep.verdict,
                                       "why": why(g) or g.rep.verdict})
        pair_rows.append({"framework": framework, "guarded": guarded_col, "native": native_col,
                          "scenarios compared": len(scenarios), "native conforms": native_ok,
                          "guarded conforms": guarded_ok, "cells the guard fixed": fixed,
                          "still deviating": len(scenarios) - guarded_ok})
        some = next((by_key[(s, framework, variant)].rep for s in scenarios), None)
        if some is not None and some.capabilities is not None:
            for hook, text in sorted(some.capabilities.guard_lacks.items()):
                lacks_rows.append({"framework": framework, "hook it lacks": hook,
                                   "what the policy cannot do there": text})
    return (pd.DataFrame(pair_rows, columns=PAIR_COLUMNS), pd.DataFrame(remaining_rows, columns=REMAINING_COLUMNS),
            pd.DataFrame(lacks_rows, columns=LACKS_COLUMNS))
