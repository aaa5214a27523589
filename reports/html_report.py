"""The HTML renderer: `render_html(ReportData)` is report.html, one self-contained file (its stylesheet and
script, reports/assets/report.css and report.js, inlined; the pictures as data URLs). `html_table` (a
DataFrame as an HTML table), `esc` and `CSS` are shared with the version matrix's report."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.baseline import Baseline
from loopbench.reports.cells import cells, column_of, columns
from loopbench.reports.data import ReportData, abouts, compact_items, stability_paragraphs
from loopbench.reports.formatting import VERDICT_MARK, outcome_ideal
from loopbench.reports.frames import environment_rows, run_line
from loopbench.reports.markdown_report import md_cell
from loopbench.reports.notes import (
    AGENTS_NOTE,
    ANSWERS_NOTE,
    CAPABILITIES_NOTE,
    CLAIM_MARK,
    COST_NOTE,
    GLOSSARY_NOTE,
    GUARDED_NOTE,
    HOW_TO_READ,
    MECHANISMS_NOTE,
    OTHER_MARKS,
    POLICY_DOC,
    SCORECARD_NOTE,
    STREAMING_NOTE,
    outcome_glossary,
    policy_href,
    verdict_glossary,
)
from loopbench.reports.scorecard import Score, category_label, category_order
from loopbench.reports.severity import reasons, worst
from loopbench.reports.show import run_sections

CellClass = dict[str, Callable[[Any], str]]  # a column -> (its value -> a CSS class)


def _asset(name: str) -> str:
    """A file of reports/assets/ (package data)."""
    return (files("loopbench.reports") / "assets" / name).read_text(encoding="utf-8")


# each inlined on a line of its own after the <style>/<script> tag
CSS = "\n" + _asset("report.css")
SCRIPT = "\n" + _asset("report.js")


def esc(v: Any) -> str:
    """A value as HTML text (None: empty)."""
    return html.escape("" if v is None else str(v))


def _anchor(run_id: str) -> str:
    """A run's details element id."""
    return "run-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)


def _run_link(run_id: str, text: str | None = None) -> str:
    """A link to a run's details."""
    return f'<a href="#{_anchor(run_id)}">{esc(text or run_id)}</a>'


