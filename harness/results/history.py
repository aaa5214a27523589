"""Result history: every `loopbench run` without `--out` writes a new timestamped directory under `results/`,
and `results/latest` is a symlink to the newest one that has a record. Nothing is ever replaced silently:
`show`, `report` and `diff` read the latest by default, and an older run stays where it was written.

`results/latest` moves only when the new run has its first record, so a run that fails at start-up leaves it
on the previous results. A `results/latest` that is a real directory (written before history existed) is
renamed to a timestamped directory the first time, not deleted.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.results.store import RESULTS_NAME

RESULTS_ROOT = Path("results")
LATEST_NAME = "latest"


def _stamp(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H-%M-%SZ")


def new_results_dir(root: Path = RESULTS_ROOT) -> Path:
    """A directory name for a new run: `root/2026-12-02T01-30-00Z` (a suffix when two start in one second).
    Not created here: the runner creates it."""
    base = _stamp(dt.datetime.now(dt.UTC))
    candidate, n = root / base, 2
    while candidate.exists() or candidate.is_symlink():
        candidate, n = root / f"{base}-{n}", n + 1
    return candidate


def point_latest(target: Path, root: Path = RESULTS_ROOT) -> None:
    """Make `root/latest` a relative symlink to `target`, replacing the old link atomically."""
    root.mkdir(parents=True, exist_ok=True)
    latest = root / LATEST_NAME
    if latest.is_dir() and not latest.is_symlink():  # results from before history: keep them under a name
        when = dt.datetime.fromtimestamp(latest.stat().st_mtime, dt.UTC)
        os.rename(latest, root / f"{_stamp(when)}-was-latest")
    tmp = root / f".{LATEST_NAME}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(target.resolve(), root.resolve()))
    os.replace(tmp, latest)


def latest_results(root: Path = RESULTS_ROOT) -> Path:
    """The latest results directory; BadInput when there is none yet."""
    latest = root / LATEST_NAME
    if not (latest / RESULTS_NAME).exists():
        raise BadInput([InputProblem(str(latest), "", "no results yet: run `loopbench run` first, or name a "
                                     "results directory")])
    return latest


def refuse_existing(out: Path, force: bool, resume: bool) -> None:
    """An explicit `--out` that already holds results is refused unless `--continue` or `--force` says what to
    do with them."""
    results = out / RESULTS_NAME
    if force or resume or not results.exists() or results.stat().st_size == 0:
        return
    raise BadInput([InputProblem(str(out), "--out", "already holds results: `--continue` adds the runs that are "
                                 "missing, `--force` replaces them (the old file is kept as results.previous.jsonl)"
                                 )])
