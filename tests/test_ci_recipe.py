"""docs/ci.md's workflow, run on this machine: each step's command as written (the suite narrowed to two
scenarios of one framework variant, so the test stays fast), in a directory of its own that sees this
checkout's `.venv` and `reports/`; what the steps write is read back."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml
from junitparser import JUnitXml

from loopbench.reports.diff import DiffOut

ROOT = Path(__file__).resolve().parent.parent
NARROW_RUN = " -f openai-agents:default -s support_draft_completes -s runaway_step_limit"
NARROW_PYTEST = ' --loopbench-framework openai-agents:default -k "support_draft or runaway_step"'


def _blocks() -> list[object]:
    doc = (ROOT / "docs" / "ci.md").read_text()
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.S)]


def _steps() -> list[str]:
    """The `run:` commands of docs/ci.md's first workflow and of the step lists that continue it, in order."""
    blocks = _blocks()
    first = blocks[0]
    assert isinstance(first, dict)
    steps = list(first["jobs"]["suite"]["steps"])
    for extra in blocks[1:]:
        if isinstance(extra, list):
            steps += extra
    return [s["run"] for s in steps if "run" in s]


def _sharded() -> dict:
    """docs/ci.md's sharded workflow (the one with a `shard` job)."""
    found = [b for b in _blocks() if isinstance(b, dict) and "shard" in b.get("jobs", {})]
    assert len(found) == 1, "docs/ci.md has one sharded workflow"
    return found[0]


def _narrowed(command: str) -> str:
    if " loopbench run " in f" {command.replace('.venv/bin/', '')} ":
        return command + NARROW_RUN
    if "pytest --loopbench" in command:
        return command + NARROW_PYTEST
    return command


def test_the_ci_recipe_runs_here(tmp_path):
    commands = _steps()
    assert commands[0] == "make install" and len(commands) == 4, commands
    for name in (".venv", "reports", "Makefile", "pyproject.toml", "requirements.lock", "adapters", "harness",
                 "loopbench", "scenarios"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    for command in commands:
        done = subprocess.run(["bash", "-c", _narrowed(command)], cwd=tmp_path, capture_output=True, text=True,
                              timeout=900, env=env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    ci = tmp_path / "results" / "ci"
    run_cases = [c for suite in JUnitXml.fromfile(str(ci / "junit.xml")) for c in suite]
    assert {c.name for c in run_cases} == {"support_draft_completes", "runaway_step_limit"}
    diff = DiffOut.model_validate_json((ci / "diff.json").read_text())
    assert not diff.changed and diff.common_cells == 2
    assert any(line.startswith("only in base:") for line in diff.one_sided)
    assert "<table class=\"matrix\">" in (ci / "changes.html").read_text()
    assert [c for suite in JUnitXml.fromfile(str(ci / "diff-junit.xml")) for c in suite]
    pytest_cases = [c for suite in JUnitXml.fromfile(str(tmp_path / "results" / "pytest-junit.xml")) for c in suite]
    assert sorted(c.name for c in pytest_cases) == ["runaway_step_limit[openai-agents]",
                                                    "support_draft_completes[openai-agents]"]
    assert all(c.is_passed for c in pytest_cases)


def test_the_sharded_ci_recipe_runs_here(tmp_path):
    """The sharded workflow's jobs as written: each shard job's commands with its `matrix.shard`, each job's
    artifact where the merge job downloads it, then the merge job's commands (merge, diff against the baseline)."""
    flow = _sharded()
    jobs = flow["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == [1, 2, 3] and jobs["merge"]["needs"] == "shard"
    for name in (".venv", "reports", "Makefile", "pyproject.toml", "requirements.lock", "adapters", "harness",
                 "loopbench", "scenarios"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

    def run(command: str, cwd: Path) -> None:
        done = subprocess.run(["bash", "-c", _narrowed(command)], cwd=cwd, capture_output=True, text=True,
                              timeout=900, env=env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])

    upload = next(s for s in jobs["shard"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    download = next(s for s in jobs["merge"]["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    for k in shards:
        for step in jobs["shard"]["steps"]:
            if "run" in step:
                run(step["run"].replace("${{ matrix.shard }}", str(k)), tmp_path)
        artifact = tmp_path / download["with"]["path"] / upload["with"]["name"].replace("${{ matrix.shard }}", str(k))
        artifact.parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / upload["with"]["path"]).rename(artifact)
    for step in jobs["merge"]["steps"]:
        if "run" in step:
            run(step["run"], tmp_path)
    merged = tmp_path / "results" / "ci"
    assert (merged / "report.html").exists()
    cases = [c for suite in JUnitXml.fromfile(str(merged / "diff-junit.xml")) for c in suite]
    assert {c.name for c in cases} >= {"support_draft_completes", "runaway_step_limit"}
