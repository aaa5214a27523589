"""Typed, versioned run records: what an adapter reports, what the server and ledger observed, and the
RunRecord (one JSON line per business task) built from them.

This module owns the record's vocabulary — outcomes, verdicts, limit kinds, and each counter's metadata (its
label, whether it measures time, whether segments' reported values are summed) — so every list of counter
names elsewhere (scenario `expect` keys, the summing of segments, report labels, what `diff` compares) is
derived from `Counters`' fields here. It imports nothing else of loopbench, so reports can depend on it alone.
The outcome rules and the verdict live in harness/judge/outcome.py and harness/judge/verdict.py.

Schema history: v1 (until loopbench 0.1.0's fair-cells release) had `pauses` for the segments, untyped
`native` and `limits`, and no loopbench version; v2 recorded no segment for one that passed its hard timeout;
v3 records it, with `ended: hung` and the time waited; v4 adds the scenario's digest (`scenario_digest`) and each
segment's worker warm-up and set-up times (`worker_warm_s`, `prepare_s`); v5 attributes each model request and tool
run to the agent that made it (`agent`, for scenarios with sub-agents) and counts per agent (`*_by_agent`); v6 adds
the caller's cancellation: the `cancelled` outcome, a segment that `ended: cancelled`, and the moment the harness
told the caller to cancel (`cancel_sent_s`); v7 adds structured answers: the `validation` category, the
framework's structured answer (`final_output`), the answer attempt each request was served (`output_attempt`,
`output_constrained`) and their count (`structured_answers_observed`). `migrate` reads every older version as v7
(see its docstring).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

SCHEMA_VERSION = 7
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6, 7)

Outcome = Literal[
    "completed", "incomplete", "limit_steps", "limit_budget", "limit_deadline", "awaiting_approval",
    "denied", "failed", "stalled", "capped", "hung", "error",
    # the caller cancelled the run (the scenario's `cancel`) and the framework stopped on it
    "cancelled",
    # the scenario's own fault: its scripted model met a request its script cannot answer (never the framework's)
    "script_error",
    # the idiom cannot express what the scenario asks (e.g. sub-agents where it has none): not run; `unsupported`
    # says what
    "not_run",
]
Category = Literal[
    "baseline", "limits", "approval", "denial", "tool_failure", "model_failure", "stall", "context", "subagents",
    "cancellation", "wire", "validation",
]
Protocol = Literal["openai_chat", "openai_responses", "anthropic_messages", "gemini_generate"]
ResultStatus = Literal["receipt", "error", "none"]
Verdict = Literal["conforms", "deviates", "unsupported", "error"]
LimitKind = Literal["steps", "budget", "deadline"]
NeutralLimit = Literal["max_model_calls", "max_total_tokens", "max_cost_usd", "deadline_s"]
# the policy intents a scenario can state, each mapped by an adapter to its framework's native mechanism
# what a scenario asks that a framework may express natively, or not (a segment's `mechanisms` says how):
# tool_choice_first / tool_choice_later = a turn's `tool_choice` on the opening call / on a later call;
# tool_error_recoverable / tool_error_fatal = how a tool hands its framework an error its service answered as
# recoverable (or a timeout: the call may be tried again) / as fatal (a definitive failure)
# delegate = the main agent hands a task to a child agent (a scenario with `agents`)
# cancel = the caller cancels the run while it works (a scenario's `cancel`); resume_after_cancel = the caller then
# continues the cancelled task from what the framework kept (`cancel.resume`)
# structured_output = the task ends with a structured answer of the scenario's `output` schema (the framework's
# output type / response format); output_check = the answer must also pass the schema's `check`, through the
# framework's own validator
Intent = Literal["deny_stop", "deny_continue", "approval_pause", "reject", "tool_choice_first", "tool_choice_later",
                 "tool_error_recoverable", "tool_error_fatal", "delegate", "cancel", "resume_after_cancel",
                 "structured_output", "output_check"]
# the intents without which a scenario cannot be run at all: an idiom that cannot express one is not started
# (`not_run`), so its cell is unsupported rather than a run of some other scenario
REQUIRED_INTENTS: tuple[Intent, ...] = ("delegate", "cancel", "resume_after_cancel", "structured_output",
                                        "output_check")



class FailOn(StrEnum):
    """What fails a run or a comparison, one vocabulary for `run --fail-on`, `diff --fail-on`, JUnit and the pytest
    plugin (loopbench/fail_on.py says which each offers; reports/junit.py's `failing` decides)."""

    error = "error"  # a run loopbench or its scenario could not carry out (outcome error or script_error)
    deviation = "deviation"  # any verdict but conforms
    change = "change"  # `diff` only: a cell on both sides behaves differently


def column_of(framework: str, variant: str) -> str:
    """The column of a framework variant in every table: `framework` for the default variant, else
    `framework:variant`."""
    return framework if variant == "default" else f"{framework}:{variant}"


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
    # the wait an error answer told the client (a `retry-after` / `retry-after-ms` header or Gemini's RetryInfo
    # `retryDelay`), seconds; null: no hint
    retry_after_s: float | None = None
    # a scripted wire fault this 200 carried (scenario `wire_fault`): cut, malformed, unknown_finish; null: none
    wire_fault: str | None = None
    # the agent whose request it was (scenarios with sub-agents: told apart by the system prompt); null: a
    # scenario of one agent, or a record older than v5
    agent: str | None = None
    # a structured answer (scenario `output`): which of the turn's attempts this response served (1: the first
    # answer, 2: the first correction the framework asked for, ...); null: not a structured answer, or before v7
    output_attempt: int | None = None
    # the request constrained the answer to a schema (a strict response format or tool), so the script's attempts
    # that break the output's schema were passed over, as a real provider could not send them; null: not a
    # structured answer
    output_constrained: bool | None = None


class Violation(Frozen):
    seq: int  # the request's; 0: a call to an endpoint that is no model
    reason: str
    # unanswered: no turn of the script answers the request (the scenario's fault: the run is `script_error`)
    kind: Literal["unanswered", "other"] = "other"


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
    agent: str | None = None  # the agent that owns the tool (scenarios with sub-agents; null otherwise and before v5)


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


GuardExit = Literal["completed", "limit", "awaiting_approval", "denied", "failed", "stalled", "cancelled"]


class GuardSignal(Frozen):
    """What `loopbench.guard` decided in a guarded variant, beside the framework's own signals: its exit (the first
    stop it raised through the framework's hooks), the measure of a limit stop, and why."""

    exit: GuardExit
    measure: str | None = None  # model_calls, tool_calls, tokens, cost_usd or wall_s (a limit stop)
    reason: str | None = None


class NativeSignals(Frozen):
    """The framework's own signals for one run segment, as the adapter mapped them. No scenario knowledge."""

    # hung: the segment gave no answer within its hard timeout (set by the runner, never by an adapter); not_run:
    # the idiom cannot express the scenario, so the framework was not started (set by the adapter base only);
    # cancelled: the caller cancelled the run (the harness said so) and the framework stopped on it, however it
    # ended (returned an aborted result, raised its cancellation error): `exception_type`/`subtype` say how
    ended: Literal["returned", "raised", "paused", "hung", "not_run", "cancelled"]
    final_text: str | None = None
    # the structured answer the framework returned (a scenario with `output`), as a JSON object; null: none
    final_output: dict[str, Any] | None = None
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
    # a guarded variant: the guard's own exit (loopbench.guard), set by the adapter from the guard it installed
    guard: GuardSignal | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Capabilities(Frozen):
    """What a framework adapter declares it can do natively: read by `loopbench list`, carried by every record
    (so the report shows it), and by the harness where it matters (`native_limits`, `retry_window_s`)."""

    native_limits: frozenset[NeutralLimit] = Field(
        description="the neutral limits it translates into a native control (the rest are unsupported)")
    step_unit: str = Field(description="what the framework's own step counter counts")
    pause: Literal["snapshot", "in_process", "none"] = Field(
        description="how an approval pause is held: a saved snapshot, in the process only, or not at all")
    pause_survives_restart: bool = Field(description="a pause can be resumed in another process")
    deny: str = Field(description="how `approval: deny` is expressed natively")
    retry_window_s: float = Field(
        default=0.0, description="how long the framework's default retries can keep one run going against a "
        "failing model (the hard timeout of a run whose script has model failures grows by this much)")
    stream_of: str | None = Field(
        default=None, description="this idiom runs the loop of that variant of the same framework through the "
        "framework's streaming entry point, read to the end (the report's streamed-vs-not table pairs the two); "
        "null: not a streaming entry point")
    guard_of: str | None = Field(
        default=None, description="this idiom is that variant of the same framework with loopbench.guard installed "
        "through the framework's own hooks (the report's native-vs-guarded table pairs the two); null: not guarded")
    guard_lacks: dict[str, str] = Field(
        default_factory=dict, description="a guarded idiom: each extension point the policy needs that the framework "
        "does not offer (a `Hook` of loopbench/guard/hooks.py), and what the policy cannot do without it")
    notes: tuple[str, ...] = ()

    @field_serializer("native_limits")
    def _sorted(self, limits: frozenset[str]) -> list[str]:  # a stable order in every record
        return sorted(limits)


class LimitTranslation(Frozen):
    """One neutral limit in the framework's native terms."""

    neutral: int | float | None = Field(description="the scenario's value (null: the scenario sets none)")
    native: str | None = Field(default=None, description="the native setting used; null: unsupported")
    formula: str | None = Field(default=None, description="how the native value was derived")
    note: str | None = Field(default=None, description="why unsupported, or what else applies")


class SegmentResult(Frozen):
    """What `Adapter.run` / `Adapter.resume` returns for one segment of a business task."""

    signals: NativeSignals
    counters: ReportedCounters = ReportedCounters()
    settings: dict[str, Any] = Field(default_factory=dict)  # native settings used (limits, variant knobs)
    mechanisms: dict[Intent, str] = Field(default_factory=dict)  # intent -> native mechanism used for it
    limits: dict[NeutralLimit, LimitTranslation] = Field(default_factory=dict)
    unsupported: list[str] = Field(default_factory=list)  # neutral limits/intents it could not express
    snapshot: str | None = None  # path of the snapshot directory: a pause, or what a cancelled run kept
    notes: list[str] = Field(default_factory=list)
    # a long-lived framework child (the Node driver) is invisible to the worker's CPU clock until it exits: its
    # CPU over the segment, and the part of it that was loopbench's own work (the ledger calls)
    live_child_cpu_s: float = 0.0
    live_child_own_cpu_s: float = 0.0


class AuxiliaryRequest(Frozen):
    """A request to the model server that is not a model call (e.g. Anthropic token counting)."""

    path: str
    t_s: float
    bytes: int
    input_tokens: int | None = None


class NativeRecord(BaseModel):
    """What the framework said and how it was driven, for the whole task."""

    model_config = ConfigDict(extra="forbid")

    signals: NativeSignals | None = Field(default=None, description="the last segment's signals")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="the first segment's native settings (framework-specific keys)")
    mechanisms: dict[Intent, str] = Field(
        default_factory=dict, description="the native mechanism used for each intent the scenario states")
    notes: list[str] = Field(default_factory=list, description="every segment's notes, in order")
    auxiliary_requests: list[AuxiliaryRequest] = Field(default_factory=list)


