"""A package's names imported on first use (PEP 562): importing one light part of a package (the ledger's
store, the ideal walk) does not import the heavy parts its `__init__` names (an HTTP stack, the runner), so
`loopbench --help`, `list` and `validate` answer at once."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: name -> the module it is imported from when first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    return __getattr__
