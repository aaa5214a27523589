"""Build the reports of a results directory: DIR/report.md, DIR/report.html (one self-contained file),
DIR/matrix.csv, DIR/summary.json, and the pictures as PNG files beside them.

Every report starts with the answer: the scorecard (framework variant × category: the share of cells that
conform and the most serious deviation in words), then the changes against a baseline when one is given,
the comparison matrix (scenarios by category, with their titles), how to read it, the framework's cost per
model call, mechanisms, units, accounting, documented claims, stability, pictures, the environment (date,
loopbench revision, Python/Node, every framework package and version), and (HTML) every run's details.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.reports.baseline import Baseline, compare_with
from loopbench.reports.cells import cells, column_of, columns
from loopbench.reports.claims import CLAIMS_FILE, ClaimResult, check_claims, claims_frame, load_claims
from loopbench.reports.formatting import VERDICT_MARK
from loopbench.reports.frames import (
    accounting_details,
    accounting_frame,
    capabilities_frame,
    conformance_frame,
    environment,
    environment_rows,
    matrix_frame,
    mechanisms_frame,
    run_line,
    stability_frame,
    units_frame,
)
from loopbench.reports.load import Results, load_results
from loopbench.reports.scorecard import (
    Score,
    category_label,
    category_order,
    scorecard,
    scorecard_frame,
)
from loopbench.reports.severity import worst
from loopbench.reports.show import run_sections
from loopbench.reports.summary import (
    BaselineOut,
    CellOut,
    ClaimOut,
    DeviationOut,
    ScoreOut,
    Summary,
    Worst,
    table_rows,
)

FORMATS = frozenset({"md", "html", "csv", "json"})
CLAIM_MARK = {"holds": "✓", "refuted": "✗", "not testable": "○"}

HOW_TO_READ = [
    "Each cell is one scenario × framework variant: the normalized outcome the harness derived from the "
    "framework's own signals and ground truth, the counters that matter for that scenario, and the verdict "
    "against the scenario's ideal (`conforms`, `deviates` with each deviation as name: ideal→observed, "
    "`unsupported` when the framework (or the variant's idiom) has no native control for a limit or an intent "
    "the scenario sets — e.g. a pause that can be resumed in another process —, `error` when loopbench itself "
    "broke, `hung` when the framework did not answer within the run's hard timeout and was stopped).",
    "`–` means unknown (the framework does not report it), never zero.",
    "With several repetitions, a cell shows its majority (outcome, verdict) — ties: the lowest repetition — and "
    "is marked unstable when its repetitions disagree.",
]


MECHANISMS_NOTE = (
    "A scenario states its intent (a denial that stops the run or one the model is told about, a pause for "
    "approval, a rejection, each neutral limit); each adapter maps it to its framework's documented mechanism "
    "and records which one in every run (`native.mechanisms`, `limits`). A variant is another idiom a "
    "user would pick for the same intents."
)


CAPABILITIES_NOTE = (
    "What each adapter declares it can do natively (the same table as `loopbench list`): the neutral limits it "
    "translates, its framework's step unit, how a pause is held, how a policy denial is expressed."
)


@dataclass
class ReportData:
    results: Results
    env: dict[str, Any]
    matrix: pd.DataFrame
    units: pd.DataFrame
    mechanisms: pd.DataFrame
    capabilities: pd.DataFrame
    accounting: pd.DataFrame
    accounting_diffs: pd.DataFrame
    conformance: pd.DataFrame
    stability: pd.DataFrame
    claims: list[ClaimResult]
    plots: Sequence[tuple[str, str, bytes]]
    scorecard: pd.DataFrame
    scores: dict[tuple[str, str], Score]
    baseline: Baseline | None = None

    @property
    def records(self) -> list[Any]:
        return self.results.records


def _draw_elsewhere(results: Path) -> subprocess.Popen[str]:
    """`python -m loopbench.reports.plots`: the pictures of the same results, drawn beside them."""
    return subprocess.Popen([sys.executable, "-m", "loopbench.reports.plots", str(results)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class _Pictures(Sequence[tuple[str, str, bytes]]):
    """The pictures another process is drawing, waited for on first use."""

    def __init__(self, proc: subprocess.Popen[str], out_dir: Path):
        self._proc, self._out_dir = proc, out_dir
        self._done: list[tuple[str, str, bytes]] | None = None

    def _all(self) -> list[tuple[str, str, bytes]]:
        if self._done is None:
            out, err = self._proc.communicate()
            if self._proc.returncode != 0:
                raise RuntimeError(f"drawing the pictures failed (exit {self._proc.returncode}): {err[-1500:]}")
            drawn = json.loads(out)
            self._done = [(name, title, (self._out_dir / name).read_bytes()) for name, title in drawn]
        return self._done

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __len__(self) -> int:
        return len(self._all())


def report_data(results: Results, claims_file: Path | None = None, baseline: Results | None = None) -> ReportData:
    """Everything the reports show but the pictures (`build_reports` has them drawn by another process)."""
    recs = results.records
    claims = load_claims(claims_file or CLAIMS_FILE)
    return ReportData(
        scorecard=scorecard_frame(recs), scores=scorecard(recs),
        baseline=compare_with(baseline, recs) if baseline is not None else None,
        results=results, env=environment(recs), matrix=matrix_frame(recs), units=units_frame(recs),
        mechanisms=mechanisms_frame(recs), capabilities=capabilities_frame(recs),
        accounting=accounting_frame(recs), accounting_diffs=accounting_details(recs),
        conformance=conformance_frame(recs), stability=stability_frame(recs),
        claims=check_claims(recs, claims), plots=[],
    )


# ---------------------------------------------------------------- Markdown
def _md_cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    s = str(v) if not isinstance(v, float) else f"{v:.4g}"
    return s.replace("|", "\\|").replace("\n", "<br>")


def md_table(df: pd.DataFrame, index: bool = False) -> str:
    if df.empty:
        return "_none_\n"
    d = df.reset_index() if index else df
    head = "| " + " | ".join(_md_cell(c) for c in d.columns) + " |"
    sep = "|" + "|".join("---" for _ in d.columns) + "|"
    rows = ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in d.itertuples(index=False)]
    return "\n".join([head, sep, *rows]) + "\n"


COMPACT_ITEMS = 2  # counters a compact cell shows: the deviating ones first


def compact_items(items: list[tuple[str, str, str | None]]) -> list[tuple[str, str, str | None]]:
    """The one or two counters that matter in a cell: those it deviated on, else the scenario's first keys."""
    bad = [i for i in items if i[2] is not None]
    return (bad + [i for i in items if i[2] is None])[:COMPACT_ITEMS]


