"""The documented claims (reports/claims.yaml) checked against RunRecords: holds / refuted / not testable.

The predicate format is documented at the top of reports/claims.yaml. In short, a claim's `predicate` is a
list of checks; each check selects records (scenario, framework, variant, optional `where` conditions) and
`require`s conditions of every selected record (or of at least one, with `quantifier: any`). A condition is a
small expression over the record's fields (`native.signals.exception_type == "MaxTurnsExceeded"`,
`counters.model_requests_observed <= limits.max_model_calls.neutral`), evaluated by a restricted evaluator:
no Python is executed.

Verdict of a check: no selected records → not testable; a record failing a condition → refuted; a condition
that needs a value the run did not measure (null in an ordering or arithmetic) → not testable; else holds.
Verdict of a claim: no predicate → not testable; any check refuted → refuted; every check holds → holds;
otherwise not testable. Never "holds" without runs as evidence. Runs whose outcome is `error` (loopbench
itself broke) are never evidence.
"""

from __future__ import annotations

import ast
import operator
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loopbench.harness.errors import BadInput, InputProblem, did_you_mean, validation_problems
from loopbench.harness.record import RunRecord
from loopbench.harness.scenario.yaml_input import InputError, read_yaml

if TYPE_CHECKING:  # pandas only where a table is built: `loopbench validate`/`run` read the claim ids at start-up
    import pandas as pd

CLAIMS_FILE = Path(str(resources.files("loopbench.reports").joinpath("claims.yaml")))  # package data
RECORD_FIELDS = frozenset(RunRecord.model_fields)
ClaimVerdict = Literal["holds", "refuted", "not testable"]
_LITERALS = {"null": None, "None": None, "true": True, "True": True, "false": False, "False": False}


class Unknown(Exception):
    """A condition needs a value the run did not measure."""


# ---------------------------------------------------------------- the expression evaluator
_CMP = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_FUNCS: dict[str, Callable[..., Any]] = {"len": len, "abs": abs, "min": min, "max": max}


def _path_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _path_of(node.value)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):
        base = _path_of(node.value)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else "?"
        return f"{base}[{key!r}]" if base else None
    return None


def _segments(node: ast.AST) -> tuple[str, list[str | int | None]]:
    """A field path as its root name and the keys after it (a subscript that is not a constant: None)."""
    keys: list[str | int | None] = []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            keys.append(node.attr)
        else:
            value = node.slice.value if isinstance(node.slice, ast.Constant) else None
            keys.append(value if isinstance(value, str | int) else None)
        node = node.value
    assert isinstance(node, ast.Name)
    return node.id, keys[::-1]