# ---------------------------------------------------------------- the record
def counter(label: str, doc: str, *, timing: bool = False, summed: bool = False, per_tool: bool = False,
            per_agent: bool = False, size: bool = False, default: Any = None) -> Any:
    """A counter field with its metadata: `label` (short, for tables; per-tool and per-agent counters: after the
    tool's or agent's name), `timing` (depends on the machine's load: compared with a tolerance or not at all),
    `summed` (a reported counter summed over a task's segments), `size` (bytes of text the framework partly takes
    from its environment: compared with a tolerance)."""
    extra: dict[str, Any] = {"label": label, "timing": timing, "summed": summed, "per_tool": per_tool,
                             "per_agent": per_agent, "size": size}
    if per_tool or per_agent:
        return Field(default_factory=dict, description=doc, json_schema_extra=extra)
    return Field(default=default, description=doc, json_schema_extra=extra)


class Counters(BaseModel):
    """A business task's counters: `*_reported` is what the framework said (summed over segments), the rest is
    ground truth from the model server's request log and the tool ledger. null = unknown, never zero."""

    model_config = ConfigDict(extra="forbid")

    model_requests_reported: int | None = counter(
        "requests reported", "model requests the framework reported", summed=True)
    model_requests_observed: int | None = counter("requests", "HTTP model requests the server received")
    model_retries_observed: int | None = counter(
        "retries", "requests for a conversation state already requested in the same segment (client retries)")
    retry_after_wait_min_s: float | None = counter(
        "shortest wait after a retry hint s", "the shortest time from the end of an error answer that told the client "
        "to wait (Retry-After, Gemini's retryDelay) to the client's next request for the same conversation state, as "
        "the server measured it (null: no hinted answer was tried again)", timing=True)
    retry_after_wait_max_s: float | None = counter(
        "longest wait after a retry hint s", "the longest such time (see retry_after_wait_min_s)", timing=True)
    tool_calls_requested: int | None = counter(
        "tool calls requested", "tool calls in the responses the server served")
    structured_answers_observed: int | None = counter(
        "structured answers", "structured answers the server served (scenario `output`): the first and each "
        "correction the framework asked for (null: the scenario has no structured answer)")
    tool_executions: int | None = counter("tool runs", "tool executions the ledger recorded")
    tool_executions_by_tool: dict[str, int] = counter("runs", "tool executions per tool", per_tool=True)
    authorize_events_by_tool: dict[str, int] = counter(
        "approval callback runs", "approval-callback invocations per tool: every run of the user's approval "
        "code (hook, predicate, can_use_tool), re-runs on resume included", per_tool=True)
    approval_requests: int | None = counter(
        "approval requests", "the framework stopped and asked for a decision (a pending call at a pause; a "
        "pause resumed twice is one request), or an in-process idiom asked the human (the harness) for one")
    approval_requests_by_tool: dict[str, int] = counter(
        "approval requests", "approval requests per tool", per_tool=True)
    effects_by_tool: dict[str, int] = counter("effects", "committed side effects per tool", per_tool=True)
    abandoned_calls: int | None = counter("abandoned calls", "tool calls whose caller gave up before the end")
    runtime_steps: int | None = counter(
        "native steps", "the framework's own step counter, in its own unit (`runtime_step_unit`)", summed=True)
    runtime_step_unit: str | None = Field(default=None, description="what `runtime_steps` counts")
    input_tokens_reported: int | None = counter(
        "input tokens reported", "input tokens the framework reported", summed=True)
    input_tokens_observed: int | None = counter("input tokens", "input tokens the server served as usage")
    output_tokens_reported: int | None = counter(
        "output tokens reported", "output tokens the framework reported", summed=True)
    output_tokens_observed: int | None = counter("output tokens", "output tokens the server served as usage")
    total_tokens_observed: int | None = counter("tokens", "input + output tokens served")
    cost_usd_reported: float | None = counter(
        "cost reported $", "the framework's own cost estimate", summed=True)
    cost_usd_observed: float | None = counter(
        "cost $", "the served usage priced by harness/judge/prices.py (null for a model without a price)")
    elapsed_s: float | None = counter("elapsed s", "wall time of the task's segments", timing=True)
    cpu_s: float | None = counter("cpu s", "CPU time of the workers (and their children) in the segments and "
                                  "their set-up (Adapter.prepare)", timing=True)
    loopbench_worker_cpu_s: float | None = counter(
        "loopbench CPU in workers s", "the part of `cpu_s` that was loopbench's own code (the tools' ledger "
        "calls; for a framework run in another process, as Vercel's in Node, the worker's whole Python side; the "
        "per-task set-up, which an application would do once), not the framework's", timing=True)
    loopbench_runner_cpu_s: float | None = counter(
        "loopbench CPU in runner s", "the runner's CPU for the task outside the workers: registration, snapshot "
        "copies, worker messages and settling, before judging (the model server's serving is not counted)", timing=True)
    peak_rss_mb: float | None = counter("peak MB", "largest worker resident memory", timing=True)
    pending_approvals: int | None = counter("pending approvals", "calls still waiting for a decision at the end")
    duplicate_effects: int | None = counter(
        "duplicate effects", "the same write committed again without an idempotency key")
    resumes: int | None = counter("resumes", "resume segments that ran")
    max_request_growth_bytes: int | None = counter(
        "max request growth B", "the largest growth of the prompt from one model request to the next", size=True)
    # scenarios with sub-agents: the ground truth split by the agent that made each request and owns each tool
    # (empty for a scenario of one agent, and in records older than v5)
    model_requests_by_agent: dict[str, int] = counter(
        "requests", "model requests the server received per agent", per_agent=True)
    input_tokens_by_agent: dict[str, int] = counter(
        "input tokens", "input tokens served per agent", per_agent=True)
    output_tokens_by_agent: dict[str, int] = counter(
        "output tokens", "output tokens served per agent", per_agent=True)
    tool_executions_by_agent: dict[str, int] = counter(
        "tool runs", "tool executions the ledger recorded per agent", per_agent=True)

    def get(self, name: str) -> Any:
        """A counter by its `expect` name; per-tool counters as `tool_executions_by_tool.<tool>`, per-agent ones as
        `model_requests_by_agent.<agent>`."""
        base, _, tool = name.partition(".")
        value = getattr(self, base)
        if tool:
            return value.get(tool, 0)
        return value


