"""Loading scenario files: a directory's `_suite.yaml` defaults laid under each file, the schema, and the
checks pydantic cannot see (references between parts of a file, reachable turns, `tool_choice` conflicts).

Loading never stops at the first problem: `load_scenarios` collects every problem of every file and raises
one `BadInput` naming file, field path and reason for each. Claim ids are checked against the set the caller
passes (the reports own the claims file; the core never reads it).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from loopbench.harness.errors import (
    BadInput,
    InputProblem,
    did_you_mean,
    unknown_keys,
    validation_problems,
)
from loopbench.harness.record import PER_AGENT_COUNTERS, PER_TOOL_COUNTERS, SCALAR_COUNTERS
from loopbench.harness.scenario.model import (
    ID_PATTERN,
    MAIN_AGENT,
    MAX_TOOL_NAME,
    TOOL_NAME_PATTERN,
    Limits,
    ModelSpec,
    Scenario,
    ToolSpec,
    Turn,
)
from loopbench.harness.scenario.yaml_input import InputError, read_yaml

# package data, found the same way in a checkout (editable install) and in an installed wheel
SCENARIO_DIR = Path(str(resources.files("loopbench.scenarios")))
SUITE_DEFAULTS_FILE = "_suite.yaml"


# what `_suite.yaml` may set for its directory; `extends: builtin` lays it over the built-in suite's defaults
# and tool catalogue (the user's entries win), so a user's scenarios can use get_ticket & co. by name
SUITE_DEFAULT_KEYS = ("extends", "model", "limits", "safety_cap", "tools")
# the schema of each mapping a `_suite.yaml` sets, whose keys are checked there (not in every scenario using it)
SUITE_SCHEMAS: dict[str, Any] = {"model": ModelSpec, "limits": Limits, "tools": dict[str, ToolSpec]}


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


def _mapping(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _sequence(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _described(spec: Any) -> bool:
    """A tool entry that is more than a name: its declaration, or one the schema refuses on its own."""
    return not isinstance(spec, dict) or "description" in spec


def _undeclared_tool(name: str, tools: dict[str, Any], catalogue: dict[str, Any]) -> str:
    """Why a tool a file names is not one it may use, with the name it most likely means."""
    reason = f"tool {name!r} is not declared in tools"
    if hint := did_you_mean(name, [n for n, spec in tools.items() if _described(spec)]):
        return f"{reason}: {hint}"
    if name in catalogue:
        return f"{reason}: the catalogue has it; add `{name}: {{}}` to tools"
    if hint := did_you_mean(name, catalogue):
        return f"{reason}: {hint} (a catalogue tool: add it to tools)"
    return reason


def _turn_paths(raw: Any) -> dict[int, str]:
    """Turn index -> `script[<turn id>]`, for each turn whose id names it alone (the format of
    harness/run/ideal.py's problems); a turn without a valid, unique id keeps `script.<index>`."""
    turns = [t.get("id") if isinstance(t, dict) else None for t in _sequence(_mapping(raw).get("script"))]
    return {i: f"script[{tid}]" for i, tid in enumerate(turns)
            if isinstance(tid, str) and re.fullmatch(ID_PATTERN, tid) and turns.count(tid) == 1}


def _by_turn_id(field: str, paths: dict[int, str]) -> str:
    found = re.match(r"script\.(\d+)(?=\.|$)", field)
    if found and int(found[1]) in paths:
        return paths[int(found[1])] + field[found.end():]
    return field


def _cross_checks(raw: dict[str, Any], claim_ids: set[str] | None,
                  catalogue: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """Problems pydantic cannot see: references between parts of the file. Read from the raw (merged) data, so
    they are reported in the same pass as the schema's problems, even when those make the file invalid. A
    file whose `tools` is no mapping has that one problem, not one more for each tool it names."""
    out: list[tuple[str, str]] = []
    catalogue = catalogue or {}
    tools = _mapping(raw.get("tools"))
    check_tools = isinstance(raw.get("tools"), dict)
    agents = _mapping(raw.get("agents"))
    owners = _tool_owners(agents, out)
    seen_calls: dict[str, str] = {}
    turn_ids: set[str] = set()
    delegated: set[str] = set()
    every_call = {c.get("id") for _, _, script in _scripts(raw) for t in script
                  for c in map(_mapping, _sequence(t.get("calls")))}
    for agent, prefix, script in _scripts(raw):
        own_calls: set[str] = set()
        for i, turn in enumerate(script):
            if turn.get("id") in turn_ids:
                # turn ids are unique across every agent's script: the server counts retries per turn
                out.append((f"{prefix}.{i}.id", f"duplicate turn id {turn.get('id')!r}"))
            turn_ids.add(turn.get("id"))  # type: ignore[arg-type]
            if agent != MAIN_AGENT and turn.get("tool_choice") is not None:
                out.append((f"{prefix}.{i}.tool_choice", "a child agent's turn cannot ask a tool_choice (the "
                            "adapters set it on the main agent's calls only)"))
            for j, call in enumerate(_mapping(c) for c in _sequence(turn.get("calls"))):
                where = f"{prefix}.{i}.calls.{j}"
                out += _call_problems(call, where, agent, agents, owners, tools, check_tools, catalogue)
                if call.get("tool") in agents:
                    delegated.add(call["tool"])
                if not isinstance(call.get("id"), str):
                    continue
                if call["id"] in seen_calls:
                    also = seen_calls[call["id"]]
                    out.append((f"{where}.id", f"duplicate call id {call['id']!r} (also in turn {also})"))
                seen_calls[call["id"]] = turn.get("id")  # type: ignore[assignment]
                own_calls.add(call["id"])
        for i, turn in enumerate(script):
            after = _mapping(turn.get("after")).get("call")
            if isinstance(after, str) and after not in own_calls:
                reason = _unknown_call(after, own_calls)
                if after in every_call:
                    reason = f"call {after!r} is another agent's: a turn follows its own agent's calls"
                out.append((f"{prefix}.{i}.after.call", reason))
        openers = [t.get("id") for t in script if t.get("after") is None]
        if script and len(openers) != 1:
            out.append((prefix, f"exactly one turn must have no `after` (the opening turn); found {openers}"))
    for name in agents:
        if name not in delegated:
            out.append((f"agents.{name}", "no turn of the main script delegates to it (a call with `tool: "
                        f"{name}` and a `task`): its script could never be served"))
    out += _agent_references(raw, tools)
    for i, resume in enumerate(_sequence(raw.get("resumes"))):
        for call_id in _mapping(_mapping(resume).get("decisions")):
            if call_id not in seen_calls:
                out.append((f"resumes.{i}.decisions.{call_id}", _unknown_call(call_id, seen_calls, named=False)))
    cancel = _mapping(raw.get("cancel"))
    if check_tools and isinstance(cancel.get("tool"), str) and cancel["tool"] not in tools:
        out.append(("cancel.tool", _undeclared_tool(cancel["tool"], tools, catalogue)))
    if isinstance(cancel.get("turn"), str) and cancel["turn"] not in turn_ids:
        hint = did_you_mean(cancel["turn"], [t for t in turn_ids if isinstance(t, str)])
        out.append(("cancel.turn", f"no turn has id {cancel['turn']!r}" + (f" ({hint})" if hint else "")))
    if cancel.get("resume") and raw.get("resumes"):
        out.append(("cancel.resume", "a task resumed after its cancel cannot also resume approval pauses (one "
                    "kind of resume per scenario: the segments would have no defined order)"))
    for i, claim in enumerate(_sequence(raw.get("claims"))):
        if claim_ids is not None and isinstance(claim, str) and claim not in claim_ids:
            out.append((f"claims.{i}", f"unknown claim id {claim!r} (see reports/claims.yaml)"))
    completion = _mapping(raw.get("completion"))
    for part in ("receipts", "effects"):
        for i, ev in enumerate(_mapping(e) for e in _sequence(completion.get(part))):
            if check_tools and isinstance(ev.get("tool"), str) and ev["tool"] not in tools:
                out.append((f"completion.{part}.{i}.tool", _undeclared_tool(ev["tool"], tools, catalogue)))
    for name in _mapping(_mapping(raw.get("expect")).get("counters")):
        base, _, tool = str(name).partition(".")
        if tool and base in PER_AGENT_COUNTERS:
            if tool not in (MAIN_AGENT, *agents):
                out.append((f"expect.counters.{name}", f"no agent {tool!r} (agents: "
                            f"{', '.join([MAIN_AGENT, *map(str, agents)])})"))
        elif tool:
            if base not in PER_TOOL_COUNTERS:
                out.append((f"expect.counters.{name}", f"{base!r} is not a per-tool or per-agent counter"))
            elif check_tools and tool not in tools:
                out.append((f"expect.counters.{name}", _undeclared_tool(tool, tools, catalogue)))
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


def _unknown_call(call_id: object, calls: Iterable[str], named: bool = True) -> str:
    """Why a reference to a call id (`after.call`, a resume's decision) names no scripted call, with the id it
    most likely means: `no scripted call has id 'ticket_l' (did you mean 'ticket_1'?)`."""
    reason = f"no scripted call has id {call_id!r}" if named else "no scripted call has this id"
    hint = did_you_mean(call_id, calls)
    return f"{reason} ({hint})" if hint else reason


def _scripts(raw: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(agent, field path, turns) of the main script and of each child agent's."""
    out = [(MAIN_AGENT, "script", [_mapping(t) for t in _sequence(raw.get("script"))])]
    for name, spec in _mapping(raw.get("agents")).items():
        out.append((str(name), f"agents.{name}.script", [_mapping(t) for t in _sequence(_mapping(spec).get("script"))]))
    return out


def _tool_owners(agents: dict[str, Any], out: list[tuple[str, str]]) -> dict[str, str]:
    """Tool -> the child agent given it, recording a tool given to two children and a badly named child."""
    owners: dict[str, str] = {}
    instructions: dict[str, str] = {}
    for name, spec in agents.items():
        spec = _mapping(spec)
        if name == MAIN_AGENT or not re.fullmatch(TOOL_NAME_PATTERN, str(name)):
            out.append((f"agents.{name}", f"an agent id is 1-{MAX_TOOL_NAME} letters, digits, _ or - starting with a "
                        f"letter (frameworks name a tool after it), and not {MAIN_AGENT!r} (the main agent's)"))
        for i, tool in enumerate(_sequence(spec.get("tools"))):
            if tool in owners:
                out.append((f"agents.{name}.tools.{i}", f"tool {tool!r} is also given to agent {owners[tool]!r}: a "
                            "tool belongs to one agent (its runs are counted for that agent)"))
            owners.setdefault(tool, str(name))
        text = spec.get("instructions")
        if isinstance(text, str):
            for other, other_text in instructions.items():
                if text in other_text or other_text in text:
                    out.append((f"agents.{name}.instructions", f"one of its and agent {other!r}'s instructions holds "
                                "the other: the server tells agents apart by them"))
            instructions[str(name)] = text
    return owners


def _call_problems(call: dict[str, Any], where: str, agent: str, agents: dict[str, Any], owners: dict[str, str],
                   tools: dict[str, Any], check_tools: bool, catalogue: dict[str, Any]) -> list[tuple[str, str]]:
    """A scripted call's references: a tool its agent is given, or (the main agent only) a child to delegate to."""
    tool = call.get("tool")
    if not isinstance(tool, str):
        return []
    if tool in agents:
        if agent != MAIN_AGENT:
            return [(f"{where}.tool", f"{tool!r} is an agent: only the main agent delegates (one level of agents)")]
        if call.get("task") is None:
            return [(f"{where}.task", f"a call to agent {tool!r} is a delegation: it needs the `task` it hands over")]
        return []
    if call.get("task") is not None:
        return [(f"{where}.task", f"only a call to a child agent has a task; {tool!r} is not an agent "
                 f"(agents: {', '.join(map(str, agents)) or 'none'})")]
    if check_tools and tool not in tools:
        return [(f"{where}.tool", _undeclared_tool(tool, tools, catalogue))]
    owner = owners.get(tool, MAIN_AGENT)
    if agents and owner != agent:
        mine = [t for t in tools if owners.get(t, MAIN_AGENT) == agent]
        return [(f"{where}.tool", f"tool {tool!r} is agent {owner!r}'s, not {agent!r}'s (its tools: "
                 f"{', '.join(mine) or 'none'})")]
    return []


def _agent_references(raw: dict[str, Any], tools: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for name, spec in _mapping(raw.get("agents")).items():
        for i, tool in enumerate(_sequence(_mapping(spec).get("tools"))):
            if isinstance(raw.get("tools"), dict) and tool not in tools:
                out.append((f"agents.{name}.tools.{i}", f"tool {tool!r} is not declared in tools"))
        if name in tools:
            out.append((f"agents.{name}", "an agent cannot have a tool's name: a call to it would be ambiguous"))
        main = raw.get("instructions")
        text = _mapping(spec).get("instructions")
        if isinstance(main, str) and isinstance(text, str) and text in main:
            out.append((f"agents.{name}.instructions", "the main agent's instructions hold them: its requests "
                        "would be taken for this agent's"))
    return out


def _reachability(sc: Scenario) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for agent in sc.agent_ids():
        prefix = "script" if agent == MAIN_AGENT else f"agents.{agent}.script"
        out += [(prefix + field[len("script"):], reason) for field, reason in _script_reachability(sc.script_of(agent))]
    return out


def _script_reachability(script: list[Turn]) -> list[tuple[str, str]]:
    """Turns the model can never serve: one that waits on a call of its own, and every turn no served turn's
    call leads to (the opening turns have no `after`). Such a script would be blamed on the framework.
    Repeating turns are left out: naming their own call template is how they say when to continue."""
    out: list[tuple[str, str]] = []
    owner = {c.id: t.id for t in script for c in t.calls}
    repeating = {t.id for t in script if t.repeat != 1}
    for i, turn in enumerate(script):
        if turn.id not in repeating and turn.after and owner.get(turn.after.call) == turn.id:
            out.append((f"script.{i}.after.call", f"turn {turn.id!r} waits on its own call {turn.after.call!r}"))
    reachable = {t.id for t in script if t.after is None}
    grew = True
    while grew:
        grew = False
        for t in script:
            if t.id not in reachable and t.after and (owner.get(t.after.call) in reachable or t.id in repeating):
                reachable.add(t.id)
                grew = True
    if not any(t.after is None for t in script):
        out.append(("script", "no opening turn: every turn waits on a call, so the first request has no answer"))
    else:
        for i, t in enumerate(script):
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


def _uncatalogued_tools(merged: dict[str, Any], source: str,
                        catalogue: dict[str, Any] | None = None) -> dict[str, InputProblem]:
    """Tools named with no description anywhere: one problem each, saying where tools are looked up and the
    catalogue name it most likely means. `catalogue`: the tools of the file's `_suite.yaml` (with the built-in
    ones when it extends them): `extends: builtin` is advised only where it would add something."""
    tools = merged.get("tools")
    if not isinstance(tools, dict):
        return {}
    missing = [n for n, spec in tools.items() if not _described(spec)]
    if not missing:
        return {}
    catalogue = catalogue or {}
    suite = Path(source).resolve().parent / SUITE_DEFAULTS_FILE
    where = (f"{suite} (it does not declare it)" if suite.exists() else f"{suite} (there is none)")
    builtin = load_defaults(SCENARIO_DIR)[0].get("tools", {})
    extends = f"`extends: builtin` in that _suite.yaml adds the built-in catalogue ({', '.join(sorted(builtin))})"
    out = {}
    for name in missing:
        hint = f"not declared: tools are looked up in this file and in {where}"
        if name in catalogue:  # the suite's own entry for it, which lacks a description
            hint = f"not declared: {suite} names it with no description"
        elif close := did_you_mean(name, catalogue):
            hint += f"; {close}"
        elif set(builtin) <= set(catalogue):  # the built-in catalogue is there already: it does not have it
            hint += f"; its catalogue has {', '.join(sorted(catalogue))}"
        elif name not in builtin and (close := did_you_mean(name, builtin)):
            hint += f"; {close} {extends}"
        else:
            hint += f"; {extends}"
        out[name] = InputProblem(source, f"tools.{name}", hint)
    return out


def parse_scenario(
    raw: Any, source: str, defaults: dict[str, Any] | None = None, claim_ids: set[str] | None = None
) -> tuple[Scenario | None, list[InputProblem]]:
    if not isinstance(raw, dict):
        return None, [InputProblem(source, "", "a scenario file must be a YAML mapping")]
    merged = _merge_defaults(raw, defaults or {})
    catalogue = _mapping((defaults or {}).get("tools"))
    references = [InputProblem(source, f, r) for f, r in _cross_checks(merged, claim_ids, catalogue)]
    try:
        sc = Scenario.model_validate({**merged, "source": source})
    except ValidationError as exc:
        problems = validation_problems(exc, source, model=Scenario)
        known = {(p.field, p.reason) for p in problems}
        problems += [p for p in references if (p.field, p.reason) not in known]
        uncatalogued = _uncatalogued_tools(merged, source, catalogue)
        # a tool with no declaration lacks each of its keys: one problem that says why, not one per key
        def hidden(p: InputProblem) -> bool:
            return p.reason == "required key is missing" and p.field.rpartition(".")[0] in {
                f"tools.{n}" for n in uncatalogued}

        return None, _keyed([p for p in problems if not hidden(p)] + list(uncatalogued.values()), merged)
    problems = references + [InputProblem(source, f, r) for f, r in _reachability(sc) + _tool_choice_conflicts(sc)]
    stem = Path(source).stem
    if stem != sc.id:
        problems.append(InputProblem(source, "id", f"must match the file name ({stem!r})"))
    return (None if problems else sc), _keyed(problems, merged)


def _keyed(problems: list[InputProblem], raw: dict[str, Any]) -> list[InputProblem]:
    """The problems with a path into `script` naming the turn by its id (`script[read_ticket].calls.0.tool`)."""
    paths = _turn_paths(raw)
    return [InputProblem(p.file, _by_turn_id(p.field, paths), p.reason) for p in problems]


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
    # an unknown key, at any depth, is reported here once (and dropped), not in every scenario of the directory
    for key in sorted(set(data) - set(SUITE_DEFAULT_KEYS), key=str):
        known = ", ".join(SUITE_DEFAULT_KEYS)
        hint = did_you_mean(key, SUITE_DEFAULT_KEYS)
        problems.append(InputProblem(str(path), str(key), f"unknown key ({hint + ' ' if hint else ''}a suite file "
                                                          f"has {known})"))
        del data[key]
    fatal = False
    for key in ("model", "limits", "tools"):
        if key in data and not isinstance(data[key], dict):
            problems.append(InputProblem(str(path), key, "must be a mapping"))
            fatal = True
        elif key in data:
            problems += [InputProblem(str(path), f, r) for f, r in unknown_keys(SUITE_SCHEMAS[key], data[key], key)]
    extends = data.pop("extends", None)
    if extends not in (None, "builtin"):
        problems.append(InputProblem(str(path), "extends", "must be builtin (the only suite there is to build on)"))
        fatal = True
    if fatal:
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
    files: list[Path] | None = None, directory: Path = SCENARIO_DIR, claim_ids: set[str] | None = None
) -> list[Scenario]:
    """Load and validate scenario files; raise BadInput listing every problem of every file. `claim_ids`: the
    documented claims a scenario may cite (None: not checked; the caller owns the claims file)."""
    files = scenario_files(directory) if files is None else files
    problems: list[InputProblem] = []
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
