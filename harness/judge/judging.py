"""Judging a business task: its ground truth and segments in, one RunRecord out. Pure: no processes, no I/O,
so every rule (outcome, counters, deviations, verdict) is unit-testable from data alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopbench.harness.judge.counters import build_counters
from loopbench.harness.judge.outcome import completion_holds, derive_outcome
from loopbench.harness.judge.verdict import compare, tool_choice_deviations, verdict_of
from loopbench.harness.record import (
    AuxiliaryRequest,
    Capabilities,
    Deviation,
    LedgerEntry,
    NativeRecord,
    NativeSignals,
    RequestLogEntry,
    RunRecord,
    Segment,
    SegmentResult,
    Violation,
)
from loopbench.harness.scenario import Scenario


@dataclass(frozen=True)
class TaskIdentity:
    run_id: str
    scenario: Scenario
    framework: str
    variant: str
    repetition: int
    started_at: str
    loopbench_version: str | None = None
    framework_version: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    capabilities: Capabilities | None = None
    variant_about: str | None = None


@dataclass(frozen=True)
class TaskEvidence:
    """Everything observed of one task: what the adapter returned per segment, what the server and the ledger
    saw, and how the harness ended it."""

    segments: list[Segment]
    results: list[SegmentResult]
    requests: list[RequestLogEntry]
    ledger: list[LedgerEntry]
    capped: bool = False
    violations: list[Violation] = field(default_factory=list)
    auxiliary: list[AuxiliaryRequest] = field(default_factory=list)
    harness_error: str | None = None  # loopbench or the adapter broke (OutcomeRule.HARNESS_ERROR)
    hung_reason: str | None = None  # a segment passed its hard timeout (OutcomeRule.HUNG)
    cpu_s: float = 0.0
    own_cpu_s: float = 0.0  # the part of cpu_s that was loopbench's own code
    runner_cpu_s: float | None = None  # the runner's CPU for the task, outside the workers
    peak_rss_mb: float | None = None


@dataclass(frozen=True)
class Judgement:
    record: RunRecord
    reason: str  # why the outcome rule applied, for the trace


def script_error(scenario: Scenario, ev: TaskEvidence) -> str | None:
    """The scenario's own fault, when its scripted model met a request the script cannot answer: the file, the
    turn whose calls came back unanswered (the last one served before it) and what was unanswered. A request
    the server could not answer (the server's own log says which) is never blamed on the framework."""
    unanswered = [v for v in ev.violations if v.kind == "unanswered"]
    if not unanswered:
        return None
    first = unanswered[0]
    before = [r.served_turn for r in ev.requests if r.seq < first.seq and r.served_turn]
    where = f"after turn {before[-1].split('#')[0]!r}" if before else "on the first request"
    return f"the scenario's script: {scenario.source}: {where}: {first.reason}"


def foreign_price(scenario: Scenario, requests: list[RequestLogEntry]) -> str | None:
    """Why a scenario's cost budget cannot judge this run: its ideal (where the budget trips, the cost bound) is
    priced for the scenario's model, and the idiom sent another provider's model (harness/models.py), whose price
    moves the point where a budget trips. None when the scenario sets no cost budget or the model is its own."""
    if scenario.limits.max_cost_usd is None:
        return None
    sent = sorted({r.model for r in requests if r.model and r.model != scenario.model.id})
    if not sent:
        return None
    return (f"max_cost_usd: the scenario's cost ideal is priced for {scenario.model.id}; this idiom sent "
            f"{', '.join(sent)} (its cost observed is priced for that model)")


def judge(task: TaskIdentity, ev: TaskEvidence, trace: str | None = None) -> Judgement:
    scenario = task.scenario
    segments, results = ev.segments, ev.results
    last: NativeSignals | None = segments[-1].outcome_signals if segments else None
    hung = ev.hung_reason is not None
    if hung and last is None:  # the runner records the hung segment; a judge fed without one still says hung
        last = NativeSignals(ended="hung")
    evidence = completion_holds(scenario.completion, last.final_text if last else None, ev.ledger,
                                last.final_output if last else None)
    decision = derive_outcome(last, harness_error=ev.harness_error, script_error=script_error(scenario, ev),
                              hung=hung, capped=ev.capped, evidence=evidence)
    counters = build_counters(
        model_id=scenario.model.id, requests=ev.requests, ledger=ev.ledger, segments=segments,
        elapsed_s=round(sum(s.elapsed_s for s in segments), 3) if segments else None,
        cpu_s=round(ev.cpu_s, 3) if segments else None,
        loopbench_worker_cpu_s=round(ev.own_cpu_s, 3) if segments else None,
        loopbench_runner_cpu_s=round(ev.runner_cpu_s, 3) if ev.runner_cpu_s is not None else None,
        peak_rss_mb=round(ev.peak_rss_mb, 1) if ev.peak_rss_mb else None,
        structured=scenario.output is not None,
    )
    pending = segments[-1].pending if segments else []
    deviations = compare(scenario.expect, decision.outcome, counters, pending, decision.notes)
    deviations += tool_choice_deviations(scenario, ev.requests)
    resumed = counters.resumes or 0
    if (resumed < len(scenario.resumes) and decision.outcome not in ("error", "hung")
            and not any(d.name == "resumes" for d in deviations)):
        # the scenario's resumes are part of its ideal: a framework that made no saved pause to resume
        # could not be exercised on them (never counted as conforming)
        deviations.append(Deviation(
            name="resumes", ideal=len(scenario.resumes), observed=resumed,
            note="no saved pause to resume from" if not any(s.outcome_signals.ended == "paused"
                                                             for s in segments) else "",
        ))
    unsupported = sorted({u for r in results for u in r.unsupported})
    notes = [n for r in results for n in r.notes]
    if (why := foreign_price(scenario, ev.requests)) is not None:
        # a cost ideal priced for another model cannot be met or missed by this idiom: never a ✓ or a plain ⚠
        unsupported = sorted({*unsupported, "max_cost_usd"})
        notes.append(why)
    native = NativeRecord(
        signals=last, settings=results[0].settings if results else {},
        mechanisms=results[0].mechanisms if results else {}, notes=notes,
        auxiliary_requests=ev.auxiliary,  # e.g. token counting: requests, not model calls
    )
    record = RunRecord(
        run_id=task.run_id, scenario=scenario.id, scenario_title=scenario.title, category=scenario.category,
        scenario_digest=scenario.digest(),
        framework=task.framework, variant=task.variant, variant_about=task.variant_about,
        repetition=task.repetition, started_at=task.started_at, loopbench_version=task.loopbench_version,
        framework_version=task.framework_version, packages=task.packages, capabilities=task.capabilities,
        environment=task.environment,
        outcome=decision.outcome, outcome_rule=int(decision.rule),
        error_reason=ev.harness_error or ev.hung_reason or (decision.reason if decision.outcome in ("failed",
                                                                                                  "script_error")
                                                             else None),
        native=native, limits=results[0].limits if results else {}, unsupported=unsupported,
        counters=counters, segments=segments, requests=ev.requests, ledger=ev.ledger, violations=ev.violations,
        verdict=verdict_of(decision.outcome, deviations, unsupported), deviations=deviations,
        claims=scenario.claims, trace=trace,
    )
    return Judgement(record, decision.reason)
