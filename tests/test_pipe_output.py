"""Output that survives a pipe: `list` and `show` piped keep every id, header and cell whole (a plain layout at
full width, whatever COLUMNS says), the terminal layout is rich's as before, and `run` says first what it runs
and why (scenarios × variants = runs) and last which report to open."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from loopbench.commands import common
from loopbench.commands.run import selection_why
from loopbench.harness.scenario import load_scenarios
from loopbench.reports.load import load_results
from loopbench.reports.show import run_sections, show_run

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "reports_small"
CASES = ROOT / "tests" / "data" / "tool_choice"
LIST_HEADERS = ["id", "category", "claims", "title", "variants", "version", "status", "framework:variant",
                "what it is", "framework", "claim", "native limits", "step unit", "pause", "deny"]


def _cli(*args: str, columns: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The CLI in a child whose stdout is a pipe (and stdin and stderr not terminals either)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "loopbench.cli", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)


def _whole(word: str, text: str) -> bool:
    """`word` appears in `text` as a word of its own: not cut (`approval_approved…`), not part of a longer id."""
    return re.search(rf"(?<![\w:.-]){re.escape(word)}(?![\w-])", text) is not None


@pytest.mark.process
@pytest.mark.parametrize("columns", [None, "80"])
def test_piped_list_keeps_every_id_and_header_whole(columns):
    listed = json.loads(_cli("list", "--json").stdout)
    done = _cli("list", columns=columns)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "…" not in text and "┃" not in text  # nothing cut short; a plain layout, no box
    lines = text.splitlines()
    ids = [s["id"] for s in listed["scenarios"]]
    assert len(ids) == len(load_scenarios())
    cut = [i for i in ids if not _whole(i, text)]
    assert not cut, cut
    for s in listed["scenarios"]:  # a scenario is one line: its id, category, claims and title
        assert any(_whole(s["id"], x) and s["title"] in x and " ".join(s["claims"]) in x for x in lines), s["id"]
    for f in listed["frameworks"]:
        assert _whole(f["id"], text)
        for v in f["variants"]:
            assert _whole(f"{f['id']}:{v}", text), (f["id"], v)
    for c in listed["claims"]:
        assert any(_whole(c["id"], x) and c["text"] in x for x in lines), c["id"]
    for header in LIST_HEADERS:
        assert any(_whole(header, x) for x in lines), header
    assert "capabilities (declared by each adapter)" in lines and f"{len(load_scenarios())} scenarios" in lines
    assert all(x == x.rstrip() for x in lines)


def test_a_terminal_still_gets_the_rich_table_at_its_width(monkeypatch):
    terminal = Console(file=io.StringIO(), force_terminal=True, width=60, color_system=None)
    monkeypatch.setattr(common, "out", terminal)
    table = Table(title="t")
    table.add_column("id")
    table.add_column("title")
    table.add_row("approval_approved_resume", "The pause for send_reply is resumed in a new process " * 3)
    common.print_tables(table)
    text = terminal.file.getvalue()  # type: ignore[attr-defined]
    assert "┃" in text and max(len(x) for x in text.splitlines()) <= 60


@pytest.mark.process
def test_piped_show_keeps_ids_headers_and_cells_whole():
    run_id = "runaway_step_limit-openai-agents-default-r1-254c8f"
    done = _cli("show", run_id, "--results", str(DATA), columns="80")
    assert done.returncode == 0, done.stderr
    text, lines = done.stdout, done.stdout.splitlines()
    assert "\x1b[" not in text and "┃" not in text
    rec = next(r for r in load_results(DATA).records if r.run_id == run_id)
    for word in (run_id, rec.scenario, f"traces/{run_id}.jsonl", "model_request", "openai_chat"):
        assert _whole(word, text), word
    for q in rec.requests:
        for call in q.calls_served:
            assert _whole(call, text), call
    for sec in run_sections(rec, DATA):
        for header in sec.headers:
            assert any(header in x for x in lines), (sec.title, header)
        assert sec.title in lines or f"{sec.title}: none" in lines
    assert lines[0].count(run_id) == 1 and len(lines[0]) >= 80


def test_show_run_without_a_width_keeps_every_cell_of_every_run_whole():
    results = load_results(DATA)
    for rec in results.records:
        text = show_run(DATA, rec.run_id, width=None)
        for sec in run_sections(rec, results.dir):
            for row in sec.rows:  # each row on a line of its own, every cell in it as it is
                cells = [c for c in map(str, row) if c.strip()]
                assert any(all(c in x for c in cells) for x in text.splitlines()), (rec.run_id, sec.title, row)


@pytest.mark.process
def test_a_run_says_first_what_it_runs_and_why_and_last_which_report_to_open(tmp_path, doubles):
    done = _cli("run", "--scenarios", str(CASES), "-f", "double-onecall", "--jobs", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == (f"2 scenarios × 1 framework variant = 2 runs (the scenarios in {CASES}, selected with "
                        "-f double-onecall (its one variant: default))"), lines[0]
    assert "loopbench: 2 run(s) to do" in lines
    last = lines[-1]
    assert re.fullmatch(r"open results/[^/ ]+/report\.html", last), last
    report = tmp_path / last.removeprefix("open ")
    assert report.is_file() and report.resolve() == (tmp_path / "results" / "latest" / "report.html").resolve()


def test_the_why_names_the_selection():
    suite = selection_why(None, [], 0, [], None, "my-loop", ["claude-agent-sdk", "vercel-ai"])
    assert suite == ("the built-in suite, every available framework variant; 2 frameworks unavailable: "
                     "claude-agent-sdk, vercel-ai")
    chosen = selection_why(None, ["approval_*", "support_draft_completes"], 3, ["langgraph", "openai-agents:default"],
                           None, "my-loop", [])
    assert chosen == ("selected with -s 'approval_*' -s support_draft_completes from the built-in suite without "
                      "the 3 scenarios tagged slow (--quick), selected with -f langgraph -f openai-agents:default")
    loop = selection_why([Path("mine")], [], 0, ["my-loop"], "python loop.py", "my-loop", [])
    assert loop == "the scenarios in mine, your loop (--loop-cmd) as my-loop"
    both = selection_why(None, [], 0, ["langgraph", "my-loop"], "python loop.py", "my-loop", [])
    assert both == "the built-in suite, selected with -f langgraph and your loop (--loop-cmd) as my-loop"


def test_the_first_line_says_a_bare_framework_is_every_variant_of_it():
    """`-f openai-agents` runs every idiom of it, `-f pydantic-ai:default` one: the first line names what each -f
    selected (a variant a bare -f already covers is not named again)."""
    variants = {"openai-agents": ["default", "handled-max-turns", "chat-completions", "stream"],
                "pydantic-ai": ["default", "iter"], "solo": ["default"]}
    why = selection_why(None, [], 0, ["openai-agents", "pydantic-ai:default"], None, "my-loop", [], variants=variants)
    assert why == ("the built-in suite, selected with -f openai-agents (all 4 variants: default, handled-max-turns, "
                   "chat-completions, stream) -f pydantic-ai:default")
    covered = selection_why(None, [], 0, ["openai-agents:stream", "solo", "openai-agents", "solo"], None, "my-loop",
                            [], variants=variants)
    assert covered == ("the built-in suite, selected with -f solo (its one variant: default) -f openai-agents (all 4 "
                       "variants: default, handled-max-turns, chat-completions, stream)")
