"""`loopbench bench`: what loopbench costs next to what a user would write, how close the suite runs to its lower
bound, and each framework's own cost per model call. Numbers, not timed tests: the results go to
reports/bench/results.json and a Markdown summary beside it.

Measured in one run:
1. **Against a plain script** (per framework, its default variant): a committed plain script
   (`loopbench/plain/`, no loopbench code: the framework driven directly, as its docs show) runs
   `support_draft_completes` against the same scripted server, in a warm process of its own; loopbench runs
   the same scenario as a full business task (registration, a warm worker, the ledger, judging, the record,
   the results line, the trace). Interleaved in blocks of 5 runs, the order alternating (plain first, then
   loopbench first), after one warm-up of each; run i of a block pairs with run i of the other side's
   block. Per run: wall time around the whole run as the bench sees it; CPU = the bench process's CPU over
   the run (it hosts the model server for both, and loopbench's runner) + the client side's (the plain
   process, or the worker with its children — the Node driver included). The ratio is median(loopbench) /
   median(plain); its spread is the 95 % bootstrap interval of that ratio over the pairs, and pairs are
   added until the interval is narrower than the 10 % the goal tests and lies on one side of the goal (or a
   cap or time budget is reached).
   The gap is split, from the same runs, into the time around the adapter (the whole run less the adapter's
   segment time in the worker) and the adapter's segment time beyond the plain script's run.
2. **The suite against its lower bound**: the full suite (`loopbench run`, every available framework and
   variant, default slots) as a child process under a subreaper, so that the whole process tree's CPU is
   counted (workers, their SDK start-ups, the Claude CLI, the Node driver, the report); the lower bound is
   max(the longest single run, tree CPU / cores), both from the same run. The same for `--quick`.
3. The model server's p50/p99 latency on one keep-alive connection and requests/s under concurrent clients.
4. Per framework: the framework's own CPU per model call (the workers' CPU less loopbench's own part in them),
   loopbench's own CPU per run, wall per model call and peak worker RSS, from the suite's records.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import platform
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.run.environment import child_environment, environment
from loopbench.harness.run.runner import RunPlan, Suite
from loopbench.harness.scenario import Scenario, load_scenarios

PLAIN_SCENARIO = "support_draft_completes"
PLAIN_RUN = "plain-"  # the run-id prefix of the plain script's runs
GOAL_RATIO = 1.10  # loopbench's run vs the plain script's, wall and CPU
GOAL_SUITE = 1.15  # the suite's wall vs its lower bound
BLOCK = 5  # runs of one side in a row, in the plain-script comparison
MIN_PAIRS, MAX_PAIRS, PAIR_BUDGET_S = 20, 80, 150.0  # per framework: pairs at least, at most, and a time budget
SERVER_SCENARIO = Scenario.model_validate({
    "id": "bench", "title": "bench", "category": "baseline", "prompt": "p", "tools": {},
    "script": [{"id": "answer", "text": "A short scripted answer, POL-7."}],
    "completion": {"final_text_contains": ["POL-7"]}, "expect": {"outcome": "completed"},
    "safety_cap": 10_000,  # the largest a scenario may set; server_numbers sends 3,100 requests
})
PLAIN_SCRIPTS = {"openai-agents": "openai_agents.py", "langgraph": "langgraph_agent.py",
                 "claude-agent-sdk": "claude_agent.py", "vercel-ai": "vercel_ai.mjs"}


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


# ---------------------------------------------------------------- the bound, and the ratio's spread
def lower_bound_s(longest_run_s: float, tree_cpu_s: float, cores: int) -> float:
    """No schedule can finish before its longest run, nor before the work's CPU spread over every core."""
    return max(longest_run_s, tree_cpu_s / max(cores, 1))


def goal_verdict(wall: list[float], cpu: list[float], goal: float = GOAL_RATIO) -> str:
    """From the two ratios' intervals: `met` (both at or below the goal), `not met` (either above), else
    `undecided` (more pairs would tell)."""
    if wall[1] <= goal and cpu[1] <= goal:
        return "met"
    if wall[0] > goal or cpu[0] > goal:
        return "not met"
    return "undecided"


def settled(wall: tuple[float, float], cpu: tuple[float, float], goal: float = GOAL_RATIO) -> bool:
    """Enough pairs: both intervals are narrower than the gap the goal tests, and the verdict is decided."""
    narrow = max(wall[1] - wall[0], cpu[1] - cpu[0]) < goal - 1
    return narrow and goal_verdict(list(wall), list(cpu), goal) != "undecided"


def ratio_of_medians(new: list[float], base: list[float]) -> float:
    return statistics.median(new) / statistics.median(base)