def _meta(name: str) -> dict[str, Any]:
    return Counters.model_fields[name].json_schema_extra or {}  # type: ignore[return-value]


COUNTER_NAMES: tuple[str, ...] = tuple(n for n in Counters.model_fields if _meta(n))
PER_TOOL_COUNTERS = tuple(n for n in COUNTER_NAMES if _meta(n)["per_tool"])
PER_AGENT_COUNTERS = tuple(n for n in COUNTER_NAMES if _meta(n).get("per_agent"))
KEYED_COUNTERS = PER_TOOL_COUNTERS + PER_AGENT_COUNTERS
SCALAR_COUNTERS = tuple(n for n in COUNTER_NAMES if n not in KEYED_COUNTERS)
TIMING_COUNTERS = tuple(n for n in COUNTER_NAMES if _meta(n)["timing"])
SUMMED_COUNTERS = tuple(n for n in COUNTER_NAMES if _meta(n)["summed"])
SIZE_COUNTERS = tuple(n for n in COUNTER_NAMES if _meta(n)["size"])


def is_counter(name: str) -> bool:
    """`name` is a counter (`tool_executions_by_tool.<tool>` names a per-tool one, `*_by_agent.<agent>` a
    per-agent one)."""
    base, _, key = name.partition(".")
    return base in COUNTER_NAMES and bool(key) == (base in KEYED_COUNTERS)


