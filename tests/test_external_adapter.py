"""Bring your own framework: the example adapter package (examples/external_adapter) installed from its own
pyproject is found through the `loopbench.adapters` entry point, listed, and runs scenarios through the normal
runner, with no change to loopbench. Installed into a private target directory (on PYTHONPATH for the
commands here), so the rest of the test session never sees it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import offline_fixtures

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).parent / "uv"


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory) -> dict[str, str]:
    if (why := offline_fixtures.missing()) is not None:
        pytest.fail(why)
    target = tmp_path_factory.mktemp("plugin-site")
    done = subprocess.run([str(UV), "pip", "install", "-q", "--offline", "--no-deps", "--python", sys.executable,
                           "--target", str(target), str(ROOT / "examples" / "external_adapter")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopbench.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_an_installed_adapter_package_is_listed_with_its_version(plugin_env):
    listed = json.loads(_cli(plugin_env, "list", "--json").stdout)
    (mine,) = [f for f in listed["frameworks"] if f["id"] == "example-loop"]
    assert mine["available"] and mine["version"] == "0.1.0" and list(mine["variants"]) == ["default"]
    assert mine["capabilities"]["native_limits"] == ["max_model_calls"]
    without = json.loads(_cli({k: v for k, v in plugin_env.items() if k != "PYTHONPATH"}, "list", "--json").stdout)
    assert "example-loop" not in {f["id"] for f in without["frameworks"]}


def test_an_installed_adapter_runs_the_suite_s_scenarios(plugin_env, tmp_path):
    out = tmp_path / "out"
    done = _cli(plugin_env, "run", "-f", "example-loop", "-s", "support_draft_completes", "-s", "runaway_step_limit",
                "--jobs", "1", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    records = {r["scenario"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    finished, runaway = records["support_draft_completes"], records["runaway_step_limit"]
    assert finished["framework"] == "example-loop" and finished["outcome"] == "completed"
    assert finished["counters"]["model_requests_observed"] == 3 and finished["counters"]["tool_executions"] == 2
    assert runaway["outcome"] == "limit_steps" and runaway["limits"]["max_model_calls"]["native"].startswith("while")
    assert runaway["counters"]["model_requests_observed"] == runaway["limits"]["max_model_calls"]["neutral"]


def test_a_plugin_that_takes_a_builtin_id_is_refused_with_a_warning(tmp_path):
    env = {**os.environ, "LOOPBENCH_EXTRA_ADAPTERS": "langgraph=somewhere:Else,broken=no-colon"}
    done = _cli(env, "list")
    assert done.returncode == 0
    assert "adapter not registered: langgraph (LOOPBENCH_EXTRA_ADAPTERS): the id of a built-in adapter" in done.stderr
    assert "broken (LOOPBENCH_EXTRA_ADAPTERS): 'no-colon' is not module:Class" in done.stderr