def _compact_md(row: pd.Series, changed: bool) -> str:
    k = " · ".join(f"{lab} {val}{' ✗' if ideal is not None else ''}" for lab, val, ideal in compact_items(
        row["key_items"]))
    mark = VERDICT_MARK.get(row["verdict"], "")
    return f"{mark} {row['outcome']}" + (f" · {k}" if k else "") + (" · ⟳" if row["unstable"] else "") + (
        " · ⇄ changed" if changed else "")


def _matrix_md(data: ReportData) -> str:
    m = data.matrix
    if m.empty:
        return "_no runs_\n"
    changed = set(data.baseline.changes) if data.baseline else set()
    m = m.assign(cell=[_compact_md(r, (r["scenario"], r["framework"], r["variant"]) in changed)
                       for _, r in m.iterrows()])
    cols = columns(data.records)
    out = []
    for cat in category_order(data.records):
        part = m[m["category"] == cat]
        if part.empty:
            continue
        titles = part.groupby("scenario")["title"].first()
        piv = part.pivot(index="scenario", columns="column", values="cell").reindex(columns=cols).fillna("not run")
        piv.index = [f"{titles[sid]} (`{sid}`)" for sid in piv.index]
        piv.index.name = "scenario"
        out += [f"### {category_label(cat)}", "", md_table(piv, index=True)]
    return "\n".join(out)


