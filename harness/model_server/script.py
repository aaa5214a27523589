"""Choose the scripted turn that answers a request: protocol-neutral, no HTTP.

Each wire-protocol module turns a request body into a `Conversation` (the scripted-call batches the
assistant sent, the tool results that came back, the tools offered, `tool_choice`); `select` applies the
rules of scenarios/README.md ("Turn choice") and returns the `Served` turn or raises `ScriptViolation`.

The rules, in short:
- the *latest batch* is the latest assistant message holding scripted calls (ids `<prefix><scripted id>`);
  none: the opening turn;
- each call of the batch came back as `receipt` / `error` or `none`: from the ledger's ground truth for that
  call id when the caller passes `status_of` (a call the ledger ran and that failed is an error whatever the
  framework's wording), else from the marker in its result text; a call with no result is `none`;
- the first turn in file order whose `after` matches a call of the batch is served, passing over a turn whose
  calls are all in the batch with receipts (a framework that merges a new response into the last assistant
  message puts the latest call beside earlier ones in one batch); else a repeating turn
  whose own call is in the batch continues with the next `n`; else a script violation;
- a repeating turn is numbered `n` = 1 + the highest `n` of its calls already in the conversation, and is
  exhausted past `repeat`;
- tool names: the offered tool equal to the scripted name or ending with `__<scripted name>`; a turn calling
  a tool the request did not offer is a violation (a real provider never does that);
- `tool_choice`: `none` with calls, or `required` / a named tool the turn does not call, is a violation;
- agents (scenarios with sub-agents): the request is the child's whose instructions its system prompt holds, else
  the main agent's; only that agent's script answers it, and only its own scripted calls make its batches (a
  child that sees its parent's history, after a handoff, starts at its own opening turn);
- a delegation (a call whose `tool` is a child agent) goes to the tool the request offers for that child: the one
  named after it (`billing`, or ending `_billing`, `-billing`, `__billing`: `transfer_to_billing`), else the one
  whose parameters name an agent (`subagent_type`, `agent_name`); its arguments are filled from that tool's
  schema as a model would: a parameter naming an agent gets the child's id, every other string parameter the
  `task` (the required ones; all of them when the schema marks none required), except a parameter that admits
  null, which stays null; the agent-naming parameter is filled even when the schema does not require it;
- a structured answer (a turn with `output`): its attempt number k is 1 + the assistant messages the conversation
  holds after the one with the latest batch (after the opening turn: all of them), so a correction is served only
  when the framework sends its earlier answer back and asks again (a retry of the same request gets the same k);
  the k-th object (the last one repeats) goes out as a call to the request's output tool — the one offered tool
  that is neither one of the agent's scenario tools nor a delegation tool; more than one such tool is a violation
  — with call id `out_<turn>_<k>`, or, when the request offers none, as the answer's text (the object's JSON);
  where the request constrains that text or that tool to a schema (a strict response format or tool), a real
  provider's answer fits it, so the objects that break the output's schema (its fields, types and enums; the
  `check` is no schema's) are passed over: the first object from the k-th on that fits is served, and a
  constrained request with none left is a violation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from loopbench.harness.errors import ScriptViolation, UnansweredRequest
from loopbench.harness.markers import result_status
from loopbench.harness.record import ToolResultSeen
from loopbench.harness.scenario import After, Scenario, Turn
from loopbench.harness.scenario.model import MAIN_AGENT, ScriptedCall


@dataclass(frozen=True)
class ToolResult:
    call_id: str  # the raw id as the client sent it back
    text: str  # every text part of the result, joined


@dataclass(frozen=True)
class Conversation:
    """What the turn choice needs from a request, extracted by a protocol module."""

    id_prefix: str  # "call_" (OpenAI) or "toolu_" (Anthropic)
    batches: list[list[str]]  # raw tool-call ids of each assistant message that holds calls, in order
    results: list[ToolResult]  # tool results in order
    tools_offered: list[str] = field(default_factory=list)
    # None / "auto" / "none" / "required", or the name of the one tool the client forces
    tool_choice: str | None = None
    tool_choice_named: bool = False  # tool_choice is a tool name
    system: str = ""  # the request's system prompt / instructions, every part joined (tells agents apart)
    tool_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # offered name -> parameters schema
    # every assistant message in order, each as its raw tool-call ids ([] for an answer without calls): how many
    # answers came after a batch (a structured answer's attempt number)
    answers: list[list[str]] = field(default_factory=list)
    # the request constrains the answer to a JSON schema, as a real provider then guarantees: its text (a strict
    # response format: OpenAI's `strict` json_schema, Anthropic's output format, Gemini's response schema), or the
    # arguments of these offered tools (declared `strict`)
    strict_format: bool = False
    strict_tools: frozenset[str] = frozenset()

    def neutral(self, raw_id: str) -> str | None:
        return raw_id[len(self.id_prefix):] if raw_id.startswith(self.id_prefix) else None


@dataclass(frozen=True)
class ServedCall:
    id: str  # neutral id (template with {n} filled in)
    tool: str  # the name sent to the client (offered name, prefix included)
    args: dict[str, Any]
    output: bool = False  # a structured answer given as a call to the output tool (not a tool call of the script)


@dataclass(frozen=True)
class Served:
    turn: Turn
    n: int | None  # the repetition number of a repeating turn
    calls: list[ServedCall]
    text: str | None
    output_attempt: int | None = None  # a structured answer: the k-th answer asked for at this point (1-based)
    # the request constrained the answer to a schema, so the attempts that break the output's schema were passed
    # over (a real provider could not send them); None: not a structured answer
    output_constrained: bool | None = None

    @property
    def label(self) -> str:
        return self.turn.id if self.n is None else f"{self.turn.id}#{self.n}"

    @property
    def state(self) -> tuple[str, int | None, int | None]:
        """The conversation state this answers: fail_first and retries are counted per state. A correction
        request (the k-th structured answer asked for) is a new state, not a retry of the one before it."""
        return (self.turn.id, self.n, self.output_attempt)


@lru_cache(maxsize=4096)
def _template_regex(template: str) -> re.Pattern[str]:
    if "{n}" not in template:
        return re.compile(re.escape(template))
    head, tail = template.split("{n}", 1)
    return re.compile(re.escape(head) + r"([0-9]+)" + re.escape(tail))


def template_n(template: str, call_id: str) -> int | None:
    """0 when `call_id` is the fixed id `template`, its n when it is an instance of a {n} template, else None."""
    m = _template_regex(template).fullmatch(call_id)
    if not m:
        return None
    return int(m.group(1)) if m.groups() else 0


def resolve_tool(scripted: str, offered: list[str]) -> str:
    """The offered name equal to `scripted` or ending with `__<scripted>`; the bare name when none is."""
    if scripted in offered:
        return scripted
    suffix = "__" + scripted
    return next((name for name in offered if name.endswith(suffix)), scripted)


def _fill(value: Any, n: int | None) -> Any:
    if n is None:
        return value
    if isinstance(value, str):
        return value.replace("{n}", str(n))
    if isinstance(value, dict):
        return {k: _fill(v, n) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, n) for v in value]
    return value


def _repeating(turn: Turn) -> bool:
    return turn.repeat == "forever" or turn.repeat > 1


def _scripted_templates(script: list[Turn]) -> list[str]:
    return [c.id for t in script for c in t.calls]


def _is_scripted(neutral_id: str | None, templates: list[str]) -> bool:
    return neutral_id is not None and any(template_n(t, neutral_id) is not None for t in templates)


def _next_n(turn: Turn, conv: Conversation) -> int:
    highest = 0
    for batch in conv.batches:
        for raw in batch:
            neutral = conv.neutral(raw)
            if neutral is None:
                continue
            for call in turn.calls:
                n = template_n(call.id, neutral)
                if n:
                    highest = max(highest, n)
    return highest + 1


def _exhausted(turn: Turn, n: int) -> bool:
    return turn.repeat != "forever" and n > turn.repeat


def _after_matches(after: After, call_id: str, status: str, text: str | None) -> bool:
    if template_n(after.call, call_id) is None:
        return False
    wanted = after.result
    ok = (
        wanted == "any"
        or wanted == status
        or (wanted == "no_receipt" and status in ("error", "none"))
    )
    return ok and (after.contains is None or (text is not None and after.contains in text))


StatusOf = Callable[[str], str | None]  # neutral call id -> "receipt" | "error" | None (unknown)


def _status(text: str | None, neutral_id: str | None, status_of: StatusOf | None) -> str:
    """A result's class: ground truth for a call the ledger knows (only once a result came back), else its
    markers."""
    if text is not None and status_of is not None and neutral_id is not None:
        known = status_of(neutral_id)
        if known is not None:
            return known
    return result_status(text)


def latest_batch(script: list[Turn], conv: Conversation, status_of: StatusOf | None = None
                 ) -> list[tuple[str, str, str | None]]:
    """(neutral id, status, result text) of each of the script's calls in the latest batch that holds any; []
    when there is none."""
    templates = _scripted_templates(script)
    results = {r.call_id: r.text for r in conv.results}  # the last result for an id wins
    for batch in reversed(conv.batches):
        scripted = [raw for raw in batch if _is_scripted(conv.neutral(raw), templates)]
        if scripted:
            out = []
            for raw in scripted:
                text = results.get(raw)
                out.append((conv.neutral(raw) or raw, _status(text, conv.neutral(raw), status_of), text))
            return out
    return []


def tool_results_seen(conv: Conversation, status_of: StatusOf | None = None) -> list[ToolResultSeen]:
    return [
        ToolResultSeen(
            call_id=conv.neutral(r.call_id) or r.call_id,
            status=_status(r.text, conv.neutral(r.call_id), status_of),  # type: ignore[arg-type]
            bytes=len(r.text.encode()),
        )
        for r in conv.results
    ]


def _names_agent(prop: str) -> bool:
    return "agent" in prop.lower()


def delegation_tool(child: str, conv: Conversation, own_tools: list[str]) -> str | None:
    """The offered tool that reaches child agent `child` (module docstring), or None when none does."""
    named = [t for t in conv.tools_offered if t not in own_tools
             and (t == child or any(t.endswith(sep + child) for sep in ("_", "-", "__")))]
    if named:
        return named[0]
    return next((t for t in conv.tools_offered if t not in own_tools and any(
        _names_agent(p) for p in (conv.tool_schemas.get(t) or {}).get("properties", {}))), None)


def _nullable(spec: dict[str, Any]) -> bool:
    """Whether a parameter's schema admits null (`type: [..., "null"]`, an `anyOf`/`oneOf` member of type null, or
    OpenAPI's `nullable: true`)."""
    kind = spec.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or spec.get("nullable") is True:
        return True
    return any(isinstance(m, dict) and _nullable(m) for m in (spec.get("anyOf") or spec.get("oneOf") or []))


