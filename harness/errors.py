"""The small exception hierarchy of loopbench. Each error says exactly what went wrong and where.

An input problem is `file: field.path: reason`; the helpers at the end make the reason help: the closest name
(`did_you_mean`, for unknown keys, tools, scenarios, frameworks, call and turn ids), the value given (`shown`),
and one problem per pydantic error a user would count as one (`validation_problems` with the model validated)."""

from __future__ import annotations

import difflib
import math
import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, Tag


class LoopbenchError(Exception):
    """Base of every error loopbench raises on purpose."""


@dataclass(frozen=True)
class InputProblem:
    """One thing wrong with one input file: where and why."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.reason}" if self.field else f"{self.file}: {self.reason}"


class BadInput(LoopbenchError):
    """Input refused before anything runs (exit code 2). Carries every problem found, not only the first."""

    def __init__(self, problems: list[InputProblem] | str):
        if isinstance(problems, str):
            problems = [InputProblem(file="", field="", reason=problems)]
        self.problems = problems
        super().__init__("\n".join(str(p).lstrip(": ") for p in problems))


class ScriptViolation(LoopbenchError):
    """The scripted model was asked something its script cannot answer."""


class UnansweredRequest(ScriptViolation):
    """No turn of the script answers what the latest scripted calls returned: the scenario's own gap (its run
    is `script_error`), whatever the framework did to get there."""


class SchemaMismatch(BadInput):
    """A results file written by another schema version."""


class UnknownRun(LoopbenchError):
    """A run id the model server or the ledger does not know (never registered, or already unregistered)."""


class UnknownTool(LoopbenchError):
    """A tool the run's scenario does not declare."""


class OutputUnwritable(LoopbenchError):
    """loopbench could not write its output (the disk is full, a quota, a read-only mount): the suite stops, the
    records already written stay complete, and `--continue` runs the rest once the cause is gone."""

    def __init__(self, path: object, why: str):
        super().__init__(f"{path}: cannot write: {why}")

    @classmethod
    def of(cls, path: object, exc: OSError) -> OutputUnwritable:
        return cls(exc.filename or path, exc.strerror or str(exc))


class WorkerHung(LoopbenchError):
    """A worker gave no answer within the segment's hard timeout (the run is `hung`; the worker is replaced).
    `waited_s`: how long the runner waited for the answer, so the hung segment's time is in the record; `pid`:
    the worker that hung (already killed)."""

    def __init__(self, message: str, waited_s: float, pid: int | None = None):
        super().__init__(message)
        self.waited_s, self.pid = waited_s, pid


class WorkerDied(LoopbenchError):
    """A worker process ended while a job was in flight (the run is `error`)."""


# ---------------------------------------------------------------- input problems that help
def close_matches(word: object, choices: Iterable[object], n: int = 1) -> list[str]:
    """The `n` names of `choices` closest to `word` (difflib's ratio, 0.6 at least), best first; never `word`."""
    return difflib.get_close_matches(str(word), sorted({str(c) for c in choices} - {str(word)}), n=n, cutoff=0.6)


def did_you_mean(word: object, choices: Iterable[object], n: int = 1) -> str:
    """`did you mean 'limits'?` for the names of `choices` closest to `word`, "" when none is close: the one
    phrasing of every suggestion (unknown keys, tools, scenarios, frameworks, variants, call and turn ids)."""
    found = close_matches(word, choices, n)
    return f"did you mean {' or '.join(repr(f) for f in found)}?" if found else ""