def _changes_md(b: Baseline) -> str:
    n = len(b.changes)
    out = [f"Against `{b.path}`: **{n} of {b.common} common cell(s) changed**" + (":" if n else "."), ""]
    for scen, fw, var in b.changes:
        out.append(f"- {scen} × {column_of(fw, var)}: " + "; ".join(b.explain((scen, fw, var))))
    if b.one_sided:
        out += ["", "Cells on one side only (coverage, not a change):", ""] + [f"- {x}" for x in b.one_sided]
    return "\n".join(out) + "\n"


def _claims_df(data: ReportData) -> pd.DataFrame:
    df = claims_frame(data.claims)
    df["verdict"] = [f"{CLAIM_MARK.get(v, '')} {v}" for v in df["verdict"]]
    df["evidence"] = [" ".join(e.split()[:6]) + (" …" if len(e.split()) > 6 else "") for e in df["evidence"]]
    return df[["id", "framework", "claim", "verdict", "versions", "evidence", "detail"]]


COST_NOTE = ("Cells per framework variant (majority run per cell), and the framework's cost per model call: the "
             "median worker wall ms and the framework's CPU ms (the workers' CPU less loopbench's own part: its "
             "ledger calls, and the Vercel adapter's Python side) per observed model request, over runs without "
             "scripted delays; loopbench's own CPU ms per run (its part in the workers plus the runner's "
             "bookkeeping), shown apart; the largest worker RSS.")


SCORECARD_NOTE = (
    "Each row is a framework variant, each column a category of scenarios: how many of its scenarios conform "
    "to the production loop policy (docs/policy.md), and the most serious deviation among the rest, in words, "
    "with its severity (critical, high, medium, low: reports/severity.py) and the scenario it came from. "
    "`error` cells are loopbench's failures and are not counted.")


def render_markdown(data: ReportData) -> str:
    out = ["# loopbench report", "", run_line(data.env), ""]
    for w in data.results.warnings:
        out.append(f"> ⚠ {w}\n")
    out += ["## Scorecard", "", SCORECARD_NOTE, ""]
    out.append(md_table(data.scorecard))
    out += [""] + [f"- `{c}`: {about}" for c, about in _abouts(data).items()] + [""]
    if data.baseline is not None:
        out += ["## Changes against the baseline", ""]
        out.append(_changes_md(data.baseline))
    out += ["## Comparison matrix", "",
            "✓ conforms · ⚠ deviates (✗ marks a deviating counter) · ⊘ unsupported · ✖ error · ⟳ unstable"
            + (" · ⇄ changed against the baseline" if data.baseline else "")
            + ". Every deviation, ideal → observed, is in `summary.json` and the HTML report's run details.", ""]
    out.append(_matrix_md(data))
    out += ["## How to read", ""] + [f"- {x}" for x in HOW_TO_READ] + [""]
    out += ["## Cost per model call", "", COST_NOTE, ""]
    out.append(md_table(data.conformance))
    out += ["## Mechanisms: each intent in each framework's native terms", "", MECHANISMS_NOTE, ""]
    out.append(md_table(data.mechanisms))
    if not data.capabilities.empty:
        out += ["", CAPABILITIES_NOTE, ""]
        out.append(md_table(data.capabilities))
    out += ["## Units: what a limit means natively", "",
            "Each limit scenario: the neutral intent, the native setting the adapter used, and what happened.", ""]
    out.append(md_table(data.units.drop(columns=["run_id"], errors="ignore")))
    out += ["## Accounting: reported vs observed", "",
            "Sums over the runs where both are known; `not reported` when the framework reports nothing.",
            ""]
    acc = data.accounting.copy()
    if not acc.empty:
        acc["runs differing"] = [f"**⚠ {v}**" if v else "0" for v in acc["runs differing"]]
    out.append(md_table(acc))
    out += ["", "Runs where the framework's figure differs from ground truth:", ""]
    out.append(md_table(data.accounting_diffs.drop(columns=["run_id"], errors="ignore")))
    out += ["## Documented claims", "",
            "Each claim of `reports/claims.yaml` checked by its predicate against these runs: holds / refuted / "
            "not testable by a run (no predicate, or no matching runs). Evidence: run ids.", ""]
    out.append(md_table(_claims_df(data)))
    out += ["## Stability", ""]
    if data.stability.empty:
        out.append("Every cell ran once (run with `--repeat N` to check stability).\n")
    else:
        n_unstable = int((~data.stability["stable"]).sum())
        out.append(f"{len(data.stability)} cell(s) ran more than once; {n_unstable} unstable.\n")
        out.append(md_table(data.stability.drop(columns=["run_ids"])))
    if data.plots:
        out += ["## Pictures", ""]
        for name, title, _ in data.plots:
            out += [f"### {title}", "", f"![{title}]({name})", ""]
    out += ["## Environment", ""]
    out.append(md_table(pd.DataFrame(environment_rows(data.env), columns=["what", "value"])))
    return "\n".join(out) + "\n"


