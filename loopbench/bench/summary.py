"""The bench's Markdown summary (reports/bench/README.md), written from its results only."""

from __future__ import annotations

from typing import Any

from loopbench.bench.plain import BLOCK, MAX_PAIRS, MIN_PAIRS, PAIR_BUDGET_S, PLAIN_SCENARIO
from loopbench.bench.stats import GOAL_RATIO, GOAL_SUITE, goal_verdict
from loopbench.harness.adapter import adapter_class
from loopbench.harness.errors import BadInput


def markdown(results: dict[str, Any]) -> str:
    m, srv = results["machine"], results["server"]
    lines = [
        "# loopbench benchmark", "",
        f"Machine: {m['cores']} cores, {m['memory_gb']} GB, {m['platform']}; Python {m['python']}. "
        f"Date: {results['date']}. Revision {m['loopbench_revision']}. Written by `make bench` "
        "(`loopbench bench`); every number below is in `results.json` beside this file.", "",
        "## loopbench against a plain script", "",
        f"Scenario `{PLAIN_SCENARIO}`, each framework's default variant. The plain script (`loopbench/plain/`, no "
        "loopbench code) and loopbench's full run (a warm worker, the ledger, judging, the record, the results "
        f"line, the trace), interleaved in blocks of {BLOCK} runs, the order alternating, after a warm-up of "
        "each. Wall: around the whole run. CPU: the bench process (the model server, and loopbench's runner) + "
        "the client process (the plain script, or loopbench's worker and its children). Ratio: median "
        "loopbench / median plain, with its 95 % bootstrap interval over the pairs; pairs are added (from "
        f"{MIN_PAIRS}, up to {MAX_PAIRS} or {PAIR_BUDGET_S:.0f} s) until both intervals are narrower than "
        f"{GOAL_RATIO - 1:.2f} and the verdict is decided. "
        f"Goal: ≤ {GOAL_RATIO:.2f} for wall and CPU; the verdict is `met` when both intervals lie at or below "
        "it, `not met` when either lies above it, `undecided` otherwise. loopbench's own CPU per run is its "
        "part in the worker (the ledger calls; the Vercel adapter's whole Python side) plus the runner's "
        "bookkeeping before judging, from the records (which keep CPU seconds to the millisecond).", "",
        "| framework | pairs | plain ms | loopbench ms | wall ratio [95 %] | plain CPU ms | loopbench CPU ms "
        "| CPU ratio [95 %] | loopbench's own CPU ms / run | goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fid, f in results["frameworks"].items():
        sw, sc = f["plain_ratio_spread"]["wall"], f["plain_ratio_spread"]["cpu"]
        lines.append(f"| {fid} | {f['pairs']} | {f['plain_wall_ms']} | {f['loopbench_wall_ms']} | "
                     f"{f['plain_wall_ratio']} [{sw[0]}, {sw[1]}] | {f['plain_cpu_ms']} | {f['loopbench_cpu_ms']} | "
                     f"{f['plain_cpu_ratio']} [{sc[0]}, {sc[1]}] | {f['loopbench_cpu_ms_per_run']} | "
                     f"{goal_verdict(sw, sc)} |")
    lines += ["", "Where loopbench's extra wall time goes (medians over the same runs): *around the adapter* is "
              "the whole run less the adapter's segment time in the worker — the runner's registration, the "
              "job's trip to the worker and back, judging, the record, the results line and the trace; *inside "
              "the adapter* is the adapter's segment time less the plain script's run — the ledger calls where "
              "the plain script calls plain functions, the adapter's translation and what it observes (for "
              "Vercel, also the hop from the Python worker to the Node driver).", "",
              "| framework | gap ms | around the adapter ms | inside the adapter ms | loopbench's CPU in the "
              "worker ms / run |", "|---|---|---|---|---|"]
    for fid, f in results["frameworks"].items():
        lines.append(f"| {fid} | {f['gap_ms']} | {f['around_adapter_ms']} | {f['inside_adapter_extra_ms']} | "
                     f"{f['worker_own_cpu_ms_per_run']} |")
    lines += ["", "## The suite against its lower bound", "",
              "The lower bound is max(longest single run, whole-process-tree CPU / cores), both measured in the "
              "same run: the tree is `loopbench run` with every worker, SDK start-up, Claude CLI and Node driver, "
              f"and the report it writes. Goal: wall ≤ {GOAL_SUITE:.2f} × the bound.", "",
              "| selection | runs | wall s | tree CPU s | longest run s | lower bound s | wall / bound | cells "
              "changed vs published |", "|---|---|---|---|---|---|---|---|"]
    for name, key in (("full suite", "suite"), ("`--quick`", "quick")):
        s = results[key]
        lines.append(f"| {name} | {s['runs']} | {s['wall_s']} | {s['tree_cpu_s']} | {s['longest_run_s']} "
                     f"({s['longest_run']}) | {s['lower_bound_s']} | {s['wall_to_bound']} | "
                     f"{s.get('cells_changed_vs_published', '–')} |")
    lines += ["", "## Framework cost per model call (from the full suite's records)", "",
              "The framework's CPU is the workers' CPU less loopbench's own part in them (the ledger calls; the "
              "Vercel adapter's whole Python side); loopbench's own CPU per run (that part plus the runner's "
              "bookkeeping) is shown apart. Runs with "
              "scripted delays are left out.", "",
              "| column | wall ms / model call | framework CPU ms / model call | loopbench CPU ms / run "
              "| peak RSS MB |",
              "|---|---|---|---|---|"]
    for col, c in results["cost_per_model_call"].items():
        lines.append(f"| {col} | {c['ms_per_model_call']} | {c['framework_cpu_ms_per_model_call']} | "
                     f"{c['loopbench_cpu_ms_per_run']} | {c['peak_rss_mb']} |")
    if startup := results.get("startup"):
        lines += ["", "## The command line's start-up", "",
                  f"Each command started as a user starts it (the `loopbench` entry point, Python's bytecode cache "
                  f"on), after one warm-up start; the median of {next(iter(startup.values()))['starts']} starts. "
                  "Goal: under 1 s of wall time on an idle machine.", "",
                  "| command | wall s | CPU s | slowest start s | goal |", "|---|---|---|---|---|"]
        lines += [f"| `{cmd}` | {c['wall_s']} | {c['cpu_s']} | {c['wall_max_s']} | "
                  f"{'met' if c['met'] else 'not met'} |" for cmd, c in startup.items()]
    if guard := results.get("guard"):
        lines += ["", "## The guard's own cost per call", "",
                  "loopbench.guard's checks around one call (docs/guard.md), the caps far away so every check runs "
                  "in full: a model call is the reservation and its settling; a tool call adds the approval, "
                  "unknown-write and stall checks and the output bound. Over HTTP: the same through the guard's "
                  "service on 127.0.0.1, as a Node framework's hooks call it (two requests per call).", "",
                  "| call | p50 µs | p99 µs |", "|---|---|---|"]
        lines += [f"| {what.replace('_', ' ')} | {c['p50_us']} | {c['p99_us']} |" for what, c in guard.items()]
    lines += ["", "## The model server", "",
              "| p50 | p99 | requests/s (concurrent runs) | goal |", "|---|---|---|---|",
              f"| {srv['p50_ms']} ms | {srv['p99_ms']} ms | {srv['rps']} ({srv['concurrent_runs']} runs) "
              "| p50 < 2 ms |", ""]
    return "\n".join(lines)



# ---- the README's speed section, in a user's terms: every number from results.json (tests/test_readme.py
# checks that the README holds exactly this text for the committed results)
def _name(fid: str) -> str:
    """How prose names a framework: its adapter's `display_name`, else its id."""
    try:
        return adapter_class(fid).display_name or fid
    except (BadInput, ImportError):  # a framework not registered here (a plug-in's results)
        return fid


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _span(values: list[float], unit: str = " ms") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:g}{unit}" if lo == hi else f"{lo:g}–{hi:g}{unit}"


