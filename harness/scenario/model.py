"""The scenario schema: one pydantic model per part of a scenario file (tools, the scripted model's turns,
limits, approvals, completion evidence, expectations) and the limits on every number in it. Parsing and
loading files is `load.py`'s; the format is documented in scenarios/README.md."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
    model_validator,
)

from loopbench.harness.errors import shown
from loopbench.harness.record import Category, Outcome

ResultCondition = Literal["any", "receipt", "error", "none", "no_receipt"]

ID_PATTERN = r"^[A-Za-z0-9_]+$"
MAX_TOOL_NAME = 40  # 64 in the OpenAI and Anthropic APIs, less the Claude SDK's `mcp__loopbench__` prefix
TOOL_NAME_PATTERN = rf"[A-Za-z][A-Za-z0-9_-]{{0,{MAX_TOOL_NAME - 1}}}"
# Bounds on every number that reaches a sleep, a timeout, an allocation or a count: a scenario that validates
# must not be able to crash, stall or exhaust the runner (e.g. `deadline_s: .inf`, `delay_s: 1e300`,
# `size_bytes: 1e13`). Generous next to any real scenario; the reason is each one's comment.
MAX_SECONDS = 600.0  # one delay, timeout or deadline: ten minutes is far past any loop the suite measures
MAX_OUTPUT_BYTES = 50_000_000  # one tool output: 50 MB, well past any context window
MAX_COUNT = 1_000  # repetitions of a step or a failure, a resume's pause number, a limit on model calls
MAX_TOKENS = 10**9  # scripted usage and token budgets
MAX_COST_USD = 10_000.0
MAX_SAFETY_CAP = 10_000  # model requests per run
# a repeating turn numbers its calls: "kb_{n}" is served as kb_1, kb_2, ...
CALL_ID_PATTERN = r"^[A-Za-z0-9_]+(\{n\}[A-Za-z0-9_]*)?$"


def _printable(text: str) -> str:
    # a NUL or another control character cannot reach a CLI's argv or every wire protocol intact
    if bad := sorted({f"U+{ord(c):04X}" for c in text if (ord(c) < 32 and c not in "\n\r\t") or ord(c) == 127}):
        raise ValueError(f"contains control characters ({', '.join(bad)}): only text, newlines and tabs")
    return text


Text = Annotated[str, Field(min_length=1), AfterValidator(_printable)]


class Strict(BaseModel):
    # strict: YAML already gives numbers and booleans their types, so `delay_s: "1"` or `delay_s: true` is a
    # mistake to report, not a value to coerce
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Usage(Strict):
    input_tokens: int = Field(ge=0, le=MAX_TOKENS)
    output_tokens: int = Field(ge=0, le=MAX_TOKENS)


class ModelSpec(Strict):
    id: str = "claude-sonnet-4-5"
    usage: Usage = Usage(input_tokens=1000, output_tokens=100)


# ---------------------------------------------------------------- tools
class ToolError(Strict):
    kind: Literal["recoverable", "fatal"]
    message: str


class ToolTimeout(Strict):
    """The call runs `after_s`, then fails as a timeout; `committed` says whether its effect happened."""

    after_s: float = Field(ge=0, le=MAX_SECONDS)
    committed: bool


class ToolStep(Strict):
    """What one call of a tool does. A tool's `behavior` is a list of steps; the last one repeats."""

    result: str | dict[str, Any] | None = None
    error: ToolError | None = None
    timeout: ToolTimeout | None = None
    delay_s: float = Field(default=0, ge=0, le=MAX_SECONDS)
    size_bytes: int | None = Field(default=None, gt=0, le=MAX_OUTPUT_BYTES)
    times: int = Field(default=1, ge=1, le=MAX_COUNT)

    @model_validator(mode="after")
    def _one_kind(self) -> ToolStep:
        kinds = [k for k in ("result", "error", "timeout") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"a step has exactly one of result|error|timeout (got {kinds or 'none'})")
        return self


