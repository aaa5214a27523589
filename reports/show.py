"""Drill-down into one run: its record, its request log, its ledger and its trace, readably.

`run_sections` turns a record into titled tables (plain data); `show_run` renders them with rich for a
terminal, and reports/build.py renders the same sections into the HTML report's per-run details.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopbench.harness.errors import BadInput, InputProblem, did_you_mean
from loopbench.harness.record import RunRecord
from loopbench.reports.formatting import COUNTER_FIELDS, deviation_text, fmt, label
from loopbench.reports.load import Results, parse_lines, read_results_lines, results_file

MAX_TRACE_EVENTS = 400
PIPE_WIDTH = 100_000  # show_run(width=None): room for any table, each taking only the width it needs
PIPE_RULE_WIDTH = 80  # show_run(width=None): the rule over the run's id (a rule takes all the room it has)


@dataclass
class Section:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


def read_trace(results_dir: Path, rec: RunRecord, limit: int = MAX_TRACE_EVENTS) -> tuple[list[dict[str, Any]], str]:
    """The run's trace events (record.trace is relative to the results directory) and a note on what is missing.
    A trace path that leads outside the results directory (absolute, `..`, a link) is refused, never read: a
    results file may come from elsewhere."""
    if not rec.trace:
        return [], "this run has no trace"
    root = results_dir.resolve()
    path = (root / rec.trace).resolve()
    if not path.is_relative_to(root):
        return [], f"trace path {rec.trace!r} leads outside the results directory: not read"
    if not path.is_file():
        return [], f"trace file {path} not found"
    events: list[dict[str, Any]] = []
    bad = total = 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            total += 1
            if len(events) >= limit:
                continue
            try:
                ev = json.loads(line)
                events.append(ev if isinstance(ev, dict) else {"event": "?", "value": ev})
            except json.JSONDecodeError:
                bad += 1
    note = []
    if total > len(events) + bad:
        note.append(f"first {len(events)} of {total} events shown")
    if bad:
        note.append(f"{bad} unreadable line(s) skipped")
    return events, "; ".join(note)


def _trace_row(ev: dict[str, Any]) -> list[str]:
    kind = str(ev.get("event", "?"))
    t = ev.get("t_s", ev.get("started_s"))
    rest = {k: v for k, v in ev.items() if k not in ("event", "t_s", "started_s", "run_id")}
    if kind == "model_request":
        what = (f"#{rest.get('seq')} {rest.get('protocol')} status {rest.get('status')} turn "
                f"{rest.get('served_turn')} calls {fmt(rest.get('calls_served'))} prompt {rest.get('prompt_bytes')} B")
        if rest.get("error"):
            what += f" error: {rest['error']}"
    elif kind == "tool_call":
        what = (f"{rest.get('kind', 'call')} {rest.get('tool')} {fmt(rest.get('args'), 60)} → "
                f"{rest.get('outcome', 'result')} {rest.get('result_bytes', '')} B")
    else:
        what = fmt(rest, 160)
    return [fmt(t) if t is not None else "", kind, what]


def run_sections(rec: RunRecord, results_dir: Path | None = None) -> list[Section]:
    """A run as titled tables: identity, outcome and verdict, deviations, native signals and settings,
    limits, counters (reported next to observed), segments, requests, ledger, trace."""
    sig = rec.native.signals.model_dump(exclude_defaults=True) if rec.native.signals else {}
    out = [Section("Run", ["field", "value"], [
        ["run id", rec.run_id], ["scenario", rec.scenario],
        ["framework", f"{rec.framework} {rec.framework_version or ''}"],
        ["variant", rec.variant], ["repetition", str(rec.repetition)], ["started", rec.started_at],
        ["outcome", f"{rec.outcome} (rule {rec.outcome_rule})"], ["verdict", rec.verdict],
        ["error reason", rec.error_reason or "–"], ["unsupported", ", ".join(rec.unsupported) or "–"],
        ["claims", ", ".join(rec.claims) or "–"], ["packages", ", ".join(f"{k} {v}" for k, v in rec.packages.items())],
    ])]
    out.append(Section("Deviations from the ideal", ["name", "ideal", "observed", "note"],
                       [[d.name, fmt(d.ideal, 120), fmt(d.observed, 120), d.note] for d in rec.deviations],
                       "" if rec.deviations else "none: the run conforms to the scenario's ideal"))
    out.append(Section("Native signals", ["signal", "value"],
                       [[k, fmt(v, 200)] for k, v in sig.items()]))
    extra_native = rec.native.model_dump(mode="json", include={"mechanisms", "notes", "auxiliary_requests"})
    out.append(Section("Native settings", ["setting", "value"],
                       [[k, fmt(v, 200)] for k, v in {**rec.native.settings, **extra_native}.items()]))
    out.append(Section("Limits (neutral → native)", ["limit", "neutral", "native"], [
        [k, fmt(v.neutral), fmt(v.native)] for k, v in rec.limits.items()]))
    c = rec.counters
    rows = []
    done = set()
    for name in COUNTER_FIELDS:
        if name in done:
            continue
        if name.endswith("_reported"):
            obs = name.replace("_reported", "_observed")
            if obs in COUNTER_FIELDS:
                a, b = getattr(c, name), getattr(c, obs)
                flag = " ≠" if a is not None and b is not None and a != b else ""
                rows.append([label(obs), fmt(a), fmt(b) + flag])
                done.update({name, obs})
                continue
        v = getattr(c, name)
        if isinstance(v, dict):
            rows.extend([label(f"{name}.{tool}"), "", fmt(n)] for tool, n in sorted(v.items()))
            if not v:
                rows.append([label(name), "", "none"])
        else:
            rows.append([label(name) if name != "runtime_step_unit" else "native step unit", "", fmt(v, 160)])
        done.add(name)
    out.append(Section("Counters", ["counter", "reported by the framework", "observed (ground truth)"], rows))
    out.append(Section("Segments (run and resumes)", ["#", "kind", "decisions", "ended", "pending", "counters", "s"], [
        [str(i), s.kind + (f" from pause {s.from_pause}" if s.from_pause else ""), fmt(s.decisions),
         s.outcome_signals.ended + (f" {s.outcome_signals.exception_type}" if s.outcome_signals.exception_type else ""),
         fmt([f"{p.tool}({p.call_id})" for p in s.pending]),
         fmt(s.counters.model_dump(exclude_none=True), 120), fmt(s.elapsed_s)]
        for i, s in enumerate(rec.segments)]))
    out.append(Section("Model requests (server log)", ["seq", "t s", "protocol", "stream", "status", "turn", "calls",
                                                         "tool results", "prompt B", "tokens in/out", "note"], [
        [str(q.seq), fmt(q.t_s), q.protocol, "yes" if q.stream else "no", str(q.status), q.served_turn or "–",
         ", ".join(q.calls_served) or "–", ", ".join(f"{t.call_id}:{t.status}" for t in q.tool_results) or "–",
         str(q.prompt_bytes), f"{q.input_tokens}/{q.output_tokens}",
         "; ".join(filter(None, ["retry" if q.retry else "", q.error or ""]))]
        for q in rec.requests]))
    out.append(Section("Tool ledger", ["id", "kind", "tool", "call", "args", "outcome", "effect", "t s", "note"], [
        [e.id, e.kind, e.tool, e.call_id or "–", fmt(e.args, 60),
         (e.decision or "–") if e.kind == "authorize" else (e.outcome or "–") + (f" ({e.error_kind})"
                                                                               if e.error_kind else ""),
         ("committed" if e.committed else "–") + (" DUPLICATE" if e.duplicate_effect else ""),
         fmt(e.started_s), "caller abandoned" if e.caller_abandoned else ""]
        for e in rec.ledger]))
    if rec.violations:
        out.append(Section("Script violations", ["seq", "reason"], [[str(v.seq), v.reason] for v in rec.violations]))
    if results_dir is not None:
        events, note = read_trace(results_dir, rec)
        out.append(Section(f"Trace ({rec.trace or 'none'})", ["t s", "event", "what"],
                           [_trace_row(e) for e in events], note))
    return out


def find_run(results: Results, run_id: str) -> RunRecord:
    """The record with this run id (or the one run id it is a unique prefix of); BadInput otherwise."""
    exact = [r for r in results.records if r.run_id == run_id]
    if exact:
        return exact[0]
    pref = [r for r in results.records if r.run_id.startswith(run_id)]
    if len(pref) == 1:
        return pref[0]
    why = f"{len(pref)} runs start with it" if pref else "no such run id"
    raise BadInput([InputProblem(str(results.path), "run_id", f"{run_id!r}: {why}")])


_RUN_ID = re.compile(r'"run_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def load_run(dir_or_file: Path | str, run_id: str) -> tuple[Results, RunRecord]:
    """The one record `run_id` names (the id, or the one id it is a unique prefix of), reading only that line as a
    record: a published results file has ~1,500 of them, and validating them all took most of `show`'s time. An
    id no run has gets the closest ids; a prefix of several gets them listed."""
    f = results_file(dir_or_file)
    found = read_results_lines(f)
    ids: list[tuple[str, str]] = []  # (run id, its line), in file order
    for line in found.lines:
        if (m := _RUN_ID.search(line)) is None:
            break
        ids.append((json.loads(f'"{m.group(1)}"'), line))
    if not ids or len(ids) < len(found.lines):  # a line that is no record, or none: the full reader says what
        res = parse_lines(found.lines, str(f), found.torn_warning(f))
        res.path = f
        return res, find_run(res, run_id)
    exact = [line for rid, line in ids if rid == run_id]
    matches = exact or [line for rid, line in ids if rid.startswith(run_id)]
    if len(matches) == 1:
        res = parse_lines(matches, str(f), found.torn_warning(f))
        res.path = f
        return res, res.records[0]
    names = [rid for rid, _ in ids]
    if matches:
        listed = [rid for rid in names if rid.startswith(run_id)]
        more = f", and {len(listed) - MAX_CANDIDATES} more" if len(listed) > MAX_CANDIDATES else ""
        why = f"{len(listed)} runs start with it: {', '.join(listed[:MAX_CANDIDATES])}{more}"
    else:
        hint = did_you_mean(run_id, names)
        why = "no such run id" + (f" ({hint})" if hint else "")
    raise BadInput([InputProblem(str(f), "run_id", f"{run_id!r}: {why}")])


MAX_CANDIDATES = 10  # the run ids an ambiguous prefix lists


def show_run(dir_or_file: Path | str, run_id: str, *, color: bool = False, width: int | None = 140) -> str:
    """A run's record, request log, ledger and trace as readable text (ANSI colours when color=True), laid out in
    `width` columns (a terminal's); width=None (a pipe, a file): each table plain, its title on a line of its own,
    then its header and rows in columns two spaces apart at their full width, so no id, header or cell is cut or
    folded over lines, whatever the width of the terminal around the pipe."""
    from rich.console import Console
    from rich.rule import Rule
    from rich.table import Table

    results, rec = load_run(dir_or_file, run_id)
    full = width is None
    console = Console(record=True, width=PIPE_WIDTH if full else width, force_terminal=color,
                      color_system="standard" if color else None, file=io.StringIO())
    style = {"conforms": "green", "deviates": "yellow", "unsupported": "magenta", "error": "red"}.get(rec.verdict, "")
    rule = Rule(f"[bold]{rec.run_id}[/bold]")
    if full:  # as wide as the console, a rule would be PIPE_WIDTH characters
        console.print(rule, width=max(PIPE_RULE_WIDTH, len(rec.run_id) + 6))
    else:
        console.print(rule)
    console.print(f"[bold]{rec.scenario}[/bold] × [bold]{rec.framework}[/bold]:{rec.variant} → "
                  f"[bold]{rec.outcome}[/bold] · [{style}]{rec.verdict}[/{style}]"
                  + "".join(f"\n  [yellow]✗ {deviation_text(d)}[/yellow]" for d in rec.deviations))
    for sec in run_sections(rec, results.dir):
        if sec.title == "Deviations from the ideal" and not sec.rows:
            continue
        if full:
            console.print()
        if full and sec.rows:
            console.print(f"[bold]{sec.title}[/bold]", soft_wrap=True)
            t = Table(box=None, show_edge=False, pad_edge=False)
        else:
            t = Table(title=sec.title, title_justify="left", show_lines=False, expand=False)
        for h in sec.headers:
            t.add_column(h, overflow="fold")
        for row in sec.rows:
            t.add_row(*[str(x) for x in row])
        if sec.rows:
            console.print(t)
        else:
            console.print(f"[bold]{sec.title}[/bold]: none")
        if sec.note:
            console.print(f"  [dim]{sec.note}[/dim]", soft_wrap=full)
    text = console.export_text(styles=color)
    return "".join(line.rstrip() + "\n" for line in text.splitlines()) if full else text
