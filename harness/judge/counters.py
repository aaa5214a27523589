"""Counters of one business task: ground truth from the server's request log and the tool ledger, next to
what the framework reported per segment (summed here, because frameworks differ in whether their counters
are cumulative across a resume). Unknown stays None, never a made-up zero.
"""

from __future__ import annotations

from collections import Counter as Tally

from loopbench.harness.judge.prices import cost_usd
from loopbench.harness.record import (
    SUMMED_COUNTERS,
    Counters,
    LedgerEntry,
    ReportedCounters,
    RequestLogEntry,
    Segment,
)


def segment_parents(segments: list[Segment]) -> list[int | None]:
    """For each segment, the index of the segment whose pause it resumed, or, for the resume after a cancel (no
    pause number), the segment the caller cancelled; None for the first run."""
    pause_owner: list[int] = []  # pause number k (1-based) -> index of the segment that paused
    cancelled: int | None = None  # the last segment the caller cancelled
    parents: list[int | None] = []
    for i, seg in enumerate(segments):
        if seg.from_pause is not None:
            parents.append(pause_owner[seg.from_pause - 1])
        else:
            parents.append(cancelled if seg.kind == "resume" else None)
        if seg.outcome_signals.ended == "paused":
            pause_owner.append(i)
        elif seg.outcome_signals.ended == "cancelled":
            cancelled = i
    return parents


def reported_totals(segments: list[Segment]) -> dict[str, float | int | None]:
    """Sum each reported counter over segments; a cumulative counter counts only its growth since the
    segment it resumed from. A total is known only when every segment reported it: a sum over the segments
    that did would be a partial count published as a total, so one unknown segment makes the total None."""
    parents = segment_parents(segments)
    totals: dict[str, float | int | None] = {}
    for name in SUMMED_COUNTERS:
        total: float | int | None = None
        for seg, parent in zip(segments, parents, strict=True):
            value = getattr(seg.counters, name)
            if value is None:
                total = None
                break
            if seg.counters.cumulative and parent is not None:
                base = getattr(segments[parent].counters, name)
                if base is None:
                    total = None
                    break
                value = value - base
            total = value if total is None else total + value
        totals[name] = total
    return totals


def approval_requests_by_tool(segments: list[Segment], ledger: list[LedgerEntry]) -> dict[str, int]:
    """Approval requests, one definition for every framework: each call pending at a pause the framework
    made (a pause resumed twice is still one request), plus each decision an in-process idiom asked the
    harness for. Re-runs of the user's approval code are callback invocations, counted apart."""
    tally: Tally[str] = Tally()
    for seg in segments:
        if seg.outcome_signals.ended == "paused":
            tally.update(p.tool for p in seg.pending)
    tally.update(e.tool for e in ledger if e.kind == "approval_request")
    return dict(tally)


