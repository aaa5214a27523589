"""The Node line protocol (adapters/node/README.md) as models: every line an adapter writes to a driver and every
line a driver answers, one version for every npm framework's driver (adapters/node/protocol.mjs is its Node side).

An answer is validated when it is read (`read_answer`): a line that is not what the protocol says is a
`ProtocolError` naming the fields that are wrong, never a dict whose missing keys turn into nulls later. The
models forbid fields they do not declare, so a driver and these models cannot drift apart unseen (the adapter
tests validate both drivers' real answers). A framework adds its own fields by subclassing: its request
(`SegmentRequest`), its answer (`SegmentAnswer`), its hello's `defaults` (`Hello`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from loopbench.harness.adapter import Intent
from loopbench.harness.errors import LoopbenchError

PROTOCOL_VERSION = 4  # 4: one protocol for every driver (the Vercel driver's 3 and Mastra's 2, merged)

Scalar = str | int | float | bool | None  # a primitive field of a thrown error, as the framework set it


class DriverError(LoopbenchError):
    """The driver answered a request with an `error` (a protocol, driver or harness problem)."""


class ProtocolError(DriverError):
    """A line from the driver is not what the protocol says."""


class Wire(BaseModel):
    """One protocol object: exactly the declared fields (`model_` names are the protocol's, not pydantic's)."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    def wire(self) -> dict[str, Any]:
        """As the line carried it (fields the line left out stay out), for the record's `extra`."""
        return self.model_dump(mode="json", exclude_unset=True)


# ---------------------------------------------------------------- adapter -> driver
class ToolSpec(Wire):
    name: str
    description: str
    parameters: dict[str, Any]  # the scenario's JSON schema
    approval: Literal["none", "required", "deny"]


class AgentSpec(Wire):
    """A child agent the main agent reaches as its framework documents (a scenario's `agents`)."""

    id: str  # the child's id: the name its framework's delegation tool carries
    description: str
    instructions: str  # its system prompt (the server tells agents apart by it)
    tools: list[str]  # the names of its own tools among the request's `tools` (the main agent has the others)


class Limits(Wire):
    max_model_calls: int | None
    deadline_s: float | None


class ToolChoiceRule(Wire):
    after: str | None  # an anchored regex of the scripted call whose result the step answers; None: the opening call
    choice: str  # auto | none | required | a tool's name


class OutputSpec(Wire):
    """The structured answer a task ends with (a scenario's `output`): the driver builds its framework's schema from
    `fields` (each required; no other allowed) and its validator from `check`; `json_schema` is the same schema as
    JSON Schema, for a driver whose framework takes one."""

    name: str
    description: str
    fields: dict[str, dict[str, Any]]  # name -> {type: string|integer|number|boolean, description?, enum?}
    check: dict[str, str] | None = None  # {field, pattern (searched, JS and Python alike), message}
    json_schema: dict[str, Any]


class Ping(Wire):
    op: Literal["ping"] = "ping"


class Setup(Wire):
    """What a segment's framework objects are built from (a `prepare` and the segment's request carry the same)."""

    variant: str
    base_url: str  # the scripted server, no /v1
    api_key: str
    run_id: str
    ledger_token: str
    model_id: str
    task_dir: str  # the business task's directory (where a framework's live store lives)
    tools: list[ToolSpec]  # every agent's tools: the main agent's are those no child names
    instructions: str | None = None  # the main agent's system prompt (None: the driver's as before)
    agents: list[AgentSpec] = []  # its children (empty: no sub-agents)


class PrepareRequest(Setup):
    op: Literal["prepare"] = "prepare"


class SegmentRequest(Setup):
    """A `run` from the prompt or a `resume` from a pause snapshot with decisions."""

    op: Literal["run", "resume"]
    prompt: str
    snapshot_dir: str  # where a pause is saved
    limits: Limits
    deny: Literal["stop", "continue"]
    tool_choice: list[ToolChoiceRule]
    prepared: str | None = None  # the key a `prepare` answered (a driver with a prepare op)
    snapshot: str | None = None  # resume: a copy of the pause directory (or of what a cancelled run kept)
    decisions: dict[str, str] | None = None  # resume: scripted call id -> approve | reject
    # the caller's cancel (only when the scenario has one): the ledger's cancel URL, held open until the caller
    # cancels (POST with these headers: {"cancel": true, "at_s"} then, {"cancel": false} when the run ends first);
    # the driver then aborts the framework's run the way its docs show (an AbortController's abortSignal)
    cancel_url: str | None = None
    cancel_headers: dict[str, str] | None = None
    # the structured answer the task ends with (only when the scenario has one, so other requests stay as they were)
    output: OutputSpec | None = None
    # a guarded variant only: where the task's guard is served (loopbench/guard/service.py) and its token
    guard_url: str | None = None
    guard_token: str | None = None


