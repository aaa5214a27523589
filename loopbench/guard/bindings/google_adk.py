"""The guard in Google ADK (google-adk 2.x), through its documented extension points: an agent's callbacks
(`LlmAgent(before_model_callback=..., after_model_callback=..., on_model_error_callback=...,
before_tool_callback=..., after_tool_callback=..., on_tool_error_callback=...)`, each a callable or a list run
in order), tool confirmation (`ToolContext.request_confirmation`) and a node's `timeout` (`BaseNode.timeout`,
which an agent is in 2.x). `GuardCallbacks(guard).install(agent)` appends the guard's callbacks after the ones
the agent already has (a callback of yours that answers a tool call first, e.g. a denial, keeps the guard out of
that call).

- `before_model_callback`: the allowance is reserved before each model call (one call, the estimate's tokens
  and cost); a refusal is raised, and ADK lets a callback's exception propagate out of `Runner.run_async`.
  `after_model_callback` settles it with the response's `usage_metadata` (the non-partial response: a streamed
  call's chunks are previews), `on_model_error_callback` as a call with no tokens known (the error goes on).
- `before_tool_callback`: before a tool runs, its approval (bound to the exact call), a rejected effect, an
  unknown-outcome write and the tool-call cap are checked; a refusal that ends the task is raised (out of the
  run: ADK runs before-tool callbacks outside the tool's error handling). A call that needs an approval the
  guard does not hold is paused with ADK's own tool confirmation, as a tool's `require_confirmation` gate does:
  `tool_context.request_confirmation(...)`, `skip_summarization`, an error dict as the call's placeholder
  answer; the invocation ends on the `adk_request_confirmation` call. When it is resumed with a
  `FunctionResponse(name="adk_request_confirmation", response={"confirmed": ...})`, ADK re-runs the call with
  `tool_context.tool_confirmation` set, and the decision is given to exactly that call (its function call id):
  approved, it runs; rejected, it is answered with ADK's "This tool call is rejected." and the effect is refused
  for the rest of the task. The before-tool callbacks run before ADK's confirmation gate, so a tool declared
  with `require_confirmation` is paused by the guard first, then checked by its gate on the resume.
- `after_tool_callback`: the stall check, and the result reaches the model bounded (a replacement dict).
- `on_tool_error_callback`: an exception a tool raises is fatal, as ADK's default makes it (with no error
  callback it is re-raised out of the run): the guard's `failed`, raised from the callback. One `recoverable`
  says is a recoverable error: it counts as a call and goes back to the model as an error dict (ADK's recovery
  response), as does a tool's own returned error dict (the function-tools guide's convention). A `TimeoutError`
  marks a write's outcome unknown and goes back to the model; a blind repeat of that write is refused with an
  answer to the model (`UnknownOutcome`), and a write already run under the same function call id (a resume
  replayed from an older session) is answered with its recorded result, not run again. A guard stop raised
  inside a tool (a sub-agent's) is let through.
- The deadline: `install` sets the agent's `timeout` to the wall-clock left, so ADK cancels the run when it
  passes and raises `NodeTimeoutError`; a tool call in flight then reaches `on_tool_error_callback` (cancelled:
  the guard's `limit`, measure `wall_s`, and a write's outcome unknown). A model call in flight reaches no
  callback when it is cut: hand the run's exception to `stop_in`, which records the stop and gives it back.
- A sub-agent gets `GuardCallbacks(guard.child())` on its own LlmAgent (`install(child, deadline=False)`: the
  parent's timeout covers it): the same allowance, approvals and writes; its stops propagate out of the child's
  run, the parent's tool and the parent's run. An `AgentTool` child runs in a nested Runner whose session is
  discarded, so a confirmation there cannot pause the parent: give it `can_pause=False`, and the guard stops the
  task awaiting approval instead of letting the parent answer without the call.

Every stop is raised through the guard (`guard.stop`, or the guard's own methods), so `guard.exit` says why the
run ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

# google.adk is imported where it is used (google.adk.workflow, 2.x): the callbacks take ADK's objects as ADK
# passes them, and importing this module (for LACKS) needs no SDK
from loopbench.guard.budget import GuardStop, LimitReached, Reservation
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome
from loopbench.guard.hooks import Hook
from loopbench.guard.policy import Estimate, Guard

# Verified in google-adk 2.13: every callback above exists on LlmAgent and a callback's exception propagates out
# of run_async (flows/llm_flows/core/_finalizer.py, flows/llm_flows/tools/_caller.py); tool confirmation is
# tools/_confirmation_utils.py's; the deadline is BaseNode.timeout (workflow/_base_node.py, workflow/_node_runner.py).
LACKS: dict[Hook, str] = {
    "sub_agent": "an AgentTool child (the multi-agent docs' agent-as-a-tool) runs in a nested Runner whose session "
                 "is discarded: a pause inside it cannot pause the parent's run, so the guard stops the task "
                 "awaiting approval with nothing to resume (sub_agents=[LlmAgent(mode='single_turn')] run inline "
                 "and do pause)",
}

REJECTED = {"error": "This tool call is rejected."}  # ADK's own answer to a rejected confirmation
CONFIRM = {"error": "This tool call requires confirmation, please approve or reject."}  # ADK's placeholder


def guard_stop_in(exc: BaseException | None) -> GuardStop | None:
    """The guard's stop in `exc`'s chain (ADK re-raises a callback's exception as it is, a sub-agent's through
    the parent's tool)."""
    seen = 0
    while exc is not None and seen < 12:
        if isinstance(exc, GuardStop):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _node_timeout_in(exc: BaseException | None) -> bool:
    """Whether ADK's node timeout (`google.adk.workflow.NodeTimeoutError`, 2.x) is in `exc`'s chain."""
    try:
        from google.adk.workflow import NodeTimeoutError
    except ImportError:  # a release without nodes has no timeout to cut a run with
        return False
    seen = 0
    while exc is not None and seen < 12:
        if isinstance(exc, NodeTimeoutError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _as_response(value: Any) -> dict[str, Any]:
    """A tool answer as ADK's callbacks return one (a dict; ADK wraps any other value as {'result': ...})."""
    return value if isinstance(value, dict) else {"result": value}


class GuardCallbacks:
    """`GuardCallbacks(guard).install(agent)`. `estimate(llm_request)` says what a model call may cost at most;
    without it a call reserves one model call and what the last one used. `recoverable(exc)`: a tool exception
    the model should see and may retry (default: none; every raised exception is fatal, as in ADK). `can_pause`:
    False for an agent whose pause cannot reach the caller (an AgentTool child): a call that needs approval
    stops the task instead."""

    def __init__(self, guard: Guard, estimate: Callable[[Any], Estimate] | None = None,
                 idempotency_arg: str = "idempotency_key", recoverable: Callable[[Exception], bool] | None = None,
                 can_pause: bool = True):
        self.guard = guard
        self.estimate = estimate
        self.idempotency_arg = idempotency_arg
        self.recoverable = recoverable
        self.can_pause = can_pause
        self._models: dict[tuple[str, str], Reservation] = {}  # (invocation id, agent) -> the call in flight
        self._tools: dict[str, Reservation] = {}  # function call id -> the tool call in flight

    # ---- installing
    def install(self, agent: Any, deadline: bool = True) -> Any:
        """Append the guard's callbacks to `agent`'s (an LlmAgent) and, with `deadline`, bound its run by the
        wall-clock left (its `timeout`). Returns the agent."""
        for field, callback in (("before_model_callback", self.before_model),
                                ("after_model_callback", self.after_model),
                                ("on_model_error_callback", self.on_model_error),
                                ("before_tool_callback", self.before_tool),
                                ("after_tool_callback", self.after_tool),
                                ("on_tool_error_callback", self.on_tool_error)):
            present = getattr(agent, field, None)
            listed = [] if present is None else list(present) if isinstance(present, list) else [present]
            setattr(agent, field, [*listed, callback])
        remaining = self.guard.remaining_s()
        if deadline and remaining is not None and "timeout" in type(agent).model_fields:
            agent.timeout = max(remaining, 0.001)
        return agent

    def stop_in(self, exc: BaseException) -> GuardStop | None:
        """The guard's stop behind the exception `run_async` raised: a stop a callback raised, or — ADK's
        NodeTimeoutError once the deadline has passed — the deadline's cut of a call in flight, recorded now
        (its model call counted, its tool call's write of unknown outcome). None: the run ended on something
        else."""
        stop = guard_stop_in(exc)
        if stop is not None:
            return stop
        remaining = self.guard.remaining_s()
        if not _node_timeout_in(exc) or remaining is None or remaining > 0:
            return None
        for held in self._models.values():
            self.guard.model_call_failed(held)
        self._models.clear()
        for held in self._tools.values():
            held.commit()
        self._tools.clear()
        return self.guard.stop(LimitReached("wall_s", "the deadline passed during the run: the call in flight was "
                                                      "cut"))

    # ---- the model
    @staticmethod
    def _model_key(callback_context: Any) -> tuple[str, str]:
        return (str(getattr(callback_context, "invocation_id", "")), str(getattr(callback_context, "agent_name", "")))

    async def before_model(self, callback_context: Any, llm_request: Any) -> None:
        held = self.guard.before_model_call(self.estimate(llm_request) if self.estimate else Estimate())
        self._models[self._model_key(callback_context)] = held
        return None

    async def after_model(self, callback_context: Any, llm_response: Any) -> None:
        if getattr(llm_response, "partial", False):  # a streamed chunk: the aggregated response settles the call
            return None
        held = self._models.pop(self._model_key(callback_context), None)
        if held is None:
            return None
        usage = getattr(llm_response, "usage_metadata", None)
        self.guard.after_model_call(held, input_tokens=getattr(usage, "prompt_token_count", None) or 0,
                                    output_tokens=getattr(usage, "candidates_token_count", None) or 0)
        return None

    async def on_model_error(self, callback_context: Any, llm_request: Any, error: Exception) -> None:
        held = self._models.pop(self._model_key(callback_context), None)
        if held is not None:
            self.guard.model_call_failed(held)  # the request was sent: it counts as a call
        return None  # the error goes on as ADK's default makes it

    # ---- the tools
    async def before_tool(self, tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        name, call_id = tool.name, getattr(tool_context, "function_call_id", None)
        recorded = self.guard.recorded(name, call_id)
        if recorded is not None:  # this very call already ran (a replayed resume): its answer, not a second effect
            return _as_response(recorded)
        confirmation = getattr(tool_context, "tool_confirmation", None)
        if confirmation is not None:  # the resume of a confirmation: the person's decision on exactly this call
            confirmed = bool(confirmation.confirmed)
            self.guard.decide(name, args, "approve" if confirmed else "reject", call_id=call_id)
            if not confirmed:
                return dict(REJECTED)
        try:
            held = self.guard.before_tool_call(name, args, key=args.get(self.idempotency_arg))
        except AwaitingApproval as pause:
            if not self.can_pause:
                raise
            tool_context.request_confirmation(hint=pause.reason, payload={"guard_call": pause.identity})
            tool_context.actions.skip_summarization = True  # the pause is not a result for the model
            return dict(CONFIRM)
        except UnknownOutcome as refused:
            return {"error": f"Not run: {refused.reason}"}
        if call_id is not None:
            self._tools[call_id] = held
        else:  # no id to pair the answer with (ADK gives every call one): count it now
            held.commit()
        return None

    async def after_tool(self, tool: Any, args: dict[str, Any], tool_context: Any,
                         tool_response: Any) -> dict[str, Any] | None:
        call_id = getattr(tool_context, "function_call_id", None)
        held = self._tools.pop(call_id, None) if call_id is not None else None
        if held is None:  # not a call the guard let run (a callback or the guard itself answered it)
            return None
        result = self.guard.after_tool_call(held, tool.name, args, tool_response, call_id=call_id)
        return None if result is tool_response else _as_response(result)

    async def on_tool_error(self, tool: Any, args: dict[str, Any], tool_context: Any,
                            error: BaseException) -> dict[str, Any] | None:
        name, call_id = tool.name, getattr(tool_context, "function_call_id", None)
        held = self._tools.pop(call_id, None) if call_id is not None else None
        if isinstance(error, asyncio.CancelledError):  # cut in flight (ADK ignores the answer and re-raises)
            remaining = self.guard.remaining_s()
            if held is not None and remaining is not None and remaining <= 0:
                self.guard.tool_timed_out(held, name, args, args.get(self.idempotency_arg))
                self.guard.stop(LimitReached("wall_s", f"the deadline passed while {name} ran: the call was cut"))
            elif held is not None:
                held.commit()  # cancelled by the caller or a failed sibling: it was sent all the same
            return None
        if held is None:
            return None
        if guard_stop_in(error) is not None:  # a sub-agent's stop: it ends this run too
            held.commit()
            return None
        if isinstance(error, TimeoutError):
            self.guard.tool_timed_out(held, name, args, args.get(self.idempotency_arg))
            return {"error": f"{name} timed out; its outcome is unknown ({error})"}
        if self.recoverable is not None and isinstance(error, Exception) and self.recoverable(error):
            self.guard.tool_failed(held, name, fatal=False)
            return {"error": str(error)}
        self.guard.tool_failed(held, name, fatal=True, message=str(error))  # raises the guard's ToolFailed
        return None
