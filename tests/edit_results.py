"""A results file rewritten record by record: the doctored baselines and new sides the report, diff and plugin
tests compare against."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def rewritten(src: Path, dst: Path, edit: Callable[[dict], bool | None]) -> Path:
    """`dst/results.jsonl`: each record of `src/results.jsonl` after `edit` (which changes it in place; False
    drops it)."""
    dst.mkdir(parents=True, exist_ok=True)
    kept = []
    for line in (src / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if edit(r) is not False:
            kept.append(json.dumps(r))
    (dst / "results.jsonl").write_text("\n".join(kept) + "\n")
    return dst


def write_records(dst: Path, records: list) -> Path:
    """`dst/results.jsonl` holding `records` (RunRecords), one line each."""
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "results.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return dst
