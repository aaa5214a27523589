"""`summary.json`: the report's content as typed JSON (counts are integers, unknowns null, structures nested —
never JSON inside a string), described by a JSON Schema (`loopbench schema summary`, committed as
docs/summary.schema.json)."""

from __future__ import annotations

import math
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.record import Category, Outcome, Verdict
from loopbench.reports.severity import Severity

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
    rows = [{k: _plain(v) for k, v in row.items()} for row in df.astype(object).to_dict("records")]
    for col in df.columns:
        values = [r[col] for r in rows if r[col] is not None]
        if values and all(isinstance(x, float) and x.is_integer() for x in values) and \
                pd.api.types.is_float_dtype(df[col]):
            for r in rows:
                if r[col] is not None:
                    r[col] = int(r[col])
    return rows
