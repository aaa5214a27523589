"""loopbench.guard: the production loop policy (docs/policy.md) as code a framework's own hooks call.

The policy core, written once against no framework: one task allowance reserved before each model and tool call
(`budget`), approval bound to the exact call, rejections bound to the effect, stall detection, writes whose
outcome is unknown (`calls`), and the `Guard` that a binding calls from its framework's extension points
(`policy`). It imports nothing of loopbench's harness or of any framework SDK. The per-framework bindings and the
`guarded` variants (issue 41) build on it.
"""

from loopbench.guard.budget import Allowance, Budget, Cancelled, GuardStop, LimitReached, Reservation
from loopbench.guard.calls import (
    AwaitingApproval,
    Denied,
    Stalled,
    ToolRules,
    UnknownOutcome,
    call_identity,
    normalized_tool,
)
from loopbench.guard.policy import Estimate, Exit, Guard

__all__ = ["Allowance", "AwaitingApproval", "Budget", "Cancelled", "Denied", "Estimate", "Exit", "Guard", "GuardStop",
           "LimitReached", "Reservation", "Stalled", "ToolRules", "UnknownOutcome", "call_identity",
           "normalized_tool"]
