"""The production loop policy as one object a framework's hooks call: `Guard`.

A binding calls, from the framework's own extension points:
- `before_model_call(estimate)` -> a Reservation (settle it with `after_model_call`), or a GuardStop;
- `before_tool_call(tool, args, key=None)` -> a Reservation, or a GuardStop (limit, denied, awaiting approval,
  an unknown-outcome write repeated without its key);
- `after_tool_call(reservation, tool, args, result)` -> the result to hand the model (bounded), or Stalled;
- `tool_timed_out(...)`, `decide(...)` for approvals, `child()` for a sub-agent, `snapshot()` / `Guard.restore`
  across a pause.
`exit` is the policy's own stop (`completed`, `limit`, `awaiting_approval`, `denied`, `failed`, `stalled`,
`cancelled`), recorded beside the framework's native signals. This module imports nothing of loopbench's
harness: the guard is usable outside loopbench.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from loopbench.guard.budget import Allowance, Budget, Cancelled, GuardStop, LimitReached, Reservation
from loopbench.guard.calls import (
    ApprovalBook,
    Decision,
    StallDetector,
    ToolRules,
    Writes,
    canonical,
    fingerprint,
    normalized_tool,
)

Exit = Literal["completed", "limit", "awaiting_approval", "denied", "failed", "stalled", "cancelled"]


@dataclass(frozen=True)
class Estimate:
    """What a model call may cost at most: its input tokens and its output cap, and the price per token."""

    input_tokens: int = 0
    max_output_tokens: int = 0
    usd_per_input_token: float = 0.0
    usd_per_output_token: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.max_output_tokens

    @property
    def cost_usd(self) -> float:
        return self.input_tokens * self.usd_per_input_token + self.max_output_tokens * self.usd_per_output_token


class ToolFailed(GuardStop):
    """A tool's service answered with a definitive failure: the task ends on it (a model that goes on without
    the tool's answer would answer without its evidence)."""

    exit = "failed"


Price = Callable[[int, int], float]  # (input tokens, output tokens) -> USD


