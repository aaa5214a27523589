"""The tool ledger: executes a scenario's tools as scripted and is the ground truth of what they did.

Every real result carries a receipt marker and every error an error marker, so the scripted model can tell
what happened to a call whatever a framework wraps around it. Every call and every `authorize` event is
recorded; effects of writes commit at their scripted point whatever the caller does (a caller that gave up is
recorded as `caller_abandoned`); duplicate effects (the same write committed twice without an idempotency
key) are counted. Counts are per run and survive pauses, resumes and worker restarts, because the ledger
lives in the runner's process for the whole suite. Thread-safe: the HTTP face runs on the server's loop
while the runner reads entries from its own thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from loopbench.harness.errors import UnknownRun, UnknownTool
from loopbench.harness.markers import error_mark, receipt
from loopbench.harness.record import LedgerEntry
from loopbench.harness.scenario import Scenario, ToolStep

# any argument name (a JSON Schema property may hold dashes, dots or spaces), as long as it has no braces
_TEMPLATE = re.compile(r"\{(n|args\.[^{}]+)\}")


class ToolOutcome(BaseModel):
    """What one tool call returned to its caller."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    text: str
    entry_id: str
    error_kind: str | None = None  # recoverable | fatal | timeout


def _agent_of(scenario: Scenario, tool: str) -> str | None:
    """The agent that owns `tool` (each tool belongs to one): None for a scenario of one agent."""
    return scenario.owner_of_tool(tool) if scenario.agents else None


