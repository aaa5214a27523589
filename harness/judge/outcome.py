"""The outcome rules: the ordered outcome table below, where the first rule that applies wins.

A record's `outcome_rule` is the number of the rule that decided it, `OutcomeRule` names it. Numbers are
stable ids, not positions: a rule added later gets the next number wherever it is tried (`SCRIPT_ERROR`, 10,
is tried second; `NOT_RUN`, 11, third; `CANCELLED`, 12, after `CAPPED`; `GUARD_STOP`, 13, after `CANCELLED`).
The same table is in docs/policy.md ("How the outcome is derived"), for readers of the report;
tests/test_outcome.py keeps the two the same, and checks each rule in order.

| # | rule | evidence | outcome |
|---|---|---|---|
| 1 | `HARNESS_ERROR` | loopbench or the adapter broke (or the adapter returned no signals) | `error` |
| 10 | `SCRIPT_ERROR` | no turn of the script answers a request: the scenario's fault | `script_error` |
| 11 | `NOT_RUN` | the idiom cannot express the scenario (no sub-agents): the adapter did not run it | `not_run` |
| 2 | `HUNG` | the run did not end within its hard timeout and was stopped | `hung` |
| 3 | `CAPPED` | the server's safety cap was hit | `capped` |
| 12 | `CANCELLED` | the caller cancelled the run and the framework stopped on it | `cancelled` |
| 13 | `GUARD_STOP` | a guarded variant: the guard stopped the run through a hook and the run stopped | its exit |
| 4 | `NATIVE_LIMIT` | a native limit: raised, inferred or handled | `limit_steps` / `limit_budget` / `limit_deadline` |
| 5 | `PAUSED` | paused with pending approval | `awaiting_approval` |
| 6 | `DENIED` | the framework stopped the run because an action was denied | `denied` |
| 7 | `FAILED` | the framework ended with an error from a tool or the model (or an unclassified raise) | `failed` |
| 8 | `COMPLETED` | a normal finish and the completion evidence holds | `completed` |
| 9 | `INCOMPLETE` | a normal finish without the completion evidence | `incomplete` |

The guard's exit (rule 13) maps to the outcome of the same name; a limit by its measure: model or tool calls
`limit_steps`, tokens or cost `limit_budget`, wall-clock `limit_deadline`. It decides only where the run ended
on it (raised or paused): a stop the framework swallowed and went on from is not the outcome.

A limit is *raised* when the framework raised or flagged it; *inferred* when the framework has no limit signal
and the adapter reads the limit from how the run ended (its last step still calling tools at the step limit);
*handled* when an error handler or a limit middleware returned an answer: still the limit's outcome, with the
deviation "limit reported as an answer".

Inputs are only native signals (what the framework returned or raised, as the adapter mapped them) and
ground truth (server cap, ledger, completion evidence). Never the scenario's expectation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from loopbench.harness.record import LedgerEntry, NativeSignals, Outcome
from loopbench.harness.scenario import Completion

LIMIT_OUTCOME: dict[str, Outcome] = {
    "steps": "limit_steps", "budget": "limit_budget", "deadline": "limit_deadline",
}
LIMIT_AS_ANSWER = "limit reported as an answer"
# the guard's limit stops by measure (loopbench.guard's Allowance): a call count is a step limit
GUARD_LIMIT_OUTCOME: dict[str, Outcome] = {
    "model_calls": "limit_steps", "tool_calls": "limit_steps", "tokens": "limit_budget", "cost_usd": "limit_budget",
    "wall_s": "limit_deadline",
}


class OutcomeRule(IntEnum):
    """The rows of the outcome table (the module docstring), in the order they are tried. The numbers are the
    records' `outcome_rule`: published records carry them, so a rule keeps its number."""

    HARNESS_ERROR = 1
    SCRIPT_ERROR = 10
    NOT_RUN = 11
    HUNG = 2
    CAPPED = 3
    CANCELLED = 12
    GUARD_STOP = 13
    NATIVE_LIMIT = 4
    PAUSED = 5
    DENIED = 6
    FAILED = 7
    COMPLETED = 8
    INCOMPLETE = 9


@dataclass(frozen=True)
class OutcomeDecision:
    outcome: Outcome
    rule: OutcomeRule
    reason: str
    notes: tuple[str, ...] = ()  # named deviations the rule itself implies (e.g. a handled limit)