Request = Ping | PrepareRequest | SegmentRequest


# ---------------------------------------------------------------- driver -> adapter
class HelloRefused(Wire):
    """The driver could not import its framework: it says so and exits."""

    type: Literal["hello"]
    ok: Literal[False]
    protocol: int
    error: str


class Hello(Wire):
    """The driver is ready. `defaults` are the framework's own, read from the installed source (a subclass types
    them)."""

    type: Literal["hello"]
    ok: Literal[True]
    protocol: int
    pid: int
    node: str
    packages: dict[str, str | None]
    defaults: Wire


class Thrown(Wire):
    """An error as the driver describes it (protocol.mjs `describeError`), with its cause chain."""

    name: str
    constructor: str | None = None
    message: str
    id: Scalar = None
    domain: Scalar = None
    category: Scalar = None
    statusCode: Scalar = None  # the frameworks' own field names, camelCase
    isRetryable: Scalar = None
    reason: Scalar = None
    url: Scalar = None
    timeoutType: Scalar = None
    toolName: Scalar = None
    toolCallId: Scalar = None
    attempts: int | None = None  # a RetryError's failed attempts
    cause: Thrown | None = None
    lastError: Thrown | None = None

    def chain(self, limit: int = 6) -> list[Thrown]:
        """This error and what it wraps (`cause`, else `lastError`), outermost first."""
        out: list[Thrown] = []
        cur: Thrown | None = self
        while cur is not None and len(out) < limit:
            out.append(cur)
            cur = cur.cause or cur.lastError
        return out


