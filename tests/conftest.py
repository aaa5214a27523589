"""Shared fixtures."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.scenario import SCENARIO_DIR, Scenario, load_defaults, parse_scenario

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


@pytest.fixture(scope="session")
def model_server() -> Iterator[tuple[Any, str]]:
    """One ModelServer for the whole session, served from a thread: (server, base_url)."""
    from harness.model_server import ModelServer, running

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
