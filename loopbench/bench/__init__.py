"""`loopbench bench`: what loopbench costs next to what a user would write, how close the suite runs to its lower
bound, and each framework's own cost per model call. Numbers, not timed tests: the results go to
reports/bench/results.json and a Markdown summary beside it.

Measured in one run:
1. **Against a plain script** (per framework, its default variant): a committed plain script (its adapter's
   `plain_script` in `loopbench/plain/`, no loopbench code: the framework driven directly, as its docs show;
   started by the adapter's `plain_command`) runs `support_draft_completes` against the same scripted server,
   in a warm process of its own; loopbench runs the same scenario as a full business task (registration, a
   warm worker, the ledger, judging, the record, the results line, the trace). Interleaved in blocks of 5
   runs, the order alternating (plain first, then loopbench first), after one warm-up of each; run i of a
   block pairs with run i of the other side's block. Per run: wall time around the whole run as the bench
   sees it; CPU = the bench process's CPU over the run (it hosts the model server for both, and loopbench's
   runner) + the client side's (the plain process, or the worker with its children — the Node driver
   included). The ratio is median(loopbench) / median(plain); its spread is the 95 % bootstrap interval of
   that ratio over the pairs, and pairs are added until the interval is narrower than the 10 % the goal tests
   and lies on one side of the goal (or a cap or time budget is reached).
   The gap is split, from the same runs, into the time around the adapter (the whole run less the adapter's
   segment time in the worker) and the adapter's segment time beyond the plain script's run.
2. **The suite against its lower bound**: the full suite (`loopbench run`, every available framework and
   variant, default slots) as a child process under a subreaper, so that the whole process tree's CPU is
   counted (workers, their SDK start-ups, the Claude CLI, the Node driver, the report); the lower bound is
   max(the longest single run, tree CPU / cores), both from the same run. The same for `--quick`.
3. The model server's p50/p99 latency on one keep-alive connection and requests/s under concurrent clients.
4. The command line's start-up: `--help`, `list`, `validate` and `show` as a user starts them (goal < 1 s).
6. The guard's own cost per call (loopbench.guard): a guarded model call and a guarded tool call, in the process
   and over the guard's HTTP service (what a Node framework's hooks pay).
5. Per framework: the framework's own CPU per model call (the workers' CPU less loopbench's own part in them),
   loopbench's own CPU per run, wall per model call and peak worker RSS, from the suite's records.

One module per measurement: `plain` (1), `suite` (2, and the cells changed against the published results),
`server` (3), `startup` (4), `cost` (5), `guard_cost` (6); `stats` the bound and the ratio's spread, `summary`
the Markdown; `run_bench` here runs them all. Every name is importable from `loopbench.bench`.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import tempfile
from pathlib import Path
from typing import Any

from loopbench.bench.cost import cost_numbers
from loopbench.bench.guard_cost import guard_numbers
from loopbench.bench.plain import (
    BLOCK,
    MAX_PAIRS,
    MIN_PAIRS,
    PAIR_BUDGET_S,
    PLAIN_RUN,
    PLAIN_SCENARIO,
    PlainProcess,
    Sample,
    _loopbench_run,
    _plain_ground_truth,
    _plain_run,
    _plain_summary,
    plain_numbers,
    plain_script_path,
    plain_scripts,
)
from loopbench.bench.server import SERVER_SCENARIO, _pct, server_numbers
from loopbench.bench.startup import startup_numbers
from loopbench.bench.stats import (
    GOAL_RATIO,
    GOAL_SUITE,
    bootstrap_interval,
    goal_verdict,
    lower_bound_s,
    ratio_of_medians,
    settled,
)
from loopbench.bench.suite import _SUBREAPER, _diff_cells, suite_numbers
from loopbench.bench.summary import markdown
from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.run.environment import environment

__all__ = [
    "BLOCK", "GOAL_RATIO", "GOAL_SUITE", "MAX_PAIRS", "MIN_PAIRS", "PAIR_BUDGET_S", "PLAIN_RUN", "PLAIN_SCENARIO",
    "PLAIN_SCRIPTS", "SERVER_SCENARIO", "PlainProcess", "Sample", "_SUBREAPER", "_diff_cells", "_loopbench_run",
    "_pct", "_plain_ground_truth", "_plain_run", "_plain_summary", "bootstrap_interval", "cost_numbers",
    "goal_verdict", "guard_numbers", "lower_bound_s", "markdown", "plain_numbers", "plain_script_path",
    "plain_scripts", "ratio_of_medians", "run_bench", "run_guard", "run_startup", "server_numbers", "settled",
    "startup_numbers", "suite_numbers",
]


def __getattr__(name: str) -> Any:
    # PLAIN_SCRIPTS (framework id -> plain script file), read from the adapter classes when first asked for
    if name == "PLAIN_SCRIPTS":
        return plain_scripts()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_startup(out_dir: Path, published: Path) -> dict[str, Any]:
    """Only the start-up measurement (4), merged into out_dir/results.json beside the other measurements kept
    there (its README.md rewritten when they are all there): a command-line change is measured in seconds, not in
    the bench's quarter of an hour."""
    return _run_part(out_dir, "startup", lambda: startup_numbers(published))


def run_guard(out_dir: Path) -> dict[str, Any]:
    """Only the guard's cost per call (6), merged into out_dir/results.json as `run_startup` does."""
    return _run_part(out_dir, "guard", guard_numbers)


def _run_part(out_dir: Path, key: str, measure: Any) -> dict[str, Any]:
    path = out_dir / "results.json"
    results: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    results[key] = measure()
    # measured apart from the rest of the bench: when and at which revision (the summary says so)
    results[f"{key}_at"] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                            "loopbench_revision": environment().get("loopbench_revision")}
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    if {"frameworks", "suite", "server", "cost_per_model_call", "machine"} <= set(results):
        (out_dir / "README.md").write_text(markdown(results))
    return results


def run_bench(out_dir: Path, include_suite: bool = True, published: Path | None = None) -> dict[str, Any]:
    env = environment()
    env.pop("node", None)
    results: dict[str, Any] = {
        "machine": {**env, "python": platform.python_version()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    # each framework's default variant, where it can run and has a plain script to be compared with
    defaults = [(f, v) for f, v in resolve_selection([]) if v == "default"
                and adapter_class(f).plain_script is not None and adapter_class(f).unavailable_reason() is None]
    with tempfile.TemporaryDirectory(prefix="loopbench-bench-") as tmp:
        work = Path(tmp)
        results["server"] = server_numbers()
        results["startup"] = startup_numbers(published or Path("reports/published"))
        results["guard"] = guard_numbers()
        results["frameworks"] = plain_numbers(defaults, work / "plain")
        if include_suite:
            for key, quick in (("suite", False), ("quick", True)):
                results[key] = suite_numbers(work, quick)
                if published is not None and (published / "results.jsonl").exists():
                    results[key]["cells_changed_vs_published"] = _diff_cells(published, results[key]["results"])
                results[key].pop("results")
            results["cost_per_model_call"] = cost_numbers(str(work / "suite" / "results.jsonl"))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    if include_suite:
        (out_dir / "README.md").write_text(markdown(results))
    return results

