"""`loopbench run --shard K/N`: a deterministic, balanced share of the selected runs, and the manifest that lets
`loopbench merge` check the shards fit together.

Every shard computes the same assignment from the same selection: the runs in the runner's order, each with its
expected duration from what the scenario and the framework declare (never from a clock), handed out longest
first to the shard with the least expected time so far (ties: the earlier run, the lower shard). Runs of a
retry storm (a scenario tagged slow: the framework's declared retry window, 300 s for Claude's CLI) are the
longest, so they spread over the shards before anything else. Within a shard the runner keeps its usual
framework-major order.

The manifest (`DIR/shard.json`) names the shard, a digest of the whole selection (every run's key and its
scenario's digest: two shards of different selections or scenario files do not merge) and this shard's keys
(so a merge knows when a shard's runs are missing).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.scenario import Scenario

T = TypeVar("T")
MANIFEST_NAME = "shard.json"
RUN_BASE_S = 1.0  # a segment's own time beside what it waits for (start, model turns, judging), measured ~0.3-2 s


class Shard(BaseModel):
    """Shard `index` of `count` (1-based, as written: `2/3`)."""

    model_config = ConfigDict(frozen=True)
    index: int = Field(ge=1)
    count: int = Field(ge=1, le=1000)

    @classmethod
    def parse(cls, text: str, source: str = "--shard") -> Shard:
        found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not found or not 1 <= int(found.group(1)) <= int(found.group(2)) <= 1000:
            raise BadInput([InputProblem(source, text, "expected K/N with 1 <= K <= N <= 1000 (e.g. 2/3)")])
        return cls(index=int(found.group(1)), count=int(found.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def expected_seconds(scenario: Scenario, retry_window_s: float) -> float:
    """What a run of `scenario` is expected to take, from declarations only: a base per segment, the script's
    own waits (cut at the deadline, where the run stops), and the framework's declared retry window for a retry
    storm (tagged slow), its upper bound."""
    waits = scenario.scripted_delay_s()
    if scenario.limits.deadline_s is not None:
        waits = min(waits, scenario.limits.deadline_s)
    storm = retry_window_s if "slow" in scenario.tags else 0.0
    return RUN_BASE_S * (1 + len(scenario.resumes)) + waits + storm


def assign(costs: Sequence[float], count: int) -> list[int]:
    """The shard (1-based) of each item: longest expected first, to the least loaded shard (LPT). Pure and
    deterministic: ties go to the earlier item and the lower shard."""
    load = [0.0] * count
    shard_of = [0] * len(costs)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        target = min(range(count), key=lambda k: (load[k], k))
        load[target] += costs[i]
        shard_of[i] = target + 1
    return shard_of


def share(items: Sequence[T], shard: Shard, cost: Callable[[T], float]) -> list[T]:
    """The items of `shard`, in their given order."""
    shard_of = assign([cost(t) for t in items], shard.count)
    return [t for t, k in zip(items, shard_of, strict=True) if k == shard.index]


TaskKeyList = list[tuple[str, str, str, int]]


class ShardManifest(BaseModel):
    """DIR/shard.json: which share of which selection this results directory holds."""

    model_config = ConfigDict(frozen=True)
    shard: Shard
    selection: str = Field(description="sha256 of every run key of the whole selection with its scenario digest")
    runs: int = Field(description="runs in the whole selection")
    keys: TaskKeyList = Field(description="this shard's runs: (scenario, framework, variant, repetition)")
    expected_s: float = Field(description="this shard's expected time, the sum of its runs' expected durations")

    def write(self, out_dir: Path) -> None:
        (out_dir / MANIFEST_NAME).write_text(self.model_dump_json(indent=1) + "\n")

    @classmethod
    def read(cls, out_dir: Path) -> ShardManifest | None:
        path = out_dir / MANIFEST_NAME
        if not path.exists():
            return None
        try:
            return cls.model_validate_json(path.read_text())
        except ValueError as exc:
            raise BadInput([InputProblem(str(path), "", f"not a shard manifest: {exc}")]) from None


def selection_digest(keys: Sequence[tuple[str, str, str, int]], scenario_digests: dict[str, str]) -> str:
    body = json.dumps([[*k, scenario_digests.get(k[0], "")] for k in keys])
    return hashlib.sha256(body.encode()).hexdigest()