def _unwrapped(tp: Any) -> Any:
    """`X | None`, `Optional[X]` and `Annotated[X, ...]` as X."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def check_path(path: str, root: str, keys: list[str | int | None]) -> None:
    """A field path must exist in the record's schema: a misspelt field would read null, and a claim could hold
    by accident. Free-form mappings (`native.settings`, a signal's `extra`, `packages`) accept any key below
    them; a mapping keyed by a closed vocabulary (`limits`) only its words. ValueError names the path."""
    tp: Any = RunRecord.model_fields[root].annotation
    where = root
    for key in keys:
        tp = _unwrapped(tp)
        origin = typing.get_origin(tp)
        if tp is Any or tp is object:
            return  # free-form below this point
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if not isinstance(key, str) or key not in tp.model_fields:
                hint = did_you_mean(str(key), list(tp.model_fields))
                raise ValueError(f"{path!r}: {where} has no field {key!r}{f' ({hint})' if hint else ''}")
            tp = tp.model_fields[key].annotation
        elif origin in (dict, typing.Mapping) or tp is dict:
            kt, vt = (typing.get_args(tp) or (str, Any))
            allowed = typing.get_args(_unwrapped(kt)) if typing.get_origin(_unwrapped(kt)) is Literal else None
            if allowed is not None and key is not None and key not in allowed:
                hint = did_you_mean(str(key), [str(a) for a in allowed])
                raise ValueError(f"{path!r}: {where} has no key {key!r}{f' ({hint})' if hint else ''}")
            tp = vt
        elif origin in (list, tuple, frozenset, set):
            if key is not None and not isinstance(key, int):
                raise ValueError(f"{path!r}: {where} is a list; index it with a number, not {key!r}")
            tp = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        else:
            raise ValueError(f"{path!r}: {where} is a value ({getattr(tp, '__name__', tp)}), it has no {key!r}")
        where = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"


def check_expression(expr: str) -> ast.Expression:
    """Parse and vet a condition (its field paths checked against the record's schema); ValueError says what is
    not allowed."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not a valid condition ({exc.msg})") from exc
    for node in ast.walk(tree):
        ok = isinstance(node, ast.Expression | ast.Compare | ast.BoolOp | ast.UnaryOp | ast.BinOp | ast.Constant
                        | ast.Name | ast.Attribute | ast.Subscript | ast.List | ast.Tuple | ast.Call | ast.Load
                        | ast.And | ast.Or | ast.Not | ast.USub | ast.cmpop | ast.operator)
        if not ok:
            raise ValueError(f"{type(node).__name__} is not allowed in a condition")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
            raise ValueError(f"only {', '.join(_FUNCS)} may be called")
        if isinstance(node, ast.BinOp) and type(node.op) not in _BIN:
            raise ValueError(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node, ast.Attribute | ast.Subscript):
            root: ast.expr = node
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in RECORD_FIELDS):
                raise ValueError(f"a field path must start with a RunRecord field, not {ast.unparse(root)!r}")
    # each whole path once: a node that is another path's base is only its prefix
    prefixes = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute | ast.Subscript)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Subscript) and id(node) not in prefixes:
            root_name, keys = _segments(node)
            check_path(ast.unparse(node), root_name, keys)
    return tree


class _Eval:
    def __init__(self, record: dict[str, Any]):
        self.record = record
        self.seen: dict[str, Any] = {}  # paths read and their values, for the evidence

    def __call__(self, node: ast.AST) -> Any:
        return getattr(self, "_" + type(node).__name__)(node)

    def _Expression(self, n: ast.Expression) -> Any:
        return self(n.body)

    def _Constant(self, n: ast.Constant) -> Any:
        return n.value

    def _List(self, n: ast.List) -> Any:
        return [self(e) for e in n.elts]

    _Tuple = _List

    def _Name(self, n: ast.Name) -> Any:
        if n.id in RECORD_FIELDS:
            v = self.record.get(n.id)
            self.seen[n.id] = v
            return v
        if n.id in _LITERALS:
            return _LITERALS[n.id]
        return n.id  # a bare word is a string: outcome == completed

    def _lookup(self, base: Any, key: Any, path: str, parent: str) -> Any:
        if isinstance(base, dict):
            v = base.get(key)
            if v is None and parent.endswith("_by_tool"):
                v = 0  # a per-tool counter a tool never reached is zero (harness Counters.get)
        elif isinstance(base, list) and isinstance(key, int):
            v = base[key] if -len(base) <= key < len(base) else None
        else:
            v = None
        self.seen[path] = v
        return v

    def _Attribute(self, n: ast.Attribute) -> Any:
        return self._lookup(self(n.value), n.attr, _path_of(n) or "?", _path_of(n.value) or "")

    def _Subscript(self, n: ast.Subscript) -> Any:
        return self._lookup(self(n.value), self(n.slice), _path_of(n) or "?", _path_of(n.value) or "")

    def _Call(self, n: ast.Call) -> Any:
        args = [self(a) for a in n.args]
        if any(a is None for a in args):
            raise Unknown(f"{ast.unparse(n)}: not measured")
        return _FUNCS[n.func.id](*args)  # type: ignore[attr-defined]

    def _UnaryOp(self, n: ast.UnaryOp) -> Any:
        v = self(n.operand)
        if isinstance(n.op, ast.Not):
            return not v
        if v is None:
            raise Unknown(f"{ast.unparse(n.operand)}: not measured")
        return -v

    def _BinOp(self, n: ast.BinOp) -> Any:
        a, b = self(n.left), self(n.right)
        if a is None or b is None:
            raise Unknown(f"{ast.unparse(n.left if a is None else n.right)}: not measured")
        return _BIN[type(n.op)](a, b)

    def _BoolOp(self, n: ast.BoolOp) -> Any:
        vals = [self(v) for v in n.values]
        return all(vals) if isinstance(n.op, ast.And) else any(vals)

    def _Compare(self, n: ast.Compare) -> Any:
        left = self(n.left)
        for op, comp in zip(n.ops, n.comparators, strict=True):
            right = self(comp)
            if isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) and (left is None or right is None):
                raise Unknown(f"{ast.unparse(n.left if left is None else comp)}: not measured")
            if isinstance(op, ast.In | ast.NotIn) and right is None:
                raise Unknown(f"{ast.unparse(comp)}: not measured")
            try:
                ok = _CMP[type(op)](left, right)
            except TypeError as exc:
                raise Unknown(f"{ast.unparse(n)}: {exc}") from exc
            if not ok:
                return False
            left = right
        return True


