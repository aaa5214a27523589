"""Behaviour changes between two result sets (e.g. before and after an SDK upgrade).

Compared per scenario × framework × variant, on each side's **majority run** of the cell (the (outcome,
verdict) most repetitions share; ties: the lowest repetition — the same representative the report shows):
- outcome, verdict and native signals (exception type, subtype, terminal reason, finish reason, limit signal);
- deviation names;
- every counter except the machine- and timing-sensitive ones (`TIMING_COUNTERS`: elapsed, CPU — loopbench's
  own included — and peak memory), which are left out: how long a run takes depends on the machine's load
  (seen: the same run 1.1 s and 2.5 s on one machine), and a real change in time (a deadline now enforced, a
  retry storm) shows in the outcome, the requests or the retries; deviations on these counters are derived
  from time, so they are left out of the deviation names, and a verdict that differs only because of them is
  not a change; prompt sizes (`max_request_growth_bytes`) are compared with a tolerance of ±max(256 B, 5 %),
  because prompts carry text a framework takes from its environment (the Claude CLI's working directory);
- the native translation of each limit.
What is set aside is said, not hidden: each cell whose deviations derived from time differ between the sides is
listed apart (`set_aside`), with both sides' deviations, and never counted as a change.
A cell whose scenario changed between the sides (its records' `scenario_digest` differ: the scenario file was
edited) is compared the same way but listed apart (`scenario_changes`), never counted as a behaviour change of
the framework: a team that edits its scenarios and upgrades an SDK sees the two apart. Records without a digest
(older than schema v4) count as the same scenario.
A cell whose majority is unstable on either side is marked so in the table.
Cells present on one side only are summarized (a framework variant or a scenario missing from one side is one
line), not counted as behaviour changes. Version changes of the frameworks run on both sides are listed; they
are never a failure by themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.record import SIZE_COUNTERS, TIMING_COUNTERS, RunRecord
from loopbench.reports.cells import Cell, cells, column_of
from loopbench.reports.formatting import COUNTER_FIELDS, fmt
from loopbench.reports.load import load_results

# counters that measure time depend on the machine's load: not compared (a real change in time shows in the
# outcome, the requests or the retries)
IGNORED_COUNTERS = TIMING_COUNTERS
# prompt sizes carry text a framework takes from its environment (the Claude CLI puts its working directory in
# the prompt, so a run in another directory differs by a few bytes): compared with a tolerance
BYTES_COUNTERS = SIZE_COUNTERS
BYTES_ABS_TOL, BYTES_REL_TOL = 256, 0.05
DIFF_VERSION = 2
SIGNALS = ("exception_type", "subtype", "terminal_reason", "finish_reason", "limit_signal", "ended")


def _timing(name: str) -> bool:
    return name.partition(".")[0] in TIMING_COUNTERS


def _effective_verdict(r: RunRecord) -> str:
    """The verdict once deviations derived from time are set aside."""
    if r.verdict == "error":
        return "error"
    rest = [d for d in r.deviations if not _timing(d.name)]
    if not rest:
        return "conforms" if not [d for d in r.deviations if _timing(d.name)] else "conforms (apart from timing)"
    return r.verdict


def _counters(r: RunRecord) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in COUNTER_FIELDS:
        if name in IGNORED_COUNTERS:
            continue
        v = getattr(r.counters, name)
        if isinstance(v, dict):
            for tool, n in v.items():
                out[f"{name}.{tool}"] = n
        else:
            out[name] = v
    return out


def _signals(r: RunRecord) -> dict[str, Any]:
    sig = r.native.signals
    return {k: getattr(sig, k) if sig is not None else None for k in SIGNALS}


def _limits(r: RunRecord) -> dict[str, Any]:
    return {k: v.native for k, v in r.limits.items()}


def timing_deviations(r: RunRecord) -> list[str]:
    """The names of a run's deviations derived from time (what diff sets aside)."""
    return sorted({d.name for d in r.deviations if _timing(d.name)})


def scenario_changed(a: Cell, b: Cell) -> bool:
    """The two sides ran different content of the scenario (both digests known and different)."""
    da, db = a.rep.scenario_digest, b.rep.scenario_digest
    return da is not None and db is not None and da != db