class Event(BaseModel):
    """One thing the driver saw during a request (written to the run's driver-events.jsonl as it came)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    # subagent: a child agent's run finished (a driver that drives sub-agents: what the child's own result said)
    event: Literal["started", "step", "authorize", "tool-start", "tool-end", "approval-request", "subagent"]


class ErrorAnswer(Wire):
    """The request could not be served (a bad request, an unreadable snapshot, a driver bug); `id` is null for a
    line the driver could not read an id from."""

    id: str | int | None
    type: Literal["error"]
    error: str
    detail: Thrown | None = None
    stack: str | None = None
    events: list[Event] = []
    cpu_us: int | None = None  # absent on a line the driver could not read
    own_cpu_us: int | None = None


class Answer(Wire):
    """A request's `result`, with the driver's CPU over it (the worker's clock cannot see a live child's) and the
    part of it spent in the ledger calls (loopbench's own)."""

    id: str | int
    type: Literal["result"]
    cpu_us: int
    own_cpu_us: int


class Pong(Answer):
    pong: Literal[True]
    pid: int


class PrepareAnswer(Answer):
    prepared: str  # the key the segment's request names
    setup_ms: float  # the driver's own time for building the instance and its store's init
    held: int  # prepared instances the driver keeps unused, this one included
    evicted: list[str]  # older unused ones this prepare closed (their segment never came)
    events: list[Event]


class CallSeen(Wire):
    call_id: str | None = None  # the scripted id
    tool: str | None = None


class StopCall(Wire):
    call_id: str | None = None
    tool: str


class DeniedCall(CallSeen):
    reason: str | None = None


class StepCalls(Wire):
    finish_reason: str | None
    tool_calls: list[CallSeen]


class Step(StepCalls):
    """A finished step as the framework's step callback reported it."""

    step: int
    content: list[str] | None = None  # the step's part types, where the framework has them
    input_tokens: int | None
    output_tokens: int | None


class LastStep(Wire):
    """The last step's evidence for what ended the loop."""

    finish_reason: str | None
    tool_calls: int
    tool_outputs: int  # how many of its calls have an output (a result, an error, a denial)
    denied_stop_calls: list[StopCall]  # its calls of a tool the deny-stop condition names


class PendingApproval(Wire):
    tool_call_id: str  # the provider's id
    call_id: str  # the scripted id
    tool: str
    input: dict[str, Any] | None = None
    approval_id: str | None = None  # where the framework keys approvals by an id of its own
    delegated_by: str | None = None  # a child's call: the parent's delegation call (scripted id) it pauses through


class SubagentRun(Wire):
    """A child agent's run, as the delegation tool's result reported it to the parent (a driver that drives
    sub-agents adds what its framework's result says besides)."""

    agent: str
    call_id: str | None  # the delegation's scripted call id
    finish_reason: str | None
    input_tokens: int | None
    output_tokens: int | None


class Usage(Wire):
    input_tokens: int | None
    output_tokens: int | None
    source: str


class DenyPlan(Wire):
    intent: Literal["stop", "continue"]
    denied_tools: list[str]
    stop_tools: list[str]  # the tools the stop condition names (empty unless the intent is stop)
    step_bound: int | None  # the step bound the loop ran under (None when none)


class AbortSeen(Wire):
    """What the framework's abort callback (`onAbort`) was given, when it was called."""

    steps: int  # the completed steps it was given
    text: str | None = None  # Mastra: the text streamed so far in the step that was in flight


class CancelSeen(Wire):
    """The caller's cancel as the driver saw it (a request with a `cancel_url`)."""

    told: bool  # the ledger answered {"cancel": true} before the run ended
    at_s: float | None  # when the harness said cancel (seconds since the task began; the ledger's `at_s`)
    aborted: bool  # the driver called controller.abort() (on being told)
    abort_ms: float | None  # the driver's time from controller.abort() to the framework's call settling
    on_abort: AbortSeen | None  # the framework's onAbort callback (None: not called, or the idiom has none)
    abort_part: bool | None  # a stream's `abort` part was seen (None: not a streaming idiom)
    steps: int | None  # the completed steps the framework gave at the abort (the resume continues from them)
    steps_source: str | None  # where they came from (onAbort's steps, the onStepEnd callbacks...)


class SegmentAnswer(Answer):
    """What every driver reports of a `run` / `resume`; a framework's answer adds its own fields."""

    events: list[Event]
    # cancelled: the caller's cancel aborted the run and the framework stopped on the abort (threw its abort error,
    # called onAbort, ended its stream with an abort part): `cancel` says how, `thrown` what it threw
    ended: Literal["returned", "paused", "raised", "cancelled"]
    settings: dict[str, Any]  # the native settings used
    mechanisms: dict[Intent, str]  # the driver's own words for how it applies each intent
    deny: DenyPlan
    steps: list[Step]  # what the step callback saw in this call
    harness_errors: list[str]  # ledger failures: not framework behaviour (the adapter raises)
    step_count_source: str
    step_count: int | None = None
    thrown: Thrown | None = None  # when it raised
    usage: Usage | None = None
    finish_reason: str | None = None
    text: str | None = None
    tool_calls_requested: int | None = None
    last_step: LastStep | None = None
    pending: list[PendingApproval] = []
    denied: list[DeniedCall] = []
    snapshot: str | None = None
    cancel: CancelSeen | None = None  # a request with a cancel_url
    output: dict[str, Any] | None = None  # the structured answer the framework returned (a request with `output`)


H = TypeVar("H", bound=Hello)
A = TypeVar("A", bound=Answer)


def read_answer(line: dict[str, Any], expect: type[A]) -> A | ErrorAnswer:
    """A driver's terminal line for a request, as `expect` (or an `error`); a bad line raises ProtocolError."""
    # the line's `type` picks the model (`expect`'s is "result": any other tag is named in the error)
    model: type[A] | type[ErrorAnswer] = ErrorAnswer if line.get("type") == "error" else expect
    try:
        return model.model_validate(line)
    except ValidationError as exc:
        raise ProtocolError(f"the Node driver's answer is not a protocol {PROTOCOL_VERSION} {model.__name__}: {exc}"
                            ) from None


def read_hello(line: dict[str, Any], expect: type[H]) -> H:
    """The driver's hello: its own `expect`; a refusing hello, another protocol or a bad line raises DriverError."""
    try:
        if line.get("ok") is False:
            refused = HelloRefused.model_validate(line)
            raise DriverError(f"the Node driver cannot start (protocol {refused.protocol}): {refused.error}")
        if line.get("protocol") != PROTOCOL_VERSION:
            raise DriverError(f"the Node driver speaks protocol {line.get('protocol')}, not {PROTOCOL_VERSION}: {line}")
        return expect.model_validate(line)
    except ValidationError as exc:
        raise ProtocolError(f"the Node driver's hello is not a protocol {PROTOCOL_VERSION} {expect.__name__}: {exc}"
                            ) from None