def record_view(rec: RunRecord) -> dict[str, Any]:
    """The record as predicates see it: its JSON form (typed, so `native.signals` carries every key, e.g.
    `pending` is [] when nothing was pending)."""
    return rec.model_dump(mode="json")


def evaluate(expr: str | ast.Expression, rec: RunRecord | dict[str, Any]) -> tuple[bool | None, dict[str, Any], str]:
    """(True/False, or None when not measured; the values read; a note) of one condition on one record."""
    tree = check_expression(expr) if isinstance(expr, str) else expr
    view = record_view(rec) if isinstance(rec, RunRecord) else rec
    ev = _Eval(view)
    try:
        return bool(ev(tree)), ev.seen, ""
    except Unknown as exc:
        return None, ev.seen, str(exc)


# ---------------------------------------------------------------- claims and checks
@dataclass
class Check:
    scenarios: list[str]
    frameworks: list[str] | None  # None: any framework
    variants: list[str] | None  # None: any native variant (a guarded one runs loopbench.guard, not the framework)
    where: list[str] = field(default_factory=list)
    require: list[str] = field(default_factory=list)
    quantifier: Literal["all", "any"] = "all"

    def describe(self) -> str:
        sel = [f"scenario {'/'.join(self.scenarios)}"]
        sel.append(f"framework {'/'.join(self.frameworks)}" if self.frameworks else "every framework")
        sel.append(f"variant {'/'.join(self.variants)}" if self.variants else "every native variant")
        return ", ".join(sel)


@dataclass
class Claim:
    id: str
    framework: str
    text: str
    source: str
    scenarios: list[str]
    checks: list[Check] | None  # None: no predicate
    not_testable: str | None = None
    note: str | None = None


@dataclass
class CheckResult:
    check: Check
    verdict: ClaimVerdict
    evidence: list[str]  # run ids
    detail: str


@dataclass
class ClaimResult:
    claim: Claim
    verdict: ClaimVerdict
    evidence: list[str]
    detail: str
    versions: list[str]
    checks: list[CheckResult]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Names = str | list[str]


def _names(v: Names | None) -> list[str] | None:
    """None for "all"/"*" or unset (any); else the list."""
    if v is None or v in ("all", "*"):
        return None
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


class SelectSpec(_Strict):
    scenario: Names
    framework: Names | None = None  # unset: the claim's framework; "all": every framework
    variant: Names = "default"  # "all": every native variant (not a guarded one)


def _conditions(v: Names) -> list[str]:
    """The conditions, each vetted by the restricted evaluator; every bad one is named."""
    conds = [v] if isinstance(v, str) else [str(c) for c in v]
    bad = []
    for j, c in enumerate(conds):
        try:
            check_expression(c)
        except ValueError as exc:
            bad.append(f"condition {j} {c!r}: {exc}")
    if bad:
        raise ValueError("; ".join(bad))
    return conds


