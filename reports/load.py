"""Read a results file (or a results directory) into validated RunRecords.

Rules:
- a directory means `DIR/results.jsonl`; a file is read as it is;
- every line must be one RunRecord of a schema version this loopbench reads (`harness.record.READABLE_VERSIONS`);
  an older one is migrated as it is read (`harness.record.migrate`: v1 `pauses` are v2 `segments`, ...);
- a torn last line (a run still being written, or a killed writer: whatever follows the last newline, any
  bytes) is skipped with a `ResultsWarning` — the one rule of `harness.results_store`, which writes the file;
- anything else wrong raises `BadInput` (or `SchemaMismatch` for another schema version), naming the file,
  the line and what is wrong — a report is never built from a half-understood file.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from loopbench.harness.errors import BadInput, InputProblem, SchemaMismatch
from loopbench.harness.record import READABLE_VERSIONS, MigrationError, RunRecord, migrate
from loopbench.harness.results.store import RESULTS_NAME, Lines, read_lines

# the keys that make a JSON object look like a RunRecord at all (anything else is "not a results file")
_IDENTITY_KEYS = ("run_id", "scenario", "framework")


class ResultsWarning(UserWarning):
    """Something in a results file was skipped (e.g. a torn last line)."""


@dataclass
class Results:
    """The records of one results file, where they came from, and what was skipped."""

    path: Path  # the results.jsonl file
    records: list[RunRecord]
    warnings: list[str] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        """The results directory: record.trace paths are relative to it."""
        return self.path.parent


def results_file(path: Path | str) -> Path:
    """The results.jsonl a path designates (the file itself, or DIR/results.jsonl); BadInput if there is none."""
    p = Path(path)
    if p.is_dir():
        f = p / RESULTS_NAME
        if not f.is_file():
            raise BadInput([InputProblem(str(p), "", f"not a results directory: it has no {RESULTS_NAME}")])
        return f
    if not p.exists():
        raise BadInput([InputProblem(str(p), "", "no such file or directory")])
    if not p.is_file():
        raise BadInput([InputProblem(str(p), "", "not a regular file")])
    return p


def _validation_problems(file: str, lineno: int, err: ValidationError, limit: int = 5) -> list[InputProblem]:
    out = []
    for e in err.errors()[:limit]:
        loc = ".".join(str(x) for x in e.get("loc", ()))
        out.append(InputProblem(file, f"line {lineno}: {loc}" if loc else f"line {lineno}", e.get("msg", "invalid")))
    more = len(err.errors()) - limit
    if more > 0:
        out.append(InputProblem(file, f"line {lineno}", f"... and {more} more problem(s)"))
    return out


def parse_lines(lines: Iterable[str], file: str, torn_warning: str | None = None) -> Results:
    """Parse the complete lines of a results file (see the module doc for the rules); `torn_warning` says
    what `harness.results_store.split_lines` cut off the end."""
    raw = list(lines)
    records: list[RunRecord] = []
    skipped: list[str] = []
    if torn_warning is not None:
        skipped.append(torn_warning)
        warnings.warn(torn_warning, ResultsWarning, stacklevel=3)
    problems: list[InputProblem] = []
    mismatched: list[InputProblem] = []
    for i, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            obj: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(InputProblem(file, f"line {i}", f"not a results file: not JSON ({exc.msg})"))
            break
        if not isinstance(obj, dict) or not all(k in obj for k in _IDENTITY_KEYS):
            what = type(obj).__name__ if not isinstance(obj, dict) else "an object without " + ", ".join(
                k for k in _IDENTITY_KEYS if k not in obj)
            problems.append(InputProblem(file, f"line {i}", f"not a results file: a RunRecord expected, found {what}"))
            break
        version = obj.get("schema_version")
        if version not in READABLE_VERSIONS:
            mismatched.append(InputProblem(
                file, f"line {i}",
                f"schema_version {version!r}, this loopbench reads schema_version "
                f"{', '.join(map(str, READABLE_VERSIONS))} (re-run the suite with this version, or read the file "
                f"with the loopbench that wrote it)"))
            break
        try:
            obj = migrate(obj)
        except MigrationError as exc:
            problems.append(InputProblem(file, f"line {i}", f"cannot migrate schema_version {version}: {exc}"))
            continue
        try:
            records.append(RunRecord.model_validate(obj))
        except ValidationError as exc:
            problems.extend(_validation_problems(file, i, exc))
    if mismatched:
        raise SchemaMismatch(mismatched)
    if problems:
        raise BadInput(problems)
    if not records:
        raise BadInput([InputProblem(file, "", "not a results file: it holds no RunRecord")])
    seen: dict[str, int] = {}
    for r in records:
        seen[r.run_id] = seen.get(r.run_id, 0) + 1
    dups = sorted(k for k, n in seen.items() if n > 1)
    if dups:
        msg = f"{file}: duplicate run ids (each kept): {', '.join(dups[:5])}"
        skipped.append(msg)
        warnings.warn(msg, ResultsWarning, stacklevel=3)
    return Results(Path(file), records, skipped)


def read_results_lines(f: Path) -> Lines:
    """The lines of results file `f` (read_lines' result); BadInput when it cannot be read or is not text."""
    try:
        return read_lines(f)
    except OSError as exc:
        raise BadInput([InputProblem(str(f), "", f"cannot read: {exc.strerror or exc}")]) from exc
    except BadInput as exc:
        raise BadInput([InputProblem(p.file, p.field, f"not a results file: {p.reason}") for p in exc.problems]
                       ) from None


def load_results(path: Path | str) -> Results:
    """Load a results file or directory: validated RunRecords plus where they came from.

    Raises BadInput (missing path, not a results file, invalid record) or SchemaMismatch (another
    schema_version); a torn last line is skipped with a ResultsWarning (also listed in `Results.warnings`).
    """
    f = results_file(path)
    found = read_results_lines(f)
    res = parse_lines(found.lines, str(f), found.torn_warning(f))
    res.path = f
    return res


def load_records(path: Path | str) -> list[RunRecord]:
    """The RunRecords of a results file or directory (see `load_results`)."""
    return load_results(path).records
