"""The tool ledger (`loopbench.harness.ledger`): ground truth of every tool call and approval event of a run
(`store`), and its HTTP face that adapters reach from their worker processes (`http`: the routes on the model
server and the client).

Owns: what ran, when, with which effect. May import: the shared vocabulary and `harness.scenario`.
"""

from loopbench.harness.ledger.http import TOKEN_HEADER, LedgerClient, ledger_routes
from loopbench.harness.ledger.store import Ledger, ToolOutcome

__all__ = ["TOKEN_HEADER", "Ledger", "LedgerClient", "ToolOutcome", "ledger_routes"]
