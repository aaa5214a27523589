"""No process outlives its run: a descendant that left the worker's process group (`setsid`) is ended when its
segment ends, when the segment hangs past its hard timeout, and when the runner itself is killed; what the
adapter started before the segment (a warm-up child) is kept. Each loop program below starts
`setsid sleep <unique seconds>` and writes that process's pid to a file, so the tests find it (harness/run/reaper.py).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's (prctl)")


@pytest.fixture
def seconds() -> Iterator[str]:
    """A `sleep` argument no other process has; whatever sleep of it is left after the test is killed."""
    secs = f"417.{random.randrange(10**8):08d}"
    yield secs
    for p in _sleeps(secs):
        p.kill()


def _sleeps(secs: str) -> list[psutil.Process]:
    """The live processes `sleep <secs>` (a zombie has no command line: it is not running anything)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if p.info["cmdline"] == ["sleep", secs]:
            found.append(p)
    return found


def _gone(secs: str, within_s: float = 0.0) -> bool:
    deadline = time.monotonic() + within_s
    while _sleeps(secs):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _loop_program(tmp_path: Path, secs: str, then: str, detached: bool = True) -> tuple[Path, Path]:
    """A loop that starts `setsid sleep <secs>` (its own session, so not in the worker's process group) and
    records its pid; then does `then`. `detached`: the sleep's stdio is /dev/null, else it inherits the loop's
    pipes (as `setsid sleep 417 &` in a shell script would), and holds them open after the loop has exited."""
    pid_file = tmp_path / "sleep.pid"
    script = tmp_path / "escaping_loop.py"
    stdio = "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL" if detached else ""
    script.write_text(textwrap.dedent(f"""\
        import json, subprocess, sys, time
        sys.stdin.readline()
        sleep = subprocess.Popen(["setsid", "sleep", "{secs}"], {stdio})
        open({str(pid_file)!r}, "w").write(str(sleep.pid))
        """) + textwrap.dedent(then))
    return script, pid_file


def _cli(script: Path, out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "loopbench.cli", "run", "--loop-cmd", f"{sys.executable} {script}",
            "-s", "support_draft_completes", "--jobs", "1", "--out", str(out), *args]


def _record(out: Path) -> dict:
    (record,) = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    return record


@pytest.mark.parametrize("detached", [True, False], ids=["stdio-detached", "holding-the-loop-s-stdout"])
def test_a_setsid_child_of_a_loop_that_answers_is_ended_with_its_segment(tmp_path, seconds, detached):
    """The loop answers and exits; its child lives on in a session of its own. Holding the loop's stdout, it
    must not keep the run waiting either (waiting for its EOF, the run would be `hung` at the hard timeout)."""
    script, pid_file = _loop_program(tmp_path, seconds, """\
        print(json.dumps({"ended": "returned", "final_text": "done"}), flush=True)
        """, detached=detached)
    out = tmp_path / "out"
    done = subprocess.run(_cli(script, out, "--hard-margin", "20"), cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    record = _record(out)
    assert record["outcome"] not in ("error", "hung"), (
        record["error_reason"], done.stdout[-2000:], done.stderr[-2000:])
    assert pid_file.exists(), "the loop never started its sleep: this test would prove nothing"
    assert _gone(seconds), f"`setsid sleep {seconds}` (pid {pid_file.read_text()}) outlived its run"


def test_a_setsid_child_of_a_hung_loop_is_ended_at_the_hard_timeout(tmp_path, seconds):
    script, pid_file = _loop_program(tmp_path, seconds, """\
        time.sleep(3600)
        """)
    out = tmp_path / "out"
    subprocess.run(_cli(script, out, "--hard-margin", "1"), cwd=ROOT, capture_output=True, text=True, timeout=120)
    record = _record(out)
    assert record["outcome"] == "hung", record
    assert pid_file.exists(), "the loop never started its sleep: this test would prove nothing"
    assert _gone(seconds), f"`setsid sleep {seconds}` (pid {pid_file.read_text()}) outlived its hung run"


def test_a_setsid_child_is_ended_when_the_runner_is_killed(tmp_path, seconds):
    """The runner killed with -9 mid-run: its worker notices (die-with-parent) and takes its tree along."""
    script, pid_file = _loop_program(tmp_path, seconds, """\
        time.sleep(3600)
        """)
    runner = subprocess.Popen(_cli(script, tmp_path / "out"), cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and _sleeps(seconds)):
            assert runner.poll() is None and time.monotonic() < deadline, "the loop never started its sleep"
            time.sleep(0.05)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert _gone(seconds, within_s=10), f"`setsid sleep {seconds}` outlived its killed runner"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


# the helpers themselves, in a process of their own (a subreaper adopts orphans: not the test process)
_UNIT = """\
import json, subprocess, sys, time
import psutil
from loopbench.harness.run import reaper

assert reaper.become_subreaper()
kept = subprocess.Popen(["sleep", sys.argv[1]])  # started before the segment: an adapter's warm-up child
before = reaper.descendants()
# the segment: a shell starts `setsid sleep` in the background and exits at once, orphaning it
subprocess.run(["sh", "-c", f"setsid sleep {sys.argv[2]} </dev/null >/dev/null 2>&1 &"], check=True)
for _ in range(500):  # the shell's child may not have exec'd sleep yet
    adopted = [p.pid for p in psutil.Process().children() if p.cmdline() == ["sleep", sys.argv[2]]]
    if adopted:
        break
    time.sleep(0.01)
ended = reaper.end_strays(before)
zombies = [p.pid for p in psutil.Process().children() if p.status() == psutil.STATUS_ZOMBIE]
print(json.dumps({"adopted": adopted, "ended": sorted(p.pid for p in ended), "zombies": zombies,
                  "kept_alive": kept.poll() is None}))
kept.kill()
kept.wait()
"""


def test_end_strays_ends_and_reaps_an_adopted_orphan_and_keeps_what_was_there_before(seconds):
    kept_secs = f"{seconds}1"
    try:
        done = subprocess.run([sys.executable, "-c", _UNIT, kept_secs, seconds], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)
        assert len(got["adopted"]) == 1, got  # the orphan was reparented to the subreaper
        assert got["ended"] == got["adopted"] and not got["zombies"] and got["kept_alive"], got
        assert _gone(seconds)
    finally:
        for p in _sleeps(kept_secs):
            p.kill()
