"""The small exception hierarchy of loopbench. Each error says exactly what went wrong and where."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class LoopbenchError(Exception):
    """Base of every error loopbench raises on purpose."""


@dataclass(frozen=True)
class InputProblem:
    """One thing wrong with one input file: where and why."""

    file: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.reason}" if self.field else f"{self.file}: {self.reason}"


class BadInput(LoopbenchError):
    """Input refused before anything runs (exit code 2). Carries every problem found, not only the first."""

    def __init__(self, problems: list[InputProblem] | str):
        if isinstance(problems, str):
            problems = [InputProblem(file="", field="", reason=problems)]
        self.problems = problems
        super().__init__("\n".join(str(p).lstrip(": ") for p in problems))


class ScriptViolation(LoopbenchError):
    """The scripted model was asked something its script cannot answer."""


class UnansweredRequest(ScriptViolation):
    """No turn of the script answers what the latest scripted calls returned: the scenario's own gap (its run
    is `script_error`), whatever the framework did to get there."""


class SchemaMismatch(BadInput):
    """A results file written by another schema version."""


class UnknownRun(LoopbenchError):
    """A run id the model server or the ledger does not know (never registered, or already unregistered)."""


class UnknownTool(LoopbenchError):
    """A tool the run's scenario does not declare."""


class OutputUnwritable(LoopbenchError):
    """loopbench could not write its output (the disk is full, a quota, a read-only mount): the suite stops, the
    records already written stay complete, and `--continue` runs the rest once the cause is gone."""

    def __init__(self, path: object, why: str):
        super().__init__(f"{path}: cannot write: {why}")

    @classmethod
    def of(cls, path: object, exc: OSError) -> OutputUnwritable:
        return cls(exc.filename or path, exc.strerror or str(exc))


class WorkerHung(LoopbenchError):
    """A worker gave no answer within the segment's hard timeout (the run is `hung`; the worker is replaced).
    `waited_s`: how long the runner waited for the answer, so the hung segment's time is in the record; `pid`:
    the worker that hung (already killed)."""

    def __init__(self, message: str, waited_s: float, pid: int | None = None):
        super().__init__(message)
        self.waited_s, self.pid = waited_s, pid


class WorkerDied(LoopbenchError):
    """A worker process ended while a job was in flight (the run is `error`)."""


def _field_path(loc: tuple[Any, ...]) -> str:
    # pydantic puts union-branch names in loc (e.g. 'int', 'Bound', 'list[str]'); they mean nothing to a user
    parts = [str(p) for p in loc if not (isinstance(p, str) and (
        p[:1].isupper() or p in {"int", "float", "str"} or "[" in p or p.startswith(("constrained-", "function-"))))]
    return ".".join(parts)


def _reason(err: dict[str, Any]) -> str:
    kind = err["type"]
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        options = re.findall(r"'([^']*)'|(\d+)", expected)
        return "must be one of " + "|".join(a or b for a, b in options)
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    return str(err["msg"]).removeprefix("Value error, ")


def validation_problems(exc: Any, file: str, prefix: str = "") -> list[InputProblem]:
    """Every error of a pydantic ValidationError as `file: field.path: reason` (the one format for scenario
    files, claims files and records)."""
    out = []
    for e in exc.errors():
        path = _field_path(tuple(e.get("loc", ())))
        out.append(InputProblem(file, ".".join(filter(None, [prefix, path])), _reason(e)))
    return out
