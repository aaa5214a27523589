"""`loopbench matrix --ray ADDRESS` on a Ray cluster of two nodes on this machine (Ray's own multi-node test
utility, `ray.cluster_utils.Cluster`, every address on 127.0.0.1): a two-release matrix through it equals the
same matrix run without Ray, set by set (`loopbench diff` exit 0); and with a node removed while its task is
running, that task is retried on the other node from the records already sent, with no run lost or recorded
twice. The version sets' environments are built offline from the checkout's uv cache, as in test_matrix.py.
The collector's rules (a run kept once, a retry starting from what is held) and a set's status are unit tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopbench.matrix import VersionSet
from loopbench.ray_matrix import Collector, _set_result
from loopbench.reports.load import load_records
from tests import offline_fixtures

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
# no timing-sensitive scenario: the tasks of two nodes share this machine's 2 cores
SELECTION = ["-f", "openai-agents:default", "-s", "support_draft_completes", "-s", "runaway_step_limit",
             "-s", "approval_pause", "-s", "denied_action", "-s", "repeated_empty_search", "-s", "token_budget"]
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 100 * 2**20}
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # Ray's own switch: every node address on 127.0.0.1


def _line(scenario: str, repetition: int = 1) -> str:
    return json.dumps({"scenario": scenario, "framework": "openai-agents", "variant": "default",
                       "repetition": repetition, "trace": f"traces/{scenario}.jsonl"})


def test_the_collector_keeps_each_run_once_and_hands_a_retry_what_it_holds(tmp_path):
    c = Collector(str(tmp_path))
    assert c.begin("openai-agents-1.0", None, "node-a") == []
    assert c.add("openai-agents-1.0", _line("a"), "traces/a.jsonl", "{}\n", "node-a")
    assert c.add("openai-agents-1.0", _line("b"), None, None, "node-a")
    assert c.begin("openai-agents-1.0", None, "node-b") == [_line("a"), _line("b")]  # the retry's starting point
    assert not c.add("openai-agents-1.0", _line("a"), None, None, "node-b")  # already held: dropped
    assert c.add("openai-agents-1.0", _line("a", 2), None, None, "node-b")  # another repetition is another run
    home = tmp_path / "runs" / "openai-agents-1.0"
    assert (home / "results.jsonl").read_text().splitlines() == [_line("a"), _line("b"), _line("a", 2)]
    assert (home / "traces" / "a.jsonl").read_text() == "{}\n"
    assert c.attempts("openai-agents-1.0") == ["node-a", "node-b"]
    assert [json.loads(x)["node"] for x in (home / "received.jsonl").read_text().splitlines()] == [
        "node-a", "node-a", "node-b"]


def test_a_set_is_an_error_only_when_a_task_failed_on_every_attempt(tmp_path):
    vs = VersionSet("openai-agents", "1.0")
    Collector(str(tmp_path)).add(vs.id, _line("a"), None, None, "n")
    ran = {"status": "ran", "exit": 0, "reused": True}
    assert _set_result(vs, [ran, ran], ["n"], tmp_path).status == "ran"
    failed = _set_result(vs, [ran, {"status": "error", "reason": "NodeDiedError: gone"}], ["n", "m", "k"], tmp_path)
    assert (failed.status, failed.reason, failed.runs) == ("error", "NodeDiedError: gone", 1)  # records kept
    gone = _set_result(vs, [{"status": "unavailable", "reason": "no such release"}], ["n"], tmp_path)
    assert gone.status == "unavailable"
    empty = _set_result(VersionSet("openai-agents", "2.0"), [{**ran, "exit": 1, "log": "boom"}], ["n"], tmp_path)
    assert empty.status == "unavailable" and "recorded nothing (exit 1)" in str(empty.reason)


def test_without_ray_installed_the_option_says_how_to_get_it(monkeypatch, tmp_path):
    from loopbench.harness.errors import BadInput
    from loopbench.ray_matrix import run_matrix_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(BadInput, match=r"Ray is not installed: pip install 'loopbench\[ray\]'"):
        run_matrix_ray([VersionSet("openai-agents", "1.0")], tmp_path, lambda vs: [], address="local")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    if (why := offline_fixtures.missing()) is not None:
        pytest.fail(why)
    env = {**os.environ, **LOOPBACK, "LOOPBENCH_CACHE": str(tmp_path_factory.mktemp("cache")),
           "LOOPBENCH_MATRIX_OFFLINE": "1"}
    offline_fixtures.use_project_caches(env)
    return env


def _matrix(env: dict[str, str], out: Path, *extra: str) -> subprocess.Popen[str]:
    releases = ",".join(offline_fixtures.matrix_releases())
    return subprocess.Popen([sys.executable, "-m", "loopbench.cli", "matrix", "--versions",
                             f"openai-agents={releases}", *SELECTION, "--out", str(out), *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _finish(proc: subprocess.Popen[str]) -> str:
    text, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, text[-4000:]
    return text


@pytest.fixture(scope="module")
def without_ray(env, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "mx"
    _finish(_matrix(env, out))
    return out


@pytest.fixture
def cluster() -> Iterator[object]:
    os.environ.update(LOOPBACK)  # read when ray is imported, in this process and the nodes it starts
    from ray.cluster_utils import Cluster

    made = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    try:
        yield made
    finally:
        made.shutdown()


def _sets(out: Path) -> dict[str, dict]:
    return {s["version"]: s for s in json.loads((out / "sets.json").read_text())}


def _same_as_without_ray(out: Path, plain: Path, env: dict[str, str]) -> None:
    assert {v: s["status"] for v, s in _sets(out).items()} == {v: s["status"] for v, s in _sets(plain).items()}
    for version in _sets(plain):
        runs = out / "runs" / f"openai-agents-{version}"
        keys = Counter((r.scenario, r.variant, r.repetition) for r in load_records(runs))
        assert set(keys.values()) == {1} and len(keys) == 6, keys  # every run once
        diff = subprocess.run([sys.executable, "-m", "loopbench.cli", "diff", str(plain / "runs" / runs.name),
                               str(runs)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
        assert diff.returncode == 0, diff.stdout[-3000:]
    assert sorted(r.run_id for r in load_records(out)) == sorted(
        r.run_id for v in _sets(out) for r in load_records(out / "runs" / f"openai-agents-{v}"))
    assert "## Drift" in (out / "report.md").read_text()


@pytest.mark.process
def test_a_two_release_matrix_in_shards_on_two_nodes_equals_it_without_ray(env, without_ray, cluster, tmp_path):
    cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    out = tmp_path / "mx"
    text = _finish(_matrix(env, out, "--ray", cluster.address, "--ray-cpus", "1", "--ray-shards", "2"))
    assert "4 task(s) for 2 version set(s) on 2 node(s)" in text  # each set's runs in two shards
    _same_as_without_ray(out, without_ray, env)
    assert all(len(s["attempts"]) == 2 for s in _sets(out).values())


@pytest.mark.process
def test_a_removed_node_s_task_is_retried_elsewhere_with_nothing_lost_or_twice(env, without_ray, cluster, tmp_path):
    victim = cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    victim_id = victim.node_id
    out = tmp_path / "mx"
    proc = _matrix(env, out, "--ray", cluster.address, "--ray-cpus", "1", "--ray-retries", "2")
    deadline = time.monotonic() + 600
    hit: str | None = None
    while hit is None and time.monotonic() < deadline and proc.poll() is None:
        for received in (out / "runs").glob("*/received.jsonl") if (out / "runs").exists() else []:
            if any(json.loads(x)["node"] == victim_id for x in received.read_text().splitlines()):
                hit = received.parent.name
        time.sleep(0.2)
    assert hit is not None, "no record came from the node to remove before the matrix ended"
    cluster.remove_node(victim, allow_graceful=False)  # its task is mid-run: at least one record sent
    _finish(proc)
    home = out / "runs" / hit
    from_victim = [json.loads(x) for x in (home / "received.jsonl").read_text().splitlines()]
    assert 1 <= sum(x["node"] == victim_id for x in from_victim) < 6, "the node died with runs still to do"
    attempts = _sets(out)[hit.removeprefix("openai-agents-")]["attempts"]
    assert attempts[0] == victim_id and len(attempts) >= 2 and victim_id not in attempts[1:], attempts
    _same_as_without_ray(out, without_ray, env)