def _abouts(data: ReportData) -> dict[str, str]:
    """Each framework variant's description, as its adapter declared it in the records."""
    out: dict[str, str] = {}
    for r in data.records:
        if r.variant_about:
            out.setdefault(column_of(r.framework, r.variant), r.variant_about)
    return {c: out[c] for c in columns(data.records) if c in out}


# ---------------------------------------------------------------- HTML
CSS = """
:root{--ok:#e6f4ea;--okb:#1e8e3e;--dev:#fff4e0;--devb:#b06000;--uns:#f3e8fd;--unsb:#8430ce;--err:#fce8e6;--errb:#c5221f}
*{box-sizing:border-box}
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:0 1.2rem 3rem;color:#202124}
h1{margin:1rem 0 .2rem}
section,details.run{scroll-margin-top:3.5rem}
h2{margin:1.8rem 0 .5rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
nav{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #eee;z-index:5;font-size:13px}
nav a{margin-right:.9rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:13px}
th,td{border:1px solid #ddd;padding:.25rem .45rem;vertical-align:top;text-align:left}
th{background:#f5f5f5}
.scroll{overflow-x:auto;max-width:100%}
table.scorecard{table-layout:fixed;width:100%;font-size:12px}
table.scorecard th:first-child{width:12rem}
table.scorecard td,table.scorecard th{overflow-wrap:anywhere}
dl.abouts{font-size:12px;margin:.2rem 0}dl.abouts dt{font-weight:600;float:left;clear:left;margin-right:.5rem}
dl.abouts dd{margin:0 0 .15rem 0}
.share{font-size:17px;font-weight:700}
.about{font-weight:400;font-size:11px;color:#555}
.s-all{background:#e6f4ea}.s-most{background:#f3f9e9}.s-some{background:#fff4e0}.s-few{background:#fce8e6}
.s-none{background:#fafafa}
.worst{font-size:12px}.sev-critical b{color:#c5221f}.sev-high b{color:#b06000}.sev-medium b{color:#7a5c00}
.sev-low b{color:#555}
.filters{display:flex;gap:.9rem;flex-wrap:wrap;align-items:center;margin:.3rem 0 .5rem;font-size:13px}
.matrix-wrap{max-height:82vh;overflow:auto;border:1px solid #ddd}
table.matrix{margin:0;font-size:12px;table-layout:fixed;width:100%;min-width:40rem}
table.matrix th,table.matrix td{overflow-wrap:anywhere}
table.matrix thead th.corner{width:11rem}
table.matrix thead th{position:sticky;top:0;z-index:3;background:#f5f5f5;cursor:pointer}
table.matrix thead th.corner{left:0;z-index:4;cursor:default}
table.matrix thead th.sorted{background:#dbe7fb}
table.matrix td.sc{position:sticky;left:0;background:#fafafa;z-index:2}
table.matrix tr.cat th{background:#e8eaed;position:sticky;left:0;z-index:1;text-transform:capitalize}
td.changed{outline:3px solid #1a73e8;outline-offset:-3px}
.was{font-size:11px;color:#1a4fa0}
ul.changes li{margin:.15rem 0}
.v-conforms{background:var(--ok);border-left:4px solid var(--okb)}
.v-deviates{background:var(--dev);border-left:4px solid var(--devb)}
.v-unsupported{background:var(--uns);border-left:4px solid var(--unsb)}
.v-error{background:var(--err);border-left:4px solid var(--errb)}
.badge{font-weight:600}
.k{color:#444;font-size:12px}.k .bad{color:var(--errb);font-weight:600}
ul.dev{margin:.2rem 0 0;padding-left:1rem;color:#8a3b00;font-size:12px}
.unstable{color:var(--errb);font-weight:600;font-size:12px}
.diff{background:#fde2e1;font-weight:600}
.holds{color:var(--okb);font-weight:600}.refuted{color:var(--errb);font-weight:600}.not-testable{color:#666}
details.run{border:1px solid #ddd;border-radius:4px;margin:.3rem 0;padding:.2rem .6rem}
details.run[open]{background:#fcfcfc}
details.run:target,details.run.hl{outline:3px solid #1a73e8}
details.run summary{cursor:pointer}
details.run table{font-size:12px}
img{max-width:100%;height:auto;border:1px solid #eee}
.small{font-size:12px;color:#555}
"""

