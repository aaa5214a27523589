"""Joining results directories into one results set (`loopbench merge`): what must hold first, checked on the
records and the shard manifests alone (pure), and the merged directory written.

Refused, each with the directories it concerns: a run (scenario, framework, variant, repetition) in two parts;
records of different loopbench revisions, framework versions or package versions; a scenario run from two
different files (its digest); and, for shards (`run --shard K/N`, harness/results/shard.py), a missing shard, a
shard given twice, shards of different selections, or a shard whose runs are not all recorded. Parts without a
manifest (ordinary results directories) merge under the same rules but the shard ones: nothing says what they
should hold.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.record import RunRecord
from loopbench.harness.results.shard import MANIFEST_NAME, ShardManifest
from loopbench.harness.results.store import RESULTS_NAME, TaskKey


@dataclass(frozen=True)
class Part:
    dir: Path
    records: list[RunRecord]
    manifest: ShardManifest | None


def key(r: RunRecord) -> TaskKey:
    return (r.scenario, r.framework, r.variant, r.repetition)


def _named(k: TaskKey) -> str:
    return f"{k[0]} × {k[1]}:{k[2]} r{k[3]}"


def _few(items: Sequence[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


# what every record of a merge must share with the others of its group: (what, the group, its value)
_ALIKE: list[tuple[str, Callable[[RunRecord], str], Callable[[RunRecord], str]]] = [
    ("loopbench revision", lambda r: "",
     lambda r: f"{r.loopbench_version} ({r.environment.get('loopbench_revision', 'unknown')})"),
    ("framework version", lambda r: r.framework, lambda r: f"{r.framework} {r.framework_version}"),
    ("package versions", lambda r: r.framework,
     lambda r: f"{r.framework}: " + ", ".join(f"{k}={v}" for k, v in sorted(r.packages.items()))),
    ("scenario file", lambda r: r.scenario, lambda r: f"{r.scenario} {(r.scenario_digest or '')[:12]}"),
]


def problems(parts: Sequence[Part]) -> list[InputProblem]:
    """Everything that keeps `parts` from being one results set (empty: they merge)."""
    found: list[InputProblem] = []
    found += _shard_problems(parts)
    where: dict[TaskKey, list[Path]] = defaultdict(list)
    for p in parts:
        for r in p.records:
            where[key(r)].append(p.dir)
    twice = sorted(k for k, dirs in where.items() if len(dirs) > 1)
    if twice:
        dirs = sorted({str(d) for k in twice for d in where[k]})
        found.append(InputProblem(" ".join(dirs), "runs", f"{len(twice)} run(s) recorded more than once: "
                                  f"{_few([_named(k) for k in twice])}; a run belongs to one part"))
    for what, group, value in _ALIKE:
        seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for p in parts:
            for r in p.records:
                seen[group(r)][value(r)].add(str(p.dir))
        for _, values in sorted(seen.items()):
            if len(values) > 1:
                said = "; ".join(f"{v} in {', '.join(sorted(d))}" for v, d in sorted(values.items()))
                found.append(InputProblem(" ".join(sorted({d for ds in values.values() for d in ds})), what,
                                          f"the parts differ: {said}; merge only results run alike"))
    return found


def _shard_problems(parts: Sequence[Part]) -> list[InputProblem]:
    shards = [p for p in parts if p.manifest is not None]
    if not shards:
        return []
    if len(shards) != len(parts):
        plain = [str(p.dir) for p in parts if p.manifest is None]
        return [InputProblem(" ".join(plain), MANIFEST_NAME, "not a shard (no shard.json) beside shards: merge the "
                             "shards of one selection, or results directories without shards")]
    found: list[InputProblem] = []
    first = shards[0].manifest
    assert first is not None
    other = [str(p.dir) for p in shards if p.manifest and (p.manifest.selection, p.manifest.shard.count)
             != (first.selection, first.shard.count)]
    if other:
        found.append(InputProblem(" ".join(other), MANIFEST_NAME, f"a shard of another selection than {shards[0].dir} "
                                  f"(shard {first.shard}): every shard must run the same selection, scenarios and "
                                  "--repeat, with its own K of the same N"))
        return found
    by_index: dict[int, list[Path]] = defaultdict(list)
    for p in shards:
        assert p.manifest is not None
        by_index[p.manifest.shard.index].append(p.dir)
    n = first.shard.count
    for k, dirs in sorted(by_index.items()):
        if len(dirs) > 1:
            found.append(InputProblem(" ".join(map(str, dirs)), MANIFEST_NAME, f"shard {k}/{n} given more than once"))
    missing = [k for k in range(1, n + 1) if k not in by_index]
    if missing:
        found.append(InputProblem(" ".join(str(p.dir) for p in shards), MANIFEST_NAME,
                                  f"shard {_few([f'{k}/{n}' for k in missing])} missing: run it with `loopbench run "
                                  f"--shard K/{n}` and the same selection, then merge all {n}"))
    for p in shards:
        assert p.manifest is not None
        want: set[TaskKey] = {(k[0], k[1], k[2], k[3]) for k in p.manifest.keys}
        have = {key(r) for r in p.records}
        lacking = sorted(k for k in want if k not in have)
        foreign = sorted(k for k in have if k not in want)
        if lacking:
            found.append(InputProblem(str(p.dir), RESULTS_NAME, f"shard {p.manifest.shard} is incomplete: "
                                      f"{len(lacking)} of its {len(want)} runs not recorded "
                                      f"({_few([_named(k) for k in lacking])}); `loopbench run --shard "
                                      f"{p.manifest.shard} --out {p.dir} --continue` with its selection runs them"))
        if foreign:
            found.append(InputProblem(str(p.dir), RESULTS_NAME, f"{len(foreign)} run(s) not of shard "
                                      f"{p.manifest.shard}: {_few([_named(k) for k in foreign])}"))
    return found


def check(parts: Sequence[Part]) -> None:
    """BadInput with every problem, before anything is written."""
    if found := problems(parts):
        raise BadInput(found)


def write_merged(parts: Sequence[Part], out: Path) -> Path:
    """OUT/results.jsonl (the parts' records in the order given), each run's trace and run directory; returns the
    results file. The caller has checked the parts (`check`)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(exist_ok=True)
    for p in parts:
        for r in p.records:
            for rel in filter(None, (r.trace, f"runs/{r.run_id}")):
                src, dst = p.dir / rel, out / rel
                if src.is_dir():
                    shutil.copytree(src, dst, dirs_exist_ok=True)
                elif src.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)
    results = out / RESULTS_NAME
    tmp = results.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(r.model_dump_json() + "\n" for p in parts for r in p.records))
    tmp.replace(results)
    return results
