"""`loopbench merge`: shard results (or any results directories run alike) joined into one results set, checked
first by harness/results/merge.py, then its reports."""

from __future__ import annotations

from pathlib import Path

from loopbench.commands.common import out, say_open, warnings_printed, write_reports
from loopbench.harness.errors import BadInput, InputProblem


def merge(parts: list[Path], out_dir: Path, force: bool) -> None:
    """Check every part, then write `out_dir` (results.jsonl, traces, run directories) and its reports. BadInput,
    with every problem, before anything is written."""
    from loopbench.harness.results.history import refuse_existing
    from loopbench.harness.results.merge import Part, check, write_merged
    from loopbench.harness.results.shard import ShardManifest
    from loopbench.harness.results.store import RESULTS_NAME
    from loopbench.reports.load import load_records

    resolved = [p.resolve() for p in parts]
    if len(set(resolved)) != len(resolved):
        raise BadInput([InputProblem(" ".join(map(str, parts)), "", "a directory is given twice")])
    if out_dir.resolve() in resolved:
        raise BadInput([InputProblem(str(out_dir), "--out", "is one of the parts: merge into a new directory")])
    loaded: list[Part] = []
    problems: list[InputProblem] = []
    with warnings_printed():
        for p in parts:
            if not p.is_dir():
                problems.append(InputProblem(str(p), "", "not a results directory"))
                continue
            try:
                manifest = ShardManifest.read(p)
                empty = manifest is not None and not manifest.keys and not (p / RESULTS_NAME).exists()
                loaded.append(Part(p, [] if empty else load_records(p), manifest))  # a shard may hold no run
            except BadInput as exc:
                problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    check(loaded)
    refuse_existing(out_dir, force=force, resume=False)
    results = write_merged(loaded, out_dir)
    shards = [p.manifest for p in loaded if p.manifest is not None]
    what = f"the {len(shards)} shards of one selection" if shards else f"{len(loaded)} results directories"
    out.print(f"{sum(len(p.records) for p in loaded)} run(s) of {what} merged into {results}", markup=False,
              soft_wrap=True)
    say_open(write_reports(out_dir, "md,html,csv,json"))