def bootstrap_interval(new: list[float], base: list[float], rounds: int = 2000, seed: int = 7
                       ) -> tuple[float, float]:
    """The 95 % interval of median(new) / median(base) over pairs resampled with replacement (a pair stays a
    pair: both were measured under the same load)."""
    rng = random.Random(seed)
    n = len(new)
    ratios = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(ratio_of_medians([new[i] for i in idx], [base[i] for i in idx]))
    ratios.sort()
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]


# ---------------------------------------------------------------- 3. the model server
def server_numbers(sequential: int = 2000, concurrent_runs: int = 50, per_run: int = 20) -> dict[str, float]:
    server = ModelServer()
    server.register_run("bench", "bench-key", SERVER_SCENARIO)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": "Bearer bench-key"}
    with running(server) as url:
        with httpx.Client(base_url=url, headers=headers, trust_env=False) as client:
            for _ in range(100):
                client.post("/v1/chat/completions", json=body).read()
            lat = []
            for _ in range(sequential):
                t = time.perf_counter()
                client.post("/v1/chat/completions", json=body).read()
                lat.append((time.perf_counter() - t) * 1000)

        async def load() -> float:
            async with httpx.AsyncClient(base_url=url, headers=headers, trust_env=False,
                                         limits=httpx.Limits(max_connections=64)) as c:
                async def one_run() -> None:
                    for _ in range(per_run):
                        r = await c.post("/v1/chat/completions", json=body)
                        r.raise_for_status()

                t = time.perf_counter()
                await asyncio.gather(*(one_run() for _ in range(concurrent_runs)))
                return time.perf_counter() - t

        wall = asyncio.run(load())
    return {"p50_ms": round(_pct(lat, 50), 3), "p99_ms": round(_pct(lat, 99), 3),
            "rps": round(concurrent_runs * per_run / wall, 1), "concurrent_runs": concurrent_runs}


# ---------------------------------------------------------------- 1. against a plain script
@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    requests: int
    adapter_s: float | None = None  # loopbench's run: the adapter's own segment time, inside the worker


class PlainProcess:
    """A plain script in a warm process of its own: one JSON request per line in, one answer per line out."""

    def __init__(self, framework: str, work: Path):
        script = resources.files("loopbench") / "plain" / PLAIN_SCRIPTS[framework]
        if framework == "vercel-ai":
            from loopbench.adapters import node_install

            home = node_install.ensure_installed()
            here = work / "plain-vercel"  # the script beside the locked node_modules, as a user's project has it
            here.mkdir(parents=True)
            (here / "plain.mjs").write_text(script.read_text())
            (here / "node_modules").symlink_to(home / "node_modules")
            argv = [str(home / "node_modules" / ".bin" / "node"), str(here / "plain.mjs")]
        else:
            argv = [sys.executable, str(script)]
        self.config_dir = work / f"plain-{framework}-config"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        with open(work / f"plain-{framework}.log", "w") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, stderr=log,
                                         env=child_environment(), cwd=work, start_new_session=True)
        ready = self._line()
        if not ready.get("ready"):
            raise RuntimeError(f"the plain {framework} script did not start: {ready}")

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the plain script exited with code {self.proc.wait()}")
        return json.loads(line)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({**request, "config_dir": str(self.config_dir)}) + "\n")
        self.proc.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _plain_run(plain: PlainProcess, scenario: Scenario, suite: Suite) -> Sample:
    run_id, key = f"{PLAIN_RUN}{secrets.token_hex(4)}", f"lb-{secrets.token_hex(8)}"
    suite.server.register_run(run_id, key, scenario)
    c0, t0 = time.process_time(), time.perf_counter()
    answer = plain.run({"base_url": f"{suite.base_url}/v1", "server_url": suite.base_url, "api_key": key,
                        "model": scenario.model.id,
                        "prompt": scenario.prompt, "max_turns": scenario.limits.max_model_calls})
    wall, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    requests = len(suite.server.requests(run_id))
    suite.server.unregister_run(run_id)
    if not answer.get("ok") or "POL-7" not in answer.get("text", ""):
        raise RuntimeError(f"the plain script did not complete the task: {answer}")
    return Sample(wall, main_cpu + answer["cpu_s"], requests)


def _loopbench_run(scenario: Scenario, suite: Suite, framework: str, variant: str, i: int
                   ) -> tuple[Sample, Any]:
    c0, t0 = time.process_time(), time.perf_counter()
    record = suite.run_task(scenario, framework, variant, i)
    suite.store.append(record)
    wall, main_cpu = time.perf_counter() - t0, time.process_time() - c0
    if record.outcome != "completed":
        raise RuntimeError(f"loopbench's run of {framework} did not complete: {record.outcome} "
                           f"{record.error_reason}")
    return Sample(wall, main_cpu + (record.counters.cpu_s or 0.0), record.counters.model_requests_observed or 0,
                  sum(seg.elapsed_s for seg in record.segments)), record


