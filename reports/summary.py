"""`summary.json`: the report's content as typed JSON (counts are integers, unknowns null, structures nested —
never JSON inside a string), described by a JSON Schema (`loopbench schema summary`, committed as
docs/summary.schema.json): its typed models, and `summary(ReportData)` / `render_json` filling them."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.record import Category, Outcome, Verdict
from loopbench.reports.cells import cells
from loopbench.reports.severity import Described, Severity, worst

if TYPE_CHECKING:  # the data module imports the report's whole computation; the schema needs none of it
    from loopbench.reports.data import ReportData

SUMMARY_VERSION = 1
Row = dict[str, Any]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Worst(Frozen):
    severity: Severity
    words: str = Field(description="the deviation in words (reports/severity.py)")
    deviation: str = Field(description="the deviation's name")


class DeviationOut(Frozen):
    name: str
    ideal: Any
    observed: Any
    note: str = ""


class CellOut(Frozen):
    scenario: str
    title: str
    category: Category | Literal["other"]
    column: str = Field(description="`framework` for the default variant, else `framework:variant`")
    framework: str
    variant: str
    framework_version: str | None
    outcome: Outcome
    outcome_rule: int
    verdict: Verdict
    deviations: list[DeviationOut]
    worst: Worst | None = Field(description="the most serious deviation, or null when there is none")
    unsupported: list[str]
    counters: dict[str, int | float | str | dict[str, int] | None] = Field(
        description="the representative run's counters (null: not measured)")
    repetitions: int
    unstable: bool
    run_id: str = Field(description="the representative run")
    run_ids: list[str]
    changes: list[str] | None = Field(
        default=None, description="with a baseline: each change as `what: was → now` ([] unchanged; null: no baseline "
                                  "or a cell on one side only)")


class ScoreOut(Frozen):
    column: str
    category: Category | Literal["other"]
    cells: int
    conforms: int
    unsupported: int
    errors: int
    share: float | None = Field(description="conforms / (cells - errors); null when every cell errored")
    worst: Worst | None
    worst_scenario: str | None


class ClaimOut(Frozen):
    id: str
    framework: str
    text: str
    verdict: Literal["holds", "refuted", "not testable"]
    evidence: list[str]
    versions: list[str]
    detail: str


class BaselineOut(Frozen):
    path: str
    common_cells: int
    changed_cells: int
    one_sided: list[str]


class Summary(Frozen):
    report: Literal["loopbench"] = "loopbench"
    summary_version: int = SUMMARY_VERSION
    results_file: str
    warnings: list[str]
    environment: dict[str, Any]
    scorecard: list[ScoreOut]
    matrix: list[CellOut]
    baseline: BaselineOut | None
    cost_per_model_call: list[Row] = Field(description="per framework variant: cells by verdict and costs")
    units: list[Row]
    mechanisms: list[Row]
    capabilities: list[Row]
    accounting: list[Row]
    accounting_differences: list[Row]
    streamed_vs_not: list[Row] = Field(
        default_factory=list, description="per streaming idiom: scenarios compared with the idiom it streams, and "
        "how many cells differ")
    streamed_differences: list[Row] = Field(default_factory=list, description="every cell that differs, in words")
    native_vs_guarded: list[Row] = Field(
        default_factory=list, description="per guarded idiom: cells conforming natively and guarded")
    guarded_remaining: list[Row] = Field(
        default_factory=list, description="each cell still deviating when guarded, with why (a missing hook, outside "
        "the policy, or the guard's own gap)")
    guarded_lacks: list[Row] = Field(
        default_factory=list, description="per framework: the extension points its guard binding declares missing")
    agents_accounting: list[Row] = Field(
        default_factory=list, description="per framework variant: what its reported tokens cover in the sub-agent "
        "cells (the tree, the main loop alone, neither)")
    agents_accounting_cells: list[Row] = Field(
        default_factory=list, description="each sub-agent cell: requests and tokens served per agent, tokens reported")
    claims: list[ClaimOut]
    stability: list[Row]
    pictures: list[str]


def _plain(v: Any) -> Any:
    """A pandas/numpy value as plain JSON: NaN is null, numpy scalars are Python ones."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, list | dict | str):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def table_rows(df: pd.DataFrame) -> list[Row]:
    """A table's rows with real types: a column of whole numbers (pandas made them floats beside a null) gives
    integers."""
    if df.empty:
        return []
    rows: list[Row] = [{str(k): _plain(v) for k, v in row.items()} for row in df.astype(object).to_dict("records")]
    for col in df.columns:
        values = [r[col] for r in rows if r[col] is not None]
        if values and all(isinstance(x, float) and x.is_integer() for x in values) and \
                pd.api.types.is_float_dtype(df[col]):
            for r in rows:
                if r[col] is not None:
                    r[col] = int(r[col])
    return rows


def summary(data: ReportData) -> Summary:
    """The report as typed data (summary.json)."""
    b = data.baseline

    def worst_out(w: Described | None) -> Worst | None:
        return Worst(severity=w.severity, words=w.words, deviation=w.deviation) if w is not None else None

    matrix: list[CellOut] = []
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
        streamed_vs_not=table_rows(data.streaming_pairs), streamed_differences=table_rows(data.streaming_diffs),
        native_vs_guarded=table_rows(data.guarded_pairs), guarded_remaining=table_rows(data.guarded_remaining),
        guarded_lacks=table_rows(data.guarded_lacks),
        agents_accounting=table_rows(data.agents_summary), agents_accounting_cells=table_rows(data.agents_cells),
        claims=[ClaimOut(id=r.claim.id, framework=r.claim.framework, text=r.claim.text, verdict=r.verdict,
                         evidence=list(r.evidence), versions=list(r.versions), detail=r.detail) for r in data.claims],
        stability=table_rows(data.stability), pictures=[name for name, _, _ in data.plots],
    )


def render_json(data: ReportData) -> str:
    """summary.json."""
    return json.dumps(summary(data).model_dump(mode="json"), indent=2, ensure_ascii=False, default=str) + "\n"
