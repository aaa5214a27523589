"""What fails a run, for `loopbench run --fail-on` and `pytest --loopbench --loopbench-fail-on`: one vocabulary,
one default, one decision.

- `error` (the default): a run loopbench itself could not carry out (outcome `error`), or whose scenario could
  not be (`script_error`: no turn of its script answers a request)
- `deviation`: any verdict but conforms (a run that hung deviates)

The decision is reports/junit.py's `failing` (what `run --junit` fails a testcase on and `run`'s exit code
reads); this module only names the choices, so the command line and the pytest plugin offer the same ones.
Kept light (no import of the reports until a record is judged): the pytest plugin imports it in every pytest
session.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from loopbench.reports.junit import FailOn


class RunFailOn(StrEnum):
    """What `run --fail-on` fails on."""

    error = "error"  # a run loopbench or its scenario could not carry out (outcome error or script_error)
    deviation = "deviation"  # any verdict but conforms


CHOICES = tuple(k.value for k in RunFailOn)
DEFAULT = (RunFailOn.error.value,)


def fail_on_kinds(fail_on: Iterable[str] | None) -> list[FailOn]:
    """`--fail-on` as the kinds `failing` checks: `error` when none is given (each kind once, in order)."""
    kinds: list[FailOn] = [k for k in dict.fromkeys(str(k) for k in fail_on or ()) if _is_kind(k)]
    return kinds or ["error"]


def _is_kind(k: str) -> TypeGuard[FailOn]:
    return k in CHOICES


def failing(record: Any, kinds: Iterable[str]) -> str | None:
    """Why this run fails the given kinds (`error: <reason>`, `<verdict>: <deviations>`), or None."""
    from loopbench.reports.junit import failing as junit_failing

    return junit_failing(record, kinds)  # type: ignore[arg-type]