def _duration(seconds: float) -> str:
    """`9 min 25 s`, `48 s`: how long a user waits."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{seconds:.0f} s"


def readme_speed(results: dict[str, Any]) -> str:
    """The README's "Speed" bullets for `results` (reports/bench/results.json), in a user's terms: how long a run
    takes, what loopbench adds to each, how fast the command line answers; the method is in reports/bench/."""
    frameworks = results["frameworks"]
    gaps = [f["gap_ms"] for f in frameworks.values()]
    plain = [f["plain_wall_ms"] for f in frameworks.values()]
    heaviest = max(frameworks, key=lambda fid: frameworks[fid]["plain_wall_ratio"])
    suite, quick = results["suite"], results["quick"]
    changed = suite["cells_changed_vs_published"] + quick["cells_changed_vs_published"]
    m = results["machine"]
    lines = [
        f"Measured by `make bench` (`loopbench bench`) on {m['cores']} cores at revision {m['loopbench_revision']} "
        f"({results['date'][:10]}); the numbers are in `reports/bench/results.json`, the method and the details "
        "per framework in `reports/bench/README.md`:",
        "",
        f"- **The whole suite** ({suite['runs']} runs: every scenario on every framework variant) takes "
        f"{_duration(suite['wall_s'])}; `--quick` ({quick['runs']} runs, the slow retry storms left out) "
        f"{_duration(quick['wall_s'])}. Its longest run, {suite['longest_run']}, takes "
        f"{_duration(suite['longest_run_s'])} by itself. "
        + ("Neither run changed a cell against `reports/published/`." if changed == 0 else
           f"The two runs changed {changed} cell(s) against `reports/published/`."),
        f"- **What loopbench adds to one run**: {_span(gaps)}, on runs that take {_span(plain)} in a plain script "
        "with no loopbench code (registering the run, the trip to its worker process, the tool ledger that keeps "
        "what really happened outside the framework, judging, the record). Against the fastest plain run that is "
        f"{frameworks[heaviest]['plain_wall_ratio']:g}× ({_name(heaviest)}); the ratio for each framework, "
        "against the goal of at most 1.10×, is in `reports/bench/README.md`.",
    ]
    if startup := results.get("startup"):
        said = ", ".join(f"`{cmd}` {c['wall_s']:g} s" for cmd, c in startup.items())
        at = results.get("startup_at")
        when = f", at revision {at['loopbench_revision']} ({at['date'][:10]})" if at else ""
        lines.append(f"- **The command line answers at once**: {said} (the median start on an idle machine{when}).")
    return "\n".join(lines)
