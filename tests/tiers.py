"""The test tiers, and the guard that keeps the unit tier honest.

- unit: a module that says `TIER = "unit"` at its top. Its tests start no process and import no framework SDK
  (nor a provider client a framework drives): the inner loop, `make check`, under a minute on 2 cores.
- process: every other test that does not need the shared suite run: it may start workers, Node drivers, a
  CLI, an install. Marked `process` (a test in a unit module that needs one says `@pytest.mark.process`).
- suite: a test that reads the shared suite run (the `suite_run` fixture): marked `suite`. A framework's own
  adapter module names its framework (`SUITE_FRAMEWORKS = ("<id>",)`), so run alone it runs only that
  framework's variants; any other suite test needs every framework's.

The SDK modules are the adapters' own facts (`Adapter.sdk_modules`), never a list kept here."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, Literal

import pytest

Tier = Literal["unit", "process", "suite"]
TIERS: tuple[Tier, ...] = ("unit", "process", "suite")
UNIT_MARK = "TIER"  # the module constant that puts a whole module in the unit tier
SUITE_FIXTURE = "suite_run"


@cache
def sdk_modules() -> tuple[str, ...]:
    """Every Python module name (a prefix: `google.adk` covers `google.adk.agents`) that a built-in adapter
    declares as its framework's or its framework's clients'."""
    from loopbench.harness.adapter import BUILTIN, adapter_class

    return tuple(sorted({m for fid in BUILTIN for m in adapter_class(fid).sdk_modules}))


def is_sdk(module: str, sdks: Iterable[str]) -> bool:
    return any(module == s or module.startswith(s + ".") for s in sdks)


def tier_of(item: pytest.Item) -> Tier:
    if SUITE_FIXTURE in getattr(item, "fixturenames", ()):
        return "suite"
    if item.get_closest_marker("process") is None and getattr(item.module, UNIT_MARK, None) == "unit":
        return "unit"
    return "process"


class ProcessInUnitTier(AssertionError):
    """A unit-tier test tried to start a process."""


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise ProcessInUnitTier(f"a unit-tier test started a process ({what}): mark it `process` or move it")

    return refuse


@contextmanager
def unit_guard(nodeid: str, sdks: tuple[str, ...]) -> Iterator[None]:
    """While a unit test runs, starting a process raises; after it, an SDK it imported fails it."""
    before = set(sys.modules)
    patches = [(subprocess.Popen, "_execute_child", _refuse("subprocess")),
               (asyncio, "create_subprocess_exec", _refuse("asyncio.create_subprocess_exec")),
               (asyncio, "create_subprocess_shell", _refuse("asyncio.create_subprocess_shell"))]
    patches += [(os, name, _refuse(f"os.{name}")) for name in ("fork", "posix_spawn", "posix_spawnp", "system")
                if hasattr(os, name)]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, repl in patches:
        setattr(obj, name, repl)
    try:
        yield
    finally:
        for obj, name, orig in saved:
            setattr(obj, name, orig)
    imported = sorted(m for m in set(sys.modules) - before if is_sdk(m, sdks))
    if imported:
        raise AssertionError(f"{nodeid}: a unit-tier test imported an SDK ({', '.join(imported[:5])}): "
                             "mark it `process` or move it")
