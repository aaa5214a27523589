"""The guard in LangGraph / LangChain v1 agents, through their documented extension point: agent middleware
(`langchain.agents.middleware.AgentMiddleware`, `create_agent(..., middleware=[GuardMiddleware(guard)])`).

- `awrap_model_call` / `wrap_model_call`: the allowance is reserved before each model call (one call, the
  estimate's tokens and cost) and settled with the usage of the response's AIMessages (`usage_metadata`); a
  refusal is raised, and create_agent's model node lets it propagate out of the graph (`ainvoke` / `astream`
  raise it). A response whose structured answer failed validation (langchain's `StructuredOutputError`, which
  carries the response) is settled with that response's usage before the error goes on.
- `awrap_tool_call` / `wrap_tool_call`: before a tool runs, its approval (bound to the exact call), a rejected
  effect, an unknown-outcome write and the tool-call cap are checked. A call that needs an approval the guard
  does not hold pauses the run with LangGraph's `interrupt()` (the value: `{"type": "tool_approval",
  "tool_call_id", "name", "args", "description"}`, the shape of HumanInTheLoopMiddleware's per-call requests; a
  checkpointer is needed, as for any interrupt); the run is resumed with `Command(resume={interrupt_id:
  {"type": "approve" | "reject", "message"?: ...}})`, and the decision is given to exactly that call (its tool
  call id). With HumanInTheLoopMiddleware in front (its batched default pauses in `after_model`, before the
  tools run), its decisions never reach a tool hook: tell the guard each of them with `guard.decide(tool, args,
  decision, call_id=<the tool call id>)` when you resume, or the guard pauses again on the approved call.
  After the tool returns, the stall check runs and its ToolMessage reaches the model with the content bounded.
- A tool's errors: an exception raised by the tool is fatal, as LangGraph's default ToolNode error handling
  makes it (it ends the run): the guard's `failed`, raised from the hook. A `ToolException` (LangChain's
  recoverable tool error) or an error ToolMessage (a tool with `handle_tool_error`, an argument-validation
  error) counts as a call and goes back to the model. A `TimeoutError` marks a write's outcome unknown and goes
  back to the model as an error ToolMessage; a blind repeat of that write is refused with an answer to the model
  (`UnknownOutcome`), and a write already run under the same tool call id (a resume replayed from an older
  checkpoint) is answered with its recorded result, not run again.
- The deadline: a model call or a tool call still in flight when the allowance's wall-clock runs out is
  cancelled (the guard's `limit`, measure `wall_s`). Only in async runs (`ainvoke` / `astream`): a sync call
  cannot be cut, and the next reservation refuses once the deadline has passed.
- A model call is one call of the chat model: the retries its client makes inside it (ChatAnthropic's and
  ChatOpenAI's max_retries=2 by default) are not seen by any middleware. To reserve each attempt, set the client's
  max_retries=0 and list `ModelRetryMiddleware` before this middleware (it calls the handler again, through it).
- A refusal of a model call (nothing was sent) carries the note `REFUSED_BEFORE_REQUEST`
  (`refused_before_request(exc)`), so a caller can tell it from a call that failed after its request went out.
- A sub-agent (a child `create_agent` run inside a tool) gets `GuardMiddleware(guard.child())`: the same
  allowance, approvals and writes; its stops propagate out of the child's graph, the parent's tool and the
  parent's graph, and its interrupts pause the parent's run (LangGraph's subgraph interrupts).

Every stop is raised through the guard (`guard.stop`, or the guard's own methods), so `guard.exit` says why the
run ended. A stop raised while a tool runs is not caught by create_agent's ToolNode (its default error handler
re-raises everything but argument-validation errors); a ToolNode built with `handle_tool_errors=True` would turn
it into a message to the model: do not build one around this middleware.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import ToolException
from langgraph.errors import GraphBubbleUp
from langgraph.types import interrupt

from loopbench.guard.bindings.lacks import LANGGRAPH
from loopbench.guard.budget import GuardStop, LimitReached, Reservation
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome
from loopbench.guard.policy import Estimate, Guard

# Every extension point of loopbench.guard.hooks is offered (verified in langchain 1.5 / langgraph 1.2:
# AgentMiddleware.awrap_model_call and awrap_tool_call wrap each call with its response or error,
# langgraph.types.interrupt pauses inside the tool hook, a child create_agent takes middleware of its own).
LACKS = LANGGRAPH  # every extension point is there (bindings/lacks.py)

# the note a refusal before a model request carries: no request was sent, so nothing of it is unknown
REFUSED_BEFORE_REQUEST = "loopbench.guard: refused before the model request was sent"


def refused_before_request(exc: BaseException) -> bool:
    """Whether `exc` is the guard's refusal of a model call whose request was never sent."""
    return REFUSED_BEFORE_REQUEST in (getattr(exc, "__notes__", None) or ())


