"""The guard in the Claude Agent SDK, through its documented extension points: the Claude Code CLI's hooks, as
Python callbacks (`ClaudeAgentOptions(hooks=GuardHooks(guard).hooks())`). The CLI runs the agent loop; the SDK
gets each hook as a control request and answers with the callback's output.

- `UserPromptSubmit`, `SubagentStart` and `PostToolBatch` (after a batch of tool calls, before the request that
  reads their results): the model call that follows is reserved there (one call, the estimate's tokens and cost);
  the request before it is settled with the usage of its response, read from the session transcript the hook
  names (`transcript_path`; a sub-agent's is `<session>/subagents/agent-<agent_id>.jsonl`, where the SDK's
  `get_subagent_messages` reads it; the CLI writes it every 100 ms, so the hook waits for it up to 2 s); the main
  loop's last response is settled at the ResultMessage (its `usage`, when the transcript lags). A refusal
  answers `continue: false` and a `stopReason`: the CLI ends the run (`terminal_reason="hook_stopped"`).
  `SubagentStart` cannot stop a child (the CLI ignores its `continue`): a refusal there takes effect at the
  child's next hook, or at the parent's next one.
- `PreToolUse`: before a tool runs, its approval (bound to the exact call), a rejected effect, an unknown-outcome
  write, the tool-call cap and "no model call left to read the result" are checked. A call that needs approval is
  deferred (`permissionDecision: "defer"`): the run ends with `terminal_reason="tool_deferred"` and
  `ResultMessage.deferred_tool_use`; resume it with `ClaudeAgentOptions(resume=<session id>)` and the decision given
  to `GuardHooks(..., decisions={tool_use_id: "approve" | "reject"})`: the CLI asks the hook again for exactly that
  call, which approves that call alone ("allow") or answers the reviewer's rejection ("deny": the model is told, the
  loop goes on; the rejected effect is refused from then on). A blind repeat of a write whose outcome is unknown is
  denied with an answer to the model (`UnknownOutcome`); a write already run under the same tool_use_id is answered
  with its recorded result, not run again. Every other refusal denies the call and ends the run (`continue: false`).
- `PostToolUse`: the stall check, and the result the model reads, bounded (`updatedToolOutput`); a stall ends
  the run. `PostToolUseFailure` (an MCP tool's `is_error` result, a failed built-in tool): `failure(tool,
  tool_use_id, error)` says what the error was ("fatal", "timeout" or "retry"; default "retry"): a fatal one is
  the guard's `failed` stop, a timeout marks a write's outcome unknown. The CLI ignores `continue: false` from
  `PostToolUseFailure`, so that stop ends the run at the `PostToolBatch` that follows.
- Sub-agents (the CLI's Agent tool): the same hooks fire inside a child with its `agent_id`; each child gets its
  own `guard.child()` (its stall window; the task's allowance, approvals and writes). A child's `continue: false`
  ends the child only: its stop is the task's exit, and the parent's next hook ends the run. So does a child's
  failed model request (`StopFailure`), which the CLI hands the parent as the Agent tool's error, and a child's
  call that needs approval: the CLI ends a child on its defer and nothing can resume it (see LACKS).
- Feed each message the SDK yields to `on_message`: at the `ResultMessage` it settles the calls still open and
  raises the guard's stop (a `GuardStop`) when the run ended on it, so the stop propagates out of the caller's
  loop as the framework's own errors do.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

# claude_agent_sdk is imported where it is used: importing this module (for LACKS) needs no SDK
from loopbench.guard.budget import GuardStop, Reservation
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome
from loopbench.guard.hooks import Hook
from loopbench.guard.policy import Estimate, Guard

FailureKind = Literal["fatal", "timeout", "retry"]
# (tool name, tool_use_id, the error the CLI reports) -> what the failure means for the policy
Failure = Callable[[str, str, str], FailureKind]
Decision = Literal["approve", "reject"]
TRANSCRIPT_WAIT_S = 2.0  # how long a hook waits for a response the CLI has not written to its transcript yet
ENDING = ("limit", "denied", "failed", "stalled", "cancelled")  # a guard exit that ends the task (not a pause)

LACKS: dict[Hook, str] = {
    "before_model_call": "no hook runs before each model request: the binding reserves a call at UserPromptSubmit, "
                         "SubagentStart and PostToolBatch (before the request that reads a tool batch); the CLI's "
                         "own re-requests (its API retries, 10 by default; the re-ask after an empty answer) pass "
                         "no hook, so the guard neither counts nor refuses them",
    "model_usage": "no hook carries a response's usage: the binding reads it from the session transcript the "
                   "next hook names (the CLI writes it every 100 ms; a hook waits up to 2 s), the main loop's last "
                   "one from ResultMessage.usage; a response not written by then counts as a call with no tokens",
    "pause": "a defer pauses one call: when one response holds two calls that need approval, the CLI keeps the "
             "last one deferred (ResultMessage.deferred_tool_use) and drops the other from the conversation, so the "
             "resume neither asks about it nor runs it",
    "sub_agent": "a defer inside a sub-agent does not pause the run: the CLI ends the child and the parent goes "
                 "on, so the guard ends the task awaiting approval at the parent's next hook, with nothing to "
                 "resume; SubagentStart cannot stop a child, so a refusal of its first model call takes effect at "
                 "its next hook",
    "deadline": "no hook can cut a model request or a tool call in flight, nor runs during the CLI's start-up "
                "(seconds): the deadline is checked before each tool call and each reserved model call, so a slow "
                "call runs to its end past the deadline; each segment's time counts from its first hook",
}


def _text(response: Any) -> Any:
    """A tool's response as the model reads it: an MCP tool's text blocks joined (other responses as they are)."""
    if isinstance(response, list) and all(isinstance(b, dict) for b in response):
        texts = [str(b.get("text", "")) for b in response if b.get("type") == "text"]
        if len(texts) == len(response):
            return "\n".join(texts)
    return response


def _responses(path: Path | None) -> dict[str, tuple[int, int]]:
    """The model responses a transcript holds, by message id, in order: (input tokens with the cache's, output
    tokens). The CLI writes one entry per content block, each with the response's usage."""
    found: dict[str, tuple[int, int]] = {}
    if path is None or not path.is_file():
        return found
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
        if not isinstance(message, dict) or not message.get("id") or not isinstance(message.get("usage"), dict):
            continue
        usage = message["usage"]
        tokens_in = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                          "cache_read_input_tokens"))
        found[str(message["id"])] = (tokens_in, int(usage.get("output_tokens") or 0))
    return found


