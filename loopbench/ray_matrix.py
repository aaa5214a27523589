"""`loopbench matrix --ray [ADDRESS]`: the version matrix as Ray tasks on whichever node has room (docs/matrix.md).

What runs where:
- the driver (this process, on a node of the cluster) submits one task per version set, or per shard of it
  (`--ray-shards N`: `loopbench run --shard K/N`, harness/results/shard.py), and a `Collector` actor pinned to
  its own node;
- each task, on the node Ray picks, builds or reuses the version set's environment there (`loopbench.matrix`,
  the node's own cache), runs `loopbench run` in it into a temporary directory and, as each record is written,
  sends it (with its trace) to the collector, which appends it to `OUT/runs/<set>/results.jsonl` on the
  driver's disk at once, dropping a run it already has;
- a task that fails, or whose node dies, is retried by Ray (`--ray-retries`, Ray's `max_retries`); the retry
  starts from the records the collector already holds (`loopbench run --continue`), so nothing recorded is lost
  or run twice. A task that fails on every attempt is that version set's `error`, with the reason; the other
  sets go on.
The driver then merges the sets' records and writes the drift report, as `loopbench matrix` does.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.matrix import SetResult, VersionSet, write_merged

LOCAL = "local"  # `--ray local`: start a Ray instance on this machine, every address on 127.0.0.1
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray takes 127.0.0.1 as every node's address
POLL_S = 0.5  # how often a task looks for new records in its run's results file


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The task's `loopbench run` gets SIGTERM when the task's worker dies (its node removed, killed): it stops
    cleanly, killing its own workers, instead of running on as an orphan."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _record_key(line: str) -> tuple[str, str, str, int]:
    obj = json.loads(line)
    return (obj["scenario"], obj["framework"], obj.get("variant", "default"), int(obj.get("repetition", 1)))


class Collector:
    """On the driver's node: every record each task sends, appended to `OUT/runs/<set>/results.jsonl` as it
    arrives (a run already there is dropped: a retry never duplicates one), its trace beside it, and each
    task attempt's node in `OUT/runs/<set>/attempts.jsonl`, each record's in `received.jsonl`."""

    def __init__(self, out: str):
        self.out = Path(out)
        self.keys: dict[str, set[tuple[str, str, str, int]]] = {}
        self.lines: dict[str, list[str]] = {}

    def begin(self, set_id: str, shard: str | None, node: str) -> list[str]:
        """An attempt starts on `node`: the records of its set already held (it runs only what is missing)."""
        home = self.out / "runs" / set_id
        home.mkdir(parents=True, exist_ok=True)
        with (home / "attempts.jsonl").open("a") as f:
            f.write(json.dumps({"shard": shard, "node": node, "at": time.time()}) + "\n")
        return list(self.lines.get(set_id, []))

    def add(self, set_id: str, line: str, trace_name: str | None, trace_text: str | None, node: str) -> bool:
        """Append a record sent from `node` (False: a run already held, dropped); `received.jsonl` says which
        node each record came from."""
        key = _record_key(line)
        seen = self.keys.setdefault(set_id, set())
        if key in seen:
            return False
        home = self.out / "runs" / set_id
        home.mkdir(parents=True, exist_ok=True)
        trace = (home / trace_name).resolve() if trace_name else None
        if trace is not None and trace_text is not None and trace.is_relative_to(home.resolve()):
            trace.parent.mkdir(parents=True, exist_ok=True)
            trace.write_text(trace_text)
        with (home / "results.jsonl").open("a") as f:
            f.write(line + "\n")
        with (home / "received.jsonl").open("a") as f:
            f.write(json.dumps({"run": list(key), "node": node}) + "\n")
        seen.add(key)
        self.lines.setdefault(set_id, []).append(line)
        return True

    def attempts(self, set_id: str) -> list[str]:
        path = self.out / "runs" / set_id / "attempts.jsonl"
        return [json.loads(x)["node"] for x in path.read_text().splitlines()] if path.exists() else []


def _push_new(work: Path, sent: int, set_id: str, collector: Any, node: str) -> int:
    """Send the records written since the first `sent` lines; the new count."""
    import ray

    from loopbench.harness.results.store import read_lines

    path = work / "results.jsonl"
    if not path.exists():
        return sent
    lines = read_lines(path).lines
    for line in lines[sent:]:
        trace = json.loads(line).get("trace")
        text = (work / trace).read_text() if trace and (work / trace).exists() else None
        ray.get(collector.add.remote(set_id, line, trace, text, node))
    return len(lines)


def run_set(package: str, version: str, args: list[str], shard: str | None, jobs: int, collector: Any
            ) -> dict[str, Any]:
    """One Ray task: a version set (or a shard of it) on this node, its records sent as they are written."""
    import ray

    from loopbench.matrix import Unavailable, prepare, run_command

    vs = VersionSet(package, version)
    node = ray.get_runtime_context().get_node_id()
    done: list[str] = ray.get(collector.begin.remote(vs.id, shard, node))
    try:
        env = prepare(vs)
    except Unavailable as exc:
        return {"status": "unavailable", "reason": str(exc), "node": node}
    work = Path(tempfile.mkdtemp(prefix=f"loopbench-ray-{vs.id}-"))
    if done:
        (work / "results.jsonl").write_text("".join(x + "\n" for x in done))
    cmd = [*run_command(env, [*args, *(["--shard", shard] if shard else []), "--jobs", str(jobs)], work),
           "--continue" if done else "--force"]
    with (work / "run.log").open("w") as log:
        proc = subprocess.Popen(cmd, env={**os.environ, **env.env}, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)
        sent = len(done)
        while (code := proc.poll()) is None:
            sent = _push_new(work, sent, vs.id, collector, node)
            time.sleep(POLL_S)
        sent = _push_new(work, sent, vs.id, collector, node)
    tail = (work / "run.log").read_text()[-600:]
    return {"status": "ran", "exit": code, "reused": env.reused, "node": node, "log": tail}


def _forwarded() -> dict[str, str]:
    """What every task gets from the driver's environment: loopbench's own settings (LOOPBENCH_*: the matrix's
    offline and hold switches, a shared cache) and Ray's loopback switch."""
    return {k: v for k, v in os.environ.items() if k.startswith("LOOPBENCH_") or k == LOOPBACK_ENV}