class ToolSpec(Strict):
    description: Text
    parameters: dict[str, Any]
    kind: Literal["read", "write"]
    approval: Literal["none", "required", "deny"] = "none"
    idempotency_arg: str | None = None
    # a status tool that is polled: the same answer to the same call is expected up to this many times in a row
    # (the policy's bounded polling; a stall check leaves it alone until then). Null: not a polling tool
    polling: int | None = Field(default=None, ge=2, le=MAX_COUNT)
    # what the tool does in the world (`outbound_message`): tools sharing an effect are one effect to a policy
    # that binds a rejection to it. Null: the tool's own name
    effect: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,39}$")
    behavior: list[ToolStep] = Field(min_length=1)

    @model_validator(mode="after")
    def _schema_is_object(self) -> ToolSpec:
        if self.parameters.get("type") != "object":
            raise ValueError("parameters must be a JSON schema with type: object")
        return self

    def step_for_call(self, n: int) -> ToolStep:
        """The step that call number n (1-based) of this tool follows."""
        seen = 0
        for step in self.behavior:
            seen += step.times
            if n <= seen:
                return step
        return self.behavior[-1]


# ---------------------------------------------------------------- a structured answer
OUTPUT_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_]{0,39}$"  # a class, schema or tool name in every framework


class OutputField(Strict):
    """One field of the structured answer: every field is required, and the schema allows no other."""

    type: Literal["string", "integer", "number", "boolean"]
    description: Text | None = None
    enum: list[str] | None = Field(default=None, min_length=1)  # the values a string field may take

    @model_validator(mode="after")
    def _enum_of_strings(self) -> OutputField:
        if self.enum is not None and self.type != "string":
            raise ValueError(f"enum: only a string field takes one (this field is {self.type})")
        return self

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self.type}
        if self.description:
            schema["description"] = self.description
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        return schema


class OutputCheck(Strict):
    """A rule beyond the schema, which the framework's own validator applies to a well-formed answer (a pydantic
    validator, a zod refinement, a JSON-schema `pattern`...): the string `field` must match `pattern`, a regular
    expression read the same in Python and JavaScript (searched: anchor it with ^ and $); `message` is what the
    validator tells the model when it does not."""

    field: str
    pattern: str = Field(min_length=1, max_length=200)
    message: Text

    @model_validator(mode="after")
    def _compiles(self) -> OutputCheck:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
        if "(?" in self.pattern or not re.fullmatch(r"[\w\s^$.*+?()\[\]{}|\\:,-]+", self.pattern):
            raise ValueError(f"pattern {self.pattern!r}: only the syntax Python and JavaScript read alike (classes, "
                             "groups, quantifiers, anchors); no flags or look-arounds")
        return self

    def holds(self, value: Any) -> bool:
        return isinstance(value, str) and re.search(self.pattern, value) is not None


class OutputSpec(Strict):
    """The structured answer the task ends with (scenarios/README.md "Structured answers"): each adapter hands
    its framework this schema the way the framework's docs show (an output type, a response format, an output
    tool) and `check` as the framework's own validator; the scripted model's `output` turns answer with objects
    that do or do not fit it."""

    name: str = Field(pattern=OUTPUT_NAME_PATTERN)
    description: Text
    fields: dict[str, OutputField] = Field(min_length=1)
    check: OutputCheck | None = None

    @model_validator(mode="after")
    def _check_names_a_string(self) -> OutputSpec:
        for name in self.fields:
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
                raise ValueError(f"fields: {name!r} is not a field name (lower-case letters, digits and _)")
        if self.check is not None:
            spec = self.fields.get(self.check.field)
            if spec is None:
                raise ValueError(f"check.field: {self.check.field!r} is not one of the fields "
                                 f"({', '.join(self.fields)})")
            if spec.type != "string":
                raise ValueError(f"check.field: {self.check.field!r} is a {spec.type}; a pattern checks a string")
        return self

    def json_schema(self) -> dict[str, Any]:
        """The schema as JSON Schema: every field required, nothing else allowed (what a strict response format
        needs); the check is not in it (it is the framework's validator)."""
        return {"type": "object", "title": self.name, "description": self.description,
                "properties": {n: f.json_schema() for n, f in self.fields.items()},
                "required": list(self.fields), "additionalProperties": False}

    def problems(self, answer: Any, check: bool = True) -> list[str]:
        """Why an answer does not fit the schema and (`check`) the check ([]: it does): what any framework's
        validation would find; without the check, what a provider that constrains its answer to the schema rules
        out."""
        if not isinstance(answer, dict):
            return [f"not an object: {shown(answer)}"]
        out = [f"unknown field {k!r}" for k in answer if k not in self.fields]
        kinds = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}
        for name, spec in self.fields.items():
            if name not in answer:
                out.append(f"missing field {name!r}")
                continue
            value = answer[name]
            wrong_bool = isinstance(value, bool) and spec.type != "boolean"
            if wrong_bool or not isinstance(value, kinds[spec.type]):
                out.append(f"{name}: {shown(value)} is not a {spec.type}")
            elif spec.enum is not None and value not in spec.enum:
                out.append(f"{name}: {shown(value)} is not one of {', '.join(spec.enum)}")
        if check and not out and self.check is not None and not self.check.holds(answer.get(self.check.field)):
            out.append(f"check: {self.check.message}")
        return out


