"""What the policy knows about tool calls: a call's identity, approval bound to it, stalls, and writes whose
outcome is unknown.

- A call's identity is its normalized tool name and its arguments as canonical JSON (keys sorted, no spacing),
  hashed: the same call twice has the same identity whatever the framework's call id.
- Approval is granted to one identity and used once: a call with another target or other arguments needs its own
  approval. A rejection is bound to the call's *effect* (the tool's declared effect, e.g. `outbound_message`),
  so the same effect through another tool is refused too; the task ends in its defined fallback.
- A stall is the same call returning the same result (a fingerprint of it) `repeats` times in a row; a tool
  declared as polling may repeat up to its own bound instead.
- A write whose outcome is unknown (its call timed out) is not retried blindly: only with the same idempotency
  key, or after a verification says it did not happen.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from loopbench.guard.budget import GuardStop


def normalized_tool(name: str) -> str:
    """`mcp__loopbench__send_reply`, `SendReply`, `send-reply` -> `send_reply`: the name without a server
    prefix, in snake case."""
    base = name.rsplit("__", 1)[-1]
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).replace("-", "_")
    return base.lower()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def call_identity(tool: str, args: dict[str, Any]) -> str:
    return hashlib.sha256(f"{normalized_tool(tool)}\n{canonical(args)}".encode()).hexdigest()[:16]


def fingerprint(result: Any) -> str:
    return hashlib.sha256(canonical(result).encode()).hexdigest()[:16]


class Denied(GuardStop):
    exit = "denied"


class AwaitingApproval(GuardStop):
    """The call needs a person's decision: the task pauses with this call pending."""

    exit = "awaiting_approval"

    def __init__(self, tool: str, args: dict[str, Any], identity: str):
        super().__init__(f"{normalized_tool(tool)} needs approval for exactly these arguments ({identity})")
        self.tool = tool
        self.call_args = args
        self.identity = identity


class Stalled(GuardStop):
    exit = "stalled"


@dataclass
class ToolRules:
    """What the policy is told about the tools: which need approval, what effect each has, which poll."""

    needs_approval: set[str] = field(default_factory=set)
    effects: dict[str, str] = field(default_factory=dict)  # tool -> effect (`outbound_message`, `refund`)
    polling: dict[str, int] = field(default_factory=dict)  # tool -> the most identical polls allowed
    writes: set[str] = field(default_factory=set)  # tools with side effects (an unknown outcome matters)

    def __post_init__(self) -> None:
        self.needs_approval = {normalized_tool(t) for t in self.needs_approval}
        self.effects = {normalized_tool(t): e for t, e in self.effects.items()}
        self.polling = {normalized_tool(t): n for t, n in self.polling.items()}
        self.writes = {normalized_tool(t) for t in self.writes}

    def effect(self, tool: str) -> str:
        name = normalized_tool(tool)
        return self.effects.get(name, name)


Decision = Literal["approve", "reject"]


class ApprovalBook:
    """Approvals granted to exact call identities (each used once) and rejections bound to effects."""

    def __init__(self, rules: ToolRules):
        self.rules = rules
        self.granted: dict[str, int] = {}
        self.rejected_effects: set[str] = set()
        self.decided: set[str] = set()  # the pending calls' ids already answered: a decision counts once
        self._lock = threading.Lock()

    def decide(self, tool: str, args: dict[str, Any], decision: Decision, call_id: str | None = None) -> None:
        identity = call_identity(tool, args)
        with self._lock:
            if call_id is not None:
                if call_id in self.decided:  # the same pause answered again (a replayed resume): already counted
                    return
                self.decided.add(call_id)
            if decision == "approve":
                self.granted[identity] = self.granted.get(identity, 0) + 1
            else:
                self.rejected_effects.add(self.rules.effect(tool))

    def check(self, tool: str, args: dict[str, Any]) -> None:
        """Before a tool runs: Denied (its effect was rejected), AwaitingApproval (it needs an approval for
        exactly this call, none is left), or None (it may run; an approval it used is spent)."""
        identity = call_identity(tool, args)
        with self._lock:
            effect = self.rules.effect(tool)
            if effect in self.rejected_effects:
                raise Denied(f"{normalized_tool(tool)}: its effect {effect!r} was rejected for this task")
            if normalized_tool(tool) not in self.rules.needs_approval:
                return
            if self.granted.get(identity, 0) > 0:
                self.granted[identity] -= 1
                return
        raise AwaitingApproval(tool, args, identity)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"granted": dict(self.granted), "rejected_effects": sorted(self.rejected_effects),
                    "decided": sorted(self.decided)}

    def restore(self, snapshot: dict[str, Any]) -> None:
        with self._lock:
            self.granted = {k: int(v) for k, v in snapshot.get("granted", {}).items()}
            self.rejected_effects = set(snapshot.get("rejected_effects", []))
            self.decided = set(snapshot.get("decided", []))


class StallDetector:
    """The same call with the same result `repeats` times in a row is a stall; a polling tool gets its own
    bound (identical polls beyond it are a stall too)."""

    def __init__(self, rules: ToolRules, repeats: int = 3):
        self.rules = rules
        self.repeats = repeats
        self.recent: deque[tuple[str, str]] = deque(maxlen=max(repeats, *rules.polling.values(), 1) + 1)
        self._lock = threading.Lock()

    def observe(self, tool: str, args: dict[str, Any], result: Any) -> None:
        """After a tool returns: Stalled when this observation completes a run of identical ones."""
        key = (call_identity(tool, args), fingerprint(result))
        with self._lock:
            self.recent.append(key)
            same = 0
            for k in reversed(self.recent):
                if k != key:
                    break
                same += 1
        bound = self.rules.polling.get(normalized_tool(tool), self.repeats)
        if same >= bound and same > 1:
            raise Stalled(f"{normalized_tool(tool)} returned the same result for the same arguments {same} times "
                          f"in a row (bound {bound})")


class UnknownOutcome(GuardStop):
    """A write may or may not have happened: verify it, or retry only with its idempotency key. A refusal of the
    blind repeat, not a stop: the model is told, and the task goes on without a second effect."""

    exit = "failed"
    ends_task = False


class Writes:
    """Writes whose outcome is unknown (a timeout), by call identity -> their idempotency key."""

    def __init__(self, rules: ToolRules):
        self.rules = rules
        self.unknown: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def timed_out(self, tool: str, args: dict[str, Any], idempotency_key: str | None) -> None:
        if normalized_tool(tool) in self.rules.writes:
            with self._lock:
                self.unknown[call_identity(tool, args)] = idempotency_key

    def verified(self, tool: str, args: dict[str, Any]) -> None:
        """A verification settled the outcome: the call is an ordinary one again."""
        with self._lock:
            self.unknown.pop(call_identity(tool, args), None)

    def check(self, tool: str, args: dict[str, Any], idempotency_key: str | None) -> None:
        """Before a write: UnknownOutcome when it repeats a write of unknown outcome without that write's key."""
        identity = call_identity(tool, args)
        with self._lock:
            if identity not in self.unknown:
                return
            key = self.unknown[identity]
        if key is None or idempotency_key != key:
            raise UnknownOutcome(f"{normalized_tool(tool)} timed out before: its outcome is unknown; verify it, "
                                 "or retry it with the same idempotency key")
