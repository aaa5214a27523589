"""The report's tables (pandas frames), built from RunRecords only: the comparison matrix, units, mechanisms,
accounting, cells and cost per framework variant, stability, environment. Cells are `reports.cells`; formatting is
`reports.formatting`.
"""

from __future__ import annotations

import json
import platform
from collections import Counter as Tally
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.cells import cells, column_of, column_sort_key, columns
from loopbench.reports.formatting import (
    COUNTER_FIELDS,
    VERDICT_MARK,
    VERDICTS,
    counter_value,
    deviation_text,
    fmt,
    is_counter,
    label,
)

BASE_KEYS = ("model_requests_observed", "tool_executions")


def scenario_keys(records: Iterable[RunRecord]) -> dict[str, list[str]]:
    """The counters that matter per scenario: requests and tool runs, plus every counter some framework's run
    of that scenario deviated on (the scenario's `expect` counters as the verdict recorded them)."""
    out: dict[str, list[str]] = {}
    for r in records:
        keys = out.setdefault(r.scenario, list(BASE_KEYS))
        for d in r.deviations:
            if is_counter(d.name) and d.name not in keys:
                keys.append(d.name)
    return out


# ---------------------------------------------------------------- the comparison matrix
def matrix_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per cell: outcome, verdict, the scenario's key counters, deviations, stability, run ids."""
    keys = scenario_keys(records)
    rows = []
    for c in cells(records):
        r = c.rep
        devs = {d.name: d for d in r.deviations}
        parts, items = [], []
        for k in keys[c.scenario]:
            v = counter_value(r, k)
            ideal = devs[k].ideal if k in devs else None
            items.append((label(k), fmt(v), None if k not in devs else fmt(ideal)))
            parts.append(f"{label(k)} {fmt(v)} ✗" if k in devs else f"{label(k)} {fmt(v)}")
        row = {
            "scenario": c.scenario, "title": r.scenario_title or c.scenario,
            "category": r.category or "other", "column": c.column, "framework": c.framework, "variant": c.variant,
            "outcome": r.outcome, "outcome_rule": r.outcome_rule, "verdict": r.verdict,
            "key_counters": " · ".join(parts), "key_items": items,
            "deviations": "; ".join(deviation_text(d) for d in r.deviations),
            "unsupported": ", ".join(r.unsupported),
            "repetitions": len(c.records), "unstable": c.unstable,
            "outcomes": ", ".join(f"{o}×{n}" for o, n in Tally(x.outcome for x in c.records).items()),
            "run_id": r.run_id, "run_ids": " ".join(x.run_id for x in c.records),
            "framework_version": r.framework_version,
        }
        for k in COUNTER_FIELDS:
            v = getattr(r.counters, k)
            row[k] = json.dumps(v, sort_keys=True) if isinstance(v, dict) else v
        rows.append(row)
    return pd.DataFrame(rows)


def cell_text(row: pd.Series, with_marks: bool = True) -> str:
    """A matrix cell as one line of text: verdict mark, outcome, key counters, deviations, instability."""
    mark = VERDICT_MARK.get(row["verdict"], "") + " " if with_marks else ""
    text = f"{mark}**{row['outcome']}** ({row['verdict']}) · {row['key_counters']}"
    if row["deviations"]:
        text += f" · deviations: {row['deviations']}"
    if row["unstable"]:
        text += f" · ⟳ UNSTABLE ({row['outcomes']})"
    elif row["repetitions"] > 1:
        text += f" · stable ×{row['repetitions']}"
    return text


# ---------------------------------------------------------------- units table
def _limit_signature(r: RunRecord) -> str:
    neutral = {k: v.neutral for k, v in r.limits.items()}
    return json.dumps(neutral, sort_keys=True, default=str)


def limit_scenarios(records: list[RunRecord]) -> list[str]:
    """Scenarios about limits, told from the records alone: their limits differ from the suite's common ones
    (a budget, a deadline, another step count, none), or a run of them ended (or should have ended) on a limit."""
    if not records:
        return []
    common = Tally(_limit_signature(r) for r in records).most_common(1)[0][0]
    out = set()
    for r in records:
        ideal = next((d.ideal for d in r.deviations if d.name == "outcome"), None)
        if (_limit_signature(r) != common or r.outcome.startswith("limit_")
                or (isinstance(ideal, str) and ideal.startswith("limit_"))):
            out.add(r.scenario)
    return sorted(out)