# ---------------------------------------------------------------- the scripted model
class ScriptedCall(Strict):
    """A tool call the scripted model makes; `tool` naming a child agent (one of the scenario's `agents`) is a
    delegation: the model hands the child `task`, through whatever tool the framework offers for that child (the
    server fills that tool's arguments from its schema, as a model would: scenarios/README.md "Agents")."""

    id: str = Field(pattern=CALL_ID_PATTERN)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    task: Text | None = None  # a delegation's request to the child agent

    @model_validator(mode="after")
    def _task_or_args(self) -> ScriptedCall:
        if self.task is not None and self.args:
            raise ValueError("a delegation (`task`) takes no `args`: the server fills the child tool's arguments")
        return self


class After(Strict):
    """Serve a turn when the latest scripted calls came back this way."""

    call: str = Field(pattern=CALL_ID_PATTERN)
    result: ResultCondition = "any"
    contains: str | None = None


class HttpFailure(Strict):
    """A scripted HTTP error. The server sends only what the scenario declares: `headers` (None: what the real
    provider sends for that status, see harness/model_server/provider_errors.py) and the provider's error body
    (`message` overrides its text)."""

    status: Literal[400, 401, 403, 404, 408, 409, 429, 500, 502, 503, 529]
    times: Annotated[int, Field(ge=1, le=MAX_COUNT)] | Literal["forever"] = 1
    headers: dict[str, str] | None = None
    message: str | None = None
    # a 429's hint to wait this many whole seconds, sent the way the provider of the request's protocol sends it:
    # a `retry-after` header (Anthropic, OpenAI), a RetryInfo `retryDelay` in the body (Gemini)
    retry_after_s: int | None = Field(default=None, ge=1, le=int(MAX_SECONDS))

    @model_validator(mode="after")
    def _hint(self) -> HttpFailure:
        if self.retry_after_s is not None and self.status != 429:
            raise ValueError(f"retry_after_s: only a 429 carries a retry hint (status is {self.status})")
        if self.retry_after_s is not None and self.headers is not None:
            raise ValueError("retry_after_s: declare the hint or the `headers`, not both (the headers would replace "
                             "what the provider sends with the hint)")
        return self


class WireFault(Strict):
    """A response that goes wrong on the wire after a 200 (scenarios/README.md "Wire faults"), for `times` requests
    of the turn's conversation state after its `fail_first` failures:
    - `cut`: the connection closes mid-way (a stream after some events, no final one; a plain body short of its
      Content-Length);
    - `malformed`: a complete 200 whose body (or one SSE event of a stream) is not valid JSON;
    - `unknown_finish`: an otherwise valid answer whose finish/stop reason is `finish_reason`, one the client
      does not know (OpenAI Chat `finish_reason`, Responses `status`, Anthropic `stop_reason`, Gemini
      `finishReason` upper-cased)."""

    kind: Literal["cut", "malformed", "unknown_finish"]
    times: Annotated[int, Field(ge=1, le=MAX_COUNT)] | Literal["forever"] = 1
    finish_reason: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,39}$")

    @model_validator(mode="after")
    def _reason(self) -> WireFault:
        if (self.kind == "unknown_finish") != (self.finish_reason is not None):
            raise ValueError("wire_fault: `finish_reason` goes with kind unknown_finish, and only with it")
        if self.finish_reason in KNOWN_FINISH_REASONS:
            raise ValueError(f"wire_fault: finish_reason {self.finish_reason!r} is one a provider documents; an "
                             "unknown_finish needs a reason no client knows")
        return self


