"""JUnit XML for CI (junitparser): one testcase per cell (scenario × framework variant), its classname the
framework variant, its name the scenario.

- `run --junit FILE`: a cell fails by `--fail-on`: `error` (the default: loopbench's own error, or the
  scenario's: `script_error`, a JUnit error of that type) and/or
  `deviation` (any verdict but conforms; a run that hung deviates). Its outcome, verdict and deviations are in
  the testcase's properties and output either way.
- `diff --junit FILE`: a cell on both sides fails when its behaviour changed, each change in the message;
  cells on one side only are skipped testcases.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

from loopbench.harness.record import FailOn, RunRecord
from loopbench.reports.cells import cells
from loopbench.reports.diff import DiffOut
from loopbench.reports.formatting import deviation_text


def failing(rec: RunRecord, fail_on: Iterable[FailOn]) -> str | None:
    """Why this run fails the given criteria, or None."""
    kinds = set(fail_on)
    if "error" in kinds and rec.verdict == "error":  # loopbench's failure or the scenario's (script_error)
        return f"{rec.outcome}: {rec.error_reason or 'no reason recorded'}"
    if "deviation" in kinds and rec.verdict != "conforms":
        return f"{rec.verdict}: " + ("; ".join(deviation_text(d) for d in rec.deviations) or rec.outcome)
    return None


def _case(scenario: str, column: str, seconds: float | None) -> TestCase:
    return TestCase(name=scenario, classname=column, time=round(seconds or 0.0, 3))


def _properties(case: TestCase, **values: str) -> None:
    props = Properties()
    for k, v in values.items():
        props.add_property(Property(k, v))
    case.append(props)


def run_junit(records: list[RunRecord], fail_on: Iterable[FailOn]) -> JUnitXml:
    kinds = tuple(fail_on)
    suite = TestSuite("loopbench run")
    for c in cells(records):
        r = c.rep
        case = _case(c.scenario, c.column, r.counters.elapsed_s)
        _properties(case, outcome=r.outcome, verdict=r.verdict, run_id=r.run_id)
        why = failing(r, kinds)
        if why is not None:
            result = Error(why, type_=r.outcome) if r.verdict == "error" else Failure(why, type_=r.verdict)
            case.result = [result]
        case.system_out = "\n".join([f"{r.outcome} ({r.verdict})", *(deviation_text(d) for d in r.deviations)])
        suite.add_testcase(case)
    xml = JUnitXml("loopbench")
    xml.add_testsuite(suite)
    return xml


def diff_junit(diff: DiffOut) -> JUnitXml:
    """A testcase per cell on both sides (failed when changed; skipped when its scenario changed, with what
    differs), a skipped one per line of cells on one side only."""
    suite = TestSuite("loopbench diff")
    by_cell: dict[tuple[str, str], list[str]] = {}
    for ch in [*diff.changes, *diff.scenario_changes]:
        by_cell.setdefault((ch.scenario, ch.column), []).append(f"{ch.what}: {ch.base} → {ch.new}")
    for cell in diff.cells:
        case = _case(cell.scenario, cell.column, None)
        _properties(case, base_outcome=cell.base_outcome, new_outcome=cell.new_outcome,
                    base_verdict=cell.base_verdict, new_verdict=cell.new_verdict)
        if cell.changed:
            case.result = [Failure("; ".join(by_cell.get((cell.scenario, cell.column), [])), type_="change")]
        elif cell.scenario_changed:
            what = "; ".join(by_cell.get((cell.scenario, cell.column), []))
            case.result = [Skipped(f"the scenario changed, not compared as the framework's behaviour: {what}")]
        suite.add_testcase(case)
    for line in diff.one_sided:
        case = TestCase(name=line, classname="one side only")
        case.result = [Skipped("coverage, not a behaviour change")]
        suite.add_testcase(case)
    xml = JUnitXml("loopbench")
    xml.add_testsuite(suite)
    return xml


def write(xml: JUnitXml, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.update_statistics()
    xml.write(str(path), pretty=True)
