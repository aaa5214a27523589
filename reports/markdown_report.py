"""The Markdown renderer: `render_markdown(ReportData)` is report.md; `md_table` (a DataFrame as a Markdown
table) and `md_cell` (a value as table text) are shared with the HTML renderer and the version matrix."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from loopbench.reports.baseline import Baseline, CellKey
from loopbench.reports.cells import cells, column_of, columns
from loopbench.reports.claims import claims_frame
from loopbench.reports.data import ReportData, abouts, compact_items, stability_paragraphs
from loopbench.reports.formatting import VERDICT_MARK, outcome_ideal
from loopbench.reports.frames import environment_rows, run_line
from loopbench.reports.notes import (
    AGENTS_NOTE,
    ANSWERS_NOTE,
    CAPABILITIES_NOTE,
    CLAIM_MARK,
    COST_NOTE,
    GLOSSARY_NOTE,
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
from loopbench.reports.scorecard import category_label, category_order


def md_cell(v: Any) -> str:
    """A value as Markdown table text: `–` for unknown, a float to 4 significant digits, `|` escaped."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    s = str(v) if not isinstance(v, float) else f"{v:.4g}"
    return s.replace("|", "\\|").replace("\n", "<br>")


def md_table(df: pd.DataFrame, index: bool = False) -> str:
    """A DataFrame as a Markdown table (`_none_` when empty); with `index`, its index as the first column."""
    if df.empty:
        return "_none_\n"
    d = df.reset_index() if index else df
    head = "| " + " | ".join(md_cell(c) for c in d.columns) + " |"
    sep = "|" + "|".join("---" for _ in d.columns) + "|"
    rows = ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in d.itertuples(index=False)]
    return "\n".join([head, sep, *rows]) + "\n"


def _compact_md(row: pd.Series, changed: bool, ideal_outcome: str | None = None, note: int | None = None) -> str:
    """A matrix cell in one line: verdict mark, outcome (✗ when it deviates), the counters that matter, the number
    of the note saying what the cell deviates in, unstable, changed."""
    k = " · ".join(f"{lab} {val}{' ✗' if ideal is not None else ''}" for lab, val, ideal in compact_items(
        row["key_items"]))
    mark = VERDICT_MARK.get(row["verdict"], "")
    outcome = f"{row['outcome']} ✗" if ideal_outcome is not None else row["outcome"]
    return (f"{mark} {outcome}" + (f" · {k}" if k else "") + (f" · [{note}]" if note is not None else "")
            + (" · ⟳" if row["unstable"] else "") + (" · ⇄ changed" if changed else ""))


def _matrix_md(data: ReportData) -> str:
    """The comparison matrix, a table per category: scenarios by framework variant; under each table, its
    numbered notes: what each deviating (⚠) or unsupported (⊘) cell deviates in, in words (the same words in
    one note for every cell they fit; the numbers run on through the report's tables)."""
    m = data.matrix
    if m.empty:
        return "_no runs_\n"
    changed: set[CellKey] = set(data.baseline.changes) if data.baseline else set()
    reps = {c.key: c.rep for c in cells(data.records)}
    cols = columns(data.records)
    out: list[str] = []
    numbered = 0
    for cat in category_order(data.records):
        part = m[m["category"] == cat]
        if part.empty:
            continue
        by = {(r["scenario"], r["column"]): r for _, r in part.iterrows()}
        titles = part.groupby("scenario")["title"].first()
        notes: dict[str, int] = {}  # a note's text -> its number
        rows = []
        for sid in sorted(titles.index):
            line: dict[str, str] = {"scenario": f"{titles[sid]} (`{sid}`)"}
            for col in cols:
                r = by.get((sid, col))
                if r is None:
                    line[col] = "not run"
                    continue
                key = (sid, r["framework"], r["variant"])
                note = None
                if key in data.reasons:
                    text = "; ".join(data.reasons[key])
                    if text not in notes:
                        numbered += 1
                        notes[text] = numbered
                    note = notes[text]
                line[col] = _compact_md(r, key in changed, outcome_ideal(reps[key]), note)
            rows.append(line)
        out += [f"### {category_label(cat)}", "", md_table(pd.DataFrame(rows, columns=["scenario", *cols]))]
        if notes:
            out += [*(f"- [{n}] {md_cell(text)}" for text, n in notes.items()), ""]
    return "\n".join(out)


def _answers_md(data: ReportData) -> str:
    """A short list per question, a line per framework: narrow enough to read in a terminal."""
    out: list[str] = []
    for i, a in enumerate(data.answers):
        if i == 0 or data.answers[i - 1].question.id != a.question.id:
            out += [*([""] if out else []), f"**{a.question.text}** (`{a.question.scenario}`)", ""]
        out.append(f"- {a.mark} {a.framework}: {md_cell(a.text)}")
    return "\n".join(out) + "\n"