MAX_SHOWN = 40  # characters of an offending value a message echoes


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """A value as a message echoes it: YAML's words for booleans, null and infinities, a repr cut to `limit`
    characters (a long string says how long it was)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ---- where a pydantic error is, from the model's own types: which parts of its loc are union-branch names
# (they mean nothing to a user), and which keys the mapping holding an unknown key may have
def _unwrap(t: Any) -> Any:
    while True:
        if get_origin(t) is Annotated:
            t = get_args(t)[0]
        elif _is_union(t) and len(members := [a for a in get_args(t) if a is not type(None)]) == 1:
            t = members[0]  # `X | None` is X that may be null: pydantic names no branch
        else:
            return t


def _is_union(t: Any) -> bool:
    return get_origin(t) in (Union, types.UnionType)


def _branch(union: Any, tag: object) -> Any:
    """The member of `union` that pydantic names `tag` in a loc (Any when none is recognised)."""
    for member in get_args(union):
        if member is type(None):
            continue
        tags = [m.tag for m in getattr(member, "__metadata__", ()) if isinstance(m, Tag)]
        inner = _unwrap(member)
        origin = get_origin(inner)
        name = getattr(inner, "__name__", "")
        if tag in tags or (not tags and isinstance(tag, str) and (
                (isinstance(inner, type) and issubclass(inner, BaseModel) and tag == name)
                or (origin is Literal and tag.startswith("literal["))
                or (origin is not None and origin is not Literal and tag.startswith(f"{name or origin.__name__}["))
                or (isinstance(inner, type) and tag in (name, f"constrained-{name}")))):
            return inner
    return Any


def _model_fields(t: Any) -> list[str] | None:
    """The keys a mapping validated as `t` may have (None: `t` is not a model)."""
    t = _unwrap(t)
    if isinstance(t, type) and issubclass(t, BaseModel):
        return [n for n, f in t.model_fields.items() if not f.exclude]
    return None


def _walk(root: Any, loc: tuple[Any, ...]) -> tuple[set[int], Any]:
    """The positions of `loc` that are union-branch names, and the type at the end of `loc`."""
    tags: set[int] = set()
    t = root
    for i, part in enumerate(loc):
        t = _unwrap(t)
        if _is_union(t):
            tags.add(i)
            t = _branch(t, part)
        elif isinstance(t, type) and issubclass(t, BaseModel):
            found = t.model_fields.get(part) if isinstance(part, str) else None
            t = found.annotation if found else Any
        elif get_origin(t) in (list, dict) and get_args(t):
            t = get_args(t)[-1]  # an item of a list, a value of a mapping
        else:
            t = Any
    return tags, t


def _looks_like_a_branch(p: object) -> bool:
    # without the model: pydantic's branch names ('int', 'Bound', 'list[str]', 'constrained-int', ...)
    return isinstance(p, str) and (p[:1].isupper() or p in {"int", "float", "str"} or "[" in p
                                   or p.startswith(("constrained-", "function-")))


def _field_path(loc: tuple[Any, ...], tags: set[int] | None = None) -> str:
    if tags is None:
        tags = {i for i, p in enumerate(loc) if _looks_like_a_branch(p)}
    return ".".join(str(p) for i, p in enumerate(loc) if i not in tags)


def unknown_key(key: object, allowed: Iterable[str] | None) -> str:
    """The reason for a key a mapping may not have: the closest allowed one, else the allowed ones."""
    if allowed is None:
        return "unknown key"
    allowed = list(allowed)
    if hint := did_you_mean(key, allowed):
        return f"unknown key ({hint})"
    return f"unknown key (allowed: {', '.join(allowed)})"


def _literal_options(err: dict[str, Any]) -> list[str | int]:
    expected = err.get("ctx", {}).get("expected", "")
    return [a if a or not b else int(b) for a, b in re.findall(r"'([^']*)'|(\d+)", expected)]


# what a branch expected, by its type error, when the value fits no branch of a union
_EXPECTED = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
             "float_type": "a number", "float_parsing": "a number", "string_type": "a string",
             "bool_type": "true or false", "bool_parsing": "true or false", "dict_type": "a mapping",
             "model_type": "a mapping", "model_attributes_type": "a mapping", "list_type": "a list",
             "none_required": "null"}


def _wrong_type(err: dict[str, Any]) -> bool:
    """The value is not of the type this error's schema validates (not: of the type, but out of range)."""
    kind = err["type"]
    if kind == "literal_error":
        value = err.get("input")
        return not any(type(o) is type(value) for o in _literal_options(err))
    return kind in _EXPECTED or kind.endswith("_type")


# type and range errors echo the value; an unknown key, a missing one or a validator's own sentence do not
_ECHOED = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "multiple_of", "finite_number",
           "string_pattern_mismatch", "literal_error", "enum", "int_parsing", "float_parsing", "bool_parsing",
           "int_from_float"}


def _reason(err: dict[str, Any], allowed: list[str] | None = None, echo: bool = True) -> str:
    kind = err["type"]
    if kind == "literal_error":
        reason = "must be one of " + "|".join(str(o) for o in _literal_options(err))
    elif kind == "extra_forbidden":
        return unknown_key(err["loc"][-1] if err.get("loc") else "", allowed)
    elif kind == "missing":
        return "required key is missing"
    elif kind in ("model_type", "model_attributes_type"):
        reason = "Input should be a mapping"
    else:
        reason = str(err["msg"]).removeprefix("Value error, ")
    if echo and "input" in err and (kind in _ECHOED or _wrong_type(err)):
        reason += f", got {shown(err['input'])}{_literal_hint([err])}"
    return reason


def _literal_hint(errors: list[dict[str, Any]]) -> str:
    """` (did you mean 'required'?)` for a string close to an option of these literal errors."""
    value = errors[0].get("input") if errors else None
    options = [o for e in errors if e["type"] == "literal_error" for o in _literal_options(e) if isinstance(o, str)]
    hint = did_you_mean(value, options) if isinstance(value, str) and options else ""
    return f" ({hint})" if hint else ""