def connect(address: str) -> None:
    """Join the cluster at `address` (`auto`: the one this node belongs to), or start one here (`local`)."""
    if address == LOCAL:
        os.environ.setdefault(LOOPBACK_ENV, "0")  # read when ray is imported: a local Ray binds loopback only
    import ray

    kwargs: dict[str, Any] = {"include_dashboard": False} if address == LOCAL else {"address": address}
    try:
        ray.init(**kwargs, runtime_env={"env_vars": _forwarded()}, logging_level=logging.WARNING, log_to_driver=False,
                 namespace="loopbench-matrix")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BadInput([InputProblem("--ray", address, f"cannot join the Ray cluster: {exc}")]) from None


def run_matrix_ray(sets: list[VersionSet], out: Path, run_args: Callable[[VersionSet], list[str]], *,
                   address: str, shards: int = 1, cpus: int = 2, retries: int = 2) -> list[SetResult]:
    """Run each version set (each of its `shards`) as a Ray task of `cpus` CPUs, retried up to `retries` times;
    merge the records into `out/results.jsonl` and say in `out/sets.json` what ran, on which nodes."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise BadInput([InputProblem("--ray", address, "Ray is not installed: pip install 'loopbench[ray]'")]
                       ) from None
    out.mkdir(parents=True, exist_ok=True)
    for vs in sets:  # a fresh matrix: the sets' earlier results in OUT are replaced
        for name in ("results.jsonl", "attempts.jsonl", "received.jsonl"):
            with contextlib.suppress(FileNotFoundError):
                (out / "runs" / vs.id / name).unlink()
    connect(address)
    try:
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        collector: Any = ray.remote(num_cpus=0, max_restarts=0)(Collector).options(
            scheduling_strategy=here).remote(str(out.resolve()))
        task = ray.remote(run_set).options(num_cpus=cpus, max_retries=retries, retry_exceptions=True)
        pending: dict[Any, tuple[VersionSet, str | None]] = {}
        for vs in sets:
            for k in range(1, shards + 1):
                shard = f"{k}/{shards}" if shards > 1 else None
                pending[task.remote(vs.package, vs.version, run_args(vs), shard, cpus, collector)] = (vs, shard)
        print(f"matrix --ray: {len(pending)} task(s) for {len(sets)} version set(s) on "
              f"{len([n for n in ray.nodes() if n['Alive']])} node(s)", flush=True)
        outcome: dict[VersionSet, list[dict[str, Any]]] = {vs: [] for vs in sets}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            vs, shard = pending.pop(ready[0])
            try:
                got = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # every attempt failed: the set's error; the others go on
                got = {"status": "error", "reason": f"{type(exc).__name__}: {str(exc).strip()[-400:]}"}
            outcome[vs].append(got)
            print(f"matrix --ray: {vs.package} {vs.version}{f' shard {shard}' if shard else ''}: {got['status']}"
                  + (f" ({got['reason']})" if got.get("reason") else ""), flush=True)
        results = [_set_result(vs, got, ray.get(collector.attempts.remote(vs.id)), out)
                   for vs, got in outcome.items()]
    finally:
        ray.shutdown()
    write_merged(out, results)
    return results


def _set_result(vs: VersionSet, got: list[dict[str, Any]], attempts: list[str], out: Path) -> SetResult:
    from loopbench.matrix import set_lines

    runs = len(set_lines(out, vs))
    bad = [g for g in got if g["status"] != "ran"]
    reused = all(g.get("reused") for g in got if g["status"] == "ran")
    if bad:
        status = "unavailable" if all(g["status"] == "unavailable" for g in bad) else "error"
        return SetResult(vs, status, "; ".join(dict.fromkeys(str(g.get("reason")) for g in bad)), runs=runs,
                         reused=reused, attempts=attempts)
    if not runs:
        return SetResult(vs, "unavailable", f"its runs recorded nothing (exit {got[0].get('exit')}): "
                         f"{got[0].get('log', '')[-300:]}", attempts=attempts)
    return SetResult(vs, "ran", runs=runs, reused=reused, attempts=attempts)