def counter_label(name: str) -> str:
    """A short human label (`tool_executions_by_tool.send_reply` -> `send_reply runs`, `model_requests_by_agent.billing`
    -> `billing requests`)."""
    base, _, tool = name.partition(".")
    if base not in COUNTER_NAMES:
        return name
    return f"{tool} {_meta(base)['label']}" if tool else _meta(base)["label"]


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
    worker_warm_s: float | None = Field(
        default=None, description="the time the worker spent loading and warming the framework's idiom just before "
        "this segment, outside its clock (null: the worker was already warm, or a record older than v4)")
    prepare_s: float | None = Field(
        default=None, description="the time the adapter spent setting up what an application sets up before a run "
        "(a store, a session service), outside the segment's clock (null in records older than v4)")
    cancel_sent_s: float | None = Field(
        default=None, description="when the harness told the caller to cancel, in seconds since the task started "
        "(null: no cancel in this segment, or a record older than v6)")


class RunRecord(BaseModel):
    """One business task (a run and its resumes) of one scenario on one framework variant."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    scenario_title: str | None = Field(default=None, description="the scenario's title (null in older records)")
    scenario_digest: str | None = Field(
        default=None, description="sha256 of the scenario's content as loaded (suite defaults applied): two records "
        "with the same digest ran the same scenario (null in records older than v4)")
    category: Category | None = Field(default=None, description="the scenario's category (null in older records)")
    framework: str
    variant: str = "default"
    variant_about: str | None = Field(default=None, description="what the variant is, as its adapter declares it")
    mode: Literal["native"] = "native"
    repetition: int = 1
    started_at: str
    loopbench_version: str | None = Field(default=None, description="null in records migrated from v1")
    framework_version: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    capabilities: Capabilities | None = Field(default=None, description="the adapter's declared capabilities")
    environment: dict[str, Any] = Field(default_factory=dict)
    outcome: Outcome
    outcome_rule: int = Field(description="the number of the rule that decided it, in the ordered outcome table "
                              "(OutcomeRule in harness/judge/outcome.py; docs/policy.md)")
    error_reason: str | None = None
    native: NativeRecord = NativeRecord()
    limits: dict[NeutralLimit, LimitTranslation] = Field(default_factory=dict)
    unsupported: list[str] = Field(default_factory=list)
    counters: Counters = Counters()
    segments: list[Segment] = Field(default_factory=list, description="the first run, then each resume")
    requests: list[RequestLogEntry] = Field(default_factory=list)
    ledger: list[LedgerEntry] = Field(default_factory=list)
    violations: list[Violation] = Field(default_factory=list)
    verdict: Verdict
    deviations: list[Deviation] = Field(default_factory=list)
    claims: list[str] = Field(default_factory=list)
    trace: str | None = None


class MigrationError(ValueError):
    """A record that cannot be read as the current schema: says exactly why."""


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """A raw record of any readable schema version as the current one (validate the result with RunRecord).

    v6 -> v7: unchanged but for the version (no scenario had a structured answer before v7: `final_output`,
    `output_attempt`, `output_constrained` and `structured_answers_observed` stay null).
    v5 -> v6: unchanged but for the version (no scenario cancelled a run before v6: `cancel_sent_s` stays null).
    v4 -> v5: unchanged but for the version (requests and tool runs were not attributed to agents: every
    scenario before v5 had one agent; `agent` stays null and the per-agent counters empty, never made up).
    v3 -> v4: unchanged but for the version (the scenario digest and the workers' warm-up times were not
    recorded: null, not made up).
    v2 -> v3: unchanged but for the version (a v2 record of a `hung` task lacks the hung segment: it was never
    recorded, so none is made up).
    v1 -> v2 (then as v2): `pauses` -> `segments`; `native.settings.mechanisms` -> `native.mechanisms`; each
    limit's keys other than neutral / native / formula / note folded into its `note` ("key: value");
    `loopbench_version` null (v1 did not record it)."""
    version = raw.get("schema_version")
    if version == SCHEMA_VERSION:
        return raw
    if version in (2, 3, 4, 5, 6):
        return {**raw, "schema_version": SCHEMA_VERSION}
    if version != 1:
        raise MigrationError(f"schema_version {version!r}: this loopbench reads versions "
                             f"{', '.join(map(str, READABLE_VERSIONS))}")
    out = {k: v for k, v in raw.items() if k != "pauses"}
    out["schema_version"] = SCHEMA_VERSION
    out["segments"] = raw.get("pauses", [])
    native = dict(raw.get("native") or {})
    settings = dict(native.get("settings") or {})
    if "mechanisms" in settings:
        native["mechanisms"] = settings.pop("mechanisms")
    native["settings"] = settings
    out["native"] = native
    limits = {}
    for name, spec in (raw.get("limits") or {}).items():
        if not isinstance(spec, dict):
            raise MigrationError(f"limits.{name}: {spec!r} is not a limit translation")
        known = {k: spec[k] for k in ("neutral", "native", "formula", "note") if k in spec}
        rest = [f"{k}: {v}" for k, v in spec.items() if k not in known]
        if rest:
            known["note"] = "; ".join(filter(None, [known.get("note"), *rest]))
        limits[name] = known
    out["limits"] = limits
    out.setdefault("loopbench_version", None)
    return out
