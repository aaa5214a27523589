"""The guard in the OpenAI Agents SDK (`openai-agents`), through its documented extension points: agent hooks
(`Agent(hooks=AgentHooks)`), a function tool's input and output guardrails (`FunctionTool.tool_input_guardrails`,
`tool_output_guardrails`), its approval callable (`FunctionTool.needs_approval`: the run's `interruptions` and
`RunState`), `RunConfig.tool_error_formatter` and `Agent.as_tool(failure_error_function=None)`.
`AgentGuard(guard).install(agent)` sets them on an agent; a sub-agent gets `AgentGuard.child().install(...)`.

- `on_llm_start` (agent hook, awaited just before each model request; a raise there propagates out of the run):
  the allowance is reserved (one call, the estimate's tokens and cost); a refusal raises the guard's stop out of
  `Runner.run` with no request sent. `on_llm_end` settles it with the response's usage (`ModelResponse.usage`).
- Tool input guardrail (runs after the SDK's approval and before the tool, in every run that sees the call): a write
  already run under this call id (a resume replayed from an older snapshot) is answered with its recorded result;
  a call the SDK approved (`RunState.approve`) is granted the guard's approval for exactly its tool and arguments;
  then the guard's check — a rejected effect, an unknown-outcome write repeated without its key (answered to the
  model, `reject_content`), the tool-call cap, no model call left to read the result. A stop is raised out of the
  run (the SDK wraps it in `UserError`; the stop is its `__cause__`).
- `needs_approval` (wrapped): a tool the guard's rules say needs approval pauses the run on the SDK's own
  interruption (the tool's own callable still runs first); the pause is the guard's `awaiting_approval` exit.
- Tool output guardrail (sees the tool's returned result): the stall check (a stall is raised out of the run) and
  the output bound (a longer result reaches the model as its head and a reference, `reject_content`).
- The tool's invocation (`on_invoke_tool`, wrapped: see LACKS `after_tool_call`): a raise is the SDK's "the run
  fails" (a definitive failure: the guard's `failed`); a `TimeoutError` marks a write's outcome unknown and tells the
  model so; a call still running at the deadline is cut (the guard's `limit`); a call cancelled with its run is
  recorded as of unknown outcome.
- `RunConfig(tool_error_formatter=...)` (`run_config()`): the SDK asks it for the text of a rejected approval
  (`kind="approval_rejected"`); the guard is told of the rejection there (bound to the tool's effect).
- Sub-agents (`Agent.as_tool`): the child's agent gets the child guard's hooks and tools; pass
  `as_tool(failure_error_function=None)` so a stop inside the child (and any error of its run) reaches the parent's
  run through the agent tool's invocation, instead of as_tool's default generic text to the parent's model.
- `deadline()`: an async context manager for around `Runner.run` (see LACKS `deadline`): the run still going when
  the allowance's wall-clock runs out is cancelled and ends with the guard's `limit` stop; a request left without a
  response (it failed, or the run was cut) is counted as a call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from agents import (
    Agent,
    AgentHooks,
    FunctionTool,
    RunConfig,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolOutputGuardrail,
)

from loopbench.guard.bindings.lacks import OPENAI_AGENTS
from loopbench.guard.budget import GuardStop, LimitReached, Reservation
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome, call_identity, normalized_tool
from loopbench.guard.policy import Estimate, Guard

LACKS = OPENAI_AGENTS  # the extension points the SDK lacks (bindings/lacks.py says what the policy misses)


def _args(ctx: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(getattr(ctx, "tool_arguments", None) or "{}")
    except json.JSONDecodeError:
        return {"arguments": ctx.tool_arguments}
    return parsed if isinstance(parsed, dict) else {"args": parsed}


class GuardHooks(AgentHooks[Any]):
    """The model side: `Agent(hooks=GuardHooks(...))` (AgentGuard.hooks)."""

    def __init__(self, owner: AgentGuard):
        self.owner = owner

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        owner = self.owner
        estimate = owner.estimate(input_items) if owner.estimate else Estimate()
        stale = owner.requests.pop(id(context), None)
        if stale is not None:  # the previous request of this run never answered (it failed and the run went on)
            owner.guard.model_call_failed(stale)
        owner.requests[id(context)] = owner.guard.before_model_call(estimate)  # a refusal raises out of the run

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        held = self.owner.requests.pop(id(context), None)
        if held is None:
            return
        usage = response.usage
        self.owner.guard.after_model_call(held, input_tokens=usage.input_tokens or 0,
                                          output_tokens=usage.output_tokens or 0)


class AgentGuard:
    """The guard installed on an SDK agent. `estimate(input_items) -> Estimate` says what a request may cost at
    most; without it a request reserves what the last one used (the guard's `estimate_from_last`)."""

    def __init__(self, guard: Guard, estimate: Callable[[Any], Estimate] | None = None,
                 idempotency_arg: str = "idempotency_key", *, _shared: AgentGuard | None = None):
        self.guard = guard
        self.estimate = estimate
        self.idempotency_arg = idempotency_arg
        # requests sent and not answered, by run context; tool calls admitted and not settled, by call id: one
        # table for the task's guard and its sub-agents' (deadline() settles what a cut run left open)
        self.requests: dict[int, Reservation] = _shared.requests if _shared else {}
        self.calls: dict[str, Reservation] = _shared.calls if _shared else {}
        self.hooks = GuardHooks(self)

    def child(self) -> AgentGuard:
        """A sub-agent's: the guard's child (the same allowance, approvals and writes; its own stall window)."""
        return AgentGuard(self.guard.child(), self.estimate, self.idempotency_arg, _shared=self)

    # ---- installing
    def install(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of `agent` with the guard's hooks and every function tool guarded (agent tools included)."""
        tools = [self.tool(t) if isinstance(t, FunctionTool) else t for t in agent.tools]
        return agent.clone(hooks=self.hooks, tools=tools)

    def tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of `tool` with the guard's input and output guardrails (after its own), its approval and its
        invocation guarded."""
        return dataclasses.replace(
            tool,
            on_invoke_tool=self._invoke(tool),
            needs_approval=self._needs_approval(tool),
            tool_input_guardrails=[*(tool.tool_input_guardrails or []),
                                   ToolInputGuardrail(self._before_tool, name="loopbench_guard")],
            tool_output_guardrails=[*(tool.tool_output_guardrails or []),
                                    ToolOutputGuardrail(self._after_tool, name="loopbench_guard")],
        )

    def run_config(self, config: RunConfig | None = None) -> RunConfig:
        """`config` (or a new RunConfig) with a tool_error_formatter that tells the guard of a rejected approval
        (the text stays the SDK's, or your formatter's)."""
        config = config or RunConfig()
        theirs = config.tool_error_formatter

        async def formatter(args: Any) -> str | None:
            if args.kind == "approval_rejected":
                self.guard.decide(args.tool_name, {}, "reject", call_id=args.call_id)
                self.guard.resume()  # the pause is answered
            if theirs is None:
                return None
            out = theirs(args)
            return await out if asyncio.iscoroutine(out) else out

        return dataclasses.replace(config, tool_error_formatter=formatter)

    @asynccontextmanager
    async def deadline(self) -> AsyncIterator[None]:
        """Around `Runner.run(...)`: the run is cancelled when the allowance's wall-clock runs out, and ends with the
        guard's `limit` stop (LimitReached, measure `wall_s`)."""
        bound = asyncio.timeout(self.guard.remaining_s())
        try:
            async with bound:
                yield
        except TimeoutError:
            if not bound.expired():
                raise
            raise self.guard.stop(LimitReached("wall_s", "the deadline passed during the run")) from None
        finally:
            for held in [self.requests.pop(k) for k in list(self.requests)]:
                self.guard.model_call_failed(held)  # sent, never answered: a call all the same
            for held in [self.calls.pop(k) for k in list(self.calls)]:
                held.commit()  # admitted and run (an agent tool whose sub-agent paused): a tool call

    # ---- the tools
    def _needs_approval(self, tool: FunctionTool) -> Callable[[Any, dict[str, Any], str], Any]:
        own = tool.needs_approval
        guarded = normalized_tool(tool.name) in self.guard.rules.needs_approval

        async def needs_approval(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            theirs = await own(ctx, params, call_id) if callable(own) else bool(own)
            if not (theirs or guarded):
                return False
            # the run pauses on the SDK's interruption for this call: the guard's pause too
            self.guard.stop(AwaitingApproval(tool.name, params, call_identity(tool.name, params)))
            return True

        return needs_approval

    async def _before_tool(self, data: Any) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        name, call_id, args = ctx.tool_name, ctx.tool_call_id, _args(ctx)
        recorded = self.guard.recorded(name, call_id)
        if recorded is not None:  # this very call already ran (a replayed resume): its answer, not a second effect
            return ToolGuardrailFunctionOutput.reject_content(str(self.guard.bounded(recorded)),
                                                              output_info="recorded")
        if ctx.is_tool_approved(name, call_id):  # the SDK's approval of exactly this call
            self.guard.decide(name, args, "approve", call_id=call_id)
            self.guard.resume()
        try:
            held = self.guard.before_tool_call(name, args, key=args.get(self.idempotency_arg))
        except UnknownOutcome as refused:
            return ToolGuardrailFunctionOutput.reject_content(f"Not run: {refused.reason}", output_info="refused")
        self.calls[call_id] = held
        return ToolGuardrailFunctionOutput.allow()

    async def _after_tool(self, data: Any) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        held = self.calls.pop(ctx.tool_call_id, None)
        if held is None:  # not admitted by this guard (a paused agent tool continued): nothing to settle
            return ToolGuardrailFunctionOutput.allow()
        result = self.guard.after_tool_call(held, ctx.tool_name, _args(ctx), data.output,
                                            call_id=ctx.tool_call_id)  # a stall raises out of the run
        if result is data.output:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(str(result), output_info="bounded")

    def _invoke(self, tool: FunctionTool) -> Callable[[Any, str], Any]:
        inner = tool.on_invoke_tool

        async def invoke(ctx: Any, raw_args: str) -> Any:
            name, call_id = tool.name, getattr(ctx, "tool_call_id", None) or ""
            args = _args(ctx)
            bound = asyncio.timeout(self.guard.remaining_s())
            try:
                async with bound:
                    return await inner(ctx, raw_args)
            except asyncio.CancelledError:  # cut with its run (the caller's cancel, a deadline, a timeout)
                held = self.calls.pop(call_id, None)
                if held is not None:
                    self.guard.tool_timed_out(held, name, args, args.get(self.idempotency_arg))
                raise
            except Exception as exc:
                held = self.calls.pop(call_id, None)
                if stop_in(exc) is not None:  # a sub-agent's stop: already the task's exit
                    if held is not None:
                        held.commit()
                    raise
                if isinstance(exc, TimeoutError):
                    if held is not None:
                        self.guard.tool_timed_out(held, name, args, args.get(self.idempotency_arg))
                    if bound.expired():
                        raise self.guard.stop(LimitReached("wall_s", f"the deadline passed during {name}")) from None
                    return f"{name} timed out; its outcome is unknown ({exc})"
                if held is None:
                    raise
                # the SDK's "raise: the run fails": a definitive failure, the guard's `failed` (raised)
                self.guard.tool_failed(held, name, fatal=True, message=str(exc))
                raise

        return invoke


def stop_in(exc: BaseException) -> GuardStop | None:
    """The guard's stop in what `Runner.run` raised: itself (a refusal in a hook), or the cause of the SDK's
    `UserError` (a refusal in a tool's guardrail or invocation)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, GuardStop):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
