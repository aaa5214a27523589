"""`loopbench stability`: the timing-sensitive cells run again beside a CPU hog, each repetition compared with a
published run (loopbench/stability.py does the work; this prints what it found)."""

from __future__ import annotations

from pathlib import Path

from loopbench.commands.common import out


def stability(published: Path, out_dir: Path, repeat: int, framework: list[str] | None, hog: bool) -> int:
    """Run the check; the exit code: 0 every repetition matched its published cell, 1 otherwise."""
    from loopbench.reports.stability import stability_sentence
    from loopbench.stability import run_stability

    check = run_stability(published, out_dir, repeat=repeat, selection=framework, hog=hog,
                          show_progress=out.is_terminal)
    print(stability_sentence(check, None))
    for change in check.changed:
        print(f"changed: {change.scenario} × {change.column} r{change.repetition}: {'; '.join(change.changes)}")
    for cell in check.missing:
        print(f"not published: {cell}")
    out.print(f"written: {out_dir / 'stability.json'}")
    return 0 if check.holds else 1
