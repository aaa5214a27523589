"""The README's excerpt of the published matrix says what `reports/published/results.jsonl` says.

`python -m tests.test_readme` prints the excerpt from the published records, to paste after `make publish`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from loopbench.harness.record import column_of
from loopbench.reports.cells import cells
from loopbench.reports.load import load_records

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PUBLISHED = ROOT / "reports" / "published" / "results.jsonl"
MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}
# README column -> (framework, variant): each framework's default idiom, by the report's own column names (the
# report has every variant)
COLUMNS = {column_of(f, "default"): (f, "default") for f in (
    "claude-agent-sdk", "google-adk", "langgraph", "mastra", "openai-agents", "pydantic-ai", "vercel-ai")}
ROWS = ("runaway_step_limit", "default_limits", "token_budget", "cost_budget", "deadline_slow_model",
        "approval_approved_resume", "resume_twice", "resume_keeps_allowance", "denied_action", "tool_transient_error",
        "write_timeout_unknown", "model_transient_error", "model_outage")


def _published() -> dict[tuple[str, str, str], str]:
    out = {}
    for c in cells(load_records(PUBLISHED)):
        r = c.rep
        requests = r.counters.model_requests_observed
        out[(r.scenario, r.framework, r.variant)] = f"{MARK.get(r.verdict, '?')} {r.outcome} ({requests} req)"
    return out


def excerpt() -> str:
    published = _published()
    lines = ["| scenario | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for sid in ROWS:
        lines.append(f"| {sid} | " + " | ".join(published[(sid, *fv)] for fv in COLUMNS.values()) + " |")
    return "\n".join(lines)


def _readme_rows() -> dict[str, list[str]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scenario | claude-agent-sdk |"))
    cols = [c.strip() for c in lines[start].strip("|").split("|")][1:]
    assert cols == list(COLUMNS), cols
    rows = {}
    for line in lines[start + 2:]:  # the table's rows, up to its end
        m = re.match(r"\| ([a-z_]+) \| (.+) \|$", line)
        if not m:
            break
        rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_readme_excerpt_matches_the_published_records():
    published = _published()
    rows = _readme_rows()
    assert set(ROWS) <= set(rows), sorted(set(ROWS) - set(rows))
    for sid, shown in rows.items():
        expected = [published[(sid, *fv)] for fv in COLUMNS.values()]
        assert shown == expected, sid


def test_the_excerpt_check_can_fail(tmp_path, monkeypatch):
    """A changed cell in the README is caught."""
    changed = README.read_text(encoding="utf-8").replace("| denied_action | ✓", "| denied_action | ⚠", 1)
    fake = tmp_path / "README.md"
    fake.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "README", fake)
    try:
        test_readme_excerpt_matches_the_published_records()
    except AssertionError:
        return
    raise AssertionError("a changed README cell was not caught")


if __name__ == "__main__":
    print(excerpt())


def test_readme_speed_numbers_are_the_committed_bench_results() -> None:
    """The Speed section's figures and verdicts are those of reports/bench/results.json (rounded as written)."""
    import json

    from loopbench.bench import goal_verdict

    bench = json.loads((ROOT / "reports" / "bench" / "results.json").read_text())
    text = " ".join(README.read_text(encoding="utf-8").split())
    suite, quick = bench["suite"], bench["quick"]
    assert (f"the full suite took {suite['wall_s']:.0f} s against a bound of {suite['lower_bound_s']:.0f} s "
            f"({suite['wall_to_bound']:.2f}×") in text
    assert f"{quick['wall_s']:.0f} s against {quick['lower_bound_s']:.0f} s ({quick['wall_to_bound']:.2f}×:" in text
    frameworks = bench["frameworks"]
    verdicts = {k: goal_verdict(f["plain_ratio_spread"]["wall"], f["plain_ratio_spread"]["cpu"])
                for k, f in frameworks.items()}
    names = {"claude-agent-sdk": "the Claude Agent SDK", "langgraph": "LangGraph", "openai-agents": "OpenAI Agents",
             "vercel-ai": "the Vercel AI SDK"}
    said = {k: f"{names[k]} ({f['plain_wall_ratio']:.2f}× the wall time, {f['plain_cpu_ratio']:.2f}× the CPU)"
            for k, f in frameworks.items()}
    groups = [(v, [said[k] for k in names if verdicts[k] == v]) for v in ("met", "undecided", "not met")]
    assert f"At the committed revision it is {'; '.join(f'{v} for {_and(g)}' for v, g in groups if g)}." in text
    for k in (k for k in names if verdicts[k] == "undecided"):  # said with how far the bench went
        assert frameworks[k]["plain_ratio_spread"]["wall"][1] > 1.10
        assert f"{names[k][0].upper() + names[k][1:]}'s wall interval still reaches just past 1.10 after the bench's " \
            f"{frameworks[k]['pairs']} pairs" in text
    missed = [k for k in names if verdicts[k] == "not met"]
    if missed:
        gaps, around, plain = ([frameworks[k][key] for k in missed]
                               for key in ("gap_ms", "around_adapter_ms", "plain_wall_ms"))
        count = {1: "That one misses", 2: "Those two miss", 3: "Those three miss", 4: "All four miss"}[len(missed)]
        assert (f"{count} it by milliseconds on runs of {_span(plain, 0)} ms: loopbench's gap is {_span(gaps, 1)} "
                f"ms per run, of which {_span(around, 1)} ms is around the adapter") in text
    changed = {suite.get("cells_changed_vs_published"), quick.get("cells_changed_vs_published")}
    assert ("Neither run changed a cell" in text) == (changed == {0})


def test_the_bench_summary_is_written_from_its_results() -> None:
    """reports/bench/README.md says only what `loopbench bench` writes from the results.json beside it."""
    import json

    from loopbench.bench import markdown

    here = ROOT / "reports" / "bench"
    assert (here / "README.md").read_text() == markdown(json.loads((here / "results.json").read_text()))


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _span(values: list[float], digits: int) -> str:
    """A range as the README writes it: `lo–hi`, or one number when both round alike."""
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def test_the_readme_lists_every_outcome_and_verdict():
    """The README's "Outcomes and verdicts" names every value of the record's vocabulary."""
    from typing import get_args

    from loopbench.harness.record import Outcome, Verdict

    text = README.read_text(encoding="utf-8")
    part = text[text.index("## Outcomes and verdicts"):text.index("## The published matrix, condensed")]
    assert [o for o in get_args(Outcome) if f"`{o}`" not in part] == []
    assert [v for v in get_args(Verdict) if f"`{v}`" not in part] == []
