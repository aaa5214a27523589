"""Scenario models and the YAML loader.

A scenario is one YAML file `scenarios/<id>.yaml`. Suite-wide conventions (model id, usage, default limits,
the standard tool catalogue) live in `scenarios/_suite.yaml`; a scenario's own keys override them (tools are
merged key by key). The format is documented in scenarios/README.md.

Loading never stops at the first problem: `load_scenarios` collects every problem of every file and raises
one `BadInput` naming file, field path and reason for each.
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from loopbench.harness.errors import BadInput, InputProblem, validation_problems
from loopbench.harness.record import PER_TOOL_COUNTERS, SCALAR_COUNTERS, Category, Outcome
from loopbench.harness.yaml_input import InputError, read_yaml

# package data, found the same way in a checkout (editable install) and in an installed wheel
SCENARIO_DIR = Path(str(resources.files("loopbench.scenarios")))
SUITE_DEFAULTS_FILE = "_suite.yaml"
CLAIMS_FILE = Path(str(resources.files("loopbench.reports").joinpath("claims.yaml")))

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


# ---------------------------------------------------------------- the scripted model
class ScriptedCall(Strict):
    id: str = Field(pattern=CALL_ID_PATTERN)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


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
    # the loop's configuration for the request this turn answers: the client must send this `tool_choice`
    # (e.g. `required` on the opening turn: the first model call must use a tool). None: the client's default.
    tool_choice: ToolChoice | None = Field(default=None, union_mode="left_to_right")

    @model_validator(mode="after")
    def _content(self) -> Turn:
        if not self.calls and self.text is None:
            raise ValueError("a turn needs calls, text, or both")
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
        return self


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

    @model_validator(mode="after")
    def _something(self) -> Completion:
        if not (self.final_text_contains or self.receipts or self.effects):
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
        raise ValueError("must be a number >= 0 or a bound ({min, max} or {approx, tol})")
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
    limits: Limits = Limits()
    policy: Policy = Policy()
    resumes: list[Resume] = Field(default_factory=list)
    completion: Completion
    expect: Expect
    safety_cap: int = Field(default=50, ge=1, le=MAX_SAFETY_CAP)
    source: str = Field(default="", exclude=True)  # the file it came from

    # ---- derived views used by the server, the ledger and the adapters
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
        """Its cells depend on the clock: a deadline, or a scripted delay or timeout a limit can race. These are
        the cells a loaded machine could change (tests/test_timing_under_load.py runs them beside a CPU hog)."""
        return self.limits.deadline_s is not None or self.scripted_delay_s() > 0

    def model_fails_first(self) -> bool:
        """Some turn's model answer fails before it succeeds: the framework's own retry backoff will wait."""
        return any(t.fail_first for t in self.script)

    def scripted_delay_s(self) -> float:
        """Upper bound of the time the script itself spends waiting (used for hard timeouts)."""
        model = sum(t.delay_s + t.stream_delay_s for t in self.script) * 2
        tools = sum(
            (s.delay_s + (s.timeout.after_s if s.timeout else 0)) * s.times
            for spec in self.tools.values()
            for s in spec.behavior
        )
        return model + tools


# ---------------------------------------------------------------- loading
# what `_suite.yaml` may set for its directory; `extends: builtin` lays it over the built-in suite's defaults
# and tool catalogue (the user's entries win), so a user's scenarios can use get_ticket & co. by name
SUITE_DEFAULT_KEYS = ("extends", "model", "limits", "safety_cap", "tools")


def _merge_defaults(raw: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(raw)
    for key in ("model", "limits", "safety_cap"):
        if key in defaults and key not in merged:
            merged[key] = copy.deepcopy(defaults[key])
        elif key in defaults and isinstance(merged.get(key), dict):
            merged[key] = {**defaults[key], **merged[key]}
    catalogue = defaults.get("tools", {})
    tools = merged.get("tools")
    if isinstance(tools, dict):
        merged["tools"] = {
            name: {**copy.deepcopy(catalogue.get(name, {})), **(spec or {})} if isinstance(spec, dict | None)
            else spec
            for name, spec in tools.items()
        }
    return merged


_UNREADABLE = object()


def _read_yaml(path: Path, problems: list[InputProblem]) -> Any:
    """The file's YAML data, or _UNREADABLE after recording why."""
    try:
        return read_yaml(path)
    except InputError as exc:
        problems.append(InputProblem(str(path), exc.where, exc.reason))
    except OSError as exc:
        problems.append(InputProblem(str(path), "", f"cannot read: {exc.strerror}"))
    return _UNREADABLE