SCRIPT = """
function openRun(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
var el=document.getElementById(id);if(el&&el.tagName==='DETAILS'){el.open=true;el.scrollIntoView();}}
window.addEventListener('hashchange',openRun);document.addEventListener('DOMContentLoaded',openRun);
function $(id){return document.getElementById(id);}
function visibleCells(tr){return Array.prototype.filter.call(tr.querySelectorAll('td[data-verdict]'),
  function(td){return !td.hidden;});}
function applyFilters(){
  var v=$('f-verdict').value,c=$('f-category').value,fw=$('f-framework').value,
      ch=!!$('f-changed')&&$('f-changed').checked,q=$('f-text').value.trim().toLowerCase(),shown=0;
  document.querySelectorAll('table.matrix [data-column]').forEach(function(el){
    el.hidden=!!fw&&el.dataset.column!==fw;});
  document.querySelectorAll('table.matrix tr.row').forEach(function(tr){
    var tds=visibleCells(tr);
    var ok=(!c||tr.dataset.category===c)&&(!q||tr.dataset.text.indexOf(q)>=0)
      &&(!v||tds.some(function(td){return td.dataset.verdict===v;}))
      &&(!ch||tds.some(function(td){return td.classList.contains('changed');}));
    tr.hidden=!ok;if(ok)shown++;});
  document.querySelectorAll('table.matrix tbody').forEach(function(tb){
    tb.querySelector('tr.cat').hidden=!tb.querySelector('tr.row:not([hidden])');});
  $('f-count').textContent=shown+' scenario(s) shown';
}
var sortedBy=null;
function rank(tr,col){var td=tr.querySelector('td[data-column="'+CSS.escape(col)+'"]');
  return td&&td.dataset.rank?Number(td.dataset.rank):-2;}
function sortBy(col){
  sortedBy=sortedBy===col?null:col;
  document.querySelectorAll('table.matrix tbody').forEach(function(tb){
    var rows=Array.prototype.slice.call(tb.querySelectorAll('tr.row'));
    rows.sort(function(a,b){if(sortedBy){var d=rank(b,sortedBy)-rank(a,sortedBy);if(d)return d;}
      return a.dataset.order-b.dataset.order;});
    rows.forEach(function(r){tb.appendChild(r);});});
  document.querySelectorAll('table.matrix th.fw').forEach(function(th){
    th.classList.toggle('sorted',th.dataset.column===sortedBy);});
}
document.addEventListener('DOMContentLoaded',function(){
  if(!$('filters'))return;
  ['f-verdict','f-category','f-framework','f-changed','f-text'].forEach(function(id){var el=$(id);
    if(el){el.addEventListener('input',applyFilters);el.addEventListener('change',applyFilters);}});
  document.querySelectorAll('table.matrix th.fw').forEach(function(th){
    th.addEventListener('click',function(){sortBy(th.dataset.column);});});
  applyFilters();
});
"""


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def _anchor(run_id: str) -> str:
    return "run-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in run_id)


def _run_link(run_id: str, text: str | None = None) -> str:
    return f'<a href="#{_anchor(run_id)}">{esc(text or run_id)}</a>'


