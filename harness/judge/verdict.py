"""The verdict: the record compared with the scenario's ideal `expect`. Computed, never copied."""

from __future__ import annotations

from typing import Any

from loopbench.harness.judge.outcome import args_match
from loopbench.harness.record import Counters, Deviation, Outcome, PendingCall, RequestLogEntry, Verdict
from loopbench.harness.scenario import Bound, Expect, Scenario


def _within(ideal: Any, observed: Any) -> bool:
    if observed is None:
        return False
    if isinstance(ideal, Bound):
        if ideal.approx is not None and abs(observed - ideal.approx) > (ideal.tol or 0):
            return False
        if ideal.min is not None and observed < ideal.min:
            return False
        return not (ideal.max is not None and observed > ideal.max)
    if isinstance(ideal, float) or isinstance(observed, float):
        return abs(observed - ideal) <= 1e-9
    return observed == ideal


def _show(ideal: Any) -> Any:
    if isinstance(ideal, Bound):
        if ideal.approx is not None:
            return f"{ideal.approx:g} ± {ideal.tol:g}"
        parts = [f">= {ideal.min:g}" if ideal.min is not None else "",
                 f"<= {ideal.max:g}" if ideal.max is not None else ""]
        return " and ".join(p for p in parts if p)
    return ideal


def compare(
    expect: Expect,
    outcome: Outcome,
    counters: Counters,
    pending: list[PendingCall],
    rule_notes: tuple[str, ...] = (),
) -> list[Deviation]:
    out: list[Deviation] = []
    if outcome not in expect.outcomes:
        note = ""
        if "stalled" in expect.outcomes and expect.stall_at_requests is not None:
            extra = (counters.model_requests_observed or 0) - expect.stall_at_requests
            note = f"ran {extra} more calls with no new information"
        out.append(Deviation(name="outcome", ideal="|".join(expect.outcomes), observed=outcome, note=note))
    for note in rule_notes:
        out.append(Deviation(name=note, ideal="a distinct limit signal", observed="a normal answer"))
    for name, ideal in expect.counters.items():
        observed = counters.get(name)
        if not _within(ideal, observed):
            out.append(Deviation(name=name, ideal=_show(ideal), observed=observed,
                                 note="" if observed is not None else "not measured for this framework"))
    if expect.pending_calls is not None:
        ok = len(pending) == len(expect.pending_calls) and all(
            any(p.tool == want.tool and args_match(want.args, p.args) for p in pending)
            for want in expect.pending_calls
        )
        if not ok:
            out.append(Deviation(
                name="pending_calls",
                ideal=[w.model_dump() for w in expect.pending_calls],
                observed=[{"tool": p.tool, "args": p.args} for p in pending],
            ))
    return out


def tool_choice_deviations(scenario: Scenario, requests: list[RequestLogEntry]) -> list[Deviation]:
    """A turn's `tool_choice` is part of the loop's configuration: each request that turn answered must have
    sent it (no `tool_choice` field is the protocol's default, auto; a request that offers no tool at all leaves
    the model none to call, which is `none` in effect: Mastra's way to send toolChoice 'none')."""
    asked = {t.id: t.tool_choice for t in scenario.script if t.tool_choice is not None}

    def sent(r: RequestLogEntry) -> str:
        return r.tool_choice or ("auto" if r.tools_offered else "none")

    missed = [f"{r.served_turn}: {sent(r)}" for r in requests
              if r.served_turn and (want := asked.get(r.served_turn.partition("#")[0])) is not None
              and sent(r) != want]
    if not missed:
        return []
    return [Deviation(name="tool_choice", ideal=", ".join(f"{t}: {c}" for t, c in asked.items()),
                      observed=", ".join(missed), note="the call was not sent with the tool_choice its turn asks")]


def verdict_of(outcome: Outcome, deviations: list[Deviation], unsupported: list[str]) -> Verdict:
    if outcome in ("error", "script_error"):  # loopbench's or the scenario's failure: nothing to judge
        return "error"
    if outcome == "not_run":  # the idiom cannot express the scenario (its `unsupported` says what)
        return "unsupported"
    if not deviations:
        return "conforms"
    return "unsupported" if unsupported else "deviates"
