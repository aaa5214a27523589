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


def readme_speed(results: dict[str, Any]) -> str:
    """The README's "Speed" bullets for `results` (reports/bench/results.json)."""
    frameworks = results["frameworks"]
    by_verdict: dict[str, list[str]] = {}
    for fid, f in frameworks.items():
        verdict = goal_verdict(f["plain_ratio_spread"]["wall"], f["plain_ratio_spread"]["cpu"])
        by_verdict.setdefault(verdict, []).append(
            f"{_name(fid)} ({f['plain_wall_ratio']:g}× the wall time, {f['plain_cpu_ratio']:g}× the CPU)")
    verdicts = "; ".join(f"{v} for {_listed(by_verdict[v])}" for v in ("met", "undecided", "not met")
                         if v in by_verdict)
    gaps = [f["gap_ms"] for f in frameworks.values()]
    around = [f["around_adapter_ms"] for f in frameworks.values()]
    plain = [f["plain_wall_ms"] for f in frameworks.values()]
    suite, quick = results["suite"], results["quick"]
    changed = suite["cells_changed_vs_published"] + quick["cells_changed_vs_published"]
    m = results["machine"]
    return "\n".join([
        f"`make bench` (`loopbench bench`) measured on {m['cores']} cores at revision {m['loopbench_revision']} "
        f"({results['date'][:10]}); every number below is in `reports/bench/results.json`, with the details in "
        "`reports/bench/README.md`:",
        "",
        f"- **A run through loopbench against the same run in a plain script** (`support_draft_completes`, each "
        f"framework's default idiom, no loopbench code in the script): the goal is ≤ {GOAL_RATIO:.2f}× and it is "
        f"{verdicts}. The plain runs take {_span(plain)}; loopbench adds {_span(gaps)} to each, "
        f"{_span(around)} of it around the adapter (registering the run, the trip to its worker process, judging, "
        "the record) and the rest inside it (each tool call goes through the ledger, which keeps the ground "
        "truth outside the framework; for a Node framework, the hop to its driver).",
        f"- **The whole suite** ({suite['runs']} runs) took {suite['wall_s']:g} s, {suite['wall_to_bound']:g}× its "
        f"lower bound of {suite['lower_bound_s']:g} s (its longest run, {suite['longest_run']}, "
        f"{suite['longest_run_s']:g} s); `--quick` ({quick['runs']} runs, the `slow` scenarios left out) took "
        f"{quick['wall_s']:g} s, {quick['wall_to_bound']:g}× its bound of {quick['lower_bound_s']:g} s. "
        + ("Neither run changed a cell against `reports/published/`." if changed == 0 else
           f"The two runs changed {changed} cell(s) against `reports/published/`."),
        "- **Each framework's own cost per model call** (the workers' CPU less loopbench's own part), loopbench's "
        "own CPU per run and peak memory are in `reports/bench/README.md` and in every report's "
        "cost-per-model-call table; so is the model server's latency.",
    ])