@dataclass
class Guard:
    """The policy of one task. `price` turns a call's tokens into its cost (a cost cap needs it, or the binding
    passes `cost_usd`); with `estimate_from_last` a model call that brings no estimate of its own reserves what the
    last one used (an agent loop's context only grows, so the next request costs at least as much); with
    `tool_needs_model_call` a tool call is refused when no model call is left to read its result."""

    allowance: Allowance
    rules: ToolRules = field(default_factory=ToolRules)
    stall_repeats: int = 3
    max_result_chars: int | None = None  # tool output longer than this reaches the model compacted
    budget: Budget | None = None
    price: Price | None = None
    estimate_from_last: bool = True
    tool_needs_model_call: bool = True
    parent: Guard | None = None  # a sub-agent's guard: its stops are the task's exit too
    # what counts as the same answer for the stall check: the result without what differs on every call (a
    # request id, a timestamp); None: the result as it is
    result_key: Callable[[Any], Any] | None = None
    exit: Exit | None = None
    exit_reason: str | None = None
    stored_results: dict[str, str] = field(default_factory=dict)  # reference -> the full output, when compacted

    def __post_init__(self) -> None:
        self.budget = self.budget or Budget(self.allowance)
        self.approvals = ApprovalBook(self.rules)
        self.stalls = StallDetector(self.rules, self.stall_repeats)
        self.writes = Writes(self.rules)
        self.last_call: tuple[float, float] = (0.0, 0.0)  # tokens, cost of the last model call settled
        self.stop_measure: str | None = None  # the measure of a limit stop (`model_calls`, `tokens`, `wall_s`...)
        self.done: dict[str, Any] = {}  # a write's call id -> its result: a replayed call is answered, not re-run
        self._clock_started = False  # start_clock: the segment's clock restarts once, at the loop's first hook
        self._lock = threading.Lock()

    @property
    def _budget(self) -> Budget:
        assert self.budget is not None
        return self.budget

    def stop(self, exc: GuardStop) -> GuardStop:
        """Record `exc` as the task's exit (the first stop wins; a refusal of one call is none) and return it, for
        the binding to raise."""
        if not exc.ends_task:
            return exc
        with self._lock:
            if self.exit is None:
                self.exit, self.exit_reason = exc.exit, exc.reason  # type: ignore[assignment]
                self.stop_measure = getattr(exc, "measure", None)
        if self.parent is not None:
            self.parent.stop(exc)
        return exc

    def cancel(self, reason: str = "the caller cancelled the task") -> GuardStop:
        """The caller cancelled the task (its abort signal fired): the policy's `cancelled` exit, returned for the
        binding to raise where the framework went on or returned as if nothing happened."""
        return self.stop(Cancelled(reason))

    def resume(self) -> None:
        """The paused or cancelled task goes on (its approvals decided, or the caller continues it): neither the
        pause nor the cancel is its exit any more."""
        with self._lock:
            if self.exit in ("awaiting_approval", "cancelled"):
                self.exit = self.exit_reason = None
        if self.parent is not None:
            self.parent.resume()

    def finish(self, exit: Exit = "completed", reason: str | None = None) -> None:
        with self._lock:
            if self.exit is None:
                self.exit, self.exit_reason = exit, reason

    # ---- the model
    def before_model_call(self, estimate: Estimate = Estimate()) -> Reservation:
        tokens, cost = float(estimate.tokens), estimate.cost_usd
        if self.estimate_from_last and not tokens and not cost:
            tokens, cost = self.last_call
        try:
            return self._budget.reserve(model_calls=1, tokens=tokens, cost_usd=cost)
        except GuardStop as exc:
            raise self.stop(exc) from None

    def after_model_call(self, reservation: Reservation, *, input_tokens: int, output_tokens: int,
                         cost_usd: float | None = None) -> None:
        if cost_usd is None and self.price is not None:
            cost_usd = self.price(input_tokens, output_tokens)
        reservation.commit(model_calls=1, tokens=input_tokens + output_tokens,
                           **({} if cost_usd is None else {"cost_usd": cost_usd}))
        with self._lock:
            self.last_call = (float(input_tokens + output_tokens), cost_usd or 0.0)

    def model_call_failed(self, reservation: Reservation) -> None:
        """The request was sent and no response came (an error, a cut): a call, with no tokens known."""
        reservation.commit(model_calls=1, tokens=0, cost_usd=0)

    def start_clock(self) -> None:
        """The segment's wall-clock starts now (see Budget.restart_clock); time spent in earlier segments stays.
        Only the first call counts, so a binding calls it from every hook that may come first; a sub-agent's guard
        leaves it (a child's run is inside its parent's segment)."""
        with self._lock:
            if self.parent is not None or self._clock_started:
                return
            self._clock_started = True
        self._budget.restart_clock()

    def remaining_s(self) -> float | None:
        """The time left before the deadline (None: no deadline): a binding bounds an in-flight call with it."""
        return self._budget.remaining_s()

    # ---- the tools
    def before_tool_call(self, tool: str, args: dict[str, Any], key: str | None = None) -> Reservation:
        try:
            self._model_call_left()
            self.approvals.check(tool, args)
            self.writes.check(tool, args, key)
            return self._budget.reserve(tool_calls=1)
        except GuardStop as exc:
            raise self.stop(exc) from None

    def _model_call_left(self) -> None:
        cap = self.allowance.model_calls
        if not self.tool_needs_model_call or cap is None:
            return
        budget = self._budget
        with budget._lock:
            spent = budget.used["model_calls"] + budget.in_flight["model_calls"]
        if spent >= cap:
            raise LimitReached("model_calls", f"model_calls: all {cap} used: no model call is left to read this "
                                              "tool's result")

    def tool_failed(self, reservation: Reservation, tool: str, fatal: bool, message: str = "") -> None:
        """The tool ran and its service answered with an error: a call all the same; a fatal one ends the task
        (ToolFailed), a recoverable one is the model's to retry, within the framework's own retry budget and the
        call caps."""
        reservation.commit()
        if fatal:
            raise self.stop(ToolFailed(f"{normalized_tool(tool)} failed: {message}"[:300]))

    def recorded(self, tool: str, call_id: str | None) -> Any | None:
        """The result of a write that already ran under this call id (a resume replayed from an older snapshot),
        or None: a binding answers a replayed call with it instead of running the write twice."""
        if call_id is None or normalized_tool(tool) not in self.rules.writes:
            return None
        with self._lock:
            return self.done.get(call_id)

    def after_tool_call(self, reservation: Reservation, tool: str, args: dict[str, Any], result: Any,
                        call_id: str | None = None) -> Any:
        reservation.commit()
        self.writes.verified(tool, args)
        if call_id is not None and normalized_tool(tool) in self.rules.writes:
            with self._lock:
                self.done[call_id] = result
        try:
            self.stalls.observe(tool, args, result if self.result_key is None else self.result_key(result))
        except GuardStop as exc:
            raise self.stop(exc) from None
        return self.bounded(result)

    def tool_timed_out(self, reservation: Reservation, tool: str, args: dict[str, Any], key: str | None) -> None:
        """The call was sent and no answer came: it counts, and a write's outcome is now unknown."""
        reservation.commit()
        self.writes.timed_out(tool, args, key)

    def decide(self, tool: str, args: dict[str, Any], decision: Decision, call_id: str | None = None) -> None:
        """A person's decision on a pending call (`call_id`: the pause's id for it; a decision counts once)."""
        self.approvals.decide(tool, args, decision, call_id)

    def bounded(self, result: Any) -> Any:
        """The result as the next request carries it: whole, or its head and a reference to the stored whole."""
        if self.max_result_chars is None:
            return result
        text = result if isinstance(result, str) else canonical(result)
        if len(text) <= self.max_result_chars:
            return result
        ref = f"result:{fingerprint(text)}"
        self.stored_results[ref] = text
        return (f"{text[: self.max_result_chars]}… [{len(text) - self.max_result_chars} more characters; the whole "
                f"result is stored as {ref}]")

    # ---- sub-agents and resumes
    def child(self) -> Guard:
        """A sub-agent's guard: its own stall window, the same allowance, budget, approvals and writes."""
        kid = Guard(self.allowance, self.rules, self.stall_repeats, self.max_result_chars, budget=self.budget,
                    price=self.price, estimate_from_last=self.estimate_from_last,
                    tool_needs_model_call=self.tool_needs_model_call, parent=self, result_key=self.result_key)
        kid.approvals, kid.writes, kid.stored_results, kid.done = (self.approvals, self.writes, self.stored_results,
                                                                   self.done)
        return kid

    def snapshot(self) -> dict[str, Any]:
        return {"budget": self._budget.snapshot(), "approvals": self.approvals.snapshot(),
                "unknown_writes": dict(self.writes.unknown), "last_call": list(self.last_call),
                "done": {k: v if isinstance(v, str) else canonical(v) for k, v in self.done.items()}}

    @classmethod
    def restore(cls, allowance: Allowance, snapshot: dict[str, Any], rules: ToolRules | None = None,
                **kwargs: Any) -> Guard:
        guard = cls(allowance, rules or ToolRules(), budget=Budget.restore(allowance, snapshot.get("budget", {})),
                    **kwargs)
        guard.approvals.restore(snapshot.get("approvals", {}))
        guard.writes.unknown = dict(snapshot.get("unknown_writes", {}))
        tokens, cost = snapshot.get("last_call", (0.0, 0.0))
        guard.last_call = (float(tokens), float(cost))
        guard.done = dict(snapshot.get("done", {}))
        return guard