# every finish/stop reason the four protocols document (lower-cased): an `unknown_finish` must not be one of them
KNOWN_FINISH_REASONS = frozenset({
    "stop", "length", "tool_calls", "content_filter", "function_call",  # OpenAI Chat
    "completed", "failed", "in_progress", "cancelled", "queued", "incomplete",  # OpenAI Responses status
    "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",  # Anthropic
    "model_context_window_exceeded",
    "finish_reason_unspecified", "safety", "recitation", "language", "other", "blocklist",  # Gemini
    "prohibited_content", "spii", "malformed_function_call", "image_safety", "unexpected_tool_call",
})


# what a turn asks the client to send as `tool_choice`: a mode, or the name of a tool it must call
ToolChoice = Literal["auto", "none", "required"] | Annotated[str, Field(pattern=rf"^{TOOL_NAME_PATTERN}$")]
TOOL_CHOICE_MODES = ("auto", "none", "required")


class Turn(Strict):
    id: str = Field(pattern=ID_PATTERN)
    after: After | None = None  # None: the opening turn (no scripted call in the conversation yet)
    calls: list[ScriptedCall] = Field(default_factory=list)
    text: str | None = None
    repeat: Annotated[int, Field(ge=1, le=MAX_COUNT)] | Literal["forever"] = 1
    usage: Usage | None = None
    fail_first: list[HttpFailure] = Field(default_factory=list)
    delay_s: float = Field(default=0, ge=0, le=MAX_SECONDS)
    stream_delay_s: float = Field(default=0, ge=0, le=MAX_SECONDS)
    wire_fault: WireFault | None = None  # after the fail_first failures: answers that go wrong after a 200
    # the loop's configuration for the request this turn answers: the client must send this `tool_choice`
    # (e.g. `required` on the opening turn: the first model call must use a tool). None: the client's default.
    tool_choice: ToolChoice | None = Field(default=None, union_mode="left_to_right")
    # a structured answer (the scenario's `output`): the k-th answer the framework asks for at this point of the
    # conversation gets the k-th object (the last one repeats); served as a call to the output tool the request
    # offers, else as JSON text (scenarios/README.md "Structured answers")
    output: list[dict[str, Any]] | None = Field(default=None, min_length=1, max_length=MAX_COUNT)

    @model_validator(mode="after")
    def _content(self) -> Turn:
        if self.output is not None:
            if self.calls or self.text is not None:
                raise ValueError("an output turn is the structured answer alone: no calls, no text")
            if self.repeat != 1 or self.tool_choice is not None:
                raise ValueError("an output turn neither repeats (its `output` list is its attempts) nor asks a "
                                 "tool_choice")
            return self
        if not self.calls and self.text is None:
            raise ValueError("a turn needs calls, text, output, or both calls and text")
        choice = self.tool_choice
        if choice == "none" and self.calls:
            raise ValueError("tool_choice none: the turn must not call tools")
        if choice == "required" and not self.calls:
            raise ValueError("tool_choice required: the turn must call a tool")
        if choice not in (None, *TOOL_CHOICE_MODES) and not any(c.tool == choice for c in self.calls):
            raise ValueError(f"tool_choice {choice!r}: the turn must call that tool")
        repeating = self.repeat == "forever" or self.repeat > 1
        numbered = [c.id for c in self.calls if "{n}" in c.id]
        if repeating and len(numbered) != len(self.calls):
            raise ValueError("every call id of a repeating turn must contain {n}")
        if not repeating and numbered:
            raise ValueError("only a repeating turn (repeat > 1) may number its call ids with {n}")
        if self.wire_fault is not None and any(f.times == "forever" for f in self.fail_first):
            raise ValueError("wire_fault: follows the fail_first failures, which never end here (times: forever)")
        return self

    def failures(self) -> int | None:
        """How many requests of a state the fail_first failures answer (None: forever)."""
        if any(f.times == "forever" for f in self.fail_first):
            return None
        return sum(f.times for f in self.fail_first)  # type: ignore[misc]


