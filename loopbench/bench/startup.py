"""How long the command line takes to answer: `--help`, `list`, `validate` and `show` (one run of the published
results), each started as a user starts it (the `loopbench` entry point beside this Python, Python's bytecode
cache on), after one warm-up start each. Goal: under 1 s of wall time on an idle 2-core machine."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STARTS = 7  # timed starts of each command
GOAL_S = 1.0


def _entry_point() -> list[str]:
    script = Path(sys.executable).with_name("loopbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "loopbench.cli"]


def _first_run_id(published: Path) -> str | None:
    results = published / "results.jsonl"
    if not results.exists():
        return None
    with results.open(encoding="utf-8") as f:
        return str(json.loads(f.readline())["run_id"])


def commands(published: Path) -> dict[str, list[str]]:
    """What is timed: the command as a user types it (its words) -> its arguments."""
    found = {"loopbench --help": ["--help"], "loopbench list": ["list"], "loopbench validate": ["validate"]}
    if (run_id := _first_run_id(published)) is not None:
        found["loopbench show RUN"] = ["show", run_id, "--results", str(published)]
    return found


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system) of one start."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup_numbers(published: Path, starts: int = STARTS) -> dict[str, dict[str, Any]]:
    # a user's environment keeps Python's bytecode cache (a test runner's may turn it off)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out: dict[str, dict[str, Any]] = {}
    for words, args in commands(published).items():
        argv = [*_entry_point(), *args]
        _timed(argv, env)  # warm-up: the bytecode cache and the page cache
        samples = [_timed(argv, env) for _ in range(starts)]
        wall = statistics.median(w for w, _ in samples)
        out[words] = {"starts": starts, "wall_s": round(wall, 3), "cpu_s": round(statistics.median(c for _, c in
                                                                                                  samples), 3),
                      "wall_max_s": round(max(w for w, _ in samples), 3), "goal_s": GOAL_S,
                      "met": wall < GOAL_S}
    return out
