"""Shared fixtures, and the `suite` marker: every test that needs the shared full-suite run (through the
`suite_run` fixture) is marked `suite`, so `pytest -m "not suite"` is the quick loop."""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopbench.harness.scenario import SCENARIO_DIR, Scenario, load_defaults, parse_scenario
from tests.offline_fixtures import use_project_caches

# uv and npm, for every test and its children, read the checkout's caches only (never the machine's)
use_project_caches(os.environ)

_keys = itertools.count(1)


@pytest.fixture(scope="session")
def make_scenario() -> Callable[..., Scenario]:
    """Build a validated Scenario from a script (and any other top-level keys), with the suite defaults."""
    defaults, problems = load_defaults(SCENARIO_DIR)
    assert not problems

    def make(script: list[dict[str, Any]], sid: str = "test_scenario", **raw: Any) -> Scenario:
        raw.setdefault("tools", {name: {} for name in ("get_ticket", "lookup_policy", "send_reply", "check_status")})
        data = {
            "id": sid, "title": "t", "category": "baseline", "prompt": "p", "script": script,
            "completion": {"final_text_contains": ["x"]}, "expect": {"outcome": "completed"}, **raw,
        }
        sc, problems = parse_scenario(data, f"{sid}.yaml", defaults)
        assert sc is not None, problems
        return sc

    return make


@dataclass
class MiniHarness:
    """A model server with a ledger of its own, for tests that drive an adapter (or its driver) directly."""

    server: Any
    ledger: Any
    token: str
    base_url: str

    def context(self, scenario: Scenario, tmp_path: Path) -> Any:
        """A segment's RunContext for `scenario`, registered with this server and ledger, its dirs made."""
        from loopbench.harness.adapter import RunContext

        run_id = f"{scenario.id[:20]}-{secrets.token_hex(3)}"
        api_key = f"lb-{secrets.token_hex(8)}"
        self.server.register_run(run_id, api_key, scenario)
        self.ledger.register_run(run_id, scenario)
        base = tmp_path / run_id
        for d in ("work", "snapshot", "task"):
            (base / d).mkdir(parents=True)
        return RunContext(run_id=run_id, api_key=api_key, base_url=self.base_url, ledger_token=self.token,
                          work_dir=base / "work", snapshot_dir=base / "snapshot", task_dir=base / "task")


@pytest.fixture(scope="module")
def harness() -> Iterator[MiniHarness]:
    from loopbench.harness.ledger.http import ledger_routes
    from loopbench.harness.ledger.store import Ledger
    from loopbench.harness.model_server import ModelServer, running

    ledger = Ledger()
    token = secrets.token_hex(8)
    server = ModelServer(extra_routes=ledger_routes(ledger, token))
    with running(server) as base_url:
        yield MiniHarness(server, ledger, token, base_url)


@pytest.fixture(scope="session")
def model_server() -> Iterator[tuple[Any, str]]:
    """One ModelServer for the whole session, served from a thread: (server, base_url)."""
    from loopbench.harness.model_server import ModelServer, running

    server = ModelServer()
    with running(server) as base_url:
        yield server, base_url


@pytest.fixture
def register(model_server: tuple[Any, str]) -> Iterator[Callable[[Scenario], tuple[str, str]]]:
    """register(scenario) -> (run_id, api_key) on the session server; unregistered after the test."""
    server, _ = model_server
    registered: list[str] = []

    def reg(scenario: Scenario) -> tuple[str, str]:
        n = next(_keys)
        run_id, key = f"run-{n}", f"key-{n}-{scenario.id}"
        server.register_run(run_id, key, scenario)
        registered.append(run_id)
        return run_id, key

    yield reg
    for run_id in registered:
        server.unregister_run(run_id)


@pytest.fixture(scope="session")
def suite_run() -> Path:
    """The results directory of the shared full-suite run (every framework, variant and scenario; run once)."""
    from tests.suite_helpers import full_suite

    return full_suite()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "suite_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.suite)


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The test-double adapters (tests/doubles.py) registered, here and in the workers this test starts."""
    from loopbench.harness import adapter as adapter_mod
    from tests.doubles import DOUBLES

    monkeypatch.setenv("LOOPBENCH_EXTRA_ADAPTERS", ",".join(f"{k}={v}" for k, v in DOUBLES.items()))
    # workers import `tests.doubles` whatever their working directory
    root = str(Path(__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    for k, v in DOUBLES.items():
        monkeypatch.setitem(adapter_mod.REGISTRY, k, v)
    return DOUBLES
