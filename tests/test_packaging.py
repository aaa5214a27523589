"""One installable distribution: a wheel built from the repo, installed into a fresh venv outside the checkout,
lists the suite and runs a scenario from another directory; its modules import one namespace, `loopbench`.

Offline: the wheel is built and its dependencies installed from the checkout's uv cache (filled by `make test`,
tests/offline_fixtures.py), and the Node driver's packages from the checkout's npm cache (`npm_config_offline`),
into a private loopbench cache directory.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests import offline_fixtures

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).parent / "uv"
PACKAGE_DIRS = ("loopbench", "harness", "adapters", "reports", "scenarios")
PYPROJECT_DATA = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if (why := offline_fixtures.missing()) is not None:
        pytest.fail(why)
    tmp = tmp_path_factory.mktemp("wheel")
    src = offline_fixtures.tracked_copy(tmp / "src")  # as from a clean clone (no stale build/, no node_modules)
    _run([str(UV), "build", "--wheel", "--offline", "--out-dir", str(tmp / "dist"), str(src)])
    (built,) = (tmp / "dist").glob("loopbench-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("venv")
    venv = tmp / "venv"
    _run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)])
    _run([str(UV), "pip", "install", "-q", "--offline", "--python", str(venv / "bin" / "python"),
          f"{wheel}[openai-agents]", "-c", str(ROOT / "requirements.lock")])
    return venv


@pytest.mark.process
def test_the_wheel_runs_a_scenario_from_another_directory(wheel_venv, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPBENCH_", "PYTHON"))}
    env.update(LOOPBENCH_CACHE=str(tmp_path / "cache"), npm_config_offline="true")
    exe = str(wheel_venv / "bin" / "loopbench")

    listed = json.loads(_run([exe, "list", "--json"], cwd=elsewhere, env=env).stdout)
    assert len(listed["scenarios"]) == len(list((ROOT / "scenarios").glob("[!_]*.yaml")))
    available = {f["id"]: f["unavailable"] for f in listed["frameworks"]}
    assert available["openai-agents"] is None
    assert available["langgraph"] == "langgraph is not installed"  # its extra was not asked for

    _run([exe, "run", "-f", "openai-agents:default", "-f", "vercel-ai:default", "-s", "support_draft_completes",
          "--jobs", "1", "--out", "out"], cwd=elsewhere, env=env)
    records = [json.loads(line) for line in (elsewhere / "out" / "results.jsonl").read_text().splitlines()]
    assert {(r["framework"], r["outcome"]) for r in records} == {("openai-agents", "completed"),
                                                                 ("vercel-ai", "completed")}
    assert all(r["environment"]["loopbench_revision"].startswith("v") for r in records)  # no checkout here
    # the Node driver's dependencies were installed on first use, from the shipped lock, into the cache
    (driver_home,) = (tmp_path / "cache").glob("vercel-driver-*/")
    assert (driver_home / "node_modules" / "ai" / "package.json").exists()
    assert (elsewhere / "out" / "report.html").exists()


@pytest.mark.process
def test_the_old_top_level_names_are_not_installed(wheel_venv, tmp_path):
    for name in ("harness", "adapters", "reports"):
        done = subprocess.run([str(wheel_venv / "bin" / "python"), "-c", f"import {name}"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, name


def test_every_python_package_of_the_checkout_is_in_the_wheel():
    """pyproject lists the packages: a new folder with an __init__.py (loopbench/guard/) must be listed, or the
    wheel leaves it out and `pip install loopbench` cannot import it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for prefix, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "node_modules" in init.parts or init.parent.name == "__pycache__":
                continue
            rel = init.parent.relative_to(ROOT / folder)
            if prefix == "loopbench" and rel.parts and rel.parts[0] in ("harness", "adapters", "reports", "scenarios"):
                continue  # the symlinks onto the other folders
            found.add(".".join([prefix, *rel.parts]))
    assert found - listed == set(), "packages missing from pyproject's [tool.setuptools] packages"


def test_every_module_imports_the_loopbench_namespace():
    """A stray `import harness` works in a checkout (the repo root is on sys.path) but not once installed."""
    bad = []
    for folder in PACKAGE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            if "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                bad += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in PACKAGE_DIRS[1:]]
    assert bad == []