def _messages_of(response: Any) -> list[BaseMessage]:
    """The messages of a model call's result: a ModelResponse, an ExtendedModelResponse or an AIMessage."""
    if isinstance(response, AIMessage):
        return [response]
    inner = getattr(response, "model_response", response)  # ExtendedModelResponse wraps a ModelResponse
    return list(getattr(inner, "result", None) or [])


def _usage(messages: list[BaseMessage]) -> tuple[int, int] | None:
    """(input, output) tokens of the AIMessages among `messages`; None when none of them carries usage."""
    usage = [m.usage_metadata for m in messages if isinstance(m, AIMessage) and m.usage_metadata is not None]
    if not usage:
        return None
    return sum(u.get("input_tokens", 0) for u in usage), sum(u.get("output_tokens", 0) for u in usage)


def _resume(guard: Guard | None) -> None:
    """The task goes on after a decision: the pause is no exit, for this guard and the guards above it."""
    while guard is not None:
        guard.resume()
        guard = guard.parent


class GuardMiddleware(AgentMiddleware[Any, Any, Any]):
    """`create_agent(..., middleware=[..., GuardMiddleware(guard)])`, last in the list, so it wraps the model
    and the tools innermost (after any gate of yours has answered a call). `estimate(request)` says what a model
    call may cost at most (its input and output token caps); without it a call reserves one model call and what
    the last call used (`Guard.estimate_from_last`). `idempotency_arg`: the tool argument that carries a write's
    idempotency key. `pause=False`: a call that needs approval raises the guard's `AwaitingApproval` out of the
    run instead of interrupting it."""

    def __init__(self, guard: Guard, estimate: Callable[[Any], Estimate] | None = None,
                 idempotency_arg: str = "idempotency_key", pause: bool = True):
        super().__init__()
        self.guard = guard
        self.estimate = estimate
        self.idempotency_arg = idempotency_arg
        self.pause = pause

    # ---- the model
    def _reserve_model_call(self, request: Any) -> Reservation:
        try:
            return self.guard.before_model_call(self.estimate(request) if self.estimate else Estimate())
        except GuardStop as stop:
            stop.add_note(REFUSED_BEFORE_REQUEST)
            raise

    def _model_failed(self, held: Reservation, exc: BaseException) -> None:
        """The request was sent and it raised: a call; with the tokens of the response it carries, if any (a
        structured answer that failed validation)."""
        rejected = getattr(exc, "ai_message", None)
        usage = _usage([rejected]) if isinstance(rejected, AIMessage) else None
        if usage is None:
            self.guard.model_call_failed(held)
        else:
            self.guard.after_model_call(held, input_tokens=usage[0], output_tokens=usage[1])

    def _settle_model_call(self, held: Reservation, response: Any) -> None:
        usage = _usage(_messages_of(response))
        if usage is None:  # no usage reported: a call, its tokens unknown
            self.guard.model_call_failed(held)
        else:
            self.guard.after_model_call(held, input_tokens=usage[0], output_tokens=usage[1])

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        held = self._reserve_model_call(request)
        deadline = asyncio.timeout(self.guard.remaining_s())
        try:
            async with deadline:
                response = await handler(request)
        except TimeoutError as exc:
            self._model_failed(held, exc)
            if deadline.expired():
                raise self.guard.stop(LimitReached("wall_s", "the deadline passed during a model call")) from None
            raise
        except BaseException as exc:  # the request was sent: it counts as a call
            self._model_failed(held, exc)
            raise
        self._settle_model_call(held, response)
        return response

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        held = self._reserve_model_call(request)
        try:
            response = handler(request)
        except BaseException as exc:
            self._model_failed(held, exc)
            raise
        self._settle_model_call(held, response)
        return response

    # ---- the tools
    def _answer(self, call: dict[str, Any], content: Any, error: bool = False) -> ToolMessage:
        return ToolMessage(content=content, name=call["name"], tool_call_id=call["id"],
                           status="error" if error else "success")

    def _admit(self, call: dict[str, Any], args: dict[str, Any]) -> Reservation | ToolMessage:
        """The call's reservation, or the answer the model gets instead of running it. A call that needs an
        approval pauses the run (`interrupt`) and, once resumed, gets the decision bound to it."""
        name, call_id = call["name"], call.get("id")
        key = args.get(self.idempotency_arg)
        try:
            try:
                return self.guard.before_tool_call(name, args, key=key)
            except AwaitingApproval as pending:
                if not self.pause:
                    raise
                answer = interrupt({"type": "tool_approval", "tool_call_id": call_id, "name": name, "args": args,
                                    "description": pending.reason})
                kind = answer.get("type") if isinstance(answer, dict) else answer
                self.guard.decide(name, args, "approve" if kind == "approve" else "reject", call_id=call_id)
                _resume(self.guard)
                if kind != "approve":
                    said = answer.get("message") if isinstance(answer, dict) else None
                    return self._answer(call, said or f"The {name} call was rejected; it was not run.", error=True)
                return self.guard.before_tool_call(name, args, key=key)
        except UnknownOutcome as refused:  # a refusal of this call, not a stop: the model is told
            return self._answer(call, f"Not run: {refused.reason}", error=True)

    def _done(self, held: Reservation, call: dict[str, Any], args: dict[str, Any], result: Any) -> Any:
        """After the tool returned: an error answer is a failed call the model retries; a result passes the
        stall check and reaches the model bounded."""
        if not isinstance(result, ToolMessage):  # a Command: the tool steers the graph itself
            held.commit()
            return result
        if result.status == "error":
            self.guard.tool_failed(held, call["name"], fatal=False)
            return result
        bounded = self.guard.after_tool_call(held, call["name"], args, result.content, call_id=call.get("id"))
        return result if bounded is result.content else result.model_copy(update={"content": bounded})

    def _failed(self, held: Reservation, call: dict[str, Any], args: dict[str, Any], exc: Exception) -> Any:
        """The tool raised: a recoverable error (ToolException) or a timeout goes back to the model; any other
        error is fatal, as create_agent's ToolNode makes it."""
        name = call["name"]
        if isinstance(exc, TimeoutError):
            self.guard.tool_timed_out(held, name, args, args.get(self.idempotency_arg))
            return self._answer(call, f"{name} timed out; its outcome is unknown ({exc})", error=True)
        if isinstance(exc, ToolException):
            self.guard.tool_failed(held, name, fatal=False)
            return self._answer(call, str(exc), error=True)
        try:
            self.guard.tool_failed(held, name, fatal=True, message=str(exc) or type(exc).__name__)
        except GuardStop as stop:
            raise stop from exc
        raise exc  # not reached: a fatal failure raises the guard's stop

    def _recorded(self, call: dict[str, Any]) -> ToolMessage | None:
        done = self.guard.recorded(call["name"], call.get("id"))
        return None if done is None else self._answer(call, self.guard.bounded(done))

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call = request.tool_call
        args = dict(call.get("args") or {})
        if (recorded := self._recorded(call)) is not None:  # this very call already ran: its answer
            return recorded
        admitted = self._admit(call, args)
        if isinstance(admitted, ToolMessage):
            return admitted
        held = admitted
        deadline = asyncio.timeout(self.guard.remaining_s())
        try:
            async with deadline:
                result = await handler(request)
        except GraphBubbleUp:  # an interrupt inside the tool (a sub-agent's pause): it runs again on resume
            held.release()
            raise
        except GuardStop:  # a sub-agent's stop, already recorded: the call ran
            held.commit()
            raise
        except TimeoutError as exc:
            if deadline.expired():
                self.guard.tool_timed_out(held, call["name"], args, args.get(self.idempotency_arg))
                raise self.guard.stop(LimitReached("wall_s", "the deadline passed during a tool call")) from None
            return self._failed(held, call, args, exc)
        except Exception as exc:
            return self._failed(held, call, args, exc)
        except BaseException:  # cancelled: the call was sent all the same
            held.commit()
            raise
        return self._done(held, call, args, result)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        args = dict(call.get("args") or {})
        if (recorded := self._recorded(call)) is not None:
            return recorded
        admitted = self._admit(call, args)
        if isinstance(admitted, ToolMessage):
            return admitted
        held = admitted
        try:
            result = handler(request)
        except GraphBubbleUp:
            held.release()
            raise
        except GuardStop:
            held.commit()
            raise
        except Exception as exc:
            return self._failed(held, call, args, exc)
        except BaseException:
            held.commit()
            raise
        return self._done(held, call, args, result)
