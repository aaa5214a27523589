"""Typed, versioned run records: what an adapter reports, what the server and ledger observed, and the
RunRecord (one JSON line per business task) built from them.

The outcome rules and the verdict live in harness/outcome.py and harness/verdict.py; this module is data only,
so reports can depend on it alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.scenario import Outcome

SCHEMA_VERSION = 1

Protocol = Literal["openai_chat", "openai_responses", "anthropic_messages"]
ResultStatus = Literal["receipt", "error", "none"]
Verdict = Literal["conforms", "deviates", "unsupported", "error"]
LimitKind = Literal["steps", "budget", "deadline"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- ground truth from the model server
class ToolResultSeen(Frozen):
    call_id: str  # the neutral scripted id (prefix stripped), or the raw id when not scripted
    status: ResultStatus
    bytes: int


class RequestLogEntry(Frozen):
    """One HTTP request the scripted model server received for a run."""

    seq: int
    t_s: float  # seconds since the run was registered
    protocol: Protocol
    path: str
    stream: bool
    model: str | None
    messages: int
    tools_offered: list[str]
    tool_choice: str | None = None
    tool_results: list[ToolResultSeen] = Field(default_factory=list)
    prompt_bytes: int
    served_turn: str | None = None  # "<turn id>" or "<turn id>#<n>" for repeating turns
    calls_served: list[str] = Field(default_factory=list)  # neutral ids of the tool calls in the response
    status: int
    retry: bool = False  # the same conversation state was requested before
    input_tokens: int = 0  # usage served (0 for error answers)
    output_tokens: int = 0
    duration_ms: float = 0.0
    error: str | None = None  # protocol error or violation text


class Violation(Frozen):
    seq: int
    reason: str


# ---------------------------------------------------------------- ground truth from the tool ledger
class LedgerEntry(Frozen):
    id: str
    run_id: str
    # call: an execution; authorize: the user's approval code ran (hook, predicate, callback); approval_request:
    # an in-process idiom asked the harness (the human) for a decision
    kind: Literal["call", "authorize", "approval_request"]
    tool: str
    call_id: str | None = None  # scripted call id when the adapter knows it
    args: dict[str, Any] = Field(default_factory=dict)  # normalized (sorted keys, JSON-safe)
    idempotency_key: str | None = None
    call_number: int = 0  # n-th call of this tool in this run (1-based); 0 for authorize events
    outcome: Literal["result", "error", "timeout", "authorize"] = "result"
    committed: bool = False  # a write whose side effect happened
    duplicate_effect: bool = False  # the same write committed again without an idempotency key
    error_kind: str | None = None
    result_bytes: int = 0
    started_s: float = 0.0
    ended_s: float | None = None
    caller_abandoned: bool = False
    decision: str | None = None  # for authorize events: what the adapter decided or paused on


# ---------------------------------------------------------------- what an adapter reports per segment
class PendingCall(Frozen):
    call_id: str | None  # the scripted id (neutral) when known
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ReportedCounters(Frozen):
    """Counters as the framework reported them for one segment (null = the framework does not say)."""

    model_requests_reported: int | None = None
    tool_calls_requested: int | None = None
    runtime_steps: int | None = None
    runtime_step_unit: str | None = None
    input_tokens_reported: int | None = None
    output_tokens_reported: int | None = None
    cost_usd_reported: float | None = None
    cumulative: bool = False  # the framework's counters include earlier segments of the same task


class NativeSignals(Frozen):
    """The framework's own signals for one run segment, as the adapter mapped them. No scenario knowledge."""

    ended: Literal["returned", "raised", "paused"]
    final_text: str | None = None
    limit: LimitKind | None = None
    limit_signal: Literal["raised", "handled", "inferred"] | None = None
    denied: bool = False  # the framework stopped the run because an action was denied
    failure: Literal["tool", "model", "other"] | None = None  # the framework ended with this error
    pending: list[PendingCall] = Field(default_factory=list)
    exception_type: str | None = None
    exception_message: str | None = None
    subtype: str | None = None
    terminal_reason: str | None = None
    finish_reason: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class SegmentResult(Frozen):
    """What `Adapter.run` / `Adapter.resume` returns for one segment of a business task."""

    signals: NativeSignals
    counters: ReportedCounters = ReportedCounters()
    settings: dict[str, Any] = Field(default_factory=dict)  # native settings used (limits, variant knobs)
    limits: dict[str, Any] = Field(default_factory=dict)  # neutral limit -> native translation
    unsupported: list[str] = Field(default_factory=list)  # neutral limits/policies it could not express
    snapshot: str | None = None  # path of the pause snapshot directory, when paused
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- the record
class Counters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_requests_reported: int | None = None
    model_requests_observed: int | None = None
    model_retries_observed: int | None = None
    tool_calls_requested: int | None = None
    tool_executions: int | None = None
    tool_executions_by_tool: dict[str, int] = Field(default_factory=dict)
    # approval-callback invocations: every time the framework ran the user's approval code (hook, predicate,
    # can_use_tool), re-runs on resume included
    authorize_events_by_tool: dict[str, int] = Field(default_factory=dict)
    # approval requests: the framework stopped and asked for a decision (a pending call at a pause), or an
    # in-process idiom asked the human (the harness) for one
    approval_requests: int | None = None
    approval_requests_by_tool: dict[str, int] = Field(default_factory=dict)
    effects_by_tool: dict[str, int] = Field(default_factory=dict)
    abandoned_calls: int | None = None
    runtime_steps: int | None = None
    runtime_step_unit: str | None = None
    input_tokens_reported: int | None = None
    input_tokens_observed: int | None = None
    output_tokens_reported: int | None = None
    output_tokens_observed: int | None = None
    total_tokens_observed: int | None = None
    cost_usd_reported: float | None = None
    cost_usd_observed: float | None = None
    elapsed_s: float | None = None
    cpu_s: float | None = None
    peak_rss_mb: float | None = None
    pending_approvals: int | None = None
    duplicate_effects: int | None = None
    resumes: int | None = None
    max_request_growth_bytes: int | None = None

    def get(self, name: str) -> Any:
        """A counter by its `expect` name; per-tool counters as `tool_executions_by_tool.<tool>`."""
        base, _, tool = name.partition(".")
        value = getattr(self, base)
        if tool:
            return value.get(tool, 0)
        return value


class Deviation(Frozen):
    name: str  # "outcome", a counter name, "pending_calls", "limit reported as an answer", ...
    ideal: Any
    observed: Any
    note: str = ""


class Segment(Frozen):
    kind: Literal["run", "resume"]
    from_pause: int | None = None
    decisions: dict[str, str] = Field(default_factory=dict)
    outcome_signals: NativeSignals
    counters: ReportedCounters
    pending: list[PendingCall] = Field(default_factory=list)
    elapsed_s: float
    worker_pid: int | None = None


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    framework: str
    variant: str = "default"
    mode: Literal["native"] = "native"
    repetition: int = 1
    started_at: str
    framework_version: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome
    outcome_rule: int
    error_reason: str | None = None
    native: dict[str, Any] = Field(default_factory=dict)
    limits: dict[str, Any] = Field(default_factory=dict)
    unsupported: list[str] = Field(default_factory=list)
    counters: Counters = Counters()
    pauses: list[Segment] = Field(default_factory=list)
    requests: list[RequestLogEntry] = Field(default_factory=list)
    ledger: list[LedgerEntry] = Field(default_factory=list)
    violations: list[Violation] = Field(default_factory=list)
    verdict: Verdict
    deviations: list[Deviation] = Field(default_factory=list)
    claims: list[str] = Field(default_factory=list)
    trace: str | None = None
