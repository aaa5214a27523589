"""loopbench core: scenarios, scripted model server, tool ledger, run records, runner, CLI.

The core never imports a framework SDK; adapters depend on it, never the reverse.
"""

__version__ = "0.1.0"
