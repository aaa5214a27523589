"""2. The suite against its lower bound: the full suite (`loopbench run`, every available framework and variant,
default slots; then `--quick`) as a child process under a subreaper, so that the whole process tree's CPU is
counted; the bound is max(the longest single run, tree CPU / cores), both from the same run. And how many cells
of it changed behaviour against the published results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopbench.bench.stats import lower_bound_s

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


def _diff_cells(published: Path, new: str) -> int:
    """How many common cells changed behaviour against the published results (0 is the goal)."""
    from loopbench.reports.cells import cells
    from loopbench.reports.diff import cell_changes
    from loopbench.reports.load import load_results

    base, fresh = (cells(load_results(p).records) for p in (published, new))
    return len(cell_changes({c.key: c for c in base}, {c.key: c for c in fresh}))
