"""The results file: the one module that writes and reads `results.jsonl` line by line.

One record per line, appended complete and flushed as each task finishes, so a crash or a kill of loopbench
loses no finished run (the kernel holds the bytes; not fsynced — ~1 ms per run — so a machine crash can lose
the last lines, which `--continue` then runs again). The torn-line rule, the same for every reader: a line
is complete when it ends with a newline; whatever follows the last newline (any bytes: a kill mid-write can
cut a UTF-8 character) is a torn last line, never a record. It imports the record module only, so the
reports can read through it too.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopbench.harness.errors import BadInput, InputProblem, OutputUnwritable
from loopbench.harness.record import RunRecord

RESULTS_NAME = "results.jsonl"
TaskKey = tuple[str, str, str, int]  # (scenario, framework, variant, repetition)


@dataclass(frozen=True)
class Lines:
    """The complete lines of a results file, and the torn tail (b"" when there is none)."""

    lines: list[str]
    torn: bytes

    def torn_warning(self, path: Path | str) -> str | None:
        if not self.torn:
            return None
        return (f"{path}: line {len(self.lines) + 1}: torn last line skipped ({len(self.torn)} bytes) "
                "left by an interrupted run")


def split_lines(raw: bytes, path: Path | str = "") -> Lines:
    """The torn-line rule over a file's bytes. A complete line that is not UTF-8 is bad input."""
    cut = raw.rfind(b"\n") + 1
    try:
        text = raw[:cut].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BadInput([InputProblem(str(path), f"line {line}", f"not UTF-8 ({exc.reason} at byte {exc.start})")]
                       ) from None
    return Lines(text.splitlines(), raw[cut:])


def read_lines(path: Path) -> Lines:
    return split_lines(path.read_bytes(), path)


PREVIOUS_NAME = "results.previous.jsonl"
LOCK_NAME = ".loopbench.lock"


class ResultsStore:
    """`DIR/results.jsonl`: append records, or find the complete ones to `--continue` from.

    With `replace`, the results already there are kept until the first new record exists: then they are moved
    to `results.previous.jsonl` (replacing an older one) and the new file starts. A run that fails before it
    records anything loses nothing."""

    def __init__(self, path: Path, replace: bool = False, on_first: Callable[[], None] | None = None):
        self.path = path
        self._lock = threading.Lock()
        self._replace = replace
        self._on_first = on_first  # called once, after the first record is on disk

    def append(self, record: RunRecord) -> None:
        line = record.model_dump_json() + "\n"
        with self._lock:
            try:
                if self._replace:
                    if self.path.exists():
                        os.replace(self.path, self.path.with_name(PREVIOUS_NAME))
                    self._replace = False
                self._write(line)
            except OSError as exc:  # disk full, quota, read-only: a torn last line is dropped by --continue
                raise OutputUnwritable.of(self.path, exc) from exc
            if self._on_first is not None:
                first, self._on_first = self._on_first, None
                first()

    def _write(self, line: str) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()  # in the kernel now: a crash or kill of loopbench loses nothing

    def finished_keys(self) -> tuple[set[TaskKey], list[str]]:
        """Keys of the complete records. A torn last line is cut off the file, with a warning, so appending goes
        on from the last complete record."""
        if not self.path.exists():
            return set(), []
        found = read_lines(self.path)
        warnings = []
        if (warning := found.torn_warning(self.path)) is not None:
            warnings.append(warning)
            with open(self.path, "r+b") as fh:
                fh.truncate(self.path.stat().st_size - len(found.torn))
        keys: set[TaskKey] = set()
        for n, line in enumerate(found.lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                keys.add((rec["scenario"], rec["framework"], rec["variant"], rec["repetition"]))
            except (ValueError, KeyError, TypeError):
                raise BadInput(f"{self.path}: line {n} is not a RunRecord; cannot --continue from this file") from None
        return keys, warnings


class OutLock:
    """An exclusive lock on an output directory for the length of a run (`DIR/.loopbench.lock`, released when
    the process ends, however it ends). A second writer is refused with the holder named."""

    def __init__(self, out_dir: Path):
        self.path = out_dir / LOCK_NAME
        self._fh: Any = None

    def __enter__(self) -> OutLock:
        fh = open(self.path, "a+")  # noqa: SIM115 - held for the run
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise BadInput([InputProblem(str(self.path.parent), "--out", f"in use by {holder}: two runs cannot "
                                         "write one results directory (wait for it, or choose another --out)")]
                           ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"loopbench pid {os.getpid()}, started {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.truncate(0)
            self._fh.close()  # closing releases the lock
            self._fh = None