def _plain_ground_truth(ledger_status: Any) -> Any:
    def status(run_id: str, call_id: str) -> str | None:
        return "receipt" if run_id.startswith(PLAIN_RUN) else ledger_status(run_id, call_id)

    return status


def plain_numbers(frameworks: list[tuple[str, str]], work: Path, min_pairs: int = MIN_PAIRS,
                  max_pairs: int = MAX_PAIRS, budget_s: float = PAIR_BUDGET_S) -> dict[str, dict[str, Any]]:
    scenario = next(s for s in load_scenarios() if s.id == PLAIN_SCENARIO)
    out: dict[str, dict[str, Any]] = {}
    for framework, variant in frameworks:
        plan = RunPlan(scenarios=[scenario], variants=[(framework, variant)], jobs=1,
                       out_dir=work / f"lb-{framework}", show_progress=False)
        (plan.out_dir / "traces").mkdir(parents=True)
        suite = Suite(plan)
        # ground truth for the plain script's tools: plain functions that always return their result (the
        # ledger knows only loopbench's calls)
        suite.server.call_status = _plain_ground_truth(suite.ledger.call_status)
        plain = PlainProcess(framework, work)
        try:
            with running(suite.server) as base_url:
                suite.base_url = base_url
                _plain_run(plain, scenario, suite)  # warm-ups: imports, first connections, the worker's start
                _loopbench_run(scenario, suite, framework, variant, 0)
                plain_s: list[Sample] = []
                lb_s: list[Sample] = []
                records = []
                started = time.perf_counter()
                while len(plain_s) < max_pairs:
                    # blocks of BLOCK runs, the order alternating: switching process on every run slowed both
                    # sides alike by ~20 % (cold caches), which is the bench's artefact, not either's cost
                    first_plain = (len(plain_s) // BLOCK) % 2 == 0
                    for side in ((0, 1) if first_plain else (1, 0)):
                        for _ in range(BLOCK):
                            if side == 0:
                                plain_s.append(_plain_run(plain, scenario, suite))
                            else:
                                sample, record = _loopbench_run(scenario, suite, framework, variant, len(lb_s) + 1)
                                lb_s.append(sample)
                                records.append(record)
                    if len(plain_s) >= min_pairs:
                        wall = bootstrap_interval([s.wall_s for s in lb_s], [s.wall_s for s in plain_s])
                        cpu = bootstrap_interval([s.cpu_s for s in lb_s], [s.cpu_s for s in plain_s])
                        if settled(wall, cpu) or time.perf_counter() - started > budget_s:
                            break
        finally:
            plain.close()
            suite.close()
        out[framework] = _plain_summary(variant, plain_s, lb_s, records)
    return out


def _plain_summary(variant: str, plain: list[Sample], lb: list[Sample], records: list[Any]) -> dict[str, Any]:
    walls = ([s.wall_s for s in lb], [s.wall_s for s in plain])
    cpus = ([s.cpu_s for s in lb], [s.cpu_s for s in plain])
    wall_lo, wall_hi = bootstrap_interval(*walls)
    cpu_lo, cpu_hi = bootstrap_interval(*cpus)
    calls = statistics.median(s.requests for s in lb)
    plain_wall, lb_wall = statistics.median(walls[1]), statistics.median(walls[0])
    counters = [r.counters for r in records]
    return {
        "variant": variant,
        "pairs": len(plain),
        "plain_wall_ratio": round(ratio_of_medians(*walls), 3),
        "plain_cpu_ratio": round(ratio_of_medians(*cpus), 3),
        "plain_ratio_spread": {"wall": [round(wall_lo, 3), round(wall_hi, 3)],
                               "cpu": [round(cpu_lo, 3), round(cpu_hi, 3)],
                               "what": "95 % bootstrap interval of the ratio of medians over the pairs"},
        "plain_wall_ms": round(plain_wall * 1000, 1),
        "loopbench_wall_ms": round(lb_wall * 1000, 1),
        "plain_cpu_ms": round(statistics.median(cpus[1]) * 1000, 1),
        "loopbench_cpu_ms": round(statistics.median(cpus[0]) * 1000, 1),
        "requests_per_run": {"plain": statistics.median(s.requests for s in plain), "loopbench": calls},
        # the framework's own share of the worker's CPU, and loopbench's own work, per the records
        "framework_cpu_ms_per_model_call": round(statistics.median(
            ((c.cpu_s or 0) - (c.loopbench_worker_cpu_s or 0)) * 1000 / calls for c in counters), 1),
        "loopbench_cpu_ms_per_run": round(statistics.median(
            ((c.loopbench_worker_cpu_s or 0) + (c.loopbench_runner_cpu_s or 0)) * 1000 for c in counters), 1),
        # where loopbench's extra wall time goes: around the adapter (the runner's registration, the job's trip to
        # the worker and back, judging, the record, the trace) and inside it (the ledger calls instead of plain
        # functions, the adapter's translation and observation; Vercel's hop to the Node driver)
        "gap_ms": round((lb_wall - plain_wall) * 1000, 2),
        "around_adapter_ms": round(statistics.median(s.wall_s - (s.adapter_s or 0) for s in lb) * 1000, 2),
        "inside_adapter_extra_ms": round((statistics.median(s.adapter_s or 0 for s in lb) - plain_wall) * 1000, 2),
        "worker_own_cpu_ms_per_run": round(statistics.median(
            (c.loopbench_worker_cpu_s or 0) * 1000 for c in counters), 2),
        "peak_rss_mb": round(max(c.peak_rss_mb or 0 for c in counters), 1),
    }


# ---------------------------------------------------------------- 2. the suite against its lower bound
# Run as `python -c`: the whole tree's CPU, orphans included (a subreaper adopts them, so they are waited for).
_SUBREAPER = r"""
import ctypes, json, os, resource, signal, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphaned descendants become our children
t0 = time.perf_counter()
code = subprocess.call(sys.argv[1:])
wall = time.perf_counter() - t0
deadline = time.monotonic() + 30
while True:  # wait for every adopted orphan (its CPU joins ours); after 30 s, kill the stragglers
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        if time.monotonic() > deadline:
            for p in os.listdir("/proc"):
                try:
                    if p.isdigit() and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1] == str(os.getpid()):
                        os.kill(int(p), signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.05)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "wall_s": wall, "tree_cpu_s": r.ru_utime + r.ru_stime}))
"""


def suite_numbers(work: Path, quick: bool) -> dict[str, Any]:
    out_dir = work / ("suite-quick" if quick else "suite")
    argv = [sys.executable, "-c", _SUBREAPER, sys.executable, "-m", "loopbench.cli", "run", "--out", str(out_dir)]
    if quick:
        argv.append("--quick")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the suite run failed: {done.stderr[-2000:]}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    records = [json.loads(x) for x in (out_dir / "results.jsonl").read_text().splitlines()]
    longest = max(records, key=lambda r: r["counters"]["elapsed_s"] or 0)
    cores = os.cpu_count() or 1
    bound = lower_bound_s(longest["counters"]["elapsed_s"], measured["tree_cpu_s"], cores)
    return {
        "runs": len(records),
        "exit_code": measured["code"],
        "wall_s": round(measured["wall_s"], 1),
        "tree_cpu_s": round(measured["tree_cpu_s"], 1),
        "cores": cores,
        "longest_run_s": round(longest["counters"]["elapsed_s"], 1),
        "longest_run": f"{longest['scenario']} × {longest['framework']}:{longest['variant']}",
        "lower_bound_s": round(bound, 1),
        "wall_to_bound": round(measured["wall_s"] / bound, 3),
        "outcomes": {o: sum(r["outcome"] == o for r in records) for o in sorted({r["outcome"] for r in records})},
        "results": str(out_dir / "results.jsonl"),
    }


def cost_numbers(results: str) -> dict[str, dict[str, Any]]:
    from loopbench.reports.frames import cost_per_model_call
    from loopbench.reports.load import load_results

    return cost_per_model_call(load_results(results).records)


# ---------------------------------------------------------------- the summary
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
    lines += ["", "## The model server", "",
              "| p50 | p99 | requests/s (concurrent runs) | goal |", "|---|---|---|---|",
              f"| {srv['p50_ms']} ms | {srv['p99_ms']} ms | {srv['rps']} ({srv['concurrent_runs']} runs) "
              "| p50 < 2 ms |", ""]
    return "\n".join(lines)


def run_bench(out_dir: Path, include_suite: bool = True, published: Path | None = None) -> dict[str, Any]:
    env = environment()
    env.pop("node", None)
    results: dict[str, Any] = {
        "machine": {**env, "python": platform.python_version()},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    defaults = [(f, v) for f, v in resolve_selection([]) if v == "default"
                and adapter_class(f).unavailable_reason() is None]
    with tempfile.TemporaryDirectory(prefix="loopbench-bench-") as tmp:
        work = Path(tmp)
        results["server"] = server_numbers()
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


def _diff_cells(published: Path, new: str) -> int:
    """How many common cells changed behaviour against the published results (0 is the goal)."""
    from loopbench.reports.cells import cells
    from loopbench.reports.diff import cell_changes
    from loopbench.reports.load import load_results

    base, fresh = (cells(load_results(p).records) for p in (published, new))
    return len(cell_changes({c.key: c for c in base}, {c.key: c for c in fresh}))
