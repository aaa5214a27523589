"""What fails a run, for `loopbench run --fail-on` and `pytest --loopbench --loopbench-fail-on`: one vocabulary,
one default, one decision.

- `error` (the default): a run loopbench itself could not carry out (outcome `error`), or whose scenario could
  not be (`script_error`: no turn of its script answers a request)
- `deviation`: any verdict but conforms (a run that hung deviates)

The vocabulary is harness/record.py's `FailOn` (which `diff --fail-on` shares, with `change`); the decision is
reports/junit.py's `failing` (what `run --junit` fails a testcase on and `run`'s exit code reads); this module
only names a run's choices, so the command line and the pytest plugin offer the same ones.
Kept light (no import of the reports until a record is judged): the pytest plugin imports it in every pytest
session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.record import FailOn

RUN_FAIL_ON = (FailOn.error, FailOn.deviation)  # what a run can fail on (`change` needs two results: `diff`)
CHOICES = tuple(k.value for k in RUN_FAIL_ON)
DEFAULT = (FailOn.error.value,)


def fail_on_kinds(fail_on: Iterable[str] | None) -> list[FailOn]:
    """A run's `--fail-on` as the kinds `failing` checks: `error` when none is given (each kind once, in order);
    `change` is bad input (a run has nothing to compare with)."""
    kinds = [FailOn(k) for k in dict.fromkeys(str(k) for k in fail_on or ())]
    if FailOn.change in kinds:
        raise BadInput([InputProblem("--fail-on", "", "change compares two result sets: use `loopbench diff "
                                     "BASE NEW --fail-on change`; a run fails on error or deviation")])
    return kinds or [FailOn.error]


def failing(record: Any, kinds: Iterable[str]) -> str | None:
    """Why this run fails the given kinds (`error: <reason>`, `<verdict>: <deviations>`), or None."""
    from loopbench.reports.junit import failing as junit_failing

    return junit_failing(record, kinds)  # type: ignore[arg-type]