def html_table(df: pd.DataFrame, raw: set[str] | None = None, cls: str = "",
               cell_class: dict[str, Any] | None = None) -> str:
    """A DataFrame as an HTML table; columns in `raw` hold HTML already; cell_class maps a column to a
    function (value -> css class)."""
    if df.empty:
        return "<p class=small><em>none</em></p>"
    raw = raw or set()
    cell_class = cell_class or {}
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    rows = []
    for row in df.itertuples(index=False):
        tds = []
        for col, v in zip(df.columns, row, strict=True):
            klass = cell_class[col](v) if col in cell_class else ""
            text = v if col in raw else esc(_md_cell(v) if isinstance(v, float) or v is None else v)
            tds.append(f'<td class="{klass}">{text}</td>' if klass else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _rank(rec: Any) -> int:
    """How bad a cell is, for sorting: the severity of its worst deviation (0 conforms; -1 loopbench's error)."""
    if rec.verdict == "error":
        return -1
    w = worst(rec)
    return w.rank if w else 0


def _share_class(s: Score) -> str:
    share = s.share
    if share is None:
        return "s-none"
    return "s-all" if share == 1 else "s-most" if share >= 2 / 3 else "s-some" if share >= 1 / 3 else "s-few"


def _scorecard_html(data: ReportData) -> str:
    cats = category_order(data.records)
    abouts = _abouts(data)
    head = "<th>framework variant</th>" + "".join(f"<th>{esc(category_label(c))}</th>" for c in cats)
    body = []
    for col in columns(data.records):
        tds = [f'<th class="rowh" title="{esc(abouts.get(col, ""))}">{esc(col)}</th>']
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
            err = "".join(f'<div class="small">{n} {what}</div>' for n, what in (
                (sc.unsupported, "unsupported"), (sc.errors, "error")) if n)
            tds.append(f'<td class="{_share_class(sc)}" data-share="{sc.share if sc.share is not None else ""}">'
                       f'<div class="share">{sc.conforms}/{sc.judged}</div>{words}{err}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    legend = "".join(f"<dt>{esc(c)}</dt><dd>{esc(a)}</dd>" for c, a in abouts.items())
    return (f'<div class="scroll"><table class="scorecard"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            + (f'<p class="small">What each variant is, as its adapter declares it:</p><dl class="abouts">{legend}</dl>'
               if legend else ""))


def _filters_html(data: ReportData) -> str:
    cats = category_order(data.records)
    opt = lambda v, t: f'<option value="{esc(v)}">{esc(t)}</option>'  # noqa: E731
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
    m = data.matrix
    if m.empty:
        return "<p><em>no runs</em></p>"
    cols = columns(data.records)
    versions = {c: "" for c in cols}
    for _, r in m.iterrows():
        versions[r["column"]] = r["framework_version"] or ""
    by = {(r["scenario"], r["column"]): r for _, r in m.iterrows()}
    reps = {c.key: c for c in cells(data.records)}
    changed = data.baseline.changes if data.baseline else {}
    head = '<th class="corner">scenario</th>' + "".join(
        f'<th class="fw" data-framework="{esc(c.split(":")[0])}" data-column="{esc(c)}" title="sort by this column">'
        f'{esc(c)}<br><span class=small>{esc(versions[c])}</span></th>' for c in cols)
    bodies = []
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
                tds.append(
                    f'<td class="{klass}" data-verdict="{esc(v)}" data-column="{esc(col)}" '
                    f'data-rank="{_rank(cell.rep)}" title="{esc(tip)}"><span class="badge">'
                    f'{VERDICT_MARK.get(v, "")} {_run_link(r["run_id"], r["outcome"])}</span>'
                    f'<div class="k">{k}</div>{extra}</td>')
            rows.append(f'<tr class="row" data-category="{esc(cat)}" data-order="{order}" '
                        f'data-text="{esc(" ".join(texts).lower())}">' + "".join(tds) + "</tr>")
            order += 1
        bodies.append(f'<tbody data-category="{esc(cat)}">{"".join(rows)}</tbody>')
    return (_filters_html(data) + f'<div class="matrix-wrap"><table class="matrix"><thead><tr>{head}</tr></thead>'
            f'{"".join(bodies)}</table></div>')


def _units_html(units: pd.DataFrame) -> str:
    """The units table, one closed <details> per limit scenario (its rows are one per framework variant)."""
    if units.empty:
        return html_table(units)
    out = []
    for scen, part in units.groupby("scenario", sort=True):
        intents = ", ".join(sorted(set(part["intent"])))
        verdicts = " ".join(f"{VERDICT_MARK.get(v, '')}{n}" for v, n in part["verdict"].value_counts().items())
        out.append(f'<details class="units"><summary><b>{esc(scen)}</b> — {esc(intents)} '
                   f'<span class=small>{esc(verdicts)}</span></summary>'
                   f'{html_table(part.drop(columns=["scenario"]), raw={"run_id"})}</details>')
    return "".join(out)


def _changes_html(b: Baseline) -> str:
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
    rows = []
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
    out = []
    for c in cells(data.records):
        for rec in c.records:
            devs = "".join(f"<li>✗ {esc(d.name)}: {esc(d.ideal)} → {esc(d.observed)}"
                           f"{(' — ' + esc(d.note)) if d.note else ''}</li>" for d in rec.deviations)
            parts = []
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


def render_html(data: ReportData) -> str:
    env = html_table(pd.DataFrame(environment_rows(data.env), columns=["what", "value"]))
    warn = "".join(f"<p class=unstable>⚠ {esc(w)}</p>" for w in data.results.warnings)
    acc_cls = {"runs differing": lambda v: "diff" if v else ""}
    acc_diffs = data.accounting_diffs.copy()
    if not acc_diffs.empty:
        acc_diffs["run_id"] = [_run_link(x) for x in acc_diffs["run_id"]]
    units = data.units.copy()
    if not units.empty:
        units["run_id"] = [_run_link(x, "details") for x in units["run_id"]]
    stab = data.stability.drop(columns=["run_ids"]) if not data.stability.empty else data.stability
    if data.stability.empty:
        stab_html = "<p>Every cell ran once (run with <code>--repeat N</code> to check stability).</p>"
    else:
        stab_html = html_table(stab, cell_class={"stable": lambda v: "" if v else "diff"})
    runs = _runs_html(data)  # the longest part, before the pictures: they may still be drawing elsewhere
    pics = "".join(
        f'<figure><figcaption><b>{esc(title)}</b></figcaption><img alt="{esc(title)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"></figure>' for _, title, png in data.plots)
    sections = [
        ("scorecard", "Scorecard", warn + f"<p class=small>{esc(SCORECARD_NOTE)}</p>" + _scorecard_html(data)),
        *([("changes", "Changes against the baseline", _changes_html(data.baseline))] if data.baseline else []),
        ("matrix", "Comparison matrix",
         "<p class=small>✓ conforms · ⚠ deviates (✗ marks a deviating counter; hover a cell for its deviations) · "
         "⊘ unsupported · ✖ error · ⟳ unstable" + (" · ⇄ changed against the baseline (was → now)"
                                                   if data.baseline else "")
         + ". Click an outcome for the run's details.</p>" + _matrix_html(data)),
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


# ---------------------------------------------------------------- CSV and JSON
def summary(data: ReportData) -> Summary:
    """The report as typed data (summary.json)."""
    b = data.baseline

    def worst_out(w: Any) -> Worst | None:
        return Worst(severity=w.severity, words=w.words, deviation=w.deviation) if w is not None else None

    matrix = []
    for c in cells(data.records):
        r = c.rep
        row = r.counters.model_dump()
        matrix.append(CellOut(
            scenario=c.scenario, title=r.scenario_title or c.scenario, category=r.category or "other",
            column=c.column, framework=c.framework, variant=c.variant, framework_version=r.framework_version,
            outcome=r.outcome, outcome_rule=r.outcome_rule, verdict=r.verdict,
            deviations=[DeviationOut(**d.model_dump()) for d in r.deviations], worst=worst_out(worst(r)),
            unsupported=list(r.unsupported), counters=row, repetitions=len(c.records), unstable=c.unstable,
            run_id=r.run_id, run_ids=[x.run_id for x in c.records],
            changes=None if b is None or c.key not in b.compared else b.explain(c.key)))
    scores = [ScoreOut(column=sc.column, category=sc.category, cells=sc.cells, conforms=sc.conforms,  # type: ignore[arg-type]
                       unsupported=sc.unsupported, errors=sc.errors, share=sc.share, worst=worst_out(sc.worst),
                       worst_scenario=sc.worst_scenario)
              for sc in data.scores.values()]
    return Summary(
        results_file=str(data.results.path), warnings=list(data.results.warnings), environment=data.env,
        scorecard=scores, matrix=matrix,
        baseline=BaselineOut(path=b.path, common_cells=b.common, changed_cells=len(b.changes),
                             one_sided=b.one_sided) if b else None,
        cost_per_model_call=table_rows(data.conformance), units=table_rows(data.units),
        mechanisms=table_rows(data.mechanisms), capabilities=table_rows(data.capabilities),
        accounting=table_rows(data.accounting), accounting_differences=table_rows(data.accounting_diffs),
        claims=[ClaimOut(id=r.claim.id, framework=r.claim.framework, text=r.claim.text, verdict=r.verdict,
                         evidence=list(r.evidence), versions=list(r.versions), detail=r.detail) for r in data.claims],
        stability=table_rows(data.stability), pictures=[name for name, _, _ in data.plots],
    )


def render_json(data: ReportData) -> str:
    return json.dumps(summary(data).model_dump(mode="json"), indent=2, ensure_ascii=False, default=str) + "\n"


def render_csv(data: ReportData) -> str:
    return data.matrix.drop(columns=["key_items"], errors="ignore").to_csv(index=False)


# ---------------------------------------------------------------- entry point
def html_against(new: Path, base: Path) -> str:
    """The HTML report of `new` with its changes against `base` marked (no pictures: `loopbench diff --html`)."""
    return render_html(report_data(load_results(new), baseline=load_results(base)))


def build_reports(dir: Path, formats: set[str] | frozenset[str] = FORMATS, *,  # noqa: A002 - the CLI's name
                  claims_file: Path | None = None, baseline: Path | None = None) -> list[Path]:
    """Write the reports of the results in `dir` (a results directory, or a results.jsonl whose directory
    gets the reports): report.md, report.html, matrix.csv, summary.json (those in `formats`), and the
    pictures as PNG files beside the Markdown/HTML; with `baseline` (results), the changes against it marked.
    Returns the paths written.

    Raises BadInput for an unknown format or bad results (see reports.load)."""
    unknown = set(formats) - FORMATS
    if unknown:
        raise BadInput([InputProblem("", "formats", f"unknown format(s) {sorted(unknown)}; "
                                                    f"choose from {sorted(FORMATS)}")])
    want_pictures = bool({"md", "html"} & set(formats))
    # the pictures are half the report's time (matplotlib's import alone ~3 s): a process of its own draws them
    # from the same results, started first, while this one renders the rest
    drawing = _draw_elsewhere(Path(dir)) if want_pictures else None
    try:
        results = load_results(dir)
        base = load_results(baseline) if baseline is not None else None
    except BaseException:
        if drawing is not None:
            drawing.kill()
            drawing.wait()
        raise
    out_dir = results.dir
    written: list[Path] = []

    def write(name: str, text: str) -> None:
        p = out_dir / name
        p.write_text(text, encoding="utf-8")
        written.append(p)

    data = report_data(results, claims_file, baseline=base)
    if drawing is not None:
        data = dataclasses.replace(data, plots=_Pictures(drawing, out_dir))
    if "csv" in formats:
        write("matrix.csv", render_csv(data))
    if "html" in formats:
        write("report.html", render_html(data))
    written.extend(out_dir / name for name, _, _ in data.plots)
    if "md" in formats:
        write("report.md", render_markdown(data))
    if "json" in formats:
        write("summary.json", render_json(data))
    return written