def delegation_args(child: str, task: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A delegation's arguments, filled from the offered tool's parameters schema (module docstring)."""
    props: dict[str, Any] = schema.get("properties") or {}
    wanted = schema.get("required") or list(props)
    # the parameter naming the agent is filled even when optional (the Claude CLI's Agent tool requires only
    # description and prompt; without subagent_type it runs its general-purpose agent, not the child)
    wanted = [*wanted, *(p for p in props if _names_agent(p) and p not in wanted)]
    args: dict[str, Any] = {}
    for name in wanted:
        spec = props.get(name) or {}
        kind = spec.get("type")
        if _names_agent(name):
            args[name] = child
        elif _nullable(spec):
            # an optional parameter a strict schema lists as required and nullable (Mastra's sub-agent tool on an
            # OpenAI-compatible route: threadId, instructions, maxSteps...): a model leaves it null
            args[name] = None
        elif kind in ("string", "STRING", None) or (isinstance(kind, list) and "string" in kind):
            args[name] = task
        else:
            raise ScriptViolation(f"the tool that reaches agent {child!r} requires {name!r} of type {kind!r}, "
                                  "which a delegation's task cannot fill")
    return args


def _served_call(c: ScriptedCall, n: int | None, conv: Conversation, scenario: Scenario | None, agent: str
                 ) -> ServedCall:
    if scenario is None or c.tool not in scenario.agents:
        return ServedCall(id=_fill(c.id, n), tool=resolve_tool(c.tool, conv.tools_offered), args=_fill(c.args, n))
    tool = delegation_tool(c.tool, conv, scenario.tools_of(agent))
    if tool is None:
        offered = ", ".join(conv.tools_offered) or "none"
        raise ScriptViolation(f"no offered tool reaches agent {c.tool!r} (offered: {offered})")
    return ServedCall(id=_fill(c.id, n), tool=tool,
                      args=delegation_args(c.tool, _fill(c.task or "", n), conv.tool_schemas.get(tool) or {}))


def _answers_after_batch(conv: Conversation, batch_ids: set[str]) -> int:
    """The assistant messages after the last one holding a call of the batch (after the opening turn: all)."""
    last = max((i for i, ids in enumerate(conv.answers) if batch_ids & set(ids)), default=-1)
    return len(conv.answers) - last - 1


def output_tool(conv: Conversation, scenario: Scenario, agent: str) -> str | None:
    """The tool a structured answer is given through: the one offered tool that is neither one of the agent's
    scenario tools nor a delegation tool (None: the request offers none, the answer is text)."""
    own = {resolve_tool(t, conv.tools_offered) for t in scenario.tools_of(agent)}
    own |= {t for child in scenario.children_of(agent) if (t := delegation_tool(child, conv, list(own)))}
    others = [t for t in conv.tools_offered if t not in own]
    if len(others) > 1:
        raise ScriptViolation(f"a structured answer is due but the request offers {len(others)} tools that are no "
                              f"scenario tool ({', '.join(others)}): which one is the output tool is unclear")
    return others[0] if others else None


def _serve_output(turn: Turn, conv: Conversation, scenario: Scenario, agent: str, batch_ids: set[str]) -> Served:
    attempts = turn.output or []
    k = _answers_after_batch(conv, batch_ids) + 1
    tool = output_tool(conv, scenario, agent)
    constrained = conv.strict_format if tool is None else tool in conv.strict_tools
    # from the k-th object on (the last one repeats); a constrained answer skips the ones its schema rules out
    candidates = attempts[min(k, len(attempts)) - 1:]
    if constrained and scenario.output is not None:
        candidates = [a for a in candidates if not scenario.output.problems(a, check=False)]
        if not candidates:
            raise ScriptViolation(f"turn {turn.id!r}: the request constrains the answer to the output schema, and "
                                  f"no answer of the script from attempt {k} on fits it (a real provider could not "
                                  "send one that breaks it)")
    answer = candidates[0]
    if tool is None:
        return Served(turn=turn, n=None, calls=[], text=json.dumps(answer, ensure_ascii=False), output_attempt=k,
                      output_constrained=constrained)
    call = ServedCall(id=f"out_{turn.id}_{k}", tool=tool, args=dict(answer), output=True)
    return Served(turn=turn, n=None, calls=[call], text=None, output_attempt=k, output_constrained=constrained)


def _serve(turn: Turn, n: int | None, conv: Conversation, scenario: Scenario | None = None,
           agent: str = MAIN_AGENT, batch_ids: frozenset[str] = frozenset()) -> Served:
    if turn.output is not None and scenario is not None:
        return _serve_output(turn, conv, scenario, agent, set(batch_ids))
    calls = [_served_call(c, n, conv, scenario, agent) for c in turn.calls]
    # a real provider only ever calls a tool the request offered
    if unoffered := [c.tool for c in calls if c.tool not in conv.tools_offered]:
        offered = ", ".join(conv.tools_offered) or "none"
        raise ScriptViolation(f"turn {turn.id!r} calls {', '.join(unoffered)}, which the client did not offer "
                              f"(offered: {offered})")
    return Served(turn=turn, n=n, calls=calls, text=_fill(turn.text, n))


def _choose(scenario: Scenario, conv: Conversation, status_of: StatusOf | None, agent: str) -> Served:
    script = scenario.script_of(agent)
    batch = latest_batch(script, conv, status_of)
    if not batch:
        opening = next(t for t in script if t.after is None)
        return _serve(opening, 1 if _repeating(opening) else None, conv, scenario, agent)
    batch_ids = frozenset(conv.id_prefix + cid for cid, _, _ in batch)
    answered = {cid for cid, status, _ in batch if status == "receipt"}
    for turn in script:
        if turn.after is None:
            continue
        if not any(_after_matches(turn.after, cid, status, text) for cid, status, text in batch):
            continue
        if turn.calls and not _repeating(turn) and all(c.id in answered for c in turn.calls):
            continue  # its calls are in this batch with receipts: a model does not ask again for what it has
        n = _next_n(turn, conv) if _repeating(turn) else None
        if n is not None and _exhausted(turn, n):
            continue  # a repeating turn used up: the next rule decides
        return _serve(turn, n, conv, scenario, agent, batch_ids)
    for turn in script:
        if not _repeating(turn):
            continue
        own = any(template_n(c.id, cid) is not None for c in turn.calls for cid, _, _ in batch)
        if own:
            n = _next_n(turn, conv)
            if not _exhausted(turn, n):
                return _serve(turn, n, conv, scenario, agent)
    seen = ", ".join(f"{cid}: {status}" for cid, status, _ in batch)
    raise UnansweredRequest(f"no turn answers the latest scripted calls ({seen})")


def _check_tool_choice(served: Served, conv: Conversation) -> None:
    choice = conv.tool_choice
    if choice == "none" and served.calls:
        raise ScriptViolation(f"tool_choice is 'none' but turn {served.label} calls tools")
    if choice == "required" and not served.calls:
        raise ScriptViolation(f"tool_choice is 'required' but turn {served.label} calls no tool")
    if conv.tool_choice_named and not any(
        c.tool == choice or (choice or "").endswith("__" + c.tool) or c.tool.endswith("__" + (choice or ""))
        for c in served.calls
    ):
        raise ScriptViolation(f"tool_choice names tool {choice!r} but turn {served.label} does not call it")


def request_agent(scenario: Scenario, conv: Conversation) -> str | None:
    """The agent a request comes from (None: a scenario of one agent)."""
    return scenario.agent_of_request(conv.system) if scenario.agents else None


def select(scenario: Scenario, conv: Conversation, status_of: StatusOf | None = None,
           agent: str | None = None) -> Served:
    """The turn of `agent`'s script (default: the main agent's) that answers this conversation, or
    ScriptViolation saying why there is none."""
    served = _choose(scenario, conv, status_of, agent or MAIN_AGENT)
    _check_tool_choice(served, conv)
    return served


__all__ = [
    "Conversation", "Served", "ServedCall", "ToolResult",
    "delegation_args", "delegation_tool", "latest_batch", "output_tool", "request_agent", "resolve_tool",
    "result_status",
    "select", "template_n", "tool_results_seen",
]