def _expected(err: dict[str, Any]) -> str:
    if err["type"] == "literal_error":
        return "one of " + "|".join(str(o) for o in _literal_options(err))
    if err["type"] == "string_pattern_mismatch":
        return f"a string matching {err.get('ctx', {}).get('pattern', '')!r}"
    return _EXPECTED.get(err["type"], str(err["msg"]).removeprefix("Input should be "))


Located = tuple[dict[str, Any], set[int]]  # a pydantic error and the positions of its loc that are branch names


def _one_per_problem(errors: list[Located], after: int = -1) -> list[tuple[dict[str, Any], set[int], str]]:
    """The errors as (error, branch positions, reason), a union's branches folded into what is wrong with the
    value: pydantic reports why it fits no branch, one error per branch (`repeat: 0` is both "greater than or
    equal to 1" and "must be one of forever"). The branches whose type the value has are the meaningful ones;
    a value of no branch's type is one problem naming what each branch expects."""
    out: list[tuple[dict[str, Any], set[int], str]] = []
    done: set[int] = set()
    for n, (err, tags) in enumerate(errors):
        if n in done:
            continue
        at = min((t for t in tags if t > after), default=None)
        if at is None:
            out.append((err, tags, _reason(err)))
            continue
        prefix = tuple(err["loc"][:at])
        group = [(m, e, t) for m, (e, t) in enumerate(errors)
                 if m not in done and at in t and tuple(e["loc"][:at]) == prefix]
        done.update(m for m, _, _ in group)
        branches: dict[Any, list[Located]] = {}
        for _, e, t in group:
            branches.setdefault(e["loc"][at], []).append((e, t))
        fitting = {b: errs for b, errs in branches.items()
                   if not all(len(e["loc"]) == at + 1 and _wrong_type(e) for e, _ in errs)}
        kept = [et for errs in fitting.values() for et in errs]
        # the value itself fits no branch, or is only no option of a literal: one problem, naming every branch
        # (`repeat: often` must be an integer or forever); else what is wrong inside the branches it fits
        # (`repeat: 0` is below 1: that the literal `forever` is not 0 is noise)
        at_value = all(len(e["loc"]) == at + 1 for e, _ in kept)
        if at_value and (len(fitting) > 1 or all(e["type"] == "literal_error" for e, _ in kept)):
            first, t = group[0][1], group[0][2]
            expected = " or ".join(dict.fromkeys(_expected(e) for _, e, _ in group))
            hint = _literal_hint([e for _, e, _ in group])
            out.append(({**first, "loc": prefix}, t, f"must be {expected}, got {shown(first.get('input'))}{hint}"))
        else:
            out += _one_per_problem(kept, at)
    return out


def validation_problems(exc: Any, file: str, prefix: str = "", model: type[BaseModel] | None = None
                        ) -> list[InputProblem]:
    """Every error of a pydantic ValidationError as `file: field.path: reason` (the one format for scenario
    files, claims files and records). With the `model` validated: a union's branches folded into one problem,
    and an unknown key's closest allowed key suggested."""
    if model is None:
        return [InputProblem(file, ".".join(filter(None, [prefix, _field_path(tuple(e.get("loc", ())))])),
                             _reason(e)) for e in exc.errors()]
    located: list[Located] = [(e, _walk(model, tuple(e.get("loc", ())))[0]) for e in exc.errors()]
    out = []
    for err, tags, reason in _one_per_problem(located):
        loc = tuple(err.get("loc", ()))
        if err["type"] == "extra_forbidden":
            reason = _reason(err, _model_fields(_walk(model, loc[:-1])[1]))
        out.append(InputProblem(file, ".".join(filter(None, [prefix, _field_path(loc, tags)])), reason))
    return out


def unknown_keys(model: Any, data: Any, path: str = "") -> list[tuple[str, str]]:
    """(field path, reason) for each key of `data` at any depth that `model` has no field for, removing it
    from `data`: for a partial input pydantic does not validate on its own (a `_suite.yaml`'s defaults)."""
    out: list[tuple[str, str]] = []
    t = _unwrap(model)
    if _is_union(t):
        models = [m for m in get_args(t) if _model_fields(m) is not None]
        if len(models) == 1 and isinstance(data, dict):
            return unknown_keys(models[0], data, path)
        return out
    fields = _model_fields(t)
    if fields is not None and isinstance(data, dict):
        for key in list(data):
            where = ".".join(filter(None, [path, str(key)]))
            if key not in fields:
                out.append((where, unknown_key(key, fields)))
                del data[key]
            else:
                out += unknown_keys(t.model_fields[key].annotation, data[key], where)
    elif get_origin(t) is list and isinstance(data, list) and get_args(t):
        for i, item in enumerate(data):
            out += unknown_keys(get_args(t)[0], item, f"{path}.{i}")
    elif get_origin(t) is dict and isinstance(data, dict) and get_args(t):
        for key, value in data.items():
            out += unknown_keys(get_args(t)[1], value, f"{path}.{key}")
    return out