def build_counters(
    *,
    model_id: str,
    requests: list[RequestLogEntry],
    ledger: list[LedgerEntry],
    segments: list[Segment],
    elapsed_s: float | None,
    cpu_s: float | None,
    peak_rss_mb: float | None,
    loopbench_worker_cpu_s: float | None = None,
    loopbench_runner_cpu_s: float | None = None,
    structured: bool = False,
) -> Counters:
    """`structured`: the scenario ends with a structured answer (its answers are counted; else that count is null)."""
    calls = [e for e in ledger if e.kind == "call"]
    served_in = sum(r.input_tokens for r in requests)
    served_out = sum(r.output_tokens for r in requests)
    # each response priced by the model its request named (a request that named none: the scenario's); a model
    # without a price makes the cost unknown, never a price borrowed from another model
    costs = [cost_usd(r.model or model_id, r.input_tokens, r.output_tokens) for r in requests if r.status == 200]
    growth = [b.prompt_bytes - a.prompt_bytes for a, b in zip(requests, requests[1:], strict=False)]
    reported = reported_totals(segments)
    requests_by_tool = approval_requests_by_tool(segments, ledger)
    by_agent = [r for r in requests if r.agent is not None]  # attributed only in scenarios with sub-agents
    last: ReportedCounters | None = segments[-1].counters if segments else None
    waits = retry_after_waits(requests)
    return Counters(
        model_requests_reported=reported["model_requests_reported"],  # type: ignore[arg-type]
        model_requests_observed=len(requests),
        model_retries_observed=sum(1 for r in requests if r.retry),
        retry_after_wait_min_s=min(waits) if waits else None,
        retry_after_wait_max_s=max(waits) if waits else None,
        tool_calls_requested=sum(len(r.calls_served) for r in requests if r.status == 200),
        structured_answers_observed=sum(1 for r in requests if r.output_attempt is not None and r.status == 200)
        if structured else None,
        tool_executions=len(calls),
        tool_executions_by_tool=dict(Tally(e.tool for e in calls)),
        authorize_events_by_tool=dict(Tally(e.tool for e in ledger if e.kind == "authorize")),
        approval_requests=sum(requests_by_tool.values()),
        approval_requests_by_tool=requests_by_tool,
        effects_by_tool=dict(Tally(e.tool for e in calls if e.committed)),
        abandoned_calls=sum(1 for e in calls if e.caller_abandoned),
        runtime_steps=reported["runtime_steps"],  # type: ignore[arg-type]
        runtime_step_unit=last.runtime_step_unit if last else None,
        input_tokens_reported=reported["input_tokens_reported"],  # type: ignore[arg-type]
        input_tokens_observed=served_in,
        output_tokens_reported=reported["output_tokens_reported"],  # type: ignore[arg-type]
        output_tokens_observed=served_out,
        total_tokens_observed=served_in + served_out,
        cost_usd_reported=reported["cost_usd_reported"],
        cost_usd_observed=None if any(c is None for c in costs) else round(sum(costs), 9),  # type: ignore[arg-type]
        elapsed_s=elapsed_s,
        cpu_s=cpu_s,
        loopbench_worker_cpu_s=loopbench_worker_cpu_s,
        loopbench_runner_cpu_s=loopbench_runner_cpu_s,
        peak_rss_mb=peak_rss_mb,
        # a segment that never answered reported no pending calls: unknown, not zero
        pending_approvals=len(segments[-1].pending) if segments and segments[-1].outcome_signals.ended != "hung"
        else None,
        duplicate_effects=sum(1 for e in calls if e.duplicate_effect),
        resumes=sum(1 for s in segments if s.kind == "resume"),
        max_request_growth_bytes=max(growth) if growth else None,
        model_requests_by_agent=dict(Tally(r.agent or "" for r in by_agent)),
        input_tokens_by_agent=_summed(by_agent, "input_tokens"),
        output_tokens_by_agent=_summed(by_agent, "output_tokens"),
        tool_executions_by_agent=dict(Tally(e.agent for e in calls if e.agent)),
    )


def retry_after_waits(requests: list[RequestLogEntry]) -> list[float]:
    """For each answer that told the client to wait (`retry_after_s`) and was tried again: the seconds from the end
    of that answer to the start of the client's next request for the same conversation state (a retry of the same
    turn, by the same agent), rounded to the millisecond."""
    waits = []
    for i, hinted in enumerate(requests):
        if hinted.retry_after_s is None or hinted.served_turn is None:
            continue
        ended = hinted.t_s + hinted.duration_ms / 1000
        again = next((r for r in requests[i + 1:] if r.retry and r.served_turn == hinted.served_turn
                      and r.agent == hinted.agent and r.t_s >= hinted.t_s), None)
        if again is not None:
            waits.append(round(max(again.t_s - ended, 0.0), 3))
    return waits


def _summed(requests: list[RequestLogEntry], field: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in requests:
        out[r.agent or ""] = out.get(r.agent or "", 0) + getattr(r, field)
    return out