def load_claim_ids(path: Path = CLAIMS_FILE) -> set[str]:
    data = read_yaml(path) if path.exists() else None
    return {c["id"] for c in (data or {}).get("claims", [])}


def _mapping(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _sequence(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _cross_checks(raw: dict[str, Any], claim_ids: set[str] | None) -> list[tuple[str, str]]:
    """Problems pydantic cannot see: references between parts of the file. Read from the raw (merged) data, so
    they are reported in the same pass as the schema's problems, even when those make the file invalid."""
    out: list[tuple[str, str]] = []
    tools = _mapping(raw.get("tools"))
    script = [_mapping(t) for t in _sequence(raw.get("script"))]
    seen_calls: dict[str, str] = {}
    turn_ids: set[str] = set()
    for i, turn in enumerate(script):
        if turn.get("id") in turn_ids:
            out.append((f"script.{i}.id", f"duplicate turn id {turn.get('id')!r}"))
        turn_ids.add(turn.get("id"))  # type: ignore[arg-type]
        for j, call in enumerate(_mapping(c) for c in _sequence(turn.get("calls"))):
            where = f"script.{i}.calls.{j}"
            if isinstance(call.get("tool"), str) and call["tool"] not in tools:
                out.append((f"{where}.tool", f"tool {call['tool']!r} is not declared in tools"))
            if not isinstance(call.get("id"), str):
                continue
            if call["id"] in seen_calls:
                also = seen_calls[call["id"]]
                out.append((f"{where}.id", f"duplicate call id {call['id']!r} (also in turn {also})"))
            seen_calls[call["id"]] = turn.get("id")  # type: ignore[assignment]
    for i, turn in enumerate(script):
        after = _mapping(turn.get("after")).get("call")
        if isinstance(after, str) and after not in seen_calls:
            out.append((f"script.{i}.after.call", f"no scripted call has id {after!r}"))
    openers = [t.get("id") for t in script if t.get("after") is None]
    if script and len(openers) != 1:
        out.append(("script", f"exactly one turn must have no `after` (the opening turn); found {openers}"))
    for i, resume in enumerate(_sequence(raw.get("resumes"))):
        for call_id in _mapping(_mapping(resume).get("decisions")):
            if call_id not in seen_calls:
                out.append((f"resumes.{i}.decisions.{call_id}", "no scripted call has this id"))
    for i, claim in enumerate(_sequence(raw.get("claims"))):
        if claim_ids is not None and isinstance(claim, str) and claim not in claim_ids:
            out.append((f"claims.{i}", f"unknown claim id {claim!r} (see reports/claims.yaml)"))
    completion = _mapping(raw.get("completion"))
    for part in ("receipts", "effects"):
        for i, ev in enumerate(_mapping(e) for e in _sequence(completion.get(part))):
            if isinstance(ev.get("tool"), str) and ev["tool"] not in tools:
                out.append((f"completion.{part}.{i}.tool", f"tool {ev['tool']!r} is not declared in tools"))
    for name in _mapping(_mapping(raw.get("expect")).get("counters")):
        base, _, tool = str(name).partition(".")
        if tool:
            if base not in PER_TOOL_COUNTERS:
                out.append((f"expect.counters.{name}", f"{base!r} is not a per-tool counter"))
            elif tool not in tools:
                out.append((f"expect.counters.{name}", f"tool {tool!r} is not declared in tools"))
        elif name not in SCALAR_COUNTERS:
            out.append((f"expect.counters.{name}", "not a RunRecord counter name"))
    for name, spec in tools.items():
        if not re.fullmatch(TOOL_NAME_PATTERN, str(name)):
            out.append((f"tools.{name}", f"a tool name is 1-{MAX_TOOL_NAME} letters, digits, _ or - starting with a "
                        "letter (what every wire protocol and framework accepts, with the Claude SDK's mcp__ prefix)"))
        spec = _mapping(spec)
        idem = spec.get("idempotency_arg")
        if idem and idem not in _mapping(_mapping(spec.get("parameters")).get("properties")):
            out.append((f"tools.{name}.idempotency_arg", "not one of the tool's parameters"))
    return out


def _reachability(sc: Scenario) -> list[tuple[str, str]]:
    """Turns the model can never serve: one that waits on a call of its own, and every turn no served turn's
    call leads to (the opening turns have no `after`). Such a script would be blamed on the framework.
    Repeating turns are left out: naming their own call template is how they say when to continue."""
    out: list[tuple[str, str]] = []
    owner = {c.id: t.id for t in sc.script for c in t.calls}
    repeating = {t.id for t in sc.script if t.repeat != 1}
    for i, turn in enumerate(sc.script):
        if turn.id not in repeating and turn.after and owner.get(turn.after.call) == turn.id:
            out.append((f"script.{i}.after.call", f"turn {turn.id!r} waits on its own call {turn.after.call!r}"))
    reachable = {t.id for t in sc.script if t.after is None}
    grew = True
    while grew:
        grew = False
        for t in sc.script:
            if t.id not in reachable and t.after and (owner.get(t.after.call) in reachable or t.id in repeating):
                reachable.add(t.id)
                grew = True
    if not any(t.after is None for t in sc.script):
        out.append(("script", "no opening turn: every turn waits on a call, so the first request has no answer"))
    else:
        for i, t in enumerate(sc.script):
            # a call id no turn makes, or a turn's own call, is reported above
            if t.id not in reachable and t.after and owner.get(t.after.call) not in (None, t.id):
                out.append((f"script.{i}", f"turn {t.id!r} can never be served: no reachable turn makes call "
                            f"{t.after.call!r}"))
    return out


def _tool_choice_conflicts(sc: Scenario) -> list[tuple[str, str]]:
    """Turns that follow the same call but ask different `tool_choice`s: the client sets it before the server
    knows which of them answers, so no loop could honour both."""
    out: list[tuple[str, str]] = []
    first: dict[str | None, tuple[str, str | None]] = {}
    for i, turn in enumerate(sc.script):
        key = turn.after.call if turn.after else None
        if key in first and first[key][1] != turn.tool_choice:
            other, choice = first[key]
            out.append((f"script.{i}.tool_choice", f"turn {turn.id!r} asks {turn.tool_choice!r} but turn {other!r}, "
                        f"which follows the same call, asks {choice!r}: the client cannot know which answers"))
        first.setdefault(key, (turn.id, turn.tool_choice))
    return out


def _uncatalogued_tools(merged: dict[str, Any], source: str) -> dict[str, InputProblem]:
    """Tools named with no description anywhere: one problem each, saying where tools are looked up."""
    tools = merged.get("tools")
    if not isinstance(tools, dict):
        return {}
    missing = [n for n, spec in tools.items() if isinstance(spec, dict) and "description" not in spec]
    if not missing:
        return {}
    suite = Path(source).resolve().parent / SUITE_DEFAULTS_FILE
    where = (f"{suite} (it does not declare it)" if suite.exists() else f"{suite} (there is none)")
    builtin = ", ".join(sorted(load_defaults(SCENARIO_DIR)[0].get("tools", {})))
    hint = (f"not declared: tools are looked up in this file and in {where}; `extends: builtin` in that "
            f"_suite.yaml adds the built-in catalogue ({builtin})")
    return {n: InputProblem(source, f"tools.{n}", hint) for n in missing}


def parse_scenario(
    raw: Any, source: str, defaults: dict[str, Any] | None = None, claim_ids: set[str] | None = None
) -> tuple[Scenario | None, list[InputProblem]]:
    if not isinstance(raw, dict):
        return None, [InputProblem(source, "", "a scenario file must be a YAML mapping")]
    merged = _merge_defaults(raw, defaults or {})
    references = [InputProblem(source, f, r) for f, r in _cross_checks(merged, claim_ids)]
    try:
        sc = Scenario.model_validate({**merged, "source": source})
    except ValidationError as exc:
        problems = validation_problems(exc, source)
        known = {(p.field, p.reason) for p in problems}
        problems += [p for p in references if (p.field, p.reason) not in known]
        uncatalogued = _uncatalogued_tools(merged, source)
        # a tool with no declaration lacks each of its keys: one problem that says why, not one per key
        def hidden(p: InputProblem) -> bool:
            return p.reason == "required key is missing" and p.field.rpartition(".")[0] in {
                f"tools.{n}" for n in uncatalogued}

        return None, [p for p in problems if not hidden(p)] + list(uncatalogued.values())
    problems = references + [InputProblem(source, f, r) for f, r in _reachability(sc) + _tool_choice_conflicts(sc)]
    stem = Path(source).stem
    if stem != sc.id:
        problems.append(InputProblem(source, "id", f"must match the file name ({stem!r})"))
    return (None if problems else sc), problems


def load_defaults(directory: Path) -> tuple[dict[str, Any], list[InputProblem]]:
    problems: list[InputProblem] = []
    path = directory / SUITE_DEFAULTS_FILE
    if not path.exists():
        return {}, problems
    data = _read_yaml(path, problems)
    if data is _UNREADABLE:
        return {}, problems
    if not isinstance(data, dict):
        problems.append(InputProblem(str(path), "", "must be a YAML mapping"))
        return {}, problems
    for key in sorted(set(data) - set(SUITE_DEFAULT_KEYS), key=str):
        known = ", ".join(SUITE_DEFAULT_KEYS)
        problems.append(InputProblem(str(path), str(key), f"unknown key (a suite file has {known})"))
    for key in ("model", "limits", "tools"):
        if key in data and not isinstance(data[key], dict):
            problems.append(InputProblem(str(path), key, "must be a mapping"))
    extends = data.pop("extends", None)
    if extends not in (None, "builtin"):
        problems.append(InputProblem(str(path), "extends", "must be builtin (the only suite there is to build on)"))
    if problems:
        return {}, problems
    if extends == "builtin" and directory.resolve() != SCENARIO_DIR.resolve():
        data = _layered(load_defaults(SCENARIO_DIR)[0], data)
    return data, problems


def _layered(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base` one level deep: model, limits and the tool catalogue merge by key."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = {**out.get(key, {}), **value} if isinstance(value, dict) else value
    return out


def expand_paths(paths: list[Path]) -> list[Path]:
    """`--scenarios` arguments as scenario files: a directory gives its `*.yaml` (not `_suite.yaml`), a file
    itself. BadInput naming each path that does not exist or holds no scenario."""
    files: list[Path] = []
    problems: list[InputProblem] = []
    for path in paths:
        if path.is_dir():
            found = scenario_files(path)
            if not found:
                problems.append(InputProblem(str(path), "--scenarios", "holds no scenario file (*.yaml)"))
            files += found
        elif path.is_file():
            files.append(path)
        else:
            problems.append(InputProblem(str(path), "--scenarios", "no such file or directory"))
    if problems:
        raise BadInput(problems)
    return files


def scenario_files(directory: Path = SCENARIO_DIR) -> list[Path]:
    return sorted(p for p in directory.glob("*.yaml") if not p.name.startswith("_"))


def load_scenarios(
    files: list[Path] | None = None, directory: Path = SCENARIO_DIR, claims_file: Path = CLAIMS_FILE
) -> list[Scenario]:
    """Load and validate scenario files; raise BadInput listing every problem of every file."""
    files = scenario_files(directory) if files is None else files
    problems: list[InputProblem] = []
    claim_ids = load_claim_ids(claims_file) if claims_file.exists() else None
    defaults_by_dir: dict[Path, dict[str, Any]] = {}
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in files:
        parent = path.resolve().parent
        if parent not in defaults_by_dir:
            defaults_by_dir[parent], dproblems = load_defaults(parent)
            problems += dproblems
        raw = _read_yaml(path, problems)
        if raw is _UNREADABLE:
            continue
        sc, file_problems = parse_scenario(raw, str(path), defaults_by_dir[parent], claim_ids)
        problems += file_problems
        if sc:
            if sc.id in seen:
                problems.append(InputProblem(str(path), "id", f"duplicate scenario id (also in {seen[sc.id]})"))
            seen[sc.id] = str(path)
            scenarios.append(sc)
    if problems:
        raise BadInput(problems)
    return scenarios
