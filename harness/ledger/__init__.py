"""The tool ledger (`loopbench.harness.ledger`): ground truth of every tool call and approval event of a run
(`store`), and its HTTP face that adapters reach from their worker processes (`http`: the routes on the model
server and the client).

Owns: what ran, when, with which effect. May import: the shared vocabulary and `harness.scenario`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopbench.harness.lazy import exports

if TYPE_CHECKING:
    from loopbench.harness.ledger.http import TOKEN_HEADER, LedgerClient, ledger_routes
    from loopbench.harness.ledger.store import Ledger, ToolOutcome

# imported on first use (harness/lazy.py): a light part of this package never imports the rest
__getattr__ = exports(__name__, {
    "TOKEN_HEADER": "loopbench.harness.ledger.http",
    "LedgerClient": "loopbench.harness.ledger.http",
    "ledger_routes": "loopbench.harness.ledger.http",
    "Ledger": "loopbench.harness.ledger.store",
    "ToolOutcome": "loopbench.harness.ledger.store",
})
__all__ = ["Ledger", "LedgerClient", "TOKEN_HEADER", "ToolOutcome", "ledger_routes"]
