"""Fault injection: a worker killed mid-run, the Claude CLI killed mid-run. The affected run ends as `error`
with the reason, within its timeout; the other runs complete; no child process outlives the suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from loopbench.harness.record import RunRecord
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios
from tests.doubles import DOUBLES

# Ctrl-C or SIGTERM ends a run, its workers and their children within this, even on a busy machine (measured: 1.5-1.7
# s at a load average of 13 on 2 cores); the run drops the tasks in flight and writes no report
STOP_WITHIN_S = 10


def _descendants() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


def _kill_when(predicate, stop: threading.Event, killed: list[str]) -> None:
    """Kill the first descendant process matching `predicate`, once it has lived 1 s."""
    while not stop.is_set():
        for p in _descendants():
            try:
                if predicate(p) and time.time() - p.create_time() > 1.0:
                    killed.append(" ".join(p.cmdline())[:120])
                    os.kill(p.pid, signal.SIGKILL)
                    return
            except psutil.Error:
                continue
        time.sleep(0.1)


def _run(tmp_path: Path, variants, scenarios, predicate) -> tuple[dict[str, RunRecord], list[str], float]:
    chosen = [s for s in load_scenarios() if s.id in scenarios]
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_when, args=(predicate, stop, killed), daemon=True)
    killer.start()
    t0 = time.monotonic()
    try:
        run_suite(RunPlan(scenarios=chosen, variants=variants, jobs=2, out_dir=tmp_path, show_progress=False,
                          hard_margin_s=60))
    finally:
        stop.set()
    took = time.monotonic() - t0
    records = [RunRecord.model_validate(json.loads(x)) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    return {f"{r.framework}/{r.scenario}": r for r in records}, killed, took




def test_a_worker_killed_mid_run_is_an_error_and_the_rest_completes(tmp_path, doubles):
    def hang_worker(p: psutil.Process) -> bool:
        # the worker running the hanging double: the run worker of the slot that took double-hang
        return "loopbench.harness.run.worker" in " ".join(p.cmdline()) and "double-hang-run" in _log_of(p)

    recs, killed, took = _run(tmp_path, [("double-hang", "default"), ("double-onecall", "default")],
                              ("support_draft_completes",), hang_worker)
    assert killed, "the hanging worker was never found"
    r = recs["double-hang/support_draft_completes"]
    assert r.outcome == "error" and "worker died" in r.error_reason and "-9" in r.error_reason
    assert recs["double-onecall/support_draft_completes"].outcome == "incomplete"
    assert took < 60  # well within the hard timeout: the death is seen at once
    assert _descendants() == []


def _log_of(p: psutil.Process) -> str:
    try:
        return " ".join(f.path for f in p.open_files())
    except psutil.Error:
        return ""


def test_the_claude_cli_killed_mid_run_is_an_error_with_the_reason(tmp_path):
    def claude_cli(p: psutil.Process) -> bool:
        return "claude_agent_sdk" in " ".join(p.cmdline()) and "_bundled" in " ".join(p.cmdline())

    recs, killed, _ = _run(tmp_path, [("claude-agent-sdk", "default"), ("openai-agents", "default")],
                           ("deadline_slow_model",), claude_cli)
    assert killed, "no Claude CLI process was found to kill"
    r = recs["claude-agent-sdk/deadline_slow_model"]
    assert r.outcome == "error" and "Claude CLI was killed" in r.error_reason
    assert recs["openai-agents/deadline_slow_model"].outcome == "completed"
    assert _descendants() == []


def test_ctrl_c_stops_cleanly_keeps_what_finished_and_continue_runs_the_rest(tmp_path):
    proc, out = _cli_run(tmp_path)
    env, cmd, results = _cli_env(), [*proc.args], out / "results.jsonl"
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=STOP_WITHIN_S)
    assert proc.returncode == 130, output
    assert "interrupted" in output
    kept = [json.loads(x) for x in results.read_text().splitlines()]
    assert [(r["framework"], r["scenario"]) for r in kept] == [
        ("double-onecall", "approval_pause"), ("double-onecall", "support_draft_completes")]
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(out) in " ".join(p.info["cmdline"] or [])]
    # --continue runs only what is missing (the hanging runs, stopped quickly here by a short hard margin)
    done = subprocess.run([*cmd, "--continue", "--hard-margin", "1"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert "2 run(s) recorded" in done.stdout and "(2 already there)" in done.stdout, done.stdout + done.stderr
    final = [json.loads(x) for x in results.read_text().splitlines()]
    assert sorted((r["framework"], r["scenario"]) for r in final) == sorted(
        (f, s) for f in ("double-onecall", "double-hang") for s in ("support_draft_completes", "approval_pause"))


def _cli_env() -> dict[str, str]:
    return {**os.environ, "LOOPBENCH_EXTRA_ADAPTERS": ",".join(f"{k}={v}" for k, v in DOUBLES.items())}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli_run(tmp_path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    """`loopbench run` of the doubles in a subprocess, returned once two runs are recorded and the hanging
    double is running."""
    env = _cli_env()
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "loopbench.cli", "run", "-f", "double-onecall", "-f", "double-hang",
           "-s", "support_draft_completes", "-s", "approval_pause", "--jobs", "1", "--out", str(out), *extra]
    # Ctrl-C's default disposition, whoever started the tests: a shell script's background job (`make test &`)
    # passes SIGINT down ignored, and a program started so rightly ignores Ctrl-C
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and len(results.read_text().splitlines()) >= 2):
        time.sleep(0.2)
    time.sleep(1.0)  # the hanging double is now running
    return proc, out


def _worker_pids(proc: subprocess.Popen[str]) -> list[int]:
    return [c.pid for c in psutil.Process(proc.pid).children()
            if "loopbench.harness.run.worker" in " ".join(c.cmdline())]


def _alive(pids: list[int], within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s
    while True:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_sigterm_stops_cleanly_like_ctrl_c_with_exit_143(tmp_path):
    proc, out = _cli_run(tmp_path)
    workers = _worker_pids(proc)
    assert workers, "no worker found"
    os.kill(proc.pid, signal.SIGTERM)  # the runner only, as a service manager would
    output, _ = proc.communicate(timeout=STOP_WITHIN_S)
    assert proc.returncode == 143, output
    assert "interrupted (SIGTERM)" in output and f"loopbench report {out}" in output
    assert not (out / "report.md").exists(), "an interrupted run stops at once: its reports are one command away"
    assert len((out / "results.jsonl").read_text().splitlines()) == 2
    assert _alive(workers, within_s=5) == []


def test_workers_die_with_a_killed_runner(tmp_path):
    """kill -9 of `loopbench run` handles nothing; its workers notice and take their process groups along."""
    proc, _ = _cli_run(tmp_path)
    workers = _worker_pids(proc)
    assert workers, "no worker found"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _alive(workers, within_s=10) == []


def test_a_full_disk_mid_run_stops_with_the_reason_and_continue_finishes(tmp_path, monkeypatch, doubles):
    """The second record's write fails half-way with ENOSPC: the suite stops there naming the file and the
    cause, the first record stays complete, and `--continue` drops the torn line and runs the rest."""
    import errno

    from loopbench.harness.results.store import ResultsStore

    real_write, calls = ResultsStore._write, []

    def full_on_second(self, line: str) -> None:
        calls.append(line)
        if len(calls) == 2:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line[: len(line) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        real_write(self, line)

    monkeypatch.setattr(ResultsStore, "_write", full_on_second)
    scenarios = ("support_draft_completes", "approval_pause", "parallel_tool_calls")
    chosen = [s for s in load_scenarios() if s.id in scenarios]
    plan = RunPlan(scenarios=chosen, variants=[("double-onecall", "default")], jobs=1, out_dir=tmp_path,
                   show_progress=False)
    summary = run_suite(plan)
    assert summary.records == 1 and len(calls) == 2  # nothing tried after the failure
    assert summary.unwritable and "results.jsonl: cannot write: No space left on device" in summary.unwritable
    monkeypatch.setattr(ResultsStore, "_write", real_write)
    plan.resume_partial = True
    again = run_suite(plan)
    assert again.skipped == 1 and again.records == 2 and not again.unwritable
    assert any("torn last line" in w for w in again.warnings)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["scenario"] for x in lines) == sorted(scenarios)


def test_a_real_full_disk_is_exit_3_with_a_clear_message_and_continue_recovers(tmp_path):
    """`loopbench run` with its --out on a small tmpfs that a filler fills while the second run is going."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("mounting a tmpfs needs CAP_SYS_ADMIN here; the injected ENOSPC test above covers the path")
    try:
        out = disk / "out"
        cmd = [sys.executable, "-m", "loopbench.cli", "run", "-f", "double-onecall", "-f", "double-hang",
               "-s", "support_draft_completes", "--jobs", "1", "--hard-margin", "2", "--out", str(out)]
        proc = subprocess.Popen(cmd, env=_cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        results = out / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (results.exists() and results.read_text().strip()):
            time.sleep(0.1)
        filler = disk / "filler"
        with open(filler, "wb") as fh:  # the hanging double is running: fill the disk under it
            try:
                while True:
                    fh.write(b"\0" * (1 << 16))
                    fh.flush()
            except OSError:
                pass
        output, _ = proc.communicate(timeout=60)
        assert proc.returncode == 3, output
        assert "cannot write" in output and "--continue" in output and "Traceback" not in output, output
        assert len(results.read_text().splitlines()) == 1
        filler.unlink()
        done = subprocess.run([*cmd, "--continue"], env=_cli_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "(1 already there)" in done.stdout
        assert sorted(json.loads(x)["framework"] for x in results.read_text().splitlines()) == [
            "double-hang", "double-onecall"]
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
