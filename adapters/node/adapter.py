"""What every npm framework's adapter does, written once: its versions and availability from its Node project,
the bench's plain command, its one driver per worker, the `run` / `resume` requests, and reading the driver's
answer into a segment — the settings, the CPU the driver reports, a throw, a pause, and the inferences for a
stop that returns normally (a deny stop, a step limit). A framework's adapter (adapters/vercel_ai.py,
adapters/mastra_agent.py) names its project, its protocol models and its words, and maps its own counters and
limits (`_segment`).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal

from loopbench.adapters.node.driver import NodeDriver, Reply
from loopbench.adapters.node.home import NodeHome
from loopbench.adapters.node.protocol import (
    AgentSpec,
    DriverError,
    ErrorAnswer,
    Hello,
    Limits,
    OutputSpec,
    SegmentAnswer,
    SegmentRequest,
    Thrown,
    ToolChoiceRule,
    ToolSpec,
)
from loopbench.harness.adapter import Adapter, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.own_work import OWN_WORK
from loopbench.harness.record import LimitKind, NativeSignals, PendingCall, SegmentResult
from loopbench.harness.scenario import Scenario

# errors the AI SDK (Mastra's vendored one too) throws when the model or its API misbehaves, as it names them
MODEL_ERRORS = frozenset({
    "AI_APICallError", "AI_RetryError", "AI_NoSuchToolError", "AI_InvalidToolInputError",
    "AI_ToolChoiceViolationError", "AI_NoContentGeneratedError", "AI_InvalidResponseDataError",
    "AI_JSONParseError", "AI_TypeValidationError", "AI_EmptyResponseBodyError", "AI_ToolCallRepairError",
    "AI_NoOutputGeneratedError", "AI_InvalidPromptError", "APICallError", "RetryError",
})

GUARD_PENDING_FILE = "guard-pending.json"  # a guarded pause: its pending calls, for the resume's decisions

# each worker's one driver per Node project (keyed by the adapter's id: every variant shares it)
_drivers: dict[str, NodeDriver[Any]] = {}
_drivers_lock = threading.Lock()


class NodeAdapter(Adapter):
    """An npm framework's adapter. A subclass names its project in `node_home` (a function, so tests can point
    the project elsewhere), `npm_label` (for messages), `driver_label` (the worker's log), its protocol models
    (`hello_model`, `request_model`, `answer_model`), the errors that mean its deadline, and maps an answer in
    `_segment`."""

    npm_label: ClassVar[str]  # the framework's npm package as a message names it
    driver_label: ClassVar[str]  # how the driver's lines are tagged in the worker's log
    hello_model: ClassVar[type[Hello]]
    request_model: ClassVar[type[SegmentRequest]] = SegmentRequest
    answer_model: ClassVar[type[SegmentAnswer]] = SegmentAnswer
    deadline_errors: ClassVar[frozenset[str]] = frozenset({"TimeoutError"})
    # the inference notes' words for the framework's own steps
    steps_ran_words: ClassVar[str] = "steps"  # what the step limit is compared with
    tool_calls_step_words: ClassVar[str] = "a step with tool calls"  # the last step, when no limit is inferred

    # ---- versions, availability and the plain command, from the Node project
    @classmethod
    def node_home(cls) -> NodeHome:
        raise NotImplementedError

    @classmethod
    def version(cls) -> str | None:
        return cls.node_home().package_version(cls.distribution)

    @classmethod
    def package_versions(cls) -> dict[str, str]:
        home = cls.node_home()
        return {n: v for n in (cls.distribution, *cls.packages) if (v := home.package_version(n)) is not None}

    @classmethod
    def unavailable_reason(cls) -> str | None:
        home = cls.node_home()
        if (why := home.missing_reason()) is not None:
            return why
        version = cls.version()
        if version is None:
            return f"the npm package {cls.npm_label} is neither installed nor in {home.shipped / 'package-lock.json'}"
        parsed = tuple(int(p) for p in re.findall(r"\d+", version)[:3])
        if parsed < cls.min_version:
            need = ".".join(map(str, cls.min_version))
            return f"{cls.distribution} {version} is older than the {need} this adapter needs"
        return None

    @classmethod
    def plain_command(cls, script: Path, work: Path) -> list[str]:
        """The plain script beside the locked node_modules, as a user's project has it, on the locked Node."""
        home = cls.node_home().ensure_installed()
        here = work / f"plain-{cls.id}"
        here.mkdir(parents=True)
        (here / "plain.mjs").write_text(script.read_text())
        (here / "node_modules").symlink_to(home / "node_modules")
        return [str(home / "node_modules" / ".bin" / "node"), str(here / "plain.mjs")]

    # ---- the driver
    @classmethod
    def new_driver(cls) -> NodeDriver[Any]:
        """A driver of this project (installed into the user cache first, when needed); not started yet."""
        return NodeDriver(cls.node_home().ensure_installed(), cls.hello_model, cls.driver_label)

    @classmethod
    def driver(cls) -> NodeDriver[Any]:
        """This worker's one driver of this framework (created on first use)."""
        with _drivers_lock:
            if cls.id not in _drivers:
                _drivers[cls.id] = cls.new_driver()
            return _drivers[cls.id]

    @classmethod
    def warm(cls) -> None:
        """Start this worker's driver (Node start-up and importing the framework) before any run is timed."""
        cls.driver().ensure()

    # ---- running
    def _request_fields(self, scenario: Scenario, ctx: RunContext) -> dict[str, Any]:
        """The framework's own request fields (its `request_model`'s)."""
        return {}

    def _setup(self, scenario: Scenario, ctx: RunContext) -> dict[str, Any]:
        """What the driver builds the segment's framework objects from (`protocol.Setup`)."""
        return dict(
            variant=self.variant, base_url=ctx.base_url, api_key=ctx.api_key, run_id=ctx.run_id,
            ledger_token=ctx.ledger_token, model_id=self.model_id(scenario), task_dir=str(ctx.task_dir),
            tools=[ToolSpec(name=n, description=t.description, parameters=t.parameters, approval=t.approval)
                   for n, t in scenario.tools.items()],
            # sub-agents: sent only when the scenario has them, so a request without agents is the one sent before
            **({} if not scenario.agents else dict(
                instructions=scenario.instructions,
                agents=[AgentSpec(id=i, description=a.description, instructions=a.instructions,
                                  tools=scenario.tools_of(i)) for i, a in scenario.agents.items()])),
        )

    def _payload(self, scenario: Scenario, ctx: RunContext, op: Literal["run", "resume"], **more: Any
                 ) -> SegmentRequest:
        lim = scenario.limits
        return self.request_model(
            op=op, **self._setup(scenario, ctx), **self._request_fields(scenario, ctx),
            prompt=scenario.prompt, snapshot_dir=str(ctx.snapshot_dir),
            limits=Limits(max_model_calls=lim.max_model_calls, deadline_s=lim.deadline_s),
            deny=scenario.policy.deny,
            # each turn's tool_choice, its `after` call as a regex (a repeating turn's kb_{n} matches kb_1, ...)
            tool_choice=[ToolChoiceRule(after=r.after_regex, choice=r.choice) for r in scenario.tool_choice_rules()],
            **self._cancel_fields(scenario, ctx),
            **self._output_fields(scenario), **more,
        )

    @staticmethod
    def _output_fields(scenario: Scenario) -> dict[str, Any]:
        """The structured answer the driver builds its schema from (nothing when the scenario has none)."""
        if scenario.output is None:
            return {}
        return {"output": OutputSpec(**scenario.output.model_dump(mode="json", exclude_none=True),
                                     json_schema=scenario.output.json_schema())}

    @staticmethod
    def _cancel_fields(scenario: Scenario, ctx: RunContext) -> dict[str, Any]:
        """The caller's cancel, for the driver (only when the scenario has one, so other requests stay as they
        were): the ledger's held-open cancel URL and its token header; the driver aborts its AbortController when
        the POST answers {"cancel": true}."""
        if scenario.cancel is None:
            return {}
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        return {"cancel_url": ledger.cancel_url, "cancel_headers": ledger.headers}

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        if self.guarded_mode:
            return await self._guarded(scenario, ctx, "run")
        return await self._request(scenario, ctx, self._payload(scenario, ctx, "run"))

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        if self.guarded_mode:
            return await self._guarded(scenario, ctx, "resume", snapshot=snapshot, decisions=decisions)
        return await self._request(scenario, ctx, self._payload(scenario, ctx, "resume", snapshot=str(snapshot),
                                                                  decisions=decisions))

    # a guarded variant: the task's guard served to the driver's hooks (loopbench/guard/service.py) for the segment
    guarded_mode: ClassVar[bool] = False

    async def _guarded(self, scenario: Scenario, ctx: RunContext, op: Literal["run", "resume"],
                       snapshot: Path | None = None, decisions: dict[str, str] | None = None) -> SegmentResult:
        from loopbench.adapters import guarded
        from loopbench.guard.service import GuardService, serving

        guard = guarded.task_guard(scenario, ctx)
        if snapshot is not None and (snapshot / GUARD_PENDING_FILE).exists():
            guarded.decide(guard, json.loads((snapshot / GUARD_PENDING_FILE).read_text()), decisions or {})
        elif snapshot is not None:  # a cancelled run continued: the caller goes on, the cancel is not the exit
            guard.resume()
        service = GuardService(guard)
        more: dict[str, Any] = {} if snapshot is None else {"snapshot": str(snapshot), "decisions": decisions}
        with serving(service) as url:
            req = self._payload(scenario, ctx, op, guard_url=url, guard_token=service.token, **more)
            result = await self._request(scenario, ctx, req)
        if result.signals.pending and result.snapshot:  # what the resume tells the guard its decisions answer
            (Path(result.snapshot) / GUARD_PENDING_FILE).write_text(
                json.dumps([p.model_dump(mode="json") for p in result.signals.pending]))
        guarded.save(guard, ctx)
        return result.model_copy(update={"signals": result.signals.model_copy(update={"guard": guarded.signal(guard)})})

    def _before_request(self, req: SegmentRequest, d: NodeDriver[Any]) -> tuple[SegmentRequest, list[str]]:
        """The request as sent on driver `d`, and notes for the segment (Mastra names its prepared instance)."""
        return req, []

    async def _request(self, scenario: Scenario, ctx: RunContext, req: SegmentRequest) -> SegmentResult:
        # the framework runs in Node (its CPU comes back as the driver's cpu_us): everything this Python process
        # does for the segment — the request, the hop, reading the answer, mapping it — is loopbench's own work
        with OWN_WORK.measured():
            d = self.driver()
            req, notes = self._before_request(req, d)
            reply = await asyncio.to_thread(d.request, req, self.answer_model)
            a = reply.answer
            ctx.work_dir.mkdir(parents=True, exist_ok=True)
            with open(ctx.work_dir / "driver-events.jsonl", "w", encoding="utf-8") as fh:
                for ev in a.events:
                    fh.write(json.dumps(ev.model_dump(mode="json")) + "\n")
            if isinstance(a, ErrorAnswer):
                raise DriverError(f"the {self.driver_label} refused the {req.op} request: {a.error}")
            if a.harness_errors:
                raise DriverError("the ledger refused a tool call: " + "; ".join(a.harness_errors))
            assert d.hello is not None  # it answered, so it said hello
            return self._segment(scenario, ctx, a, reply, d.hello, notes)

    # ---- mapping what the driver reported
    def _segment(self, scenario: Scenario, ctx: RunContext, a: Any, reply: Reply[Any], hello: Any,
                 notes: list[str]) -> SegmentResult:
        raise NotImplementedError

    def _common(self, a: SegmentAnswer, hello: Hello, limits: dict[str, Any],
                counters: Any) -> dict[str, Any]:
        """The SegmentResult fields every answer gives the same way."""
        settings = {**a.settings, "node": hello.node, "driver_protocol": hello.protocol}
        # the driver's own words per intent; Adapter.declared() keeps the stated ones and adds what the framework
        # cannot express (untranslated limits, tool_choice)
        return dict(counters=counters, settings=settings, limits=limits, mechanisms=a.mechanisms,
                    # the driver outlives the segment: the worker's CPU clock cannot see it, the driver reports it
                    live_child_cpu_s=a.cpu_us / 1e6, live_child_own_cpu_s=a.own_cpu_us / 1e6)

    def _raised(self, thrown: Thrown, deadline_set: bool, extra: dict[str, Any]) -> NativeSignals:
        chain = thrown.chain()
        names = {c.name for c in chain} | {c.constructor for c in chain if c.constructor}
        extra["thrown"] = thrown.wire()
        base: dict[str, Any] = dict(ended="raised", exception_type=thrown.name, exception_message=thrown.message,
                                    extra=extra)
        if deadline_set and names & self.deadline_errors:
            return NativeSignals(**base, limit="deadline", limit_signal="raised")
        # Mastra's own errors say where they come from: a third party's (the model's API) or the LLM domain
        if names & MODEL_ERRORS or any(c.category == "THIRD_PARTY" or c.domain == "LLM" for c in chain):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")

    @staticmethod
    def _paused(a: SegmentAnswer, ctx: RunContext, extra: dict[str, Any], notes: list[str],
                common: dict[str, Any]) -> SegmentResult:
        pending = [PendingCall(call_id=p.call_id, tool=p.tool, args=p.input or {}) for p in a.pending]
        extra["approval_requests"] = len(pending)
        if via := {p.call_id: p.delegated_by for p in a.pending if p.delegated_by}:
            extra["pending_via_delegation"] = via  # a child's call, paused and resumed through the parent's
        signals = NativeSignals(ended="paused", pending=pending, finish_reason=a.finish_reason,
                                final_text=a.text or None, extra=extra)
        return SegmentResult(signals=signals, snapshot=a.snapshot or str(ctx.snapshot_dir), notes=notes, **common)

    @staticmethod
    def _cancelled(a: SegmentAnswer, extra: dict[str, Any], notes: list[str], common: dict[str, Any]
                   ) -> SegmentResult:
        """The framework stopped on the caller's cancel (the driver aborted its AbortController): what it threw
        (its abort error: `exception_type`), whether its onAbort was called or its stream ended with an abort part
        (`terminal_reason`), and the completed steps it gave, kept in the snapshot for a resume."""
        assert a.cancel is not None
        c = a.cancel
        how = [w for w, seen in (("onAbort", c.on_abort is not None), ("abort part", bool(c.abort_part))) if seen]
        if a.thrown is not None:
            extra["thrown"] = a.thrown.wire()
        signals = NativeSignals(
            ended="cancelled", exception_type=a.thrown.name if a.thrown else None,
            exception_message=a.thrown.message if a.thrown else None,
            terminal_reason=" + ".join(how) or None, finish_reason=a.finish_reason, extra=extra)
        return SegmentResult(signals=signals, snapshot=a.snapshot, notes=notes, **common)

    def _deny_evidence(self, tools: str, stop_tools: str) -> str:
        """How the last step shows the denied call the stop condition names (the framework's words)."""
        raise NotImplementedError

    def _limit_evidence(self, a: Any, steps_ran: int | None) -> str:
        """What else supports an inferred step limit ('' when nothing)."""
        return ""

    def _returned(self, a: SegmentAnswer, extra: dict[str, Any], notes: list[str], common: dict[str, Any], *,
                  could_go_on: bool, steps_ran: int | None, step_limit: int | None, limit_native: str
                  ) -> SegmentResult:
        """A loop that returned: a deny stop and a step limit have no flag, so they are inferred from the last
        step — it still had tool calls, every one with an output (only a stop condition could end the loop) — and
        the deny plan and the step bound. A deny stop is checked first: when both hold, both are said."""
        last = a.last_step
        limit: LimitKind | None = None
        denied = False
        stop_calls = last.denied_stop_calls if last else []
        at_step_limit = step_limit is not None and steps_ran == step_limit
        if could_go_on and stop_calls and a.deny.stop_tools:
            denied = True
            tools = ", ".join(sorted({c.tool for c in stop_calls}))
            why = (f"inferred deny stop: the loop ended after step {a.step_count}, whose tool calls all had "
                   f"outputs, {self._deny_evidence(tools, ', '.join(a.deny.stop_tools))}")
            if at_step_limit:
                why += f"; the step limit ({limit_native}) was reached at the same step"
            notes.append(why)
            extra["inference"] = why
            extra["denied_signal"] = "inferred"
        elif could_go_on and at_step_limit and last is not None:
            limit = "steps"
            why = (f"inferred step limit: the last step ended with finishReason {last.finish_reason!r} and all "
                   f"{last.tool_calls} tool call(s) had outputs, and {self.steps_ran_words} == {step_limit} "
                   f"({limit_native})" + self._limit_evidence(a, steps_ran))
            notes.append(why)
            extra["inference"] = why
        elif could_go_on:
            extra["inference"] = (f"the loop stopped after {self.tool_calls_step_words} at {steps_ran} steps, "
                                  f"not at the step limit {step_limit}: no limit inferred")
        signals = NativeSignals(
            ended="returned", final_text=a.text or None, final_output=a.output, finish_reason=a.finish_reason,
            limit=limit, limit_signal="inferred" if limit else None, denied=denied, extra=extra,
        )
        return SegmentResult(signals=signals, notes=notes, **common)
