"""`loopbench bench`: loopbench's own cost, measured by `loopbench.bench`; this prints what it found."""

from __future__ import annotations

import json
from pathlib import Path

from loopbench.commands.common import out


def bench(out_dir: Path, suite: bool, published: Path, startup_only: bool = False, guard_only: bool = False) -> None:
    """Run the benchmark into `out_dir`: its markdown with the suite runs, else its results as JSON (only the
    start-up's with `startup_only`, only the guard's cost with `guard_only`)."""
    from loopbench.bench import markdown, run_bench, run_guard, run_startup

    if guard_only:
        print(json.dumps(run_guard(out_dir)["guard"], indent=2))
        out.print(f"written: {out_dir / 'results.json'}")
        return
    if startup_only:
        print(json.dumps(run_startup(out_dir, published)["startup"], indent=2))
        out.print(f"written: {out_dir / 'results.json'}")
        return
    results = run_bench(out_dir, include_suite=suite, published=published)
    if suite:
        print(markdown(results))
    else:
        print(json.dumps(results, indent=2))
    out.print(f"written: {out_dir / 'results.json'}")