def test_node_missing_is_a_clear_reason(monkeypatch, tmp_path):
    from loopbench.adapters import vercel_ai
    from loopbench.adapters.node.home import NodeMissing

    monkeypatch.setattr(vercel_ai, "SHIPPED", tmp_path / "shipped")  # no node_modules beside it
    (tmp_path / "shipped").mkdir()
    for name in vercel_ai.FILES:
        shutil.copy(ROOT / "adapters" / "vercel" / name, tmp_path / "shipped" / name)
    monkeypatch.setenv("LOOPBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    reason = vercel_ai.node_home().missing_reason()
    assert reason is not None and "npm" in reason and "not on PATH" in reason
    with pytest.raises(NodeMissing, match="npm"):
        vercel_ai.node_home().ensure_installed()


def test_every_node_project_ships_the_shared_protocol_module():
    """Each driver imports `./protocol.mjs`: in the checkout a link to adapters/node/protocol.mjs, a file among
    its project's files (so the cache, the matrix's copies and the wheel hold it, and its content is in the cache
    key)."""
    from loopbench.adapters.mastra_agent import MastraAdapter
    from loopbench.adapters.vercel_ai import VercelAIAdapter

    shared = (ROOT / "adapters" / "node" / "protocol.mjs").read_bytes()
    shipped = PYPROJECT_DATA["loopbench.adapters"]
    for cls in (VercelAIAdapter, MastraAdapter):
        home = cls.node_home()
        assert "protocol.mjs" in home.files and (home.shipped / "protocol.mjs").read_bytes() == shared
        assert "import" in (home.shipped / "driver.mjs").read_text() and "'./protocol.mjs'" in (
            home.shipped / "driver.mjs").read_text()
        assert {f"{home.shipped.name}/{f}" for f in home.files} <= set(shipped)


@pytest.mark.process
def test_a_teams_workflow_installs_the_package_and_checks_its_frameworks(wheel, wheel_venv, tmp_path):
    """examples/ci/loopbench.yml in a repository of a team's own (no loopbench checkout): its `run:` steps in
    order, with its LOOPBENCH pointing at the wheel (the offline stand-in for the git URL) and SELECTION narrowed
    to one scenario; the baseline the team committed first made the way the file's header says."""
    repo = tmp_path / "team"
    (repo / ".github" / "workflows").mkdir(parents=True)
    workflow = ROOT / "examples" / "ci" / "loopbench.yml"
    shutil.copy(workflow, repo / ".github" / "workflows" / "loopbench.yml")
    shutil.copy(ROOT / "requirements.lock", repo / "requirements.txt")  # the team's lock pins its SDKs
    doc = yaml.safe_load(workflow.read_text())
    assert set(doc["env"]) == {"LOOPBENCH", "SELECTION"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPBENCH", "PYTHON", "VIRTUAL_ENV"))}
    env.update(LOOPBENCH=f"loopbench[openai-agents] @ {wheel.as_uri()}",
               SELECTION="-f openai-agents:default -s support_draft_completes",
               UV_OFFLINE="1", UV_PYTHON=sys.executable, LOOPBENCH_CACHE=str(tmp_path / "cache"),
               PATH=f"{UV.parent}{os.pathsep}{env.get('PATH', '')}")
    # the baseline, made once and committed: the header's `loopbench run $SELECTION --out loopbench-baseline`
    _run(["bash", "-c", f"{wheel_venv}/bin/loopbench run $SELECTION --out loopbench-baseline"], cwd=repo, env=env)
    (step_list,) = doc["jobs"].values()
    runs = [step["run"] for step in step_list["steps"] if "run" in step]
    assert [r.split()[0] for r in runs] == ["uv", ".loopbench/bin/loopbench", ".loopbench/bin/loopbench"]
    for command in runs:
        _run(["bash", "-euo", "pipefail", "-c", command], cwd=repo, env=env)
    # loopbench came from the package, not from a checkout, with the extras asked for and no other framework
    listed = json.loads(_run([str(repo / ".loopbench" / "bin" / "loopbench"), "list", "--json"], cwd=repo,
                             env=env).stdout)
    unavailable = {f["id"]: f["unavailable"] for f in listed["frameworks"]}
    assert unavailable["openai-agents"] is None and unavailable["langgraph"] == "langgraph is not installed"
    out = repo / "results" / "ci"
    assert (out / "report.html").exists() and (out / "changes.html").exists()
    assert "<testcase" in (out / "junit.xml").read_text() and "<testcase" in (out / "diff-junit.xml").read_text()
