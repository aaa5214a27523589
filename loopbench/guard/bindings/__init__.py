"""One module per framework: the guard installed through that framework's documented extension points. Each
imports its framework's SDK (the policy core in loopbench/guard/ imports none)."""
