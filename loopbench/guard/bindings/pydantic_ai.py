"""The guard in pydantic-ai, through its documented extension point: a capability
(`pydantic_ai.capabilities.AbstractCapability`, `Agent(capabilities=[...])`).

- `wrap_model_request`: the allowance is reserved before each model request (one call, the estimate's tokens
  and cost) and settled with the response's usage; a refusal raises the guard's stop out of `agent.run`.
- `wrap_tool_execute`: before a tool runs, its approval (bound to the exact call), a rejected effect, an
  unknown-outcome write and the tool-call cap are checked; a call that needs approval is deferred with
  pydantic-ai's own `ApprovalRequired` (the run ends with `DeferredToolRequests`, as pydantic-ai's
  human-in-the-loop docs show); when the run is resumed with that call approved (`ctx.tool_call_approved`), the
  approval is granted to exactly that call. After it returns, the stall check runs and the result reaches the
  model bounded. A rejection given in `DeferredToolResults` never reaches a tool, so tell the guard with
  `guard.decide(tool, args, "reject")` when you build them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired

from loopbench.guard.calls import AwaitingApproval
from loopbench.guard.policy import Estimate, Guard


@dataclass(init=False)
class GuardCapability(AbstractCapability[Any]):
    """`Agent(..., capabilities=[GuardCapability(guard)])`. `estimate` says what a request may cost at most (its
    input and output token caps); without it a request reserves one model call and no tokens, so a token or cost
    cap is checked against what earlier requests used, not against the next one's worst case."""

    guard: Guard
    estimate: Callable[[Any], Estimate] | None
    idempotency_arg: str

    def __init__(self, guard: Guard, estimate: Callable[[Any], Estimate] | None = None,
                 idempotency_arg: str = "idempotency_key"):
        self.guard = guard
        self.estimate = estimate
        self.idempotency_arg = idempotency_arg

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        held = self.guard.before_model_call(self.estimate(request_context) if self.estimate else Estimate())
        try:
            response = await handler(request_context)
        except BaseException:
            held.commit(tokens=0, cost_usd=0)  # the request was sent: it counts as a call
            raise
        usage = response.usage
        self.guard.after_model_call(held, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)
        return response

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        arguments = dict(args) if isinstance(args, dict) else {"args": args}
        if getattr(ctx, "tool_call_approved", False):
            self.guard.decide(call.tool_name, arguments, "approve")
        key = arguments.get(self.idempotency_arg)
        try:
            held = self.guard.before_tool_call(call.tool_name, arguments, key=key)
        except AwaitingApproval as pause:
            raise ApprovalRequired(metadata={"guard_call": pause.identity}) from None
        try:
            result = await handler(args)
        except TimeoutError:
            self.guard.tool_timed_out(held, call.tool_name, arguments, key)
            raise
        except BaseException:
            held.commit()  # it ran and failed: a tool call all the same
            raise
        return self.guard.after_tool_call(held, call.tool_name, arguments, result)
