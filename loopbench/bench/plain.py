"""1. loopbench against a plain script, per framework (its default variant): the framework's committed plain
script (its adapter's `plain_script`, in loopbench/plain/: no loopbench code, the framework driven as its docs
show; started by the adapter's `plain_command`) and loopbench's full business task run `support_draft_completes`
against the same scripted server, interleaved in blocks, paired run by run (the package's docstring says how).
"""

from __future__ import annotations

import json
import secrets
import statistics
import subprocess
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from loopbench.bench.stats import bootstrap_interval, ratio_of_medians, settled
from loopbench.harness.adapter import BUILTIN_ADAPTERS, adapter_class
from loopbench.harness.model_server import running
from loopbench.harness.run.environment import child_environment
from loopbench.harness.run.runner import RunPlan, Suite
from loopbench.harness.scenario import Scenario, load_scenarios

PLAIN_SCENARIO = "support_draft_completes"
PLAIN_RUN = "plain-"  # the run-id prefix of the plain script's runs
BLOCK = 5  # runs of one side in a row, in the plain-script comparison
MIN_PAIRS, MAX_PAIRS, PAIR_BUDGET_S = 20, 80, 150.0  # per framework: pairs at least, at most, and a time budget


def plain_scripts() -> dict[str, str]:
    """Framework id -> its plain script's file name in loopbench/plain/ (each built-in adapter's `plain_script`),
    in the registry's order."""
    found = {fid: adapter_class(fid).plain_script for fid in BUILTIN_ADAPTERS}
    return {fid: name for fid, name in found.items() if name is not None}


def plain_script_path(framework: str) -> Path:
    name = adapter_class(framework).plain_script
    if name is None:
        raise LookupError(f"{framework} has no plain script (its adapter declares no `plain_script`)")
    return Path(str(resources.files("loopbench") / "plain" / name))


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    requests: int
    adapter_s: float | None = None  # loopbench's run: the adapter's segment and set-up time, inside the worker


class PlainProcess:
    """A plain script in a warm process of its own: one JSON request per line in, one answer per line out."""

    def __init__(self, framework: str, work: Path):
        self.framework = framework
        argv = adapter_class(framework).plain_command(plain_script_path(framework), work)
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
                        # the model the default idiom sends (the model table's, for a home provider's class)
                        "model": adapter_class(plain.framework).model_id(scenario),
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
    # the adapter's own time: its segments and their set-up (Adapter.prepare, outside the segment's clock)
    return Sample(wall, main_cpu + (record.counters.cpu_s or 0.0), record.counters.model_requests_observed or 0,
                  sum(seg.elapsed_s + (seg.prepare_s or 0.0) for seg in record.segments)), record


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

