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
from dataclasses import dataclass, field
from typing import Any, Literal

from loopbench.guard.budget import Allowance, Budget, GuardStop, Reservation
from loopbench.guard.calls import ApprovalBook, Decision, StallDetector, ToolRules, Writes, canonical, fingerprint

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


@dataclass
class Guard:
    allowance: Allowance
    rules: ToolRules = field(default_factory=ToolRules)
    stall_repeats: int = 3
    max_result_chars: int | None = None  # tool output longer than this reaches the model compacted
    budget: Budget | None = None
    exit: Exit | None = None
    exit_reason: str | None = None
    stored_results: dict[str, str] = field(default_factory=dict)  # reference -> the full output, when compacted

    def __post_init__(self) -> None:
        self.budget = self.budget or Budget(self.allowance)
        self.approvals = ApprovalBook(self.rules)
        self.stalls = StallDetector(self.rules, self.stall_repeats)
        self.writes = Writes(self.rules)
        self._lock = threading.Lock()

    @property
    def _budget(self) -> Budget:
        assert self.budget is not None
        return self.budget

    def stop(self, exc: GuardStop) -> GuardStop:
        """Record `exc` as the task's exit (the first stop wins) and return it, for the binding to raise."""
        with self._lock:
            if self.exit is None:
                self.exit, self.exit_reason = exc.exit, exc.reason  # type: ignore[assignment]
        return exc

    def resume(self) -> None:
        """The paused task goes on (its approvals decided): a pause is not its exit."""
        with self._lock:
            if self.exit == "awaiting_approval":
                self.exit = self.exit_reason = None

    def finish(self, exit: Exit = "completed", reason: str | None = None) -> None:
        with self._lock:
            if self.exit is None:
                self.exit, self.exit_reason = exit, reason

    # ---- the model
    def before_model_call(self, estimate: Estimate = Estimate()) -> Reservation:
        try:
            return self._budget.reserve(model_calls=1, tokens=estimate.tokens, cost_usd=estimate.cost_usd)
        except GuardStop as exc:
            raise self.stop(exc) from None

    def after_model_call(self, reservation: Reservation, *, input_tokens: int, output_tokens: int,
                         cost_usd: float | None = None) -> None:
        reservation.commit(model_calls=1, tokens=input_tokens + output_tokens,
                           **({} if cost_usd is None else {"cost_usd": cost_usd}))

    # ---- the tools
    def before_tool_call(self, tool: str, args: dict[str, Any], key: str | None = None) -> Reservation:
        try:
            self.approvals.check(tool, args)
            self.writes.check(tool, args, key)
            return self._budget.reserve(tool_calls=1)
        except GuardStop as exc:
            raise self.stop(exc) from None

    def after_tool_call(self, reservation: Reservation, tool: str, args: dict[str, Any], result: Any) -> Any:
        reservation.commit()
        self.writes.verified(tool, args)
        try:
            self.stalls.observe(tool, args, result)
        except GuardStop as exc:
            raise self.stop(exc) from None
        return self.bounded(result)

    def tool_timed_out(self, reservation: Reservation, tool: str, args: dict[str, Any], key: str | None) -> None:
        """The call was sent and no answer came: it counts, and a write's outcome is now unknown."""
        reservation.commit()
        self.writes.timed_out(tool, args, key)

    def decide(self, tool: str, args: dict[str, Any], decision: Decision) -> None:
        self.approvals.decide(tool, args, decision)

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
        kid = Guard(self.allowance, self.rules, self.stall_repeats, self.max_result_chars, budget=self.budget)
        kid.approvals, kid.writes, kid.stored_results = self.approvals, self.writes, self.stored_results
        return kid

    def snapshot(self) -> dict[str, Any]:
        return {"budget": self._budget.snapshot(), "approvals": self.approvals.snapshot(),
                "unknown_writes": dict(self.writes.unknown)}

    @classmethod
    def restore(cls, allowance: Allowance, snapshot: dict[str, Any], rules: ToolRules | None = None,
                **kwargs: Any) -> Guard:
        guard = cls(allowance, rules or ToolRules(), budget=Budget.restore(allowance, snapshot.get("budget", {})),
                    **kwargs)
        guard.approvals.restore(snapshot.get("approvals", {}))
        guard.writes.unknown = dict(snapshot.get("unknown_writes", {}))
        return guard