# ---------------------------------------------------------------- limits, approvals, evidence, expect
class Limits(Strict):
    max_model_calls: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    max_total_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)
    max_cost_usd: float | None = Field(default=None, gt=0, le=MAX_COST_USD)
    deadline_s: float | None = Field(default=None, gt=0, le=MAX_SECONDS)


class Policy(Strict):
    """The scenario's intent where a framework offers more than one reading (each adapter maps the intent to
    its framework's documented mechanism, or records it unsupported)."""

    # for tools with `approval: deny`: "stop" = the framework must end the run on the denial; "continue" = the
    # model is told the call was refused and the loop goes on
    deny: Literal["stop", "continue"] = "stop"


class Cancel(Strict):
    """The caller cancels the run while it works: `after_s` seconds after the harness sees the first call of
    `tool` start (`during: tool`) or the request that turn `turn` answers arrive (`during: model`). The adapter
    cancels the way its framework documents when the harness tells it to; it never learns the moment in advance.
    `resume`: the caller then continues the task from what the framework kept (one more segment)."""

    during: Literal["tool", "model"]
    tool: str | None = None
    turn: str | None = Field(default=None, pattern=ID_PATTERN)
    after_s: float = Field(default=0.5, ge=0, le=MAX_SECONDS)
    resume: bool = False

    @model_validator(mode="after")
    def _what(self) -> Cancel:
        if self.during == "tool" and (self.tool is None or self.turn is not None):
            raise ValueError("cancel during: tool names the `tool` whose first call it waits for (and no `turn`)")
        if self.during == "model" and (self.turn is None or self.tool is not None):
            raise ValueError("cancel during: model names the `turn` whose request it waits for (and no `tool`)")
        return self


class Resume(Strict):
    """Resume pause number `pause` (1-based, in the order the task paused) with these decisions."""

    pause: int = Field(default=1, ge=1, le=MAX_COUNT)
    decisions: dict[str, Literal["approve", "reject"]]


class LedgerEvidence(Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)  # a subset the call's arguments must match


class Completion(Strict):
    final_text_contains: list[str] = Field(default_factory=list)
    receipts: list[LedgerEvidence] = Field(default_factory=list)
    effects: list[LedgerEvidence] = Field(default_factory=list)
    # a subset the framework's structured answer must hold (a scenario with `output`): field -> value
    final_output: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something(self) -> Completion:
        if not (self.final_text_contains or self.receipts or self.effects or self.final_output):
            raise ValueError("completion evidence must name at least one fact")
        return self


class Bound(Strict):
    """A counter expectation with tolerance: min/max bounds or approx ± tol."""

    # every counter is a count, a size, a time or a cost: a negative bound could never be met
    min: float | None = Field(default=None, ge=0)
    max: float | None = Field(default=None, ge=0)
    approx: float | None = Field(default=None, ge=0)
    tol: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _shape(self) -> Bound:
        if self.approx is None and self.min is None and self.max is None:
            raise ValueError("a bound needs min, max or approx")
        if (self.approx is None) != (self.tol is None):
            raise ValueError("approx and tol go together")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}: no run could meet it")
        return self


def _exact_value(v: Any) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
        raise ValueError(f"must be a number >= 0 or a bound ({{min, max}} or {{approx, tol}}), got {shown(v)}")
    return v


# a number is an exact value, a mapping a Bound; the discriminator picks one so an error names only that one
CounterExpectation = Annotated[
    Annotated[Any, AfterValidator(_exact_value), WithJsonSchema({"type": "number", "minimum": 0}), Tag("Exact")]
    | Annotated[Bound, Tag("Bound")],
    Discriminator(lambda v: "Bound" if isinstance(v, dict | Bound) else "Exact"),
]