def _intent(name: str, neutral: Any) -> str:
    if name == "max_model_calls":
        return "no model-call limit" if neutral is None else f"{fmt(neutral)} model calls"
    if neutral is None:
        return f"{name}: not set"
    if name == "max_total_tokens":
        return f"{neutral:,} tokens" if isinstance(neutral, int) else f"{fmt(neutral)} tokens"
    if name == "max_cost_usd":
        return f"${fmt(neutral)}"
    if name == "deadline_s":
        return f"{fmt(neutral)} s deadline"
    return f"{name}={fmt(neutral)}"


def units_frame(records: list[RunRecord]) -> pd.DataFrame:
    """For each limit scenario and framework variant: the neutral intent, the native setting used, what happened."""
    wanted = set(limit_scenarios(records))
    rows = []
    for c in cells(records):
        if c.scenario not in wanted:
            continue
        r = c.rep
        intents, natives = [], []
        for name, spec in r.limits.items():
            neutral, native = spec.neutral, spec.native
            intents.append(_intent(name, neutral))
            if native is None and (neutral is not None or name in r.unsupported):
                native = "unsupported"
            natives.append(f"{fmt(native)}" if name == "max_model_calls" else f"{name}: {fmt(native)}")
        k = r.counters
        rows.append({
            "scenario": c.scenario, "column": c.column, "intent": "; ".join(intents) or "–",
            "native setting": "; ".join(natives) or "–", "outcome": r.outcome, "verdict": r.verdict,
            "requests observed": k.model_requests_observed, "tool executions": k.tool_executions,
            "native steps": k.runtime_steps, "step unit": k.runtime_step_unit,
            "tokens served": k.total_tokens_observed, "cost $ (computed)": k.cost_usd_observed,
            "elapsed s": k.elapsed_s, "unsupported": ", ".join(r.unsupported), "run_id": r.run_id,
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- mechanisms: intent -> native
INTENT_LABELS = {
    "deny_stop": "deny: stop the run", "deny_continue": "deny: tell the model, go on",
    "approval_pause": "pause for approval", "reject": "reject at a pause",
    "tool_choice_first": "tool_choice on the opening call", "tool_choice_later": "tool_choice on a later call",
}


def mechanisms_frame(records: list[RunRecord]) -> pd.DataFrame:
    """For each policy intent (and each neutral limit) and framework variant: the native mechanism the adapter
    recorded in the runs that used it (`native.mechanisms`, the limits' native translation), with the
    scenarios that used it. Different mechanisms for one intent are all listed."""
    found: dict[tuple[str, str], dict[str, set[str]]] = {}
    for c in cells(records):
        r = c.rep
        used: dict[str, str] = {str(k): v for k, v in r.native.mechanisms.items()}
        for name, spec in r.limits.items():
            if spec.neutral is not None:
                used[f"limit: {name}"] = spec.native or "unsupported"
        for intent, native in used.items():
            found.setdefault((intent, c.column), {}).setdefault(str(native), set()).add(c.scenario)
    if not found:
        return pd.DataFrame()
    cols = sorted({col for _, col in found}, key=lambda col: column_sort_key(*(col.split(":", 1) + ["default"])[:2]))
    order = [*INTENT_LABELS, *sorted({i for i, _ in found if i not in INTENT_LABELS})]
    rows = []
    for intent in order:
        if not any(i == intent for i, _ in found):
            continue
        row: dict[str, Any] = {"intent": INTENT_LABELS.get(intent, intent)}
        for col in cols:
            natives = found.get((intent, col), {})
            row[col] = " | ".join(natives) if natives else "–"
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- accounting
ACCOUNTED = (
    ("model requests", "model_requests_reported", "model_requests_observed"),
    ("input tokens", "input_tokens_reported", "input_tokens_observed"),
    ("output tokens", "output_tokens_reported", "output_tokens_observed"),
    ("cost $", "cost_usd_reported", "cost_usd_observed"),
)


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) > max(1e-9, 1e-6 * max(abs(a), abs(b)))
    return a != b


def accounting_details(records: list[RunRecord]) -> pd.DataFrame:
    """Every run where what the framework reported differs from ground truth (requests, tokens, cost)."""
    rows = []
    for c in cells(records):
        for r in c.records:
            for what, rep_k, obs_k in ACCOUNTED:
                a, b = getattr(r.counters, rep_k), getattr(r.counters, obs_k)
                if a is None or b is None or not _differs(a, b):
                    continue
                rows.append({"scenario": c.scenario, "column": c.column, "repetition": r.repetition,
                             "quantity": what, "reported": a, "observed": b, "difference": b - a,
                             "run_id": r.run_id})
    return pd.DataFrame(rows, columns=["scenario", "column", "repetition", "quantity", "reported", "observed",
                                       "difference", "run_id"])


def accounting_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Per framework variant and quantity (model requests, input/output tokens, cost): reported vs observed
    sums over the runs where both are known, how many runs differ (and in which scenarios), and how many runs
    the framework reports nothing for."""
    rows = []
    by_col: dict[str, list[RunRecord]] = {}
    for r in sorted(records, key=lambda r: column_sort_key(r.framework, r.variant)):
        by_col.setdefault(column_of(r.framework, r.variant), []).append(r)
    for col, recs in by_col.items():
        for what, rep_k, obs_k in ACCOUNTED:
            pairs = [(getattr(r.counters, rep_k), getattr(r.counters, obs_k), r) for r in recs]
            known = [(a, b, r) for a, b, r in pairs if a is not None and b is not None]
            diff = sorted({r.scenario for a, b, r in known if _differs(a, b)})
            n_diff = sum(1 for a, b, _ in known if _differs(a, b))
            cast = float if what == "cost $" else (lambda x: x)
            rows.append({
                "column": col, "quantity": what, "runs": len(recs),
                "reported (sum)": fmt(cast(sum(a for a, _, _ in known))) if known else "not reported",
                "observed (sum)": fmt(cast(sum(b for _, b, _ in known))) if known else "–",
                "runs differing": n_diff, "differing in": ", ".join(diff),
                "runs not reported": sum(1 for a, _, _ in pairs if a is None),
            })
    return pd.DataFrame(rows, columns=["column", "quantity", "runs", "reported (sum)", "observed (sum)",
                                       "runs differing", "differing in", "runs not reported"])


# ---------------------------------------------------------------- conformance and stability
def conformance_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Per framework variant: how many cells conform, deviate, are unsupported or errored (majority per cell)."""
    rows: dict[str, dict[str, Any]] = {}
    for c in cells(records):
        row = rows.setdefault(c.column, {"column": c.column, **{v: 0 for v in VERDICTS}, "cells": 0,
                                         "unstable": 0, "framework_version": c.rep.framework_version})
        row[c.rep.verdict] = row.get(c.rep.verdict, 0) + 1
        row["cells"] += 1
        row["unstable"] += int(c.unstable)
    for column, cost in cost_per_model_call(records).items():
        if column in rows:
            rows[column].update(cost)
    order = columns(records)
    return pd.DataFrame([rows[k] for k in order if k in rows])


def cost_per_model_call(records: list[RunRecord]) -> dict[str, dict[str, Any]]:
    """The framework's own cost per model call, per column: the median over its runs of the worker's wall time
    and of the framework's CPU time (the workers' CPU less loopbench's own part in them: the ledger calls, and
    an out-of-process framework's whole Python side) divided by the model requests the server saw; next to it,
    loopbench's own CPU per run (in the workers and in the runner), and the largest worker RSS. Runs with
    scripted delays (a slow model or tool) are left out: they measure the script, not the framework. Records
    that do not separate loopbench's CPU (schema 1) give no framework CPU (null), never one with loopbench's
    work in it."""
    per: dict[str, list[tuple[float, float | None, float | None, float]]] = {}
    for r in records:
        c = r.counters
        calls = c.model_requests_observed or 0
        scripted_wait = any(q.duration_ms > 500 for q in r.requests) or any(
            e.ended_s is not None and e.ended_s - e.started_s > 0.5 for e in r.ledger)
        if r.outcome in ("error", "hung") or calls == 0 or c.elapsed_s is None or scripted_wait:
            continue
        own = c.loopbench_worker_cpu_s
        framework_cpu = None if c.cpu_s is None or own is None else (c.cpu_s - own) * 1000 / calls
        loopbench_cpu = None if own is None or c.loopbench_runner_cpu_s is None else (
            (own + c.loopbench_runner_cpu_s) * 1000)
        per.setdefault(column_of(r.framework, r.variant), []).append(
            (c.elapsed_s * 1000 / calls, framework_cpu, loopbench_cpu, c.peak_rss_mb or 0.0))

    def median(xs: list[float | None]) -> float | None:
        known = [x for x in xs if x is not None]
        return round(float(pd.Series(known).median()), 1) if known else None

    return {column: {
        "ms_per_model_call": median([x[0] for x in xs]),
        "framework_cpu_ms_per_model_call": median([x[1] for x in xs]),
        "loopbench_cpu_ms_per_run": median([x[2] for x in xs]),
        "peak_rss_mb": round(max(x[3] for x in xs), 1),
    } for column, xs in per.items()}


def stability_frame(records: list[RunRecord]) -> pd.DataFrame:
    """Cells run more than once: their repetitions' outcomes and verdicts, and whether they agree."""
    rows = []
    for c in cells(records):
        if len(c.records) < 2:
            continue
        rows.append({
            "scenario": c.scenario, "column": c.column, "repetitions": len(c.records),
            "outcomes": ", ".join(f"{o}×{n}" for o, n in Tally(r.outcome for r in c.records).items()),
            "verdicts": ", ".join(f"{o}×{n}" for o, n in Tally(r.verdict for r in c.records).items()),
            "stable": not c.unstable, "shown": f"r{c.rep.repetition}", "run_ids": " ".join(r.run_id for r in c.records),
        })
    return pd.DataFrame(rows, columns=["scenario", "column", "repetitions", "outcomes", "verdicts", "stable",
                                       "shown", "run_ids"])


# ---------------------------------------------------------------- environment
def _values(xs: Iterable[Any]) -> list[str]:
    return sorted({str(x) for x in xs if x not in (None, "")})


def environment(records: list[RunRecord]) -> dict[str, Any]:
    """What produced these results: date, loopbench revision, Python/Node, machine, every framework package."""
    env = [r.environment for r in records]
    frameworks: dict[str, dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: column_sort_key(r.framework, r.variant)):
        f = frameworks.setdefault(r.framework, {"framework_version": set(), "variants": set(), "packages": {}})
        if r.framework_version:
            f["framework_version"].add(r.framework_version)
        f["variants"].add(r.variant)
        for p, v in r.packages.items():
            f["packages"].setdefault(p, set()).add(v)
    started = sorted(r.started_at for r in records)
    return {
        "report_generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs_started": f"{started[0]} … {started[-1]}" if started else "",
        "loopbench_revision": _values(e.get("loopbench_revision") for e in env),
        "python": _values(e.get("python") for e in env),
        "node": _values(e.get("node") for e in env),
        "platform": _values(e.get("platform") for e in env),
        "cores": _values(e.get("cores") for e in env),
        "memory_gb": _values(e.get("memory_gb") for e in env),
        "report_python": platform.python_version(),
        "runs": len(records),
        "frameworks": {
            k: {"framework_version": sorted(v["framework_version"]), "variants": sorted(v["variants"]),
                "packages": {p: sorted(vs) for p, vs in sorted(v["packages"].items())}}
            for k, v in frameworks.items()
        },
    }


def run_line(env: dict[str, Any]) -> str:
    """The report's first line: which run it shows, in terms a reader can check (when the runs started, the
    loopbench revision, the framework versions), never the working path the results were read from."""
    started = env["runs_started"].replace("T", " ").replace("+00:00", " UTC") or "unknown"
    versions = ", ".join(f"{fw} {'/'.join(info['framework_version']) or '?'}" for fw, info in env["frameworks"].items())
    return (f"{env['runs']} runs, started {started}; loopbench revision "
            f"{', '.join(env['loopbench_revision']) or 'unknown'}; {versions or 'no framework'} "
            "(the whole environment is at the end of the report)")


def environment_rows(env: dict[str, Any]) -> list[tuple[str, str]]:
    """The environment as (what, value) lines, for every output format."""
    rows = [
        ("report generated", env["report_generated_at"]),
        ("runs started", env["runs_started"]),
        ("loopbench revision", ", ".join(env["loopbench_revision"]) or "unknown"),
        ("Python", ", ".join(env["python"]) or "unknown"),
        ("Node", ", ".join(env["node"]) or "unknown"),
        ("machine", "; ".join(filter(None, [", ".join(env["platform"]),
                                            f"{', '.join(env['cores'])} cores" if env["cores"] else "",
                                            f"{', '.join(env['memory_gb'])} GB" if env["memory_gb"] else ""]))),
        ("runs", str(env["runs"])),
    ]
    for fw, info in env["frameworks"].items():
        pk = ", ".join(f"{p} {'/'.join(vs)}" for p, vs in info["packages"].items())
        ver = "/".join(info["framework_version"]) or "unknown"
        rows.append((f"framework {fw}", f"{ver} (variants: {', '.join(info['variants'])}; packages: {pk or '–'})"))
    return rows


# ---------------------------------------------------------------- capabilities, as each adapter declares them
def capabilities_frame(records: list[RunRecord]) -> pd.DataFrame:
    """One row per framework: the capabilities its adapter declared (carried by the records; records written
    before they carried them contribute nothing)."""
    seen: dict[str, Any] = {}
    for r in records:
        if r.capabilities is not None and r.framework not in seen:
            seen[r.framework] = r.capabilities
    rows = [{
        "framework": fw, "native limits": ", ".join(sorted(c.native_limits)) or "none", "step unit": c.step_unit,
        "pause": c.pause, "pause survives a restart": c.pause_survives_restart, "deny": c.deny,
        "retry window s": c.retry_window_s, "notes": "; ".join(c.notes),
    } for fw, c in sorted(seen.items())]
    return pd.DataFrame(rows)