@dataclass
class _Agent:
    """One loop (the main one, or a sub-agent's): its guard, the model call it has reserved, its transcript."""

    guard: Guard
    transcript: Path | None = None
    call: Reservation | None = None  # the model call reserved and not yet settled
    seen: set[str] = field(default_factory=set)  # responses already settled (or there before this segment)
    finished: bool = False  # a sub-agent that returned (SubagentStop)
    settled: tuple[int, int] = (0, 0)  # the tokens settled in this segment (input, output)


class GuardHooks:
    """`ClaudeAgentOptions(hooks=GuardHooks(guard).hooks())`, and `on_message(message)` for each message the SDK
    yields. `matcher`: the tools the guard sees (a CLI hook matcher: names joined with `|`; None: every tool).
    `decisions`: a resume's decisions for the deferred calls, by tool_use_id. `estimate(hook input)`: what the next
    request may cost at most (without it a request reserves one model call and what the last one used)."""

    def __init__(self, guard: Guard, *, matcher: str | None = None, decisions: dict[str, Decision] | None = None,
                 failure: Failure | None = None, estimate: Callable[[dict[str, Any]], Estimate] | None = None,
                 idempotency_arg: str = "idempotency_key"):
        self.guard = guard
        self.matcher = matcher
        self.decisions = dict(decisions or {})
        if self.decisions:  # the paused task goes on: its pause is not its exit (the hook tells the guard each one)
            guard.resume()
        self.failure: Failure = failure or (lambda tool, tool_use_id, error: "retry")
        self.estimate = estimate
        self.idempotency_arg = idempotency_arg
        self.stopped: GuardStop | None = None  # the stop that ended the run
        self._agents: dict[str | None, _Agent] = {}
        self._tools: dict[str, Reservation] = {}  # tool_use_id -> the reservation of a tool call let through

    def hooks(self) -> dict[Any, list[Any]]:
        from claude_agent_sdk import HookMatcher

        events: dict[str, tuple[str | None, Any]] = {
            "UserPromptSubmit": (None, self._prompt), "SubagentStart": (None, self._subagent_start),
            "PreToolUse": (self.matcher, self._pre_tool), "PostToolUse": (self.matcher, self._post_tool),
            "PostToolUseFailure": (self.matcher, self._tool_failure), "PostToolBatch": (None, self._batch),
            "SubagentStop": (None, self._subagent_stop), "StopFailure": (None, self._stop_failure),
        }
        # PostToolBatch and StopFailure are CLI hook events (code.claude.com/docs/en/hooks; the SDK exports
        # PostToolBatchHookSpecificOutput) that this SDK release's HookEvent literal does not list yet
        return cast(dict[Any, list[Any]], {event: [HookMatcher(matcher=m, hooks=[self._first(fn)])]
                                           for event, (m, fn) in events.items()})

    def _first(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, starting the segment's clock at the first hook of this run: before it the CLI process starts
        (seconds, more on a busy machine), where no hook can check or cut anything, as a Python framework's
        import comes before its loop; counting it would let the host's speed, not the loop, spend the deadline."""
        async def hook(data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
            self.guard.start_clock()  # only the first call of the segment restarts it
            return cast(dict[str, Any], await fn(data, tool_use_id, context))
        return hook

    def on_message(self, message: Any) -> None:
        """At the run's ResultMessage: settle what is still open, then raise the guard's stop if it ended the run."""
        from claude_agent_sdk import ResultMessage

        if not isinstance(message, ResultMessage):
            return
        for aid, agent in self._agents.items():
            if not self._settle(agent) and aid is None and isinstance(message.usage, dict):
                # the main loop's last response, not in the transcript yet: the result's `usage` (the main loop's,
                # this segment's) less what was settled
                u = message.usage
                used = (sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                         "cache_read_input_tokens")), int(u.get("output_tokens") or 0))
                rest = (used[0] - agent.settled[0], used[1] - agent.settled[1])
                if rest[0] > 0 or rest[1] > 0:
                    self._settle(agent, (max(rest[0], 0), max(rest[1], 0)))
            self._failed(agent)
        for held in self._tools.values():
            if held.open:
                held.release()
        self._tools.clear()
        if self.stopped is not None:
            raise self.stopped

    # ---- the loops
    def _agent(self, data: dict[str, Any]) -> _Agent:
        aid = data.get("agent_id")
        aid = str(aid) if aid else None
        agent = self._agents.get(aid)
        if agent is None:
            path = data.get("transcript_path")
            transcript = Path(path) if isinstance(path, str) and path else None
            if aid is not None and transcript is not None:
                transcript = transcript.with_suffix("") / "subagents" / f"agent-{aid}.jsonl"
            agent = _Agent(self.guard if aid is None else self.guard.child(), transcript)
            agent.seen = set(_responses(transcript))  # a resumed session's earlier responses are settled
            self._agents[aid] = agent
        return agent

    def _halt(self, exc: GuardStop) -> dict[str, Any]:
        """Record the stop and end the run (the CLI's `continue: false`)."""
        stop = self.guard.stop(exc)
        if self.stopped is None:
            self.stopped = stop
        return {"continue_": False, "stopReason": f"guard: {stop.reason}"}

    def _halted(self) -> dict[str, Any] | None:
        """The run goes on no further once the task has a guard exit (a sub-agent's stop included)."""
        if self.stopped is not None or self.guard.exit in ENDING:
            if self.stopped is None:
                self.stopped = GuardStop(self.guard.exit_reason or "the guard stopped the task")
            return {"continue_": False, "stopReason": f"guard: {self.stopped.reason}"}
        return None

    def _settle(self, agent: _Agent, usage: tuple[int, int] | None = None) -> bool:
        """The reserved call's response, from the transcript: settled with its usage (several new responses: one
        call the CLI made more than once, their tokens summed), or with `usage` when the transcript has none yet.
        False: no response found (the call stays open)."""
        if agent.call is None:
            return True
        found = {k: v for k, v in _responses(agent.transcript).items() if k not in agent.seen}
        if found:
            agent.seen.update(found)
            usage = (sum(i for i, _ in found.values()), sum(o for _, o in found.values()))
        if usage is None:
            return False
        agent.guard.after_model_call(agent.call, input_tokens=usage[0], output_tokens=usage[1])
        agent.settled = (agent.settled[0] + usage[0], agent.settled[1] + usage[1])
        agent.call = None
        return True

    async def _settle_soon(self, agent: _Agent) -> None:
        """A call that has a response (its tool calls ran): the CLI writes its transcript every 100 ms, so the
        response may be a moment late; without it after `TRANSCRIPT_WAIT_S` the call counts with no tokens."""
        deadline = time.monotonic() + TRANSCRIPT_WAIT_S
        while not self._settle(agent):
            if time.monotonic() >= deadline:
                self._failed(agent)
                return
            await asyncio.sleep(0.05)

    @staticmethod
    def _failed(agent: _Agent) -> None:
        if agent.call is not None:
            agent.guard.model_call_failed(agent.call)
            agent.call = None

    async def _reserve(self, agent: _Agent, data: dict[str, Any]) -> dict[str, Any]:
        await self._settle_soon(agent)
        if (halted := self._halted()) is not None:
            return halted
        try:  # the deadline too: a reservation after it is refused (LimitReached wall_s)
            agent.call = agent.guard.before_model_call(self.estimate(data) if self.estimate else Estimate())
        except GuardStop as exc:
            return self._halt(exc)
        return {}

    # ---- the model calls
    async def _prompt(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return await self._reserve(self._agent(data), data)

    async def _subagent_start(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return await self._reserve(self._agent(data), data)  # the CLI ignores a stop here: the child's next hook

    async def _batch(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        agent = self._agent(data)
        for tid in [t.get("tool_use_id") for t in data.get("tool_calls") or [] if isinstance(t, dict)]:
            held = self._tools.pop(str(tid), None)
            if held is not None and held.open:  # refused after this hook let it through: it did not run
                held.release()
        if agent.guard is self.guard:  # the children that returned: their last responses
            for child in self._agents.values():
                if child.finished:
                    await self._settle_soon(child)
        return await self._reserve(agent, data)

    async def _subagent_stop(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        agent = self._agent(data)
        agent.finished = True
        self._settle(agent)
        return {}

    async def _stop_failure(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        """A loop ended on a failed model request: the main one ends the run with the CLI's own error; a
        sub-agent's the CLI hands the parent as the Agent tool's failure and goes on, so the guard ends the task."""
        agent = self._agent(data)
        agent.finished = True
        self._failed(agent)
        if agent.guard is not self.guard:
            return self._halt(GuardStop(f"{data.get('agent_type') or 'a sub-agent'}'s model request failed: "
                                        f"{data.get('error') or 'error'}"))
        return {}

    # ---- the tools
    async def _pre_tool(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        agent = self._agent(data)
        name, tid = str(data.get("tool_name", "")), str(tool_use_id or data.get("tool_use_id") or "")
        args = data.get("tool_input") or {}
        if (halted := self._halted()) is not None:
            return {**halted, **_permission("deny", halted["stopReason"])}
        recorded = agent.guard.recorded(name, tid or None)
        if recorded is not None:  # this very call already ran (a replayed resume): its answer, not a second effect
            return _permission("deny", f"Already done: {recorded}")
        decision = self.decisions.get(tid)
        if decision is not None:
            agent.guard.decide(name, args, decision, call_id=tid)
            if decision == "reject":
                return _permission("deny", "rejected by the reviewer")
        key = args.get(self.idempotency_arg)
        try:
            held = agent.guard.before_tool_call(name, args, key=key if isinstance(key, str) else None)
        except AwaitingApproval as pause:
            if agent.guard is not self.guard and self.stopped is None:
                # the CLI ends a child on a defer and its parent goes on: the parent's next hook ends the run
                self.stopped = pause
            return _permission("defer", "waiting for approval")
        except UnknownOutcome as refused:
            return _permission("deny", f"Not run: {refused.reason}")
        except GuardStop as exc:
            out = self._halt(exc)
            return {**out, **_permission("deny", out["stopReason"])}
        self._tools[tid] = held
        # an approved call is allowed here (no permission rule of the app's allows it); others keep the app's rules
        return _permission("allow", "approved by the reviewer") if decision == "approve" else {}

    async def _post_tool(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        agent = self._agent(data)
        name, tid = str(data.get("tool_name", "")), str(tool_use_id or data.get("tool_use_id") or "")
        held = self._tools.pop(tid, None)
        if held is None:
            return self._halted() or {}
        result = _text(data.get("tool_response"))
        try:
            bounded = agent.guard.after_tool_call(held, name, data.get("tool_input") or {}, result,
                                                  call_id=tid or None)
        except GuardStop as exc:
            return self._halt(exc)
        if (halted := self._halted()) is not None:  # e.g. a sub-agent's stop, seen at the Agent tool's return
            return halted
        if bounded is result:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                       "updatedToolOutput": [{"type": "text", "text": str(bounded)}]}}

    async def _tool_failure(self, data: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        agent = self._agent(data)
        name, tid = str(data.get("tool_name", "")), str(tool_use_id or data.get("tool_use_id") or "")
        held = self._tools.pop(tid, None)
        if held is None:
            return {}
        error = str(data.get("error") or "")
        kind = "retry" if data.get("is_interrupt") else self.failure(name, tid, error)
        args = data.get("tool_input") or {}
        try:
            if kind == "timeout":
                key = args.get(self.idempotency_arg)
                agent.guard.tool_timed_out(held, name, args, key if isinstance(key, str) else None)
            else:
                agent.guard.tool_failed(held, name, fatal=kind == "fatal", message=error)
        except GuardStop as exc:
            self._halt(exc)  # the CLI goes on past this hook's `continue: false`: PostToolBatch ends the run
        return {}


def _permission(decision: str, reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}