def html_table(df: pd.DataFrame, raw: set[str] | None = None, cls: str = "",
               cell_class: CellClass | None = None) -> str:
    """A DataFrame as an HTML table; columns in `raw` hold HTML already; cell_class maps a column to a
    function (value -> css class)."""
    if df.empty:
        return "<p class=small><em>none</em></p>"
    raw = raw or set()
    cell_class = cell_class or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    rows: list[str] = []
    for row in df.itertuples(index=False):
        tds: list[str] = []
        for col, v in zip(df.columns, row, strict=True):
            klass = cell_class[col](v) if col in cell_class else ""
            text = v if col in raw else esc(md_cell(v) if isinstance(v, float) or v is None else v)
            tds.append(f'<td class="{klass}">{text}</td>' if klass else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _rank(rec: RunRecord) -> int:
    """How bad a cell is, for sorting: the severity of its worst deviation (0 conforms; -1 loopbench's error)."""
    if rec.verdict == "error":
        return -1
    w = worst(rec)
    return w.rank if w else 0


def _share_class(s: Score) -> str:
    """A scorecard cell's colour: all, most, some or few of its scenarios conform (none: all errored)."""
    share = s.share
    if share is None:
        return "s-none"
    return "s-all" if share == 1 else "s-most" if share >= 2 / 3 else "s-some" if share >= 1 / 3 else "s-few"


def _scorecard_html(data: ReportData) -> str:
    """The scorecard, and what each variant is."""
    cats = category_order(data.records)
    described = abouts(data)
    head = "<th>framework variant</th>" + "".join(f"<th>{esc(category_label(c))}</th>" for c in cats)
    body: list[str] = []
    for col in columns(data.records):
        tds = [f'<th class="rowh" title="{esc(described.get(col, ""))}">{esc(col)}</th>']
        for cat in cats:
            sc = data.scores.get((col, cat))
            if sc is None:
                tds.append('<td class="s-none small">not run</td>')
                continue
            words = ""
            if sc.worst is not None:
                words = (f'<div class="worst sev-{sc.worst.severity}"><b>{esc(sc.worst.severity)}</b>: '
                         f'{esc(sc.worst.words)} <span class=small>({_run_link(sc.worst_run or "", sc.worst_scenario)})'
                         "</span></div>")
            others = [(scen, run) for scen, run, _ in sc.deviating if scen != sc.worst_scenario]
            if others:
                words += ('<div class=small>also ⚠ ' + ", ".join(_run_link(run, scen) for scen, run in others)
                          + "</div>")
            err = "".join(f'<div class="small">{n} {what}</div>' for n, what in (
                (sc.unsupported, "unsupported"), (sc.errors, "error")) if n)
            tds.append(f'<td class="{_share_class(sc)}" data-share="{sc.share if sc.share is not None else ""}">'
                       f'<div class="share" title="{esc(sc.counts())}">{sc.conforms} of {sc.judged}</div>'
                       f'{words}{err}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    legend = "".join(f"<dt>{esc(c)}</dt><dd>{esc(a)}</dd>" for c, a in described.items())
    return (f'<div class="scroll"><table class="scorecard"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            + (f'<p class="small">What each variant is, as its adapter declares it:</p><dl class="abouts">{legend}</dl>'
               if legend else ""))


def _filters_html(data: ReportData) -> str:
    """The matrix's filters (verdict, category, framework variant, changed, text) and its sorting hint."""
    cats = category_order(data.records)

    def opt(v: str, t: str) -> str:
        return f'<option value="{esc(v)}">{esc(t)}</option>'

    verdicts = "".join(opt(v, v) for v in ("conforms", "deviates", "unsupported", "error"))
    changed = ('<label><input type="checkbox" id="f-changed"> changed only</label>' if data.baseline else "")
    return (
        '<div class="filters" id="filters">'
        f'<label>verdict <select id="f-verdict">{opt("", "any")}{verdicts}</select></label>'
        f'<label>category <select id="f-category">{opt("", "all")}'
        + "".join(opt(c, category_label(c)) for c in cats) + "</select></label>"
        f'<label>framework <select id="f-framework">{opt("", "all")}'
        + "".join(opt(c, c) for c in columns(data.records)) + "</select></label>"
        f'{changed}<label>search <input type="search" id="f-text" placeholder="scenario, outcome, deviation"></label>'
        '<span class="small" id="f-count"></span>'
        '<span class="small">Click a framework\'s header to sort by how badly it deviates; again for suite order.'
        "</span></div>")


def _matrix_html(data: ReportData) -> str:
    """The comparison matrix: a body per category, a row per scenario, a cell per framework variant."""
    m = data.matrix
    if m.empty:
        return "<p><em>no runs</em></p>"
    cols = columns(data.records)
    versions = {c: "" for c in cols}
    for _, row in m.iterrows():
        versions[row["column"]] = row["framework_version"] or ""
    by = {(row["scenario"], row["column"]): row for _, row in m.iterrows()}
    reps = {c.key: c for c in cells(data.records)}
    changed = data.baseline.changes if data.baseline else {}
    head = '<th class="corner">scenario</th>' + "".join(
        f'<th class="fw" data-framework="{esc(c.split(":")[0])}" data-column="{esc(c)}" title="sort by this column">'
        f'{esc(c)}<br><span class=small>{esc(versions[c])}</span></th>' for c in cols)
    bodies: list[str] = []
    order = 0
    for cat in category_order(data.records):
        part = m[m["category"] == cat]
        if part.empty:
            continue
        rows = [f'<tr class="cat"><th colspan="{len(cols) + 1}">{esc(category_label(cat))}</th></tr>']
        for scen in part.drop_duplicates("scenario")["scenario"]:
            title = part[part["scenario"] == scen]["title"].iloc[0]
            tds = [f'<td class="sc"><b>{esc(title)}</b><div class=small>{esc(scen)}</div></td>']
            texts = [title, scen]
            for col in cols:
                r = by.get((scen, col))
                if r is None:
                    tds.append(f'<td class="small" data-column="{esc(col)}">not run</td>')
                    continue
                cell = reps[(scen, r["framework"], r["variant"])]
                v = r["verdict"]
                k = " · ".join(
                    f'<span class="bad" title="ideal {esc(ideal)}">{esc(lab)} {esc(val)} ✗</span>'
                    if ideal is not None else f"{esc(lab)} {esc(val)}"
                    for lab, val, ideal in compact_items(r["key_items"]))
                devs = [d for d in r["deviations"].split("; ") if d]
                texts += [r["outcome"], *devs]
                extra = ""
                if r["unstable"]:
                    extra += f'<div class="unstable">⟳ unstable: {esc(r["outcomes"])}</div>'
                if len(cell.records) > 1:
                    extra += '<div class="small">runs: ' + " ".join(
                        _run_link(x.run_id, f"r{x.repetition}") for x in cell.records) + "</div>"
                klass = f"v-{esc(v)}"
                ch = changed.get(cell.key)
                if ch:
                    klass += " changed"
                    explained = data.baseline.explain(cell.key) if data.baseline else []
                    extra += (f'<div class="was" title="{esc("; ".join(explained))}">⇄ {esc(explained[0])}'
                              + (f" (+{len(explained) - 1})" if len(explained) > 1 else "") + "</div>")
                tip = "; ".join(devs) or v
                ideal = outcome_ideal(cell.rep)
                bad = f' <span class="bad" title="ideal {esc(ideal)}">✗</span>' if ideal is not None else ""
                # what a deviating or unsupported cell deviates in, in words, in the cell itself
                why = "".join(f"<li>{esc(x)}</li>" for x in reasons(cell.rep, raw=False)) if v in (
                    "deviates", "unsupported", "error") else ""
                tds.append(
                    f'<td class="{klass}" data-verdict="{esc(v)}" data-column="{esc(col)}" '
                    f'data-rank="{_rank(cell.rep)}" title="{esc(tip)}"><span class="badge">'
                    f'{VERDICT_MARK.get(v, "")} {_run_link(r["run_id"], r["outcome"])}{bad}</span>'
                    f'<div class="k">{k}</div>{f"<ul class=why>{why}</ul>" if why else ""}{extra}</td>')
            rows.append(f'<tr class="row" data-category="{esc(cat)}" data-order="{order}" '
                        f'data-text="{esc(" ".join(texts).lower())}">' + "".join(tds) + "</tr>")
            order += 1
        bodies.append(f'<tbody data-category="{esc(cat)}">{"".join(rows)}</tbody>')
    return (_filters_html(data) + f'<div class="matrix-wrap"><table class="matrix"><thead><tr>{head}</tr></thead>'
            f'{"".join(bodies)}</table></div>')


def _glossary_html(data: ReportData) -> str:
    """The glossary: every outcome and verdict of the record's vocabulary and every other mark, one line each,
    with the link to docs/policy.md."""
    href = policy_href(data.results.dir)
    policy = (f'<a href="{esc(href)}"><code>{esc(POLICY_DOC)}</code></a>' if href
              else f"<code>{esc(POLICY_DOC)}</code> (loopbench's repository)")
    outcomes = "".join(f"<dt><code>{esc(o)}</code></dt><dd>{esc(m)}</dd>" for o, m in outcome_glossary())
    verdicts = "".join(f"<dt>{esc(mark)} <code>{esc(v)}</code></dt><dd>{esc(m)}</dd>"
                       for mark, v, m in verdict_glossary())
    marks = "".join(f"<dt>{esc(mark)}</dt><dd>{esc(m)}</dd>" for mark, m in OTHER_MARKS
                    if mark != "[n]")  # the HTML cell says what deviates in the cell itself: no notes
    return (f"<p class=small>{esc(GLOSSARY_NOTE)} {policy}.</p>"
            f'<div class="glossary"><div><h4>Outcomes: how a run ended</h4><dl>{outcomes}</dl></div>'
            f"<div><h4>Verdicts: the run against the scenario's ideal</h4><dl>{verdicts}</dl>"
            f"<h4>Other marks</h4><dl>{marks}</dl></div></div>")


def _units_html(units: pd.DataFrame) -> str:
    """The units table, one closed <details> per limit scenario (its rows are one per framework variant)."""
    if units.empty:
        return html_table(units)
    out: list[str] = []
    for scen, part in units.groupby("scenario", sort=True):
        intents = ", ".join(sorted(set(part["intent"])))
        verdicts = " ".join(f"{VERDICT_MARK.get(str(v), '')}{n}" for v, n in part["verdict"].value_counts().items())
        out.append(f'<details class="units"><summary><b>{esc(scen)}</b> — {esc(intents)} '
                   f'<span class=small>{esc(verdicts)}</span></summary>'
                   f'{html_table(part.drop(columns=["scenario"]), raw={"run_id"})}</details>')
    return "".join(out)


def _changes_html(b: Baseline) -> str:
    """The changed cells against the baseline, each explained, then the cells on one side only."""
    n = len(b.changes)
    items = "".join(
        f"<li><b>{esc(scen)}</b> × {esc(column_of(fw, var))}: " + "; ".join(esc(x) for x in b.explain((scen, fw, var)))
        + "</li>" for (scen, fw, var) in b.changes)
    one = "".join(f"<li>{esc(x)}</li>" for x in b.one_sided)
    return (f'<p>Against <code>{esc(b.path)}</code>: <b class="{"changed-n" if n else ""}">{n} of {b.common} '
            f"common cell(s) changed</b>{'.' if not n else ':'}</p>"
            + (f'<ul class="changes">{items}</ul>' if items else "")
            + (f"<p>Cells on one side only (coverage, not a change):</p><ul>{one}</ul>" if one else ""))


def _claims_html(data: ReportData) -> str:
    """The claims table, evidence as links to the runs (the first eight)."""
    rows: list[str] = []
    for r in data.claims:
        klass = r.verdict.replace(" ", "-")
        ev = " ".join(_run_link(e) for e in r.evidence[:8]) + (f" … ({len(r.evidence)} runs)" if len(r.evidence) > 8
                                                               else "")
        rows.append(f"<tr><td>{esc(r.claim.id)}</td><td>{esc(r.claim.framework)}</td><td>{esc(r.claim.text)}"
                    f"<div class=small>scenarios: {esc(', '.join(r.claim.scenarios) or '–')}</div></td>"
                    f'<td class="{klass}">{CLAIM_MARK.get(r.verdict, "")} {esc(r.verdict)}</td>'
                    f"<td>{esc(', '.join(r.versions))}</td><td class=small>{ev or '–'}</td>"
                    f"<td class=small>{esc(r.detail)}</td></tr>")
    return ('<div class="scroll"><table><thead><tr><th>id</th><th>framework</th><th>claim</th><th>verdict</th>'
            "<th>versions</th><th>evidence</th><th>detail</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>")


def _runs_html(data: ReportData) -> str:
    """Every run's details: deviations, then the sections `loopbench show` prints."""
    out: list[str] = []
    for c in cells(data.records):
        for rec in c.records:
            devs = "".join(f"<li>✗ {esc(d.name)}: {esc(d.ideal)} → {esc(d.observed)}"
                           f"{(' — ' + esc(d.note)) if d.note else ''}</li>" for d in rec.deviations)
            parts: list[str] = []
            for sec in run_sections(rec, data.results.dir):
                if sec.title.startswith("Deviations"):
                    continue
                df = pd.DataFrame(sec.rows, columns=sec.headers)
                note = f"<p class=small>{esc(sec.note)}</p>" if sec.note else ""
                parts.append(f"<h4>{esc(sec.title)}</h4>{html_table(df)}{note}")
            out.append(
                f'<details class="run v-{esc(rec.verdict)}" id="{_anchor(rec.run_id)}"><summary>'
                f"<b>{esc(rec.scenario)}</b> × {esc(c.column)} r{rec.repetition} — {VERDICT_MARK.get(rec.verdict, '')} "
                f"{esc(rec.outcome)} · {esc(rec.verdict)} <span class=small>{esc(rec.run_id)}</span></summary>"
                f"{f'<ul class=dev>{devs}</ul>' if devs else ''}{''.join(parts)}</details>")
    return "".join(out)


def _answers_html(data: ReportData) -> str:
    """The chooser's table: a row per question, a column per framework; each answer links its run."""
    frameworks = sorted({a.framework for a in data.answers})
    head = "<tr><th>question</th>" + "".join(f"<th>{esc(f)}</th>" for f in frameworks) + "</tr>"
    rows = []
    for qid in dict.fromkeys(a.question.id for a in data.answers):
        by = {a.framework: a for a in data.answers if a.question.id == qid}
        q = next(iter(by.values())).question
        cells = "".join(f"<td class={esc(by[f].verdict)}>{esc(by[f].mark)} {_run_link(by[f].run_id, by[f].text)}</td>"
                        if f in by else "<td>–</td>" for f in frameworks)
        rows.append(f"<tr><th>{esc(q.text)} <code>{esc(q.scenario)}</code></th>{cells}</tr>")
    return f"<table class=answers>{head}{''.join(rows)}</table>"


def render_html(data: ReportData) -> str:
    """report.html."""
    env = html_table(pd.DataFrame(environment_rows(data.env), columns=["what", "value"]))
    warn = "".join(f"<p class=unstable>⚠ {esc(w)}</p>" for w in data.results.warnings)
    acc_cls: CellClass = {"runs differing": lambda v: "diff" if v else ""}
    acc_diffs = data.accounting_diffs.copy()
    if not acc_diffs.empty:
        acc_diffs["run_id"] = [_run_link(x) for x in acc_diffs["run_id"]]
    units = data.units.copy()
    if not units.empty:
        units["run_id"] = [_run_link(x, "details") for x in units["run_id"]]
    stab_html = "".join(f"<p>{esc(p)}</p>" for p in stability_paragraphs(data))
    if data.stability_check is not None and data.stability_check.changed:
        stab_html += "<ul>" + "".join(
            f"<li>{esc(c.scenario)} × {esc(c.column)} r{c.repetition}: {esc('; '.join(c.changes))}</li>"
            for c in data.stability_check.changed) + "</ul>"
    if not data.stability.empty:
        stab_html += html_table(data.stability.drop(columns=["run_ids"]),
                                cell_class={"stable": lambda v: "" if v else "diff"})
    runs = _runs_html(data)  # the longest part, before the pictures: they may still be drawing elsewhere
    pics = "".join(
        f'<figure><figcaption><b>{esc(title)}</b></figcaption><img alt="{esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>' for _, title, png in data.plots)
    sections = [
        *([("answers", "Which framework: the questions the suite exists for",
            f"<p class=small>{esc(ANSWERS_NOTE)}</p>" + _answers_html(data))] if data.answers else []),
        ("scorecard", "Scorecard", warn + f"<p class=small>{esc(SCORECARD_NOTE)}</p>" + _scorecard_html(data)),
        *([("changes", "Changes against the baseline", _changes_html(data.baseline))] if data.baseline else []),
        ("matrix", "Comparison matrix",
         "<p class=small>✓ conforms · ⚠ deviates (✗ marks a deviating outcome or counter; each cell says in words "
         "what deviates; hover it for each deviation, ideal → observed) · "
         "⊘ unsupported · ✖ error · ⟳ unstable" + (" · ⇄ changed against the baseline (was → now)"
                                                   if data.baseline else "")
         + ". The outcomes and verdicts are defined in the "
           '<a href="#glossary">glossary</a>. Click an outcome for the run\'s details.</p>' + _matrix_html(data)),
        ("glossary", "Glossary", _glossary_html(data)),
        ("read", "How to read", "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in HOW_TO_READ) + "</ul>"),
        ("cost", "Cost per model call", f"<p>{esc(COST_NOTE)}</p>" + html_table(data.conformance)),
        ("mechanisms", "Mechanisms: each intent in each framework's native terms",
         f"<p>{esc(MECHANISMS_NOTE)}</p>" + html_table(data.mechanisms)
         + (f"<p>{esc(CAPABILITIES_NOTE)}</p>" + html_table(data.capabilities) if not data.capabilities.empty else "")),
        ("units", "Units: what a limit means natively",
         "<p class=small>Each limit scenario: the neutral intent, the native setting each framework variant used, "
         "and what happened (open a scenario).</p>" + _units_html(units)),
        ("accounting", "Accounting: reported vs observed",
         html_table(data.accounting, cell_class=acc_cls)
         + "<p>Runs where the framework's figure differs from ground truth:</p>"
         + html_table(acc_diffs, raw={"run_id"}, cell_class={"difference": lambda v: "diff"})),
        *([("streaming", "Streamed vs not",
            f"<p>{esc(STREAMING_NOTE)}</p>" + html_table(data.streaming_pairs)
            + (f"<p>Cells that differ:</p>{html_table(data.streaming_diffs)}" if not data.streaming_diffs.empty
               else "<p>No cell differs.</p>"))] if not data.streaming_pairs.empty else []),
        *([("guarded", "Native vs guarded",
            f"<p>{esc(GUARDED_NOTE)}</p>" + html_table(data.guarded_pairs)
            + (f"<p>Cells that still deviate when guarded, and why:</p>{html_table(data.guarded_remaining)}"
               if not data.guarded_remaining.empty else "<p>Every guarded cell conforms.</p>")
            + (f"<p>The hooks each framework lacks:</p>{html_table(data.guarded_lacks)}"
               if not data.guarded_lacks.empty else ""))] if not data.guarded_pairs.empty else []),
        *([("agents", "Accounting across agents",
            f"<p>{esc(AGENTS_NOTE)}</p>" + html_table(data.agents_summary) + "<p>Each cell:</p>"
            + html_table(data.agents_cells))] if not data.agents_summary.empty else []),
        ("claims", "Documented claims", _claims_html(data)),
        ("stability", "Stability", stab_html),
        ("pictures", "Pictures", pics or "<p><em>no pictures</em></p>"),
        ("env", "Environment", env),
        ("runs", "Run details", "<p class=small>Every run: record, request log, ledger, trace.</p>" + runs),
    ]
    nav = "".join(f'<a href="#{sid}">{esc(t)}</a>' for sid, t, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{esc(t)}</h2>{content}</section>' for sid, t, content in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>loopbench report</title><style>{CSS}</style></head><body>"
        f"<h1>loopbench report</h1><p class=small>{esc(run_line(data.env))}</p><nav>{nav}</nav>{body}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
