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
- A tool's errors: pydantic-ai's `ToolFailed` (a definitive failure) ends the task (the guard's `failed`); a
  `ModelRetry` counts as a call and goes back to the model within the tool's own retry budget (pydantic-ai checks
  that budget inside the execution, before any hook sees the retry); a `TimeoutError` marks a write's outcome
  unknown and goes back to the model as a `ModelRetry`. A blind repeat of such a write is refused with an answer
  to the model (`UnknownOutcome`), and a write already run under the same call id (a resume replayed from an
  older snapshot) is answered with its recorded result, not run again.
- The deadline: a request still in flight when the allowance's wall-clock runs out is cut (the guard's `limit`).
  The segment's clock starts at the main agent's run start (`before_run`: `Guard.start_clock`), where pydantic-ai's
  own `agent.run(timeout=...)` starts its clock: on the same deadline, pydantic-ai's is the one that fires.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed, ToolFailedError, ToolRetryError

from loopbench.guard.bindings.lacks import PYDANTIC_AI
from loopbench.guard.budget import LimitReached
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome
from loopbench.guard.policy import Estimate, Guard

LACKS = PYDANTIC_AI  # the extension points pydantic-ai lacks (bindings/lacks.py)


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

    async def before_run(self, ctx: Any) -> None:
        self.guard.start_clock()  # the first run's start; a sub-agent's guard leaves the parent's clock

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        held = self.guard.before_model_call(self.estimate(request_context) if self.estimate else Estimate())
        try:
            async with asyncio.timeout(self.guard.remaining_s()):
                response = await handler(request_context)
        except TimeoutError:
            self.guard.model_call_failed(held)
            raise self.guard.stop(LimitReached("wall_s", "the deadline passed during a model request")) from None
        except BaseException:
            self.guard.model_call_failed(held)  # the request was sent: it counts as a call
            raise
        usage = response.usage
        self.guard.after_model_call(held, input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)
        return response

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        arguments = dict(args) if isinstance(args, dict) else {"args": args}
        name, call_id = call.tool_name, call.tool_call_id
        recorded = self.guard.recorded(name, call_id)
        if recorded is not None:  # this very call already ran (a replayed resume): its answer, not a second effect
            return recorded
        if getattr(ctx, "tool_call_approved", False):
            self.guard.decide(name, arguments, "approve", call_id=call_id)
        key = arguments.get(self.idempotency_arg)
        try:
            held = self.guard.before_tool_call(name, arguments, key=key)
        except AwaitingApproval as pause:
            raise ApprovalRequired(metadata={"guard_call": pause.identity}) from None
        except UnknownOutcome as refused:
            return f"Not run: {refused.reason}"
        try:
            result = await handler(args)
        except TimeoutError as exc:
            self.guard.tool_timed_out(held, name, arguments, key)
            raise ModelRetry(f"{name} timed out; its outcome is unknown ({exc})") from None
        except (ToolFailed, ToolFailedError) as exc:  # the handler wraps the tool's ToolFailed
            self.guard.tool_failed(held, name, fatal=True, message=str(exc))
            raise
        except (ModelRetry, ToolRetryError):  # a recoverable error: the model retries within the tool's budget
            self.guard.tool_failed(held, name, fatal=False)
            raise
        except BaseException:
            held.commit()  # it ran and failed: a tool call all the same
            raise
        return self.guard.after_tool_call(held, name, arguments, result, call_id=call_id)