class PendingExpectation(Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class Expect(Strict):
    # one outcome, or the acceptable ones (e.g. [awaiting_approval, denied]: either is how a production loop stops)
    outcome: Outcome | list[Outcome] = Field(union_mode="left_to_right")
    counters: dict[str, CounterExpectation] = Field(default_factory=dict)
    pending_calls: list[PendingExpectation] | None = None
    # `stalled` ideals: the request count at which a production loop would have stopped
    stall_at_requests: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _outcomes(self) -> Expect:
        if isinstance(self.outcome, list) and (not self.outcome or len(set(self.outcome)) != len(self.outcome)):
            raise ValueError("outcome: a list of acceptable outcomes must be non-empty, each named once")
        return self

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        """The acceptable outcomes."""
        return tuple(self.outcome) if isinstance(self.outcome, list) else (self.outcome,)


class ToolChoiceRule(Strict):
    """A turn's `tool_choice` for adapters: send `choice` on the opening call (`after_call` None) or on the
    call that follows the results of `after_call` (a repeating turn's `kb_{n}` matches kb_1, kb_2, ...)."""

    after_call: str | None
    choice: str

    @property
    def opening(self) -> bool:
        return self.after_call is None

    @property
    def after_regex(self) -> str | None:
        """`after_call` as an anchored regex (the same in Python and JavaScript): `{n}` is any number."""
        if self.after_call is None:
            return None
        return "^" + re.escape(self.after_call).replace(re.escape("{n}"), r"\d+") + "$"

    def follows(self, call_id: str) -> bool:
        return self.after_regex is not None and re.match(self.after_regex, call_id) is not None


MAIN_AGENT = "main"  # the agent the prompt goes to, in every record's per-agent counters


class AgentSpec(Strict):
    """A child agent: the main agent reaches it the way its framework documents (a tool, a handoff, a Task)."""

    description: Text  # what the parent is told about it (frameworks that list their sub-agents show this)
    # the child's own system prompt: the server tells the child's requests apart by it, so it must be unique
    instructions: Text
    tools: list[str] = Field(default_factory=list)  # names from the scenario's `tools`, each owned by one agent
    script: list[Turn] = Field(min_length=1)


class Scenario(Strict):
    id: str = Field(pattern=ID_PATTERN)
    title: Text
    category: Category
    claims: list[str] = Field(default_factory=list)
    # "slow": dominated by waiting (retry storms, long backoff); shown by `list`, for selections to come
    tags: list[Literal["slow"]] = Field(default_factory=list)
    prompt: Text
    model: ModelSpec = ModelSpec()
    tools: dict[str, ToolSpec]
    script: list[Turn] = Field(min_length=1)
    # the main agent's instructions (None: the framework's default system prompt) and its child agents
    instructions: Text | None = None
    agents: dict[str, AgentSpec] = Field(default_factory=dict)
    output: OutputSpec | None = None  # the structured answer the task ends with (None: a text answer)
    limits: Limits = Limits()
    policy: Policy = Policy()
    resumes: list[Resume] = Field(default_factory=list)
    cancel: Cancel | None = None
    completion: Completion
    expect: Expect
    safety_cap: int = Field(default=50, ge=1, le=MAX_SAFETY_CAP)
    source: str = Field(default="", exclude=True)  # the file it came from

    @model_validator(mode="after")
    def _structured_answer(self) -> Scenario:
        answering = [t.id for t in self.all_turns() if t.output is not None]
        if self.output is None:
            if answering or self.completion.final_output:
                where = f"turns {', '.join(answering)} answer" if answering else "completion.final_output names"
                raise ValueError(f"{where} a structured answer, but the scenario declares no `output` schema")
            return self
        if self.agents:
            raise ValueError("output: a structured answer is the main agent's; a scenario with `agents` has none yet")
        if not answering:
            raise ValueError("output: no turn answers with it (a turn with `output` objects)")
        if unknown := [k for k in self.completion.final_output if k not in self.output.fields]:
            raise ValueError(f"completion.final_output: {', '.join(unknown)} not among the output's fields")
        return self

    # ---- derived views used by the server, the ledger and the adapters
    def agent_ids(self) -> list[str]:
        """`main`, then each child agent in file order."""
        return [MAIN_AGENT, *self.agents]

    def script_of(self, agent: str) -> list[Turn]:
        return self.script if agent == MAIN_AGENT else self.agents[agent].script

    def tools_of(self, agent: str) -> list[str]:
        """The tools an agent is given: a child's own list; the main agent every tool no child owns."""
        if agent != MAIN_AGENT:
            return list(self.agents[agent].tools)
        owned = {t for a in self.agents.values() for t in a.tools}
        return [t for t in self.tools if t not in owned]

    def children_of(self, agent: str) -> list[str]:
        """The child agents an agent delegates to (only the main agent has children)."""
        return list(self.agents) if agent == MAIN_AGENT else []

    def owner_of_tool(self, tool: str) -> str:
        return next((a for a, spec in self.agents.items() if tool in spec.tools), MAIN_AGENT)

    def all_turns(self) -> list[Turn]:
        return [*self.script, *(t for a in self.agents.values() for t in a.script)]

    def agent_of_request(self, system_text: str) -> str:
        """Which agent sent a request, from its system prompt: the child whose instructions it holds (the
        longest, should one contain another), else the main agent."""
        found = [a for a, spec in self.agents.items() if spec.instructions in system_text]
        return max(found, key=lambda a: len(self.agents[a].instructions)) if found else MAIN_AGENT

    def digest(self) -> str:
        """sha256 of the scenario's content as loaded (suite defaults applied, the file's path left out): a record
        carries it, so a diff tells a scenario edit from a framework's change."""
        content = self.model_dump(mode="json")
        for tool in content.get("tools", {}).values():  # keys added later count only where they are set, so the
            for key in ("polling", "effect"):  # digests of earlier records still match their unchanged scenarios
                if tool.get(key) is None:
                    tool.pop(key, None)
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def tool_error_kinds(self) -> set[Literal["recoverable", "fatal"]]:
        """The kinds of error the scenario's tools answer with: a timeout is `recoverable` (the call may be tried
        again), an error its own `kind`."""
        kinds: set[Literal["recoverable", "fatal"]] = set()
        for spec in self.tools.values():
            for step in spec.behavior:
                if step.timeout is not None:
                    kinds.add("recoverable")
                elif step.error is not None:
                    kinds.add(step.error.kind)
        return kinds

    def tool_choice_rules(self) -> list[ToolChoiceRule]:
        """The turns' `tool_choice`, as rules an adapter maps onto its framework's per-call setting."""
        return [ToolChoiceRule(after_call=t.after.call if t.after else None, choice=t.tool_choice)
                for t in self.script if t.tool_choice is not None]

    def tool_choice_for(self, trailing_results: list[str], any_results: bool) -> str | None:
        """The `tool_choice` the next model call must send, from the conversation about to be sent:
        `trailing_results` the neutral call ids of the tool results after its last assistant message,
        `any_results` whether it holds any tool result. None: the client's default."""
        for rule in self.tool_choice_rules():
            if rule.after_call is None and not any_results:
                return rule.choice
            if rule.after_call is not None and any(rule.follows(cid) for cid in trailing_results):
                return rule.choice
        return None

    @property
    def timing_sensitive(self) -> bool:
        """Its cells depend on the clock: a deadline, a cancel at a moment, or a scripted delay or timeout a limit
        can race. These are the cells a loaded machine could change (tests/test_timing_under_load.py runs them
        beside a CPU hog)."""
        return self.limits.deadline_s is not None or self.cancel is not None or self.scripted_delay_s() > 0

    def model_fails_first(self) -> bool:
        """Some turn's model answer fails before it succeeds: the framework's own retry backoff will wait."""
        return any(t.fail_first or t.wire_fault for t in self.all_turns())

    def scripted_delay_s(self) -> float:
        """Upper bound of the time the script itself spends waiting (used for hard timeouts)."""
        model = sum(t.delay_s + t.stream_delay_s for t in self.all_turns()) * 2
        # a retry hint the client is told to wait, each time it is sent (a hint sent forever: once; the retry
        # window covers the rest)
        model += sum((f.retry_after_s or 0) * (1 if f.times == "forever" else f.times)
                     for t in self.all_turns() for f in t.fail_first)
        tools = sum(
            (s.delay_s + (s.timeout.after_s if s.timeout else 0)) * s.times
            for spec in self.tools.values()
            for s in spec.behavior
        )
        return model + tools