def _glossary_md(data: ReportData) -> str:
    """The glossary: every outcome and verdict of the record's vocabulary and every other mark, one line each,
    with the link to docs/policy.md."""
    href = policy_href(data.results.dir)
    policy = f"[{POLICY_DOC}]({href})" if href else f"`{POLICY_DOC}` (loopbench's repository)"
    out = [f"{GLOSSARY_NOTE} {policy}.", "", "Outcomes: how a run ended.", ""]
    out += [f"- `{o}`: {meaning}" for o, meaning in outcome_glossary()]
    out += ["", "Verdicts: the run against the scenario's ideal.", ""]
    out += [f"- {mark} `{v}`: {meaning}" for mark, v, meaning in verdict_glossary()]
    out += ["", "Other marks:", ""] + [f"- {mark} {meaning}" for mark, meaning in OTHER_MARKS]
    return "\n".join(out) + "\n"


def _changes_md(b: Baseline) -> str:
    """The changed cells against the baseline, each explained, then the cells on one side only."""
    n = len(b.changes)
    out = [f"Against `{b.path}`: **{n} of {b.common} common cell(s) changed**" + (":" if n else "."), ""]
    for scen, fw, var in b.changes:
        out.append(f"- {scen} × {column_of(fw, var)}: " + "; ".join(b.explain((scen, fw, var))))
    if b.one_sided:
        out += ["", "Cells on one side only (coverage, not a change):", ""] + [f"- {x}" for x in b.one_sided]
    return "\n".join(out) + "\n"


def _claims_df(data: ReportData) -> pd.DataFrame:
    """The claims table with verdict marks and the evidence cut to its first six run ids."""
    df = claims_frame(data.claims)
    df["verdict"] = [f"{CLAIM_MARK.get(v, '')} {v}" for v in df["verdict"]]
    df["evidence"] = [" ".join(e.split()[:6]) + (" …" if len(e.split()) > 6 else "") for e in df["evidence"]]
    return df[["id", "framework", "claim", "verdict", "versions", "evidence", "detail"]]


def render_markdown(data: ReportData) -> str:
    """report.md."""
    out = ["# loopbench report", "", run_line(data.env), ""]
    for w in data.results.warnings:
        out.append(f"> ⚠ {w}\n")
    if data.answers:
        out += ["## Which framework: the questions the suite exists for", "", ANSWERS_NOTE, ""]
        out.append(_answers_md(data))
    out += ["## Scorecard", "", SCORECARD_NOTE, ""]
    out.append(md_table(data.scorecard))
    out += [""] + [f"- `{c}`: {about}" for c, about in abouts(data).items()] + [""]
    if data.baseline is not None:
        out += ["## Changes against the baseline", ""]
        out.append(_changes_md(data.baseline))
    out += ["## Comparison matrix", "",
            "✓ conforms · ⚠ deviates (✗ marks a deviating outcome or counter; [n] the note under the table that "
            "says what deviates) · ⊘ unsupported · ✖ error · ⟳ unstable"
            + (" · ⇄ changed against the baseline" if data.baseline else "")
            + ". The outcomes and verdicts are defined in the glossary below. Every deviation, ideal → observed, "
              "is in `summary.json` and the HTML report's run details.", ""]
    out.append(_matrix_md(data))
    out += ["## Glossary", ""]
    out.append(_glossary_md(data))
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
    if not data.streaming_pairs.empty:
        out += ["## Streamed vs not", "", STREAMING_NOTE, ""]
        out.append(md_table(data.streaming_pairs))
        out += ["", "Cells that differ:" if not data.streaming_diffs.empty else "No cell differs.", ""]
        if not data.streaming_diffs.empty:
            out.append(md_table(data.streaming_diffs))
    if not data.agents_summary.empty:
        out += ["## Accounting across agents", "", AGENTS_NOTE, ""]
        out.append(md_table(data.agents_summary))
        out += ["", "Each cell:", ""]
        out.append(md_table(data.agents_cells))
    out += ["## Documented claims", "",
            "Each claim of `reports/claims.yaml` about a framework of this run (or about every framework) checked "
            "by its predicate against these runs: holds / refuted / not testable by a run (no predicate, or no "
            "matching runs). Evidence: run ids.", ""]
    out.append(md_table(_claims_df(data)))
    out += ["## Stability", ""]
    out += [f"{p}\n" for p in stability_paragraphs(data)]
    if data.stability_check is not None and data.stability_check.changed:
        out.append(md_table(pd.DataFrame([(c.scenario, c.column, c.repetition, "; ".join(c.changes))
                                          for c in data.stability_check.changed],
                                         columns=["scenario", "framework:variant", "repetition", "changed"])))
    if not data.stability.empty:
        out.append(md_table(data.stability.drop(columns=["run_ids"])))
    if data.plots:
        out += ["## Pictures", ""]
        for name, title, _ in data.plots:
            out += [f"### {title}", "", f"![{title}]({name})", ""]
    out += ["## Environment", ""]
    out.append(md_table(pd.DataFrame(environment_rows(data.env), columns=["what", "value"])))
    return "\n".join(out) + "\n"