def compare_cells(a: Cell, b: Cell) -> list[tuple[str, Any, Any]]:
    """(what, base, new) for every behaviour change between two runs of the same cell."""
    ra, rb = a.rep, b.rep
    out: list[tuple[str, Any, Any]] = []
    if ra.outcome != rb.outcome:
        out.append(("outcome", ra.outcome, rb.outcome))
    va, vb = _effective_verdict(ra), _effective_verdict(rb)
    if va != vb and not (va.startswith("conforms") and vb.startswith("conforms")):
        out.append(("verdict", ra.verdict, rb.verdict))
    da = sorted({d.name for d in ra.deviations if not _timing(d.name)})
    db = sorted({d.name for d in rb.deviations if not _timing(d.name)})
    if da != db:
        gone, new = sorted(set(da) - set(db)), sorted(set(db) - set(da))
        change = "; ".join(filter(None, [f"new: {', '.join(new)}" if new else "",
                                         f"gone: {', '.join(gone)}" if gone else ""]))
        out.append(("deviations", ", ".join(da) or "none", f"{', '.join(db) or 'none'} ({change})"))
    sa, sb = _signals(ra), _signals(rb)
    for k in SIGNALS:
        if sa[k] != sb[k]:
            out.append((f"native.{k}", sa[k], sb[k]))
    la, lb = _limits(ra), _limits(rb)
    for k in sorted(set(la) | set(lb)):
        if la.get(k) != lb.get(k):
            out.append((f"limits.{k} (native)", la.get(k), lb.get(k)))
    ca, cb = _counters(ra), _counters(rb)
    for k in sorted(set(ca) | set(cb), key=lambda n: (COUNTER_FIELDS.index(n.partition(".")[0]), n)):
        x, y = ca.get(k), cb.get(k)
        if k.partition(".")[2]:  # per-tool counters: a missing tool is 0
            x, y = x or 0, y or 0
        if k in BYTES_COUNTERS and x is not None and y is not None:
            if abs(y - x) <= max(BYTES_ABS_TOL, BYTES_REL_TOL * abs(x)):
                continue
            out.append((f"{k} (tolerance ±max({BYTES_ABS_TOL} B, {BYTES_REL_TOL:.0%}))", x, y))
            continue
        if isinstance(x, float) and isinstance(y, float):
            if abs(x - y) <= 1e-9 * max(1.0, abs(x)):
                continue
        elif x == y:
            continue
        out.append((k, x, y))
    return out


