"""Bring your own loop: examples/simple_loop.py (a plain loop over the openai client, no loopbench import) runs
the whole suite through `--loop-cmd` with no `error`; its column is `--loop-name`; what it did not report is
null; a loop that breaks the protocol is that run's `error`, with why."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from loopbench.harness.scenario import load_scenarios

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "simple_loop.py"


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopbench.cli", "run", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=os.environ.copy())


def _records(out: Path) -> dict[str, dict]:
    return {r["scenario"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_the_example_loop_imports_nothing_of_loopbench():
    tree = ast.parse(EXAMPLE.read_text())
    imported = {n.name for node in ast.walk(tree) if isinstance(node, ast.Import) for n in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not any(m.startswith("loopbench") for m in imported), imported


def test_the_example_loop_runs_the_whole_suite_with_no_error(tmp_path):
    out = tmp_path / "out"
    done = _run("--loop-cmd", f"{sys.executable} examples/simple_loop.py", "--loop-name", "simple-loop",
                "--out", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = _records(out)
    assert set(records) == {s.id for s in load_scenarios()}
    assert {r["framework"] for r in records.values()} == {"simple-loop"}
    assert not [s for s, r in records.items() if r["outcome"] == "error"], {
        s: r["error_reason"] for s, r in records.items() if r["outcome"] == "error"}
    finished = records["support_draft_completes"]
    assert finished["outcome"] == "completed" and finished["verdict"] == "conforms"
    assert finished["counters"]["model_requests_reported"] == finished["counters"]["model_requests_observed"] == 3
    runaway = records["runaway_step_limit"]
    assert runaway["outcome"] == "limit_steps"
    assert runaway["limits"]["max_model_calls"]["native"] == "for-loop of 8 requests"
    deadline = records["deadline_slow_model"]  # the loop does not apply deadlines: unsupported, not invented
    assert deadline["limits"]["deadline_s"]["native"] is None and "deadline_s" in deadline["unsupported"]
    assert finished["counters"]["cost_usd_reported"] is None  # never reported: null, not zero


def test_a_loop_that_breaks_the_protocol_is_that_run_s_error_with_why(tmp_path):
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nsys.stdin.readline()\nprint('oops', file=sys.stderr)\nsys.exit(4)\n")
    chatty = tmp_path / "chatty.py"
    chatty.write_text("import sys\nsys.stdin.readline()\nprint('done, I think')\n")
    for script, reason in ((silent, "exited with code 4 and printed no answer line: oops"),
                           (chatty, "last stdout line is not JSON")):
        out = tmp_path / f"out-{script.stem}"
        done = _run("--loop-cmd", f"{sys.executable} {script}", "-s", "support_draft_completes", "--out", str(out))
        assert done.returncode == 1, done.stdout + done.stderr  # a run ended in error
        (record,) = _records(out).values()
        assert record["framework"] == "my-loop" and record["outcome"] == "error"
        assert reason in record["error_reason"], record["error_reason"]


def test_a_bad_loop_name_or_command_is_refused_before_anything_runs(tmp_path):
    for args, reason in ((["--loop-cmd", "x", "--loop-name", "langgraph"], "not a built-in framework's id"),
                         (["--loop-cmd", "x", "--loop-name", "Bad Name"], "1-40 lowercase letters"),
                         (["--loop-cmd", "'unclosed"], "cannot be split into a command")):
        done = _run(*args, "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and reason in done.stderr, (args, done.stderr)