def args_match(subset: dict[str, Any], args: dict[str, Any]) -> bool:
    return all(args.get(k) == v for k, v in subset.items())


def completion_holds(completion: Completion, final_text: str | None, ledger: list[LedgerEntry],
                     final_output: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Whether the completion evidence holds, and the first missing fact when it does not. `final_output`: the
    structured answer the framework returned (null: none)."""
    text = final_text or ""
    if completion.final_output:
        if final_output is None:
            return False, "no structured answer"
        for key, wanted in completion.final_output.items():
            if final_output.get(key) != wanted:
                return False, f"structured answer has {key}={final_output.get(key)!r}, not {wanted!r}"
    for needle in completion.final_text_contains:
        if needle not in text:
            return False, f"final answer lacks {needle!r}"
    calls = [e for e in ledger if e.kind == "call"]
    for ev in completion.receipts:
        if not any(e.tool == ev.tool and e.outcome == "result" and args_match(ev.args, e.args) for e in calls):
            return False, f"no {ev.tool} receipt" + (f" for {ev.args}" if ev.args else "")
    for ev in completion.effects:
        if not any(e.tool == ev.tool and e.committed and args_match(ev.args, e.args) for e in calls):
            return False, f"no committed {ev.tool} effect" + (f" for {ev.args}" if ev.args else "")
    return True, "completion evidence holds"


def derive_outcome(
    signals: NativeSignals | None,
    *,
    harness_error: str | None = None,
    script_error: str | None = None,
    hung: bool = False,
    capped: bool = False,
    evidence: tuple[bool, str] = (False, "no final answer"),
) -> OutcomeDecision:
    if harness_error is not None or signals is None:
        return OutcomeDecision("error", OutcomeRule.HARNESS_ERROR, harness_error or "the adapter returned no signals")
    if script_error is not None:
        return OutcomeDecision("script_error", OutcomeRule.SCRIPT_ERROR, script_error)
    if signals.ended == "not_run":
        return OutcomeDecision("not_run", OutcomeRule.NOT_RUN, "the idiom cannot express the scenario: not run")
    if hung:
        return OutcomeDecision("hung", OutcomeRule.HUNG, "the run passed its hard timeout and was stopped")
    if capped:
        return OutcomeDecision("capped", OutcomeRule.CAPPED, "the server's safety cap was hit")
    if signals.ended == "cancelled":
        how = signals.exception_type or signals.subtype or signals.terminal_reason or "returned"
        return OutcomeDecision("cancelled", OutcomeRule.CANCELLED, f"the caller cancelled the run; it stopped ({how})")
    guard = signals.guard
    if guard is not None and guard.exit != "completed" and (signals.ended in ("raised", "paused") or signals.pending):
        # the guard's stop counts only where the framework did stop on it (a stop it swallowed is not one)
        outcome: Outcome = (GUARD_LIMIT_OUTCOME.get(guard.measure or "", "limit_steps") if guard.exit == "limit"
                            else guard.exit)
        what = f"{guard.exit}: {guard.measure}" if guard.measure else guard.exit
        return OutcomeDecision(outcome, OutcomeRule.GUARD_STOP, f"the guard stopped the run ({what})")
    if signals.limit is not None:
        how = signals.limit_signal or "raised"
        notes = (LIMIT_AS_ANSWER,) if how == "handled" else ()
        return OutcomeDecision(LIMIT_OUTCOME[signals.limit], OutcomeRule.NATIVE_LIMIT,
                               f"native {signals.limit} limit ({how})", notes)
    if signals.ended == "paused" or signals.pending:
        return OutcomeDecision("awaiting_approval", OutcomeRule.PAUSED,
                               f"paused with {len(signals.pending)} pending call(s)")
    if signals.denied:
        return OutcomeDecision("denied", OutcomeRule.DENIED, "the framework stopped the run on a denied action")
    if signals.failure is not None or signals.ended == "raised":
        kind = signals.failure or "other"
        what = signals.exception_type or signals.subtype or "error"
        return OutcomeDecision("failed", OutcomeRule.FAILED, f"the framework ended with a {kind} error ({what})")
    holds, why = evidence
    if holds:
        return OutcomeDecision("completed", OutcomeRule.COMPLETED, why)
    return OutcomeDecision("incomplete", OutcomeRule.INCOMPLETE, f"normal finish without completion evidence: {why}")
