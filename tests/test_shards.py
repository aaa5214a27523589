"""Shards: `run --shard K/N` takes a deterministic share balanced by declared duration (the retry storms spread
over the shards), and `merge` joins shards into one results set or refuses, naming why (a run twice, another
loopbench or framework version, a missing shard or run). The process test runs shards 1/3, 2/3 and 3/3 through
the command line and checks that the merged records equal an unsharded run's (`diff` exit 0)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopbench.commands.common import load_suite
from loopbench.harness.adapter import BUILTIN, REGISTRY, adapter_class
from loopbench.harness.errors import BadInput
from loopbench.harness.results.merge import Part, key, problems
from loopbench.harness.results.shard import Shard, ShardManifest, assign, expected_seconds, selection_digest, share
from loopbench.reports.load import load_records

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports_small"


def test_a_shard_is_written_k_of_n():
    assert Shard.parse("2/3") == Shard(index=2, count=3) and str(Shard.parse(" 1 / 1 ")) == "1/1"
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/1001"):
        with pytest.raises(BadInput, match="expected K/N"):
            Shard.parse(bad)


def test_longest_first_to_the_least_loaded_shard():
    costs = [1.0, 300.0, 1.0, 300.0, 5.0, 300.0, 2.0]
    shard_of = assign(costs, 3)
    assert sorted(shard_of[i] for i in (1, 3, 5)) == [1, 2, 3]  # the three storms: one per shard
    assert assign(costs, 3) == shard_of  # deterministic
    loads = [sum(c for c, k in zip(costs, shard_of, strict=True) if k == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= max(costs)
    assert assign([], 2) == [] and assign([3.0], 1) == [1]
    items = list("abcdefg")
    parts = [share(items, Shard(index=k, count=3), lambda t: costs[items.index(t)]) for k in (1, 2, 3)]
    assert sorted(x for p in parts for x in p) == items  # every item once
    assert all(p == sorted(p) for p in parts)  # each share keeps the given order


def test_the_built_in_suite_spreads_its_retry_storms_over_the_shards():
    """On the whole suite × every variant, each slow (retry storm) run of a framework with a long declared
    window goes to a different shard while there are shards free, and the shards' expected times differ by at
    most the longest run."""
    suite = load_suite(None)
    tasks = [(s, f, v) for f in REGISTRY if f in BUILTIN for v in adapter_class(f).variants() for s in suite]
    cost = [expected_seconds(s, adapter_class(f, v).capabilities.retry_window_s) for s, f, v in tasks]
    shard_of = assign(cost, 3)
    storms = sorted((c, i) for i, c in enumerate(cost) if "slow" in tasks[i][0].tags)
    assert storms, "the suite has retry storms (tagged slow)"
    top = sorted(range(len(cost)), key=lambda i: (-cost[i], i))[:3]
    assert {shard_of[i] for i in top} == {1, 2, 3}
    loads = [sum(c for c, k in zip(cost, shard_of, strict=True) if k == s) for s in (1, 2, 3)]
    assert max(loads) - min(loads) <= max(cost)


def test_expected_duration_reads_the_declared_waits():
    by_id = {s.id: s for s in load_suite(None)}
    storm = next(s for s in by_id.values() if "slow" in s.tags)
    assert expected_seconds(storm, 300.0) >= 300.0 > expected_seconds(storm, 0.0)
    plain = by_id["support_draft_completes"]
    assert expected_seconds(plain, 300.0) == expected_seconds(plain, 0.0) < 5


# ---- merge: the checks, on records of a small results set split into shards


def _shards(n: int = 3) -> list[Part]:
    records = load_records(DATA)
    keys = [key(r) for r in records]
    digest = selection_digest(keys, {r.scenario: r.scenario_digest or "" for r in records})
    shard_of = assign([1.0 + i % 4 for i in range(len(records))], n)
    parts = []
    for k in range(1, n + 1):
        mine = [r for r, s in zip(records, shard_of, strict=True) if s == k]
        manifest = ShardManifest(shard=Shard(index=k, count=n), selection=digest, runs=len(records),
                                 keys=[key(r) for r in mine], expected_s=0.0)
        parts.append(Part(Path(f"part{k}"), mine, manifest))
    return parts


def _said(parts: list[Part]) -> str:
    return "\n".join(str(p) for p in problems(parts))


def test_the_shards_of_one_selection_merge():
    parts = _shards()
    assert problems(parts) == []
    assert sum(len(p.records) for p in parts) == len(load_records(DATA))


def test_a_missing_shard_is_refused():
    parts = _shards()
    assert "shard 2/3 missing" in _said([parts[0], parts[2]])
    assert "shard 3/3 given more than once" in _said([*parts, Part(Path("again"), [], parts[2].manifest)])


def test_a_run_in_two_parts_is_refused():
    parts = _shards()
    stray = parts[0].records[0]
    said = _said([parts[0], Part(parts[1].dir, [*parts[1].records, stray], parts[1].manifest), parts[2]])
    assert "1 run(s) recorded more than once" in said and f"{stray.scenario} × " in said
    assert "not of shard 2/3" in said
    plain = [Part(Path("a"), parts[0].records, None), Part(Path("b"), [stray], None)]
    assert "recorded more than once" in _said(plain)  # results without shards: the same rule


def test_an_incomplete_shard_is_refused_with_the_command_that_completes_it():
    parts = _shards()
    cut = Part(parts[1].dir, parts[1].records[1:], parts[1].manifest)
    said = _said([parts[0], cut, parts[2]])
    assert "shard 2/3 is incomplete: 1 of its" in said and "--shard 2/3 --out part2 --continue" in said


def test_other_versions_are_refused():
    parts = _shards()
    older = [r.model_copy(update={"framework_version": "0.0.9"}) if r.framework == "langgraph" else r
             for r in parts[2].records]
    said = _said([parts[0], parts[1], Part(parts[2].dir, older, parts[2].manifest)])
    assert "framework version: the parts differ: langgraph 0.0.9 in part3" in said
    rev = [r.model_copy(update={"environment": {**r.environment, "loopbench_revision": "abc1234"}})
           for r in parts[2].records]
    assert "loopbench revision: the parts differ" in _said([parts[0], parts[1], Part(parts[2].dir, rev,
                                                                                      parts[2].manifest)])


def test_shards_of_another_selection_or_beside_plain_results_are_refused():
    parts = _shards()
    assert parts[1].manifest is not None
    other = parts[1].manifest.model_copy(update={"selection": "0" * 64})
    assert "a shard of another selection" in _said([parts[0], Part(parts[1].dir, parts[1].records, other),
                                                    parts[2]])
    assert "not a shard (no shard.json) beside shards" in _said([parts[0], parts[1],
                                                                 Part(parts[2].dir, parts[2].records, None)])


# ---- through the command line: three shards merged equal one unsharded run

SELECTION = ["-f", "pydantic-ai:default", "-f", "openai-agents:default", "-s", "support_draft_completes",
             "-s", "runaway_step_limit", "-s", "approval_pause", "-s", "tool_transient_error"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopbench.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.process
def test_three_shards_merge_into_the_unsharded_run(tmp_path):
    whole = _cli("run", *SELECTION, "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr[-2000:]
    for k in (1, 2, 3):
        done = _cli("run", *SELECTION, "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"shard {k}/3: " in done.stdout
    manifests = [json.loads((tmp_path / f"s{k}" / "shard.json").read_text()) for k in (1, 2, 3)]
    assert sorted(len(m["keys"]) for m in manifests) == [2, 3, 3]  # 8 runs over 3 shards
    missing = _cli("merge", str(tmp_path / "s1"), str(tmp_path / "s3"), "--out", str(tmp_path / "bad"))
    assert missing.returncode == 2 and "shard 2/3 missing" in missing.stderr
    assert not (tmp_path / "bad").exists()  # refused before anything is written
    merged = _cli("merge", *(str(tmp_path / f"s{k}") for k in (1, 2, 3)), "--out", str(tmp_path / "merged"))
    assert merged.returncode == 0, merged.stderr[-2000:]
    assert (tmp_path / "merged" / "report.md").exists()
    records = load_records(tmp_path / "merged")
    assert sorted(map(key, records)) == sorted(map(key, load_records(tmp_path / "whole")))
    assert all((tmp_path / "merged" / r.trace).exists() for r in records if r.trace)
    diff = _cli("diff", str(tmp_path / "whole"), str(tmp_path / "merged"))
    assert diff.returncode == 0, diff.stdout[-3000:]
    again = _cli("run", *SELECTION, "--shard", "1/3", "--out", str(tmp_path / "s2"), "--continue")
    assert again.returncode == 2 and "holds shard 2/3 of this selection, not shard 1/3" in again.stderr