def _versions(records: list[RunRecord]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        for p, v in r.packages.items():
            out.setdefault(p, set()).add(v)
        if r.framework_version:
            out.setdefault(r.framework, set()).add(r.framework_version)
    return out


def _env(records: list[RunRecord]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        for k in ("loopbench_revision", "python", "node"):
            v = r.environment.get(k)
            if v:
                out.setdefault(k, set()).add(str(v))
    return out


MAX_ONE_SIDED = 10  # single cells listed one by one; beyond this, a count


def one_sided_lines(base: set[tuple[str, str, str]], new: set[tuple[str, str, str]]) -> list[str]:
    """Cells on one side only, summarized: a framework variant or a scenario missing from the other side
    entirely is one line; the cells left are listed, at most MAX_ONE_SIDED, then counted."""
    lines: list[str] = []
    for side, mine, other in (("base", base - new, new), ("new", new - base, base)):
        if not mine:
            continue
        other_columns = {(f, v) for _, f, v in other}
        other_scenarios = {s for s, _, _ in other}
        rest = set(mine)
        for f, v in sorted({(f, v) for _, f, v in mine} - other_columns):
            n = sum(1 for _, f2, v2 in mine if (f2, v2) == (f, v))
            lines.append(f"only in {side}: framework variant {column_of(f, v)} ({n} cells)")
            rest -= {k for k in mine if (k[1], k[2]) == (f, v)}
        for s in sorted({s for s, _, _ in rest} - other_scenarios):
            n = sum(1 for k in rest if k[0] == s)
            lines.append(f"only in {side}: scenario {s} ({n} cells)")
            rest -= {k for k in rest if k[0] == s}
        for s, f, v in sorted(rest)[:MAX_ONE_SIDED]:
            lines.append(f"only in {side}: {s} × {column_of(f, v)}")
        if len(rest) > MAX_ONE_SIDED:
            lines.append(f"only in {side}: {len(rest) - MAX_ONE_SIDED} more cells")
    return lines


def _cell(v: Any) -> str:
    return fmt(v, 100).replace("|", "\\|").replace("\n", " ")


def cell_changes(base: dict[Any, Cell], new: dict[Any, Cell]) -> dict[Any, list[tuple[str, Any, Any]]]:
    """The behaviour changes of each cell present on both sides (by key, sorted), changed cells only."""
    out = {}
    for key in sorted(set(base) & set(new)):
        if changes := compare_cells(base[key], new[key]):
            out[key] = changes
    return out


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChangeOut(Frozen):
    scenario: str
    column: str
    framework: str
    variant: str
    what: str = Field(description="outcome, verdict, deviations, native.<signal>, limits.<limit> (native) or a counter")
    base: Any
    new: Any
    note: str = Field(default="", description="e.g. `unstable in base`")


class CellOut(Frozen):
    """A cell on both sides, and whether it changed."""

    scenario: str
    column: str
    framework: str
    variant: str
    changed: bool
    scenario_changed: bool = Field(description="the scenario's content differs between the sides (listed apart)")
    base_outcome: str
    new_outcome: str
    base_verdict: str
    new_verdict: str


class SetAsideOut(Frozen):
    """A cell whose deviations derived from time differ between the sides: set aside, not a change."""

    scenario: str
    column: str
    base: list[str] = Field(description="the base's deviations derived from time")
    new: list[str] = Field(description="the new side's deviations derived from time")


class VersionChange(Frozen):
    name: str
    base: list[str]
    new: list[str]


class Side(Frozen):
    path: str
    runs: int
    cells: int


class DiffOut(Frozen):
    """`loopbench diff --format json` (schema: `loopbench schema diff`, docs/diff.schema.json)."""

    diff_version: int = DIFF_VERSION
    base: Side
    new: Side
    frameworks: list[str] | None = Field(description="the -f selection compared (null: every framework)")
    changed: bool = Field(description="a cell on both sides, of the same scenario, behaves differently: diff's exit 1")
    common_cells: int
    changed_cells: int
    changes: list[ChangeOut]
    scenario_changed_cells: int = Field(description="cells whose scenario's content differs between the sides")
    scenario_changes: list[ChangeOut] = Field(
        description="the differences of the cells whose scenario changed (not behaviour changes of the framework; "
        "a scenario-changed cell with no difference is listed with what `scenario`)")
    set_aside: list[SetAsideOut] = Field(
        description="cells whose deviations derived from time differ between the sides (set aside, not changes)")
    cells: list[CellOut]
    versions: list[VersionChange] = Field(description="package versions of the frameworks run on both sides")
    environment: list[VersionChange]
    one_sided: list[str] = Field(description="cells on one side only, summarized (coverage, not a change)")


def _selected(cell_key: tuple[str, str, str], frameworks: list[str] | None) -> bool:
    if not frameworks:
        return True
    _, f, v = cell_key
    return any(sel in (f, f"{f}:{v}") for sel in frameworks)


def compare_results(base: Path | str, new: Path | str, frameworks: list[str] | None = None) -> DiffOut:
    """Every behaviour change per scenario × framework × variant between two result sets (`frameworks`: only
    these, each `F` or `F:VARIANT`). Raises BadInput / SchemaMismatch for a missing path, a file that is not a
    results file, or another schema version."""
    rb, rn = load_results(base), load_results(new)
    cb = {c.key: c for c in cells(rb.records) if _selected(c.key, frameworks)}
    cn = {c.key: c for c in cells(rn.records) if _selected(c.key, frameworks)}
    for sel in frameworks or []:  # a selection that matches nothing is a mistake, not "no change"
        if not any(_selected(k, [sel]) for k in [*cb, *cn]):
            present = sorted({r.framework for r in [*rb.records, *rn.records]})
            raise BadInput([InputProblem("--framework", "", f"{sel!r} ran in neither result set; present: "
                                         f"{', '.join(present)}")])
    common = sorted(set(cb) & set(cn))
    edited = {k for k in common if scenario_changed(cb[k], cn[k])}
    found_all = cell_changes(cb, cn)
    changes = {k: v for k, v in found_all.items() if k not in edited}
    rows: list[ChangeOut] = []
    edited_rows: list[ChangeOut] = []
    for key in sorted(set(found_all) | edited):
        a, b = cb[key], cn[key]
        note = "; ".join(filter(None, ["unstable in base" if a.unstable else "",
                                       "unstable in new" if b.unstable else ""]))
        found = found_all.get(key) or [("scenario", a.rep.scenario_digest, b.rep.scenario_digest)]
        (edited_rows if key in edited else rows).extend(
            ChangeOut(scenario=key[0], column=column_of(key[1], key[2]), framework=key[1], variant=key[2],
                      what=what, base=x, new=y, note=note) for what, x, y in found)
    set_aside = [SetAsideOut(scenario=k[0], column=column_of(k[1], k[2]), base=ta, new=tb)
                 for k in common if (ta := timing_deviations(cb[k].rep)) != (tb := timing_deviations(cn[k].rep))]
    both_cells = [CellOut(scenario=k[0], column=column_of(k[1], k[2]), framework=k[1], variant=k[2],
                          changed=k in changes, scenario_changed=k in edited, base_outcome=cb[k].rep.outcome,
                          new_outcome=cn[k].rep.outcome, base_verdict=cb[k].rep.verdict,
                          new_verdict=cn[k].rep.verdict) for k in common]
    # versions of the frameworks run on both sides: one run only on one side is coverage, not an upgrade
    both = {k[1] for k in cb} & {k[1] for k in cn}
    vb = _versions([r for r in rb.records if r.framework in both])
    vn = _versions([r for r in rn.records if r.framework in both])
    versions = [VersionChange(name=p, base=sorted(vb.get(p, set())), new=sorted(vn.get(p, set())))
                for p in sorted(set(vb) | set(vn)) if vb.get(p) != vn.get(p)]
    eb, en = _env(rb.records), _env(rn.records)
    env = [VersionChange(name=k, base=sorted(eb.get(k, set())), new=sorted(en.get(k, set())))
           for k in ("loopbench_revision", "python", "node") if eb.get(k) != en.get(k)]
    return DiffOut(
        base=Side(path=str(rb.path), runs=len(rb.records), cells=len(cb)),
        new=Side(path=str(rn.path), runs=len(rn.records), cells=len(cn)), frameworks=frameworks or None,
        changed=bool(rows), common_cells=len(common), changed_cells=len(changes), changes=rows,
        scenario_changed_cells=len(edited), scenario_changes=edited_rows, set_aside=set_aside, cells=both_cells,
        versions=versions, environment=env, one_sided=one_sided_lines(set(cb), set(cn)))


def _change_table(changes: list[ChangeOut]) -> list[str]:
    out = ["| scenario | framework:variant | what | base | new | note |", "|---|---|---|---|---|---|"]
    return out + [f"| {c.scenario} | {c.column} | {c.what} | {_cell(c.base)} | {_cell(c.new)} | {c.note} |"
                  for c in changes]


def _joined(values: list[str]) -> str:
    return ", ".join(values) or "–"


def diff_markdown(d: DiffOut) -> str:
    out = ["# loopbench diff", "", f"- base: `{d.base.path}` ({d.base.runs} runs, {d.base.cells} cells)",
           f"- new: `{d.new.path}` ({d.new.runs} runs, {d.new.cells} cells)"]
    if d.frameworks:
        out.append(f"- compared: {', '.join(d.frameworks)} only")
    out += ["", f"**{'Behaviour changed' if d.changed else 'No behaviour change'}**: "
            f"{d.changed_cells} of {d.common_cells} common cell(s) changed."]
    out += ["", f"Each cell compares its majority run (ties: lowest repetition). {', '.join(TIMING_COUNTERS)} "
            "depend on the machine's load and are not compared; prompt sizes are compared within "
            f"±max({BYTES_ABS_TOL} B, {BYTES_REL_TOL:.0%}); deviations derived from time are set aside "
            f"({len(d.set_aside)} cell(s) differ only there: listed below).", ""]
    out += ["## Behaviour changes", ""]
    out += _change_table(d.changes) if d.changes else ["None."]
    if d.scenario_changes:
        out += ["", "## Cells whose scenario changed", "",
                f"{d.scenario_changed_cells} cell(s) ran a different content of their scenario on each side (the "
                "scenario file was edited): their differences are the edit's as much as the framework's, and are "
                "not counted as behaviour changes.", ""]
        out += _change_table(d.scenario_changes)
    out += ["", "## Set aside: deviations derived from time", ""]
    if d.set_aside:
        out += [f"{len(d.set_aside)} cell(s) whose deviations derived from time differ (not counted as changes: "
                "how long a run takes depends on the machine's load):", "",
                "| scenario | framework:variant | base | new |", "|---|---|---|---|"]
        out += [f"| {a.scenario} | {a.column} | {_joined(a.base)} | {_joined(a.new)} |" for a in d.set_aside]
    else:
        out.append("None: both sides have the same deviations derived from time in every common cell.")
    out += ["", "## Package versions", ""]
    if d.versions:
        out += ["Version changes (reported, not a failure by themselves):", "",
                "| package | base | new |", "|---|---|---|"]
        out += [f"| {v.name} | {_joined(v.base)} | {_joined(v.new)} |" for v in d.versions]
    else:
        out.append("No package version changes.")
    if d.environment:
        out += ["", "Environment changes:", "", "| what | base | new |", "|---|---|---|"]
        out += [f"| {v.name} | {_joined(v.base)} | {_joined(v.new)} |" for v in d.environment]
    if d.one_sided:
        out += ["", "## Cells on one side only", "", "(coverage, not a behaviour change)", ""]
        out += [f"- {line}" for line in d.one_sided]
    return "\n".join(out) + "\n"


def diff_results(base: Path | str, new: Path | str) -> tuple[str, bool]:
    """(Markdown, changed): behaviour changes per scenario × framework × variant between two result sets.

    `changed` is True when any cell present on both sides behaves differently (see the module doc); version
    changes and cells present on one side only are listed but do not set it."""
    d = compare_results(base, new)
    return diff_markdown(d), d.changed
