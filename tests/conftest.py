"""Shared fixtures, and the test tiers (tests/tiers.py): every test is marked `unit`, `process` or `suite`, a
unit test runs under the guard that refuses processes and SDK imports, and the shared suite run covers the
frameworks the collected suite tests need (only its own when a framework's adapter module runs alone)."""

from __future__ import annotations

import itertools
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loopbench.harness.scenario import SCENARIO_DIR, Scenario, load_defaults, parse_scenario
from tests import tiers
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
def suite_run(request: pytest.FixtureRequest) -> Path:
    """The results directory of the shared suite run (every variant and scenario of the frameworks this session's
    suite tests need; run once)."""
    from tests.suite_helpers import full_suite

    return full_suite(suite_frameworks(request.session.items))


def suite_frameworks(items: list[pytest.Item]) -> tuple[str, ...] | None:
    """The frameworks the collected suite tests read: the union of their modules' `SUITE_FRAMEWORKS`; None (every
    framework) as soon as one suite test's module does not name its own."""
    named: set[str] = set()
    for item in items:
        if tiers.tier_of(item) != "suite":
            continue
        own = getattr(item.module, "SUITE_FRAMEWORKS", None)
        if own is None:
            return None
        named.update(own)
    return tuple(sorted(named))


def pytest_configure(config: pytest.Config) -> None:
    for tier, what in (("unit", "starts no process, imports no SDK (`make check`)"),
                       ("process", "may start processes (workers, drivers, a CLI, an install)"),
                       ("suite", "reads the shared suite run (its frameworks' every variant and scenario)")):
        config.addinivalue_line("markers", f"{tier}: {what}")


@pytest.hookimpl(tryfirst=True)  # the tiers' marks are set before `-m` selects by them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tiers.tier_of(item)
        item.add_marker(getattr(pytest.mark, tier))
        # spread over processes (`pytest -n 2 --dist loadgroup`, as make test does): every suite test on one
        # worker, so the shared suite run happens once; each other module's tests together, so a module's
        # fixtures (an installed wheel, a run on every variant) are built once
        item.add_marker(pytest.mark.xdist_group("suite" if tier == "suite" else item.nodeid.split("::")[0]))
    # a module imported at collection is outside any test's guard: when only unit modules were collected, none of
    # them may have brought an SDK in
    config.stash[_ONLY_UNIT] = bool(items) and all(
        getattr(i.module, tiers.UNIT_MARK, None) == "unit" for i in items)


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.stash.get(_ONLY_UNIT, False):
        sdks = tiers.sdk_modules()
        loaded = sorted(m for m in sys.modules if tiers.is_sdk(m, sdks))
        if loaded:
            raise pytest.UsageError(f"collecting the unit tier imported an SDK: {', '.join(loaded[:5])}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item))  # a unit test's fixtures are held to its tier too


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item))


def _guarded(item: pytest.Item) -> Iterator[None]:
    if tiers.tier_of(item) != "unit":
        return (yield)
    with tiers.unit_guard(item.nodeid, tiers.sdk_modules()):
        return (yield)


_ONLY_UNIT = pytest.StashKey[bool]()


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The test-double adapters (tests/doubles.py) registered here (each job names its class to its worker) and,
    through the environment, in any loopbench command this test starts."""
    from loopbench.harness import adapter as adapter_mod
    from tests.doubles import DOUBLES

    monkeypatch.setenv("LOOPBENCH_EXTRA_ADAPTERS", ",".join(f"{k}={v}" for k, v in DOUBLES.items()))
    # workers import `tests.doubles` whatever their working directory
    root = str(Path(__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    for k, v in DOUBLES.items():
        monkeypatch.setitem(adapter_mod.REGISTRY, k, v)
    return DOUBLES