def normalize_args(args: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe, key-sorted arguments, so the same call compares equal whatever the framework sent."""
    return json.loads(json.dumps(args, sort_keys=True, default=str))


def render(template: str | dict[str, Any], args: dict[str, Any], n: int) -> str:
    text = json.dumps(template, sort_keys=True) if isinstance(template, dict) else template

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        return str(n) if key == "n" else str(args.get(key.removeprefix("args."), ""))

    return _TEMPLATE.sub(sub, text)


def step_result(step: ToolStep, args: dict[str, Any], n: int, entry_id: str) -> tuple[str, str, str | None]:
    """What call number `n` of a tool gets back when it follows `step`: (text, outcome, error kind). Pure: the
    ledger's answer, and the ideal loop's in `loopbench validate` (harness/run/ideal.py)."""
    if step.result is not None:
        body = render(step.result, args, n)
        if step.size_bytes:
            body = pad_to(body, step.size_bytes)
        return f"{receipt(entry_id)} {body}", "result", None  # the receipt first, so truncation keeps it
    if step.error is not None:
        kind = step.error.kind
        return f"{kind} error: {render(step.error.message, args, n)} {error_mark(kind, entry_id)}", "error", kind
    assert step.timeout is not None
    text = f"timed out after {step.timeout.after_s:g}s; outcome unknown {error_mark('timeout', entry_id)}"
    return text, "timeout", "timeout"


def pad_to(text: str, size: int) -> str:
    """Deterministic filler lines up to `size` bytes (for huge outputs)."""
    lines = [text]
    total = len(text.encode())
    i = 0
    while total < size:
        i += 1
        line = f"\nrecord {i:06d}: order {1000 + i % 97} status delivered amount {i % 500}.{i % 100:02d} EUR"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


@dataclass
class _RunState:
    scenario: Scenario
    t0: float
    calls_by_tool: dict[str, int] = field(default_factory=dict)
    seq: int = 0  # entry ids are per run, so a result's bytes do not depend on other runs
    entries: list[LedgerEntry] = field(default_factory=list)
    # committed write effects: (tool, args without key) -> idempotency keys seen (None = no key)
    effects: dict[tuple[str, str], list[str | None]] = field(default_factory=dict)
    # the scenario's `cancel`: when it falls due (seconds since t0, once its trigger was seen), and when the
    # caller was told (it is told once per task)
    cancel_due_s: float | None = None
    cancel_sent_s: float | None = None


class Ledger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._runs: dict[str, _RunState] = {}

    # ---- registration
    def register_run(self, run_id: str, scenario: Scenario) -> None:
        with self._lock:
            self._runs.setdefault(run_id, _RunState(scenario=scenario, t0=time.monotonic()))

    def unregister_run(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def wait_settled(self, run_id: str, timeout_s: float) -> bool:
        """Wait until every call of the run has committed (an abandoned call still runs to its scripted end),
        so the record sees every effect. False if some call is still open after `timeout_s`."""
        def settled() -> bool:
            st = self._runs.get(run_id)
            return st is None or all(e.ended_s is not None for e in st.entries if e.kind == "call")

        with self._settled:
            return self._settled.wait_for(settled, timeout_s)

    def entries(self, run_id: str) -> list[LedgerEntry]:
        with self._lock:
            return list(self._state(run_id).entries)

    def _state(self, run_id: str) -> _RunState:
        try:
            return self._runs[run_id]
        except KeyError:
            raise UnknownRun(run_id) from None

    @staticmethod
    def _next_id(st: _RunState) -> int:
        st.seq += 1
        return st.seq

    def _replace(self, st: _RunState, entry_id: str, **changes: Any) -> LedgerEntry:
        for i, e in enumerate(st.entries):
            if e.id == entry_id:
                st.entries[i] = e.model_copy(update=changes)
                return st.entries[i]
        raise KeyError(entry_id)

    # ---- ground truth for the model server
    def call_status(self, run_id: str, call_id: str) -> str | None:
        """How the latest finished execution of a scripted call ended: "receipt", "error" (an error or a
        timeout), or None when the ledger never ran it to its end (not run, denied, still running, unknown run).
        An execution whose caller went away (a cancel, a framework's timeout) is skipped: its result never reached
        the framework, so the model saw only what the framework wrote in its place (its markers decide), whether or
        not the ledger had finished the call by the time of the next request."""
        with self._lock:
            st = self._runs.get(run_id)
            if st is None:
                return None
            for e in reversed(st.entries):
                if e.kind == "call" and e.call_id == call_id and e.ended_s is not None and not e.caller_abandoned:
                    return "receipt" if e.outcome == "result" else "error"
        return None

    # ---- the caller's cancel (the scenario's `cancel`)
    def _arm_cancel(self, st: _RunState, during: str, what: str) -> None:
        cancel = st.scenario.cancel
        if cancel is None or st.cancel_due_s is not None or cancel.during != during:
            return
        if what == (cancel.tool if during == "tool" else cancel.turn):
            st.cancel_due_s = time.monotonic() - st.t0 + cancel.after_s

    def observe_turn(self, run_id: str, turn: str) -> None:
        """The model server served turn `turn` (a repeating turn's label `id#n` counts as `id`): a cancel waiting
        for its request is now due in `after_s`."""
        with self._lock:
            st = self._runs.get(run_id)
            if st is not None:
                self._arm_cancel(st, "model", turn.partition("#")[0])

    def take_cancel(self, run_id: str) -> float | None:
        """When the caller cancels: the moment (seconds since the task began) the first time it is asked once the
        cancel is due, else None. Told once per task: a resume after the cancel is never cancelled again."""
        with self._lock:
            st = self._state(run_id)
            now = time.monotonic() - st.t0
            if st.cancel_sent_s is not None or st.cancel_due_s is None or now < st.cancel_due_s:
                return None
            st.cancel_sent_s = round(now, 6)
            return st.cancel_sent_s

    def cancel_sent(self, run_id: str) -> float | None:
        """When the caller was told to cancel (None: not yet, or never)."""
        with self._lock:
            st = self._runs.get(run_id)
            return None if st is None else st.cancel_sent_s

    # ---- events
    def decide(self, run_id: str, tool: str, args: dict[str, Any], call_id: str | None = None) -> str | None:
        """An in-process approval idiom asks the harness for the decision on a call, at the moment the framework
        asks: the scenario's decision for that scripted call id (the first resume that names it), or None when
        the scenario gives none. Recorded as an `approval_request` event."""
        with self._lock:
            st = self._state(run_id)
            if tool not in st.scenario.tools:
                raise UnknownTool(tool)
            decision = next((r.decisions[call_id] for r in st.scenario.resumes if call_id in r.decisions), None)
            now = time.monotonic() - st.t0
            st.entries.append(LedgerEntry(
                id=f"Q{self._next_id(st)}", run_id=run_id, kind="approval_request", tool=tool, call_id=call_id,
                args=normalize_args(args), outcome="authorize", started_s=now, ended_s=now,
                agent=_agent_of(st.scenario, tool),
                decision=decision or "no decision",
            ))
            return decision

    def authorize(
        self, run_id: str, tool: str, args: dict[str, Any], call_id: str | None = None, decision: str = "checked"
    ) -> LedgerEntry:
        """Record that an adapter reached the approval point of a call (counted on every re-execution)."""
        with self._lock:
            st = self._state(run_id)
            if tool not in st.scenario.tools:
                raise UnknownTool(tool)
            now = time.monotonic() - st.t0
            entry = LedgerEntry(
                id=f"A{self._next_id(st)}", run_id=run_id, kind="authorize", tool=tool, call_id=call_id,
                args=normalize_args(args), outcome="authorize", started_s=now, ended_s=now,
                agent=_agent_of(st.scenario, tool), decision=decision,
            )
            st.entries.append(entry)
            return entry

    def mark_abandoned(self, run_id: str, entry_id: str) -> None:
        with self._lock:
            self._replace(self._state(run_id), entry_id, caller_abandoned=True)

    def begin(self, run_id: str, tool: str, args: dict[str, Any], call_id: str | None = None
              ) -> tuple[LedgerEntry, ToolStep]:
        """Open a call record and pick its scripted step."""
        with self._lock:
            st = self._state(run_id)
            spec = st.scenario.tools.get(tool)
            if spec is None:
                raise UnknownTool(tool)
            n = st.calls_by_tool.get(tool, 0) + 1
            st.calls_by_tool[tool] = n
            norm = normalize_args(args)
            key = norm.get(spec.idempotency_arg) if spec.idempotency_arg else None
            entry = LedgerEntry(
                id=f"L{self._next_id(st)}", run_id=run_id, kind="call", tool=tool, call_id=call_id, args=norm,
                idempotency_key=None if key is None else str(key), call_number=n,
                started_s=time.monotonic() - st.t0, agent=_agent_of(st.scenario, tool),
            )
            st.entries.append(entry)
            if n == 1:
                self._arm_cancel(st, "tool", tool)
            return entry, spec.step_for_call(n)

    def finish(self, run_id: str, entry: LedgerEntry, step: ToolStep) -> ToolOutcome:
        """Commit the step's effect and build what the caller gets back."""
        with self._lock:
            st = self._state(run_id)
            spec = st.scenario.tools[entry.tool]
            now = time.monotonic() - st.t0
            commits = spec.kind == "write" and (
                step.result is not None or (step.timeout is not None and step.timeout.committed)
            )
            duplicate = False
            if commits:
                plain = {k: v for k, v in entry.args.items() if k != spec.idempotency_arg}
                slot = st.effects.setdefault((entry.tool, json.dumps(plain, sort_keys=True)), [])
                if entry.idempotency_key is not None and entry.idempotency_key in slot:
                    commits = False  # the key deduplicates: no second effect
                else:
                    duplicate = bool(slot) and (entry.idempotency_key is None or None in slot)
                    slot.append(entry.idempotency_key)
            text, outcome, kind = step_result(step, entry.args, entry.call_number, entry.id)
            self._replace(
                st, entry.id, outcome=outcome, committed=commits, duplicate_effect=duplicate, error_kind=kind,
                result_bytes=len(text.encode()), ended_s=now,
            )
            self._settled.notify_all()
            return ToolOutcome(ok=outcome == "result", text=text, entry_id=entry.id, error_kind=kind)

    async def execute(self, run_id: str, tool: str, args: dict[str, Any], call_id: str | None = None
                      ) -> ToolOutcome:
        """Run one scripted call: its delay, then its effect. Cancelling the caller does not stop the
        effect: run this under `asyncio.shield` (the HTTP face does) and mark the caller abandoned."""
        entry, step = self.begin(run_id, tool, args, call_id)
        return await self.settle(run_id, entry, step)

    async def settle(self, run_id: str, entry: LedgerEntry, step: ToolStep) -> ToolOutcome:
        """Wait out the step's scripted time, then commit it."""
        wait = step.delay_s + (step.timeout.after_s if step.timeout else 0)
        if wait:
            await asyncio.sleep(wait)
        return self.finish(run_id, entry, step)
