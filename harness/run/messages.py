"""The messages between the runner and a worker process: one `WorkerJob` per line on the worker's stdin, one
`WorkerAnswer` per line on its protocol channel. Typed, so both sides validate what they read."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loopbench.harness.record import SegmentResult


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobContext(_Message):
    """The `RunContext` of one segment, as sent to the worker (see harness/adapter.py for each field)."""

    run_id: str
    api_key: str
    base_url: str
    ledger_token: str
    variant: str = "default"
    work_dir: Path
    snapshot_dir: Path
    task_dir: Path


class WorkerJob(_Message):
    """`warm` loads the framework's SDK and, given a warm-up scenario and its context, runs the variant's idiom on
    it once (timed apart from any run); `run` / `resume` run one segment."""

    op: Literal["warm", "run", "resume"]
    framework: str
    # the framework's registered "module:Class", from the runner's registry: the worker imports it, so a plug-in
    # or a --loop-cmd adapter needs nothing in the worker's environment
    adapter: str
    variant: str = "default"
    scenario_file: str | None = None
    ctx: JobContext | None = None
    snapshot: Path | None = None  # resume: a copy of the pause snapshot
    decisions: dict[str, str] = Field(default_factory=dict)  # resume: scripted call id -> approve | reject


class WorkerAnswer(_Message):
    """`ok`: the segment (for run / resume) with the worker's measurements; otherwise the adapter's or the
    harness's error (a bug, not framework behaviour) with its traceback."""

    ok: bool
    pid: int | None = None
    segment: SegmentResult | None = None
    elapsed_s: float = 0.0
    prepare_s: float | None = None  # the adapter's set-up before the segment's clock (Adapter.prepare)
    prepare_cpu_s: float = 0.0  # its CPU (a live child's included): loopbench's own, per task
    cpu_s: float = 0.0
    own_cpu_s: float = 0.0  # the part of cpu_s that was loopbench's own code (`own_work`)
    peak_rss_mb: float = 0.0
    # set by the pool, not the worker: the time the worker spent warming for this job's idiom just before it
    warm_s: float | None = None
    error: str | None = None
    traceback: str = ""
