"""The Markdown renderer: `render_markdown(ReportData)` is report.md; `md_table` (a DataFrame as a Markdown
table) and `md_cell` (a value as table text) are shared with the HTML renderer and the version matrix.

report.md is read in a terminal as often as rendered: no line of it is longer than `MD_LINE_CAP` (but a word
that cannot be broken, a long URL). Prose is wrapped at `MD_WRAP` (soft line breaks: it renders the same); the
comparison matrix is a table per category and framework, at most `MD_MATRIX_COLUMNS` variants wide, with short
cells (the counters are in report.html and `loopbench show`); the scorecard's cells are counts and a severity,
the deviations in words under its tables; the tables whose cells are sentences (mechanisms, capabilities,
claims, the environment, ...) are lists."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from loopbench.reports.baseline import Baseline, CellKey
from loopbench.reports.cells import cells, column_of, columns
from loopbench.reports.claims import claims_frame
from loopbench.reports.data import ReportData, abouts, stability_paragraphs
from loopbench.reports.formatting import VERDICT_MARK, outcome_ideal
from loopbench.reports.frames import environment_rows, run_line
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

MD_LINE_CAP = 200  # no line of report.md is longer, but one word that cannot be broken (a long URL)
MD_WRAP = 120  # where prose is wrapped
MD_MATRIX_COLUMNS = 4  # framework variants per matrix table: a framework with more gets several tables
MD_SCORECARD_COLUMNS = 6  # categories per scorecard table


def md_cell(v: Any) -> str:
    """A value as Markdown table text: `–` for unknown, a float to 4 significant digits, `|` escaped."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    s = str(v) if not isinstance(v, float) else f"{v:.4g}"
    return s.replace("|", "\\|").replace("\n", "<br>")


