"""Build the reports of a results directory: DIR/report.md, DIR/report.html (one self-contained file),
DIR/matrix.csv, DIR/summary.json, and the pictures as PNG files beside them.

Every report starts with the environment (date, loopbench revision, Python/Node, every framework package and
version), then: conformance summary, comparison matrix, units table, accounting table, documented claims,
stability, pictures, and (HTML) every run's details.
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
from loopbench.reports.cells import cells, columns
from loopbench.reports.claims import CLAIMS_FILE, ClaimResult, check_claims, claims_frame, load_claims
from loopbench.reports.formatting import VERDICT_MARK
from loopbench.reports.frames import (
    accounting_details,
    accounting_frame,
    capabilities_frame,
    cell_text,
    conformance_frame,
    environment,
    environment_rows,
    matrix_frame,
    mechanisms_frame,
    stability_frame,
    units_frame,
)
from loopbench.reports.load import Results, load_results
from loopbench.reports.show import run_sections

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


def report_data(results: Results, claims_file: Path | None = None) -> ReportData:
    """Everything the reports show but the pictures (`build_reports` has them drawn by another process)."""
    recs = results.records
    claims = load_claims(claims_file or CLAIMS_FILE)
    return ReportData(
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


def _matrix_md(data: ReportData) -> str:
    m = data.matrix
    if m.empty:
        return "_no runs_\n"
    m = m.assign(cell=m.apply(cell_text, axis=1))
    piv = m.pivot(index="scenario", columns="column", values="cell").reindex(columns=columns(data.records))
    return md_table(piv.fillna("not run"), index=True)


def _claims_df(data: ReportData) -> pd.DataFrame:
    df = claims_frame(data.claims)
    df["verdict"] = [f"{CLAIM_MARK.get(v, '')} {v}" for v in df["verdict"]]
    df["evidence"] = [" ".join(e.split()[:6]) + (" …" if len(e.split()) > 6 else "") for e in df["evidence"]]
    return df[["id", "framework", "claim", "verdict", "versions", "evidence", "detail"]]


COST_NOTE = ("Cells per framework variant (majority run per cell), and the framework's cost per model call: the "
             "median worker wall ms and the framework's CPU ms (the workers' CPU less loopbench's own ledger "
             "calls) per observed model request, over runs without scripted delays; loopbench's own CPU ms per "
             "run (its ledger calls in the workers plus the runner's bookkeeping), shown apart; the largest worker "
             "RSS.")


def render_markdown(data: ReportData) -> str:
    out = ["# loopbench report", "", f"Results: `{data.results.path}`", "", "## Environment", ""]
    out.append(md_table(pd.DataFrame(environment_rows(data.env), columns=["what", "value"])))
    for w in data.results.warnings:
        out.append(f"> ⚠ {w}\n")
    out += ["## How to read", ""] + [f"- {x}" for x in HOW_TO_READ] + [""]
    out += ["## Conformance summary", "", COST_NOTE, ""]
    out.append(md_table(data.conformance))
    out += ["## Comparison matrix", "",
            "✓ conforms · ⚠ deviates (✗ marks a deviating counter) · ⊘ unsupported · ✖ error", ""]
    out.append(_matrix_md(data))
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
    return "\n".join(out) + "\n"


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
table.matrix th:first-child,table.matrix td:first-child{position:sticky;left:0;background:#fafafa;z-index:1}
table.matrix td{min-width:13rem;max-width:22rem}
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


def _matrix_html(data: ReportData) -> str:
    m = data.matrix
    if m.empty:
        return "<p><em>no runs</em></p>"
    cols = columns(data.records)
    versions = {c: "" for c in cols}
    for _, r in m.iterrows():
        versions[r["column"]] = r["framework_version"] or ""
    by = {(r["scenario"], r["column"]): r for _, r in m.iterrows()}
    reps = {c.key: c.records for c in cells(data.records)}
    head = "<th>scenario</th>" + "".join(
        f'<th class="fw" data-framework="{esc(c.split(":")[0])}">{esc(c)}<br><span class=small>{esc(versions[c])}'
        f"</span></th>" for c in cols)
    body = []
    for scen in sorted(m["scenario"].unique()):
        tds = [f"<td><b>{esc(scen)}</b></td>"]
        for col in cols:
            r = by.get((scen, col))
            if r is None:
                tds.append('<td class="small">not run</td>')
                continue
            v = r["verdict"]
            k = " · ".join(
                f'<span class="bad" title="ideal {esc(ideal)}">{esc(lab)} {esc(val)} ✗</span>'
                if ideal is not None else f"{esc(lab)} {esc(val)}" for lab, val, ideal in r["key_items"])
            devs = "".join(f"<li>✗ {esc(d)}</li>" for d in r["deviations"].split("; ") if d)
            extra = ""
            recs = reps[(scen, r["framework"], r["variant"])]
            if r["unstable"]:
                extra += f'<div class="unstable">⟳ unstable: {esc(r["outcomes"])}</div>'
            if len(recs) > 1:
                extra += '<div class="small">runs: ' + " ".join(
                    _run_link(x.run_id, f"r{x.repetition}") for x in recs) + "</div>"
            tds.append(
                f'<td class="v-{esc(v)}" data-verdict="{esc(v)}"><span class="badge">{VERDICT_MARK.get(v, "")} '
                f'{_run_link(r["run_id"], r["outcome"])}</span> <span class=small>{esc(v)}</span>'
                f'<div class="k">{k}</div>{f"<ul class=dev>{devs}</ul>" if devs else ""}{extra}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (f'<div class="scroll"><table class="matrix"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


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
        ("env", "Environment", env + warn),
        ("read", "How to read", "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in HOW_TO_READ) + "</ul>"),
        ("summary", "Conformance summary", f"<p>{esc(COST_NOTE)}</p>" + html_table(data.conformance)),
        ("matrix", "Comparison matrix",
         "<p class=small>✓ conforms · ⚠ deviates (✗ marks each deviation, ideal→observed) · ⊘ unsupported · "
         "✖ error. Click an outcome for the run's details.</p>" + _matrix_html(data)),
        ("mechanisms", "Mechanisms: each intent in each framework's native terms",
         f"<p>{esc(MECHANISMS_NOTE)}</p>" + html_table(data.mechanisms)
         + (f"<p>{esc(CAPABILITIES_NOTE)}</p>" + html_table(data.capabilities) if not data.capabilities.empty else "")),
        ("units", "Units: what a limit means natively", html_table(units, raw={"run_id"})),
        ("accounting", "Accounting: reported vs observed",
         html_table(data.accounting, cell_class=acc_cls)
         + "<p>Runs where the framework's figure differs from ground truth:</p>"
         + html_table(acc_diffs, raw={"run_id"}, cell_class={"difference": lambda v: "diff"})),
        ("claims", "Documented claims", _claims_html(data)),
        ("stability", "Stability", stab_html),
        ("pictures", "Pictures", pics or "<p><em>no pictures</em></p>"),
        ("runs", "Run details", "<p class=small>Every run: record, request log, ledger, trace.</p>" + runs),
    ]
    nav = "".join(f'<a href="#{sid}">{esc(t)}</a>' for sid, t, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{esc(t)}</h2>{content}</section>' for sid, t, content in sections)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>loopbench report</title><style>{CSS}</style></head><body>"
        f"<h1>loopbench report</h1><p class=small>{esc(data.results.path)}</p><nav>{nav}</nav>{body}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )


# ---------------------------------------------------------------- CSV and JSON
def _jsonable(df: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records", force_ascii=False)) if not df.empty else []


def render_json(data: ReportData) -> str:
    matrix = data.matrix.drop(columns=["key_items"], errors="ignore")
    doc = {
        "report": "loopbench", "results_file": str(data.results.path), "warnings": data.results.warnings,
        "environment": data.env, "conformance": _jsonable(data.conformance), "matrix": _jsonable(matrix),
        "units": _jsonable(data.units), "mechanisms": _jsonable(data.mechanisms),
        "capabilities": _jsonable(data.capabilities),
        "accounting": _jsonable(data.accounting),
        "accounting_differences": _jsonable(data.accounting_diffs),
        "claims": [{"id": r.claim.id, "framework": r.claim.framework, "text": r.claim.text, "verdict": r.verdict,
                    "evidence": r.evidence, "versions": r.versions, "detail": r.detail} for r in data.claims],
        "stability": _jsonable(data.stability), "pictures": [name for name, _, _ in data.plots],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


def render_csv(data: ReportData) -> str:
    return data.matrix.drop(columns=["key_items"], errors="ignore").to_csv(index=False)


# ---------------------------------------------------------------- entry point
def build_reports(dir: Path, formats: set[str] | frozenset[str] = FORMATS, *,  # noqa: A002 - the CLI's name
                  claims_file: Path | None = None) -> list[Path]:
    """Write the reports of the results in `dir` (a results directory, or a results.jsonl whose directory
    gets the reports): report.md, report.html, matrix.csv, summary.json (those in `formats`), and the
    pictures as PNG files beside the Markdown/HTML. Returns the paths written.

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

    data = report_data(results, claims_file)
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
