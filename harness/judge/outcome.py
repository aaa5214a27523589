"""The outcome rules (DESIGN.md "Outcome"): first rule that applies wins.

Inputs are only native signals (what the framework returned or raised, as the adapter mapped them) and
ground truth (server cap, ledger, completion evidence). Never the scenario's expectation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopbench.harness.record import LedgerEntry, NativeSignals, Outcome
from loopbench.harness.scenario import Completion

LIMIT_OUTCOME: dict[str, Outcome] = {
    "steps": "limit_steps", "budget": "limit_budget", "deadline": "limit_deadline",
}
LIMIT_AS_ANSWER = "limit reported as an answer"


@dataclass(frozen=True)
class OutcomeDecision:
    outcome: Outcome
    rule: int
    reason: str
    notes: tuple[str, ...] = ()  # named deviations the rule itself implies (e.g. a handled limit)


def args_match(subset: dict[str, Any], args: dict[str, Any]) -> bool:
    return all(args.get(k) == v for k, v in subset.items())


def completion_holds(completion: Completion, final_text: str | None, ledger: list[LedgerEntry]) -> tuple[bool, str]:
    """Whether the completion evidence holds, and the first missing fact when it does not."""
    text = final_text or ""
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
    hung: bool = False,
    capped: bool = False,
    evidence: tuple[bool, str] = (False, "no final answer"),
) -> OutcomeDecision:
    if harness_error is not None or signals is None:
        return OutcomeDecision("error", 1, harness_error or "the adapter returned no signals")
    if hung:
        return OutcomeDecision("hung", 2, "the run passed its hard timeout and was stopped")
    if capped:
        return OutcomeDecision("capped", 3, "the server's safety cap was hit")
    if signals.limit is not None:
        how = signals.limit_signal or "raised"
        notes = (LIMIT_AS_ANSWER,) if how == "handled" else ()
        return OutcomeDecision(LIMIT_OUTCOME[signals.limit], 4, f"native {signals.limit} limit ({how})", notes)
    if signals.ended == "paused" or signals.pending:
        return OutcomeDecision("awaiting_approval", 5, f"paused with {len(signals.pending)} pending call(s)")
    if signals.denied:
        return OutcomeDecision("denied", 6, "the framework stopped the run on a denied action")
    if signals.failure is not None or signals.ended == "raised":
        kind = signals.failure or "other"
        what = signals.exception_type or signals.subtype or "error"
        return OutcomeDecision("failed", 7, f"the framework ended with a {kind} error ({what})")
    holds, why = evidence
    if holds:
        return OutcomeDecision("completed", 8, why)
    return OutcomeDecision("incomplete", 9, f"normal finish without completion evidence: {why}")
