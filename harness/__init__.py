"""loopbench core (`loopbench.harness`): scenarios, scripted model server, tool ledger, run records, runner.

The core never imports a framework SDK or the reports; adapters depend on it, never the reverse.
"""