class CheckSpec(_Strict):
    select: SelectSpec
    where: Names = Field(default_factory=list)
    require: Names
    quantifier: Literal["all", "any"] = "all"

    @field_validator("where", "require")
    @classmethod
    def _vetted(cls, v: Names) -> list[str]:
        return _conditions(v)

    @field_validator("require")
    @classmethod
    def _some(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("at least one condition is required")
        return v


class ClaimSpec(_Strict):
    id: str
    framework: str
    text: str
    source: str = ""
    scenarios: list[str] = Field(default_factory=list)
    predicate: list[CheckSpec] | None = Field(default=None, min_length=1)
    not_testable: str | None = None
    note: str | None = None


class ClaimsFile(_Strict):
    claims: list[ClaimSpec]


def _check(spec: CheckSpec, claim_framework: str) -> Check:
    sel = spec.select
    return Check(_names(sel.scenario) or [], _names(sel.framework if sel.framework is not None else claim_framework),
                 _names(sel.variant), list(spec.where), list(spec.require), spec.quantifier)


def known_claim_ids(path: Path = CLAIMS_FILE) -> set[str]:
    """The ids a scenario's `claims` may cite (what the core's scenario loader checks them against)."""
    data = read_yaml(path) if path.exists() else None
    return {c["id"] for c in (data or {}).get("claims", []) if isinstance(c, dict) and "id" in c}


def _named(problem: InputProblem, data: Any) -> InputProblem:
    """A problem inside claim N named by that claim's id too (`claims.3 (C04).predicate...`), so a reader finds
    it in the file without counting."""
    head, _, rest = problem.field.partition(".")
    index, _, tail = rest.partition(".")
    try:
        cid = data["claims"][int(index)]["id"]
    except (KeyError, IndexError, TypeError, ValueError):
        return problem
    return InputProblem(problem.file, f"{head}.{index} ({cid})" + (f".{tail}" if tail else ""), problem.reason)


def load_claims(path: Path | str = CLAIMS_FILE) -> list[Claim]:
    """The claims of a claims file, predicates parsed and vetted; BadInput lists every problem as
    `file: field.path: reason`, the same format as scenario files."""
    p = Path(path)
    file = str(p)
    try:
        data = read_yaml(p)
    except OSError as exc:
        raise BadInput([InputProblem(file, "", f"cannot read: {exc.strerror or exc}")]) from exc
    except InputError as exc:
        raise BadInput([InputProblem(file, exc.where, exc.reason)]) from exc
    try:
        parsed = ClaimsFile.model_validate(data)
    except ValidationError as exc:
        raise BadInput([_named(p, data) for p in validation_problems(exc, file)]) from None
    return [Claim(c.id, c.framework, " ".join(c.text.split()), c.source, c.scenarios,
                  [_check(k, c.framework) for k in c.predicate] if c.predicate is not None else None,
                  c.not_testable, c.note) for c in parsed.claims]


def _selected(check: Check, records: list[RunRecord]) -> list[RunRecord]:
    out = []
    for r in records:
        if r.scenario not in check.scenarios:
            continue
        if check.frameworks is not None and r.framework not in check.frameworks:
            continue
        if check.variants is not None and r.variant not in check.variants:
            continue
        # a claim says what the framework does: `variant: all` leaves out the guarded variants (loopbench.guard's
        # stops, through the framework's hooks); a check names one to read it
        if check.variants is None and r.capabilities is not None and r.capabilities.guard_of is not None:
            continue
        out.append(r)
    return out


def _values_text(seen: dict[str, Any]) -> str:
    from loopbench.reports.formatting import fmt

    shown = {k: v for k, v in seen.items() if "." in k or "[" in k or k in ("outcome", "verdict", "variant")}
    return ", ".join(f"{k} = {fmt(v, 60)}" for k, v in shown.items())


def run_check(check: Check, records: list[RunRecord]) -> CheckResult:
    chosen = [r for r in _selected(check, records) if r.outcome != "error"]
    errored = len(_selected(check, records)) - len(chosen)
    if check.where:
        chosen = [r for r in chosen if all(evaluate(w, r)[0] for w in check.where)]
    if not chosen:
        why = f"no runs of {check.describe()}"
        if errored:
            why += f" ({errored} run(s) ended in error: loopbench broke, not evidence)"
        return CheckResult(check, "not testable", [], why)
    passing, failing, unknown = [], [], []
    for r in chosen:
        fails, unk = [], []
        for cond in check.require:
            ok, seen, note = evaluate(cond, r)
            if ok is None:
                unk.append(f"{cond} ({note})")
            elif not ok:
                fails.append(f"{cond} — observed {_values_text(seen)}")
        if fails:
            failing.append((r, fails))
        elif unk:
            unknown.append((r, unk))
        else:
            passing.append(r)
    if check.quantifier == "any":
        if passing:
            return CheckResult(check, "holds", [r.run_id for r in passing],
                               f"{len(passing)} of {len(chosen)} run(s) of {check.describe()} satisfy it")
        if failing and not unknown:
            r, fails = failing[0]
            return CheckResult(check, "refuted", [r.run_id for r, _ in failing], f"no run satisfies it: {fails[0]}")
        r, unk = unknown[0]
        return CheckResult(check, "not testable", [r.run_id for r, _ in unknown], f"not measured: {unk[0]}")
    if failing:
        r, fails = failing[0]
        more = f" (and {len(failing) - 1} more run(s))" if len(failing) > 1 else ""
        return CheckResult(check, "refuted", [r.run_id for r, _ in failing], f"{r.run_id}: {fails[0]}{more}")
    if unknown:
        r, unk = unknown[0]
        return CheckResult(check, "not testable", [r.run_id for r, _ in unknown], f"not measured: {unk[0]}")
    return CheckResult(check, "holds", [r.run_id for r in passing],
                       f"all {len(passing)} run(s) of {check.describe()} satisfy it")


def check_claim(claim: Claim, records: list[RunRecord]) -> ClaimResult:
    if not claim.checks:
        why = claim.not_testable or "no predicate: a run cannot decide this claim"
        return ClaimResult(claim, "not testable", [], why, [], [])
    results = [run_check(c, records) for c in claim.checks]
    verdicts = [r.verdict for r in results]
    if "refuted" in verdicts:
        verdict: ClaimVerdict = "refuted"
        shown = [r for r in results if r.verdict == "refuted"]
    elif all(v == "holds" for v in verdicts):
        verdict = "holds"
        shown = results
    else:
        verdict = "not testable"
        shown = [r for r in results if r.verdict == "not testable"]
    evidence = sorted({rid for r in shown for rid in r.evidence})
    detail = " | ".join(r.detail for r in shown)
    if claim.not_testable and verdict != "refuted":
        detail += f" | part not testable by a run: {claim.not_testable}"
    by_id = {r.run_id: r for r in records}
    versions = sorted({f"{by_id[e].framework} {by_id[e].framework_version}" for e in evidence
                       if e in by_id and by_id[e].framework_version})
    return ClaimResult(claim, verdict, evidence, detail, versions, results)


ANY_FRAMEWORK = ("all", "*")  # a claim's `framework` for a claim about every framework


def claims_about(claims: list[Claim], frameworks: Iterable[str]) -> list[Claim]:
    """The claims about these frameworks, in their order: a claim names its framework in `framework` (a
    framework id, or `all` for a claim about every framework, kept whichever frameworks ran). What a report
    lists: a report covers only the frameworks in its run."""
    present = set(frameworks)
    return [c for c in claims if c.framework in ANY_FRAMEWORK or c.framework in present]


def check_claims(records: list[RunRecord], claims: list[Claim] | None = None) -> list[ClaimResult]:
    """Every claim's verdict for these records (claims from reports/claims.yaml unless given)."""
    return [check_claim(c, records) for c in (load_claims() if claims is None else claims)]


def claims_frame(results: list[ClaimResult]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{
        "id": r.claim.id, "framework": r.claim.framework, "claim": r.claim.text, "verdict": r.verdict,
        "versions": ", ".join(r.versions), "evidence": " ".join(r.evidence), "detail": r.detail,
        "scenarios": ", ".join(r.claim.scenarios), "source": r.claim.source,
    } for r in results], columns=["id", "framework", "claim", "verdict", "versions", "evidence", "detail",
                                  "scenarios", "source"])
