"""The README's excerpt of the published matrix says what `reports/published/results.jsonl` says.

`python -m tests.test_readme` prints the excerpt from the published records, to paste after `make publish`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from loopbench.reports.cells import cells
from loopbench.reports.load import load_records

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PUBLISHED = ROOT / "reports" / "published" / "results.jsonl"
MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}
# README column -> (framework, variant)
COLUMNS = {
    "claude": ("claude-agent-sdk", "default"), "claude:can-use-tool": ("claude-agent-sdk", "can-use-tool"),
    "lg": ("langgraph", "default"), "lg:stategraph": ("langgraph", "stategraph"),
    "lg:model-call-limit": ("langgraph", "model-call-limit"), "oai": ("openai-agents", "default"),
    "oai:handled-max-turns": ("openai-agents", "handled-max-turns"), "vercel": ("vercel-ai", "default"),
    "vercel:tool-loop-agent": ("vercel-ai", "tool-loop-agent"),
}
ROWS = ("runaway_step_limit", "default_limits", "approval_pause", "approval_approved_resume", "resume_twice",
        "denied_action", "denied_action_continue", "model_transient_error", "model_fatal_error")


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
    start = next(i for i, line in enumerate(lines) if line.startswith("| scenario | claude |"))
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
    changed = README.read_text(encoding="utf-8").replace("| approval_pause | ✓", "| approval_pause | ⚠", 1)
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
    met = [k for k in names if verdicts[k] == "met"]
    missed = [k for k in names if verdicts[k] == "not met"]
    assert set(met) | set(missed) == set(frameworks)  # an `undecided` one would need its own sentence
    assert f"it is met for {' and '.join(said[k] for k in met)} and not met for" in text
    assert f"{', '.join(said[k] for k in missed[:-1])} and {said[missed[-1]]}. Those {len(missed)} miss" \
        .replace("Those 3", "Those three") in text
    gaps, around, plain = ([frameworks[k][key] for k in missed]
                           for key in ("gap_ms", "around_adapter_ms", "plain_wall_ms"))
    assert (f"on runs of {min(plain):.0f}–{max(plain):.0f} ms: loopbench's gap is {min(gaps):.1f}–{max(gaps):.1f} ms "
            f"per run, of which {min(around):.1f}–{max(around):.1f} ms is around the adapter") in text
    changed = {suite.get("cells_changed_vs_published"), quick.get("cells_changed_vs_published")}
    assert ("Neither run changed a cell" in text) == (changed == {0})


def test_the_bench_summary_is_written_from_its_results() -> None:
    """reports/bench/README.md says only what `loopbench bench` writes from the results.json beside it."""
    import json

    from loopbench.bench import markdown

    here = ROOT / "reports" / "bench"
    assert (here / "README.md").read_text() == markdown(json.loads((here / "results.json").read_text()))