def md_table(df: pd.DataFrame, index: bool = False, pad: bool = False) -> str:
    """A DataFrame as a Markdown table (`_none_` when empty); with `index`, its index as the first column; with
    `pad`, each column padded to its widest cell (aligned in a terminal) when the lines stay within MD_LINE_CAP."""
    if df.empty:
        return "_none_\n"
    d = df.reset_index() if index else df
    return _table([md_cell(c) for c in d.columns], [[md_cell(v) for v in row] for row in d.itertuples(index=False)],
                  pad)


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], pad: bool = True) -> str:
    """Cells (already Markdown text) as a table, padded when that keeps it within MD_LINE_CAP."""
    body = [list(r) for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    if pad and sum(widths) + 3 * len(widths) + 1 <= MD_LINE_CAP:
        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    else:
        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(cells) + " |"
        sep = "|" + "|".join("---" for _ in widths) + "|"
    return "\n".join([line(head), sep, *(line(r) for r in body)]) + "\n"


# a word that, at the start of a line, would begin another block (a list item, a heading, a quote, a table row, a
# setext underline, a fence, HTML): wrapping never puts one there
_BLOCK_START = re.compile(r"(?:[-+*]|#{1,6}|>.*|\d{1,9}[.)]|=+|-+|`{3,}.*|~{3,}.*|\|.*|<.*)")


def md_wrap(text: str, first: str = "", rest: str | None = None, width: int = MD_WRAP) -> str:
    """Prose as lines of at most `width` characters (a longer word stands alone): `first` before the first line,
    `rest` (spaces as wide as `first` unless given: a list item's continuation) before the others. A soft line
    break is a space in Markdown, so the text renders as before."""
    rest = " " * len(first) if rest is None else rest
    lines: list[str] = []
    cur, empty = first, True
    for w in text.split():
        if not empty and len(cur) + 1 + len(w) > width and not _BLOCK_START.fullmatch(w):
            lines.append(cur)
            cur, empty = rest + w, False
        else:
            cur, empty = cur + ("" if empty else " ") + w, False
    lines.append(cur)
    return "\n".join(lines)


def _item(text: str) -> str:
    """A list item, wrapped."""
    return md_wrap(text, "- ")


def _items(texts: Iterable[str]) -> list[str]:
    return [_item(t) for t in texts]


def _chunks(xs: Sequence[str], most: int) -> list[Sequence[str]]:
    """`xs` in as few runs of at most `most` as it takes, as even as can be (7 by 4: 4 and 3; 5 by 4: 3 and 2)."""
    if not xs:
        return []
    n = -(-len(xs) // most)
    size, extra = divmod(len(xs), n)
    out, i = [], 0
    for k in range(n):
        j = i + size + (k < extra)
        out.append(xs[i:j])
        i = j
    return out


# ---------------------------------------------------------------- the comparison matrix
def _cell_md(row: pd.Series, changed: bool, outcome_deviates: bool, note: int | None) -> str:
    """A matrix cell, short: verdict mark and outcome, ✗ when the outcome deviates, the number of the note that
    says what the cell deviates in, ⟳ unstable, ⇄ changed against the baseline."""
    return (f"{VERDICT_MARK.get(row['verdict'], '')} {row['outcome']}" + (" ✗" if outcome_deviates else "")
            + (f" [{note}]" if note is not None else "") + (" ⟳" if row["unstable"] else "")
            + (" ⇄" if changed else ""))


def _matrix_md(data: ReportData) -> str:
    """The comparison matrix, per category: its scenarios (id: title), then a table per framework (a few, at
    most MD_MATRIX_COLUMNS variants each), scenarios by variant; under them, the category's numbered notes: what
    each deviating (⚠), unsupported (⊘) or error (✖) cell deviates in, in words (the same words in one note for
    every cell they fit; the numbers run on through the report's tables)."""
    m = data.matrix
    if m.empty:
        return "_no runs_\n"
    changed: set[CellKey] = set(data.baseline.changes) if data.baseline else set()
    reps = {c.key: c.rep for c in cells(data.records)}
    framework_of = {column_of(r.framework, r.variant): r.framework for r in data.records}
    by_framework: dict[str, list[str]] = {}
    for col in columns(data.records):
        by_framework.setdefault(framework_of[col], []).append(col)
    out: list[str] = []
    numbered = 0
    for cat in category_order(data.records):
        part = m[m["category"] == cat]
        if part.empty:
            continue
        by = {(r["scenario"], r["column"]): r for _, r in part.iterrows()}
        titles = part.groupby("scenario")["title"].first()
        sids = sorted(titles.index)
        out += [f"### {category_label(cat)}", "", *_items(f"`{sid}`: {titles[sid]}" for sid in sids), ""]
        notes: dict[str, int] = {}  # a note's text -> its number
        for cols in by_framework.values():
            if not any((sid, col) in by for sid in sids for col in cols):
                continue
            for chunk in _chunks(cols, MD_MATRIX_COLUMNS):
                rows = []
                for sid in sids:
                    line = [sid]
                    for col in chunk:
                        r = by.get((sid, col))
                        if r is None:
                            line.append("not run")
                            continue
                        key = (sid, r["framework"], r["variant"])
                        note = None
                        if key in data.reasons:
                            text = "; ".join(data.reasons[key])
                            if text not in notes:
                                numbered += 1
                                notes[text] = numbered
                            note = notes[text]
                        line.append(_cell_md(r, key in changed, outcome_ideal(reps[key]) is not None, note))
                    rows.append(line)
                out += [_table(["scenario", *chunk], rows)]
        if notes:
            out += [*_items(f"[{n}] {text}" for text, n in notes.items()), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- the scorecard
def _score_md(s: Score | None) -> str:
    """A scorecard cell, short: conforming of the judged cells, how many deviate (⚠), are unsupported (⊘) or
    errors (✖, not judged), and the severity of the most serious deviation (in words under the tables)."""
    if s is None:
        return ""
    marks = [f"{mark}{n}" for mark, n in (("⚠", s.deviates), ("⊘", s.unsupported), ("✖", s.errors)) if n]
    return " ".join([f"{s.conforms}/{s.judged}", *marks, *([s.worst.severity] if s.worst is not None else [])])


def _scorecard_md(data: ReportData) -> list[str]:
    """The scorecard in tables of at most MD_SCORECARD_COLUMNS categories (framework variant × category, short
    cells), then, per category, the most serious deviation of each cell in words with the scenario it came from
    and the cell's other deviating scenarios (the variants whose words are the same in one line)."""
    cats = category_order(data.records)
    cols = columns(data.records)
    if not cols:
        return ["_none_", ""]
    labels = {category_label(c): c for c in cats}
    out: list[str] = []
    for chunk in _chunks(list(labels), MD_SCORECARD_COLUMNS):
        rows = [[col, *(_score_md(data.scores.get((col, labels[lab]))) for lab in chunk)] for col in cols]
        out.append(_table(["framework variant", *chunk], rows))
    words: list[str] = []
    for cat in cats:
        same: dict[str, list[str]] = {}  # the words -> the variants they are said of
        for col in cols:
            s = data.scores.get((col, cat))
            if s is None or s.worst is None:
                continue
            text = f"{s.worst.severity}: {s.worst.words} — {s.worst_scenario}"
            if others := [sc for sc, _, _ in s.deviating if sc != s.worst_scenario]:
                text += f" · also ⚠ {', '.join(others)}"
            same.setdefault(text, []).append(col)
        if same:
            words += [f"**{category_label(cat)}**", "", *_items(f"{', '.join(v)}: {t}" for t, v in same.items()), ""]
    if words:
        out += ["The most serious deviation of each cell, in words, with the scenario it came from:", "", *words]
    return out


# ---------------------------------------------------------------- the other sections
def _answers_md(data: ReportData) -> str:
    """A short list per question, a line per framework: narrow enough to read in a terminal."""
    out: list[str] = []
    for i, a in enumerate(data.answers):
        if i == 0 or data.answers[i - 1].question.id != a.question.id:
            out += [*([""] if out else []), md_wrap(f"**{a.question.text}** (`{a.question.scenario}`)"), ""]
        out.append(_item(f"{a.mark} {a.framework}: {a.text}"))
    return "\n".join(out) + "\n"


def _glossary_md(data: ReportData) -> str:
    """The glossary: every outcome and verdict of the record's vocabulary and every other mark, one item each,
    with the link to docs/policy.md."""
    href = policy_href(data.results.dir)
    policy = f"[{POLICY_DOC}]({href})" if href else f"`{POLICY_DOC}` (loopbench's repository)"
    out = [md_wrap(f"{GLOSSARY_NOTE} {policy}."), "", "Outcomes: how a run ended.", ""]
    out += _items(f"`{o}`: {meaning}" for o, meaning in outcome_glossary())
    out += ["", "Verdicts: the run against the scenario's ideal.", ""]
    out += _items(f"{mark} `{v}`: {meaning}" for mark, v, meaning in verdict_glossary())
    out += ["", "Other marks:", "", *_items(f"{mark} {meaning}" for mark, meaning in OTHER_MARKS)]
    return "\n".join(out) + "\n"


def _changes_md(b: Baseline) -> str:
    """The changed cells against the baseline, each explained, then the cells on one side only."""
    n = len(b.changes)
    out = [md_wrap(f"Against `{b.path}`: **{n} of {b.common} common cell(s) changed**" + (":" if n else ".")), ""]
    out += _items(f"{scen} × {column_of(fw, var)}: " + "; ".join(b.explain((scen, fw, var)))
                  for scen, fw, var in b.changes)
    if b.one_sided:
        out += ["", "Cells on one side only (coverage, not a change):", "", *_items(b.one_sided)]
    return "\n".join(out) + "\n"


def _mechanisms_md(df: pd.DataFrame) -> list[str]:
    """Per intent, each native mechanism and the framework variants that used it (one line for the variants that
    share it; `–`: none of its runs recorded one)."""
    if df.empty:
        return ["_none_", ""]
    out: list[str] = []
    for _, row in df.iterrows():
        same: dict[str, list[str]] = {}
        for col in df.columns[1:]:
            same.setdefault(str(row[col]), []).append(str(col))
        out += [f"**{row['intent']}**", "", *_items(f"{', '.join(v)}: {m}" for m, v in same.items()), ""]
    return out


def _records_md(df: pd.DataFrame, key: str) -> list[str]:
    """Each row as a list item: its `key` in bold, then every other column as `name: value`."""
    if df.empty:
        return ["_none_", ""]
    return [*_items(f"**{row[key]}**: " + " · ".join(f"{c}: {_value(row[c])}" for c in df.columns if c != key)
                    for _, row in df.iterrows()), ""]


def _value(v: Any) -> str:
    """A value in a sentence: `–` for unknown, yes/no, a float to 4 significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return md_cell(v).replace("\\|", "|")


def _units_md(units: pd.DataFrame) -> list[str]:
    """The units table, one per limit scenario (its intent said once when every variant had the same): what the
    native setting was per variant and what happened; the reasons of its unsupported intents under it."""
    if units.empty:
        return ["_none_", ""]
    out: list[str] = []
    for scen, part in units.groupby("scenario", sort=False):
        intents = list(dict.fromkeys(part["intent"]))
        drop = ["scenario", "run_id", *(["intent"] if len(intents) == 1 else [])]
        t = part.drop(columns=drop, errors="ignore").rename(columns={"column": "framework variant"})
        t["outcome"] = [f"{VERDICT_MARK.get(v, '')} {o}" for o, v in zip(t["outcome"], t["verdict"], strict=True)]
        t = t.drop(columns=["verdict"])
        why: dict[str, list[str]] = {}  # an unsupported intent's reason -> the variants it is said of
        names = []
        for col, unsupported in zip(t["framework variant"], t["unsupported"], strict=True):
            these = []
            for u in filter(None, unsupported.split(", ")) if unsupported else []:
                name, _, reason = u.partition(": ")
                these.append(name)
                if reason:
                    why.setdefault(f"`{name}`: {reason}", []).append(col)
            names.append(", ".join(these))
        t["unsupported"] = names
        head = f"`{scen}`" + (f": {intents[0]}" if len(intents) == 1 else "")
        out += [head, "", md_table(t, pad=True)]
        if why:
            out += ["Unsupported, why:", "", *_items(f"{r} ({', '.join(v)})" for r, v in why.items()), ""]
    return out


def _claims_md(data: ReportData) -> list[str]:
    """Each claim as a list item: id, verdict, framework, the claim, the versions checked, evidence (its first six
    run ids) and detail."""
    df = claims_frame(data.claims)
    if df.empty:
        return ["_none_", ""]
    out = []
    for _, c in df.iterrows():
        evidence = " ".join(c["evidence"].split()[:6]) + (" …" if len(c["evidence"].split()) > 6 else "")
        parts = [f"**{c['id']}** {CLAIM_MARK.get(c['verdict'], '')} {c['verdict']} · {c['framework']}: {c['claim']}",
                 f"Versions: {c['versions'] or '–'}", f"Evidence: {evidence or '–'}",
                 *([f"Detail: {c['detail']}"] if c["detail"] else [])]
        out.append(_item(" ".join(p if p.endswith((".", "…")) else p + "." for p in parts)))
    return [*out, ""]


def render_markdown(data: ReportData) -> str:
    """report.md."""
    out = ["# loopbench report", "", md_wrap(run_line(data.env)), ""]
    for w in data.results.warnings:
        out.append(md_wrap(f"⚠ {w}", "> ", "> ") + "\n")
    if data.answers:
        out += ["## Which framework: the questions the suite exists for", "", md_wrap(ANSWERS_NOTE), ""]
        out.append(_answers_md(data))
    out += ["## Scorecard", "", md_wrap(SCORECARD_NOTE), "",
            md_wrap("Each cell here: conforming/judged cells, then how many deviate (⚠), are unsupported (⊘) or "
                    "errors (✖, not judged), and the severity of the most serious deviation, which is said in words "
                    "under the tables (report.html says it in the cell)."), ""]
    out += _scorecard_md(data)
    out += _items(f"`{c}`: {about}" for c, about in abouts(data).items()) + [""]
    if data.baseline is not None:
        out += ["## Changes against the baseline", ""]
        out.append(_changes_md(data.baseline))
    out += ["## Comparison matrix", "",
            md_wrap("Per category: its scenarios (id: title), then a table per framework, at most "
                    f"{MD_MATRIX_COLUMNS} of its variants wide. Each cell: the verdict (✓ conforms · ⚠ deviates · "
                    "⊘ unsupported · ✖ error), the outcome (✗ when it deviates from the scenario's ideal), [n] the "
                    "note under the category's tables that says what deviates, ⟳ unstable"
                    + (", ⇄ changed against the baseline" if data.baseline else "")
                    + ". The outcomes and verdicts are defined in the glossary below. Each cell's counters are in "
                      "the HTML report and `loopbench show RUN_ID`; every deviation, ideal → observed, is in "
                      "`summary.json` and the HTML report's run details."), ""]
    out.append(_matrix_md(data))
    out += ["## Glossary", ""]
    out.append(_glossary_md(data))
    out += ["## How to read", "", *_items(HOW_TO_READ), ""]
    out += ["## Cost per model call", "", md_wrap(COST_NOTE), ""]
    out.append(md_table(data.conformance, pad=True))
    out += ["## Mechanisms: each intent in each framework's native terms", "", md_wrap(MECHANISMS_NOTE), ""]
    out += _mechanisms_md(data.mechanisms)
    if not data.capabilities.empty:
        out += [md_wrap(CAPABILITIES_NOTE), ""]
        out += _records_md(data.capabilities, "framework")
    out += ["## Units: what a limit means natively", "",
            md_wrap("Each limit scenario: the neutral intent, the native setting the adapter used per framework "
                    "variant, and what happened."), ""]
    out += _units_md(data.units)
    out += ["## Accounting: reported vs observed", "",
            "Sums over the runs where both are known; `not reported` when the framework reports nothing.", ""]
    acc = data.accounting.copy()
    if not acc.empty:
        acc["runs differing"] = [f"**⚠ {v}**" if v else "0" for v in acc["runs differing"]]
    out.append(md_table(acc.drop(columns=["differing in"], errors="ignore"), pad=True))
    if not acc.empty and (acc["differing in"] != "").any():
        out += ["The scenarios of the runs differing:", ""]
        out += _items(f"{r['column']}, {r['quantity']}: {r['differing in']}" for _, r in acc.iterrows()
                      if r["differing in"])
        out.append("")
    out += ["Runs where the framework's figure differs from ground truth:", ""]
    out.append(md_table(data.accounting_diffs.drop(columns=["run_id"], errors="ignore"), pad=True))
    if not data.streaming_pairs.empty:
        out += ["## Streamed vs not", "", md_wrap(STREAMING_NOTE), ""]
        out.append(md_table(data.streaming_pairs, pad=True))
        if data.streaming_diffs.empty:
            out += ["No cell differs.", ""]
        else:
            out += ["Cells that differ (not streamed → streamed):", ""]
            out += _items(f"`{r['scenario']}` · {r['streamed']} against {r['not streamed']}: {r['differences']}"
                          for _, r in data.streaming_diffs.iterrows())
            out.append("")
    if not data.guarded_pairs.empty:
        out += ["## Native vs guarded", "", md_wrap(GUARDED_NOTE), ""]
        out.append(md_table(data.guarded_pairs, pad=True))
        if data.guarded_remaining.empty:
            out += ["Every guarded cell conforms.", ""]
        else:
            out += ["Cells that still deviate when guarded, and why:", ""]
            out += _items(f"`{r['scenario']}` · {r['guarded']} ({r['deviations']}): {r['why']}"
                          for _, r in data.guarded_remaining.iterrows())
            out.append("")
        if not data.guarded_lacks.empty:
            out += ["The hooks each framework lacks (declared by its guard binding):", ""]
            out.append(md_table(data.guarded_lacks, pad=True))
    if not data.agents_summary.empty:
        out += ["## Accounting across agents", "", md_wrap(AGENTS_NOTE), ""]
        out.append(md_table(data.agents_summary, pad=True))
        out += ["Each cell:", ""]
        out.append(md_table(data.agents_cells, pad=True))
    out += ["## Documented claims", "",
            md_wrap("Each claim of `reports/claims.yaml` about a framework of this run (or about every framework) "
                    "checked by its predicate against these runs: holds / refuted / not testable by a run (no "
                    "predicate, or no matching runs). Evidence: run ids."), ""]
    out += _claims_md(data)
    out += ["## Stability", ""]
    out += [f"{md_wrap(p)}\n" for p in stability_paragraphs(data)]
    if data.stability_check is not None and data.stability_check.changed:
        out += [*_items(f"{c.scenario} × {c.column}, repetition {c.repetition}: {'; '.join(c.changes)}"
                        for c in data.stability_check.changed), ""]
    if not data.stability.empty:
        out.append(md_table(data.stability.drop(columns=["run_ids"]), pad=True))
    if data.plots:
        out += ["## Pictures", ""]
        for name, title, _ in data.plots:
            out += [f"### {title}", "", f"![{title}]({name})", ""]
    out += ["## Environment", "", *_items(f"{what}: {value}" for what, value in environment_rows(data.env)), ""]
    return "\n".join(out) + "\n"
