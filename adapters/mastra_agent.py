"""Mastra adapter (`mastra`): a Python adapter driving one long-lived Node program per worker.

Mastra (`@mastra/core`) is Node-only, so every segment is a request to `adapters/mastra/driver.mjs` (protocol
in adapters/mastra/README.md), run on the Node binary the locked `node` package installs
(`adapters/mastra/node_modules/.bin/node`: @mastra/core 1.x declares `node >= 22.13`, the machines have Node 20),
from the locked `package-lock.json`. The process plumbing is the Vercel adapter's (`NodeDriver` in
adapters/vercel_ai.py; installing the Node project: `NodeHome` in adapters/node_driver.py): one driver per
worker, started in `warm`, restarted after a crash.

Translation (the `default` variant keeps every other Mastra default; the docs shipped in the package,
node_modules/@mastra/core/dist/docs/references/, are cited by file):
- model: the model router's OpenAI-compatible config `{id: 'openai/<model>', url: <server>/v1, apiKey: <run
  key>}` (llm/model/shared.types.d.ts `OpenAICompatibleConfig`; Chat Completions, the router's default for it);
- agent: `new Agent({id, name, instructions, model, tools})` registered on a `new Mastra({agents, storage})`
  whose storage is `LibSQLStore({url: 'file:<task_dir>/mastra.db'})` (@mastra/libsql): ONE live store per
  business task, as docs-agents-human-in-the-loop.md ("Resuming after a restart") asks for a persistent
  storage provider; every segment of the task opens it. A scenario where no tool needs approval cannot
  suspend, so its Mastra has no storage (creating the database inside the timed run cost tens of ms, enough on
  a loaded machine to move a deadline cell: tests/test_timing_under_load.py);
- tools: `createTool({id, description, inputSchema: z.fromJSONSchema(<scenario schema>), execute})` (Standard
  JSON Schema input, reference-tools-create-tool.md); `execute` POSTs to the ledger with the scripted call id and
  the tool's abortSignal; a ledger error throws, so Mastra's own tool-error path applies;
- max model calls -> `maxSteps: n` in `generate()` options; unset -> nothing: the loop's default
  `stopWhen ?? stepCountIs(5)` (agent chunk, `stream({... maxSteps ...})`; the driver reads the number from the
  installed source); deadline -> `modelSettings.timeout: {totalMs}` (a `MastraTimeoutError`,
  reference-agents-generate.md); token and cost budgets -> unsupported (no native budget);
- `approval: required` -> `createTool({requireApproval: fn})`, fn always true: the function form is the
  per-call approval check point, so the `authorize` event is recorded there (it gets the input, not the call id:
  the event has no call id). The run suspends (`finishReason: 'suspended'`, `suspendPayload` with the tool call
  id); the snapshot keeps the run id and the pending calls (`pause.json`); a resume (a new driver may serve it)
  opens the task's store and calls `approveToolCallGenerate` / `declineToolCallGenerate({runId, toolCallId})`
  once per decision, in the order of the pending calls, with the same options;
- the deny intent (`policy.deny`): both use the documented `hooks.beforeToolCall` returning `{proceed: false,
  output}` (docs-agents-tools.md: the tool does not run, the model gets `output` as its result); "continue"
  -> that alone; "stop" -> plus a `stopWhen` predicate true on a step that called a denied tool. A stopWhen
  without maxSteps replaces the default stepCountIs(5), so with no scenario limit the default is restated as
  `maxSteps` (read from the source);
- tool_choice: `prepareStep` returning `{toolChoice}` for the step a turn answers, chosen from the stored
  messages prepareStep gets (MastraDBMessage parts, not AI SDK model messages); for 'none' Mastra's
  `prepareToolsAndToolChoice` sends no tools at all, which the judge takes as `none` in effect.
Variant `stream`: `agent.stream()` reading `fullStream` (its `tool-call-approval` chunks are the pending calls)
and `getFullOutput()`; resume with `approveToolCall` / `declineToolCall({runId, toolCallId})`: the idiom the
human-in-the-loop page's quickstart shows. Chosen over a workflow variant because Mastra's workflow HITL
(docs-workflows-human-in-the-loop.md) suspends developer-written steps with `suspend()`, not the model's tool
calls, so it cannot carry the suite's intents (a model-chosen call paused, denied, rejected) without writing
the agent loop by hand.

Signal mapping (no scenario knowledge):
- thrown: a `MastraTimeoutError` (or a TimeoutError in its chain) with a deadline set -> limit="deadline"
  (raised); model/API errors (AI_APICallError, AI_RetryError, ... as the vendored AI SDK names them, or a
  MastraError of category THIRD_PARTY / domain LLM) -> failure="model"; anything else -> failure="other";
- `finishReason: 'suspended'` with suspended tool calls -> ended="paused" with the pending calls;
- a result that carries `error` (Mastra returned instead of throwing) is reported as raised, with the same
  mapping, and marked `extra.error_returned` (the framework's own error, not an invented one);
- a deny stop has no flag: the adapter infers it (denied=True, `extra.denied_signal = "inferred"`) only with the
  stop intent, when the loop ended after a step whose tool calls all had an output and that called a denied
  tool named in the stopWhen; a step limit has no flag either: inferred (limit="steps", limit_signal="inferred")
  when the last step still had tool calls, every one of them with an output, nothing is pending, and the step
  count of this call equals the maxSteps set (or the default read from the source) — the rules of vercel_ai.py;
- counters: runtime_steps = `result.steps.length` (unit "step"), tokens = `result.totalUsage`, tool calls
  requested = tool calls over the steps plus the calls pending at a pause. A resumed run's result holds the
  steps and usage of the whole run (the pre-pause steps come back from the snapshot), so the counters are
  marked cumulative (the suspended step itself is in no segment's steps until the resume). Mastra reports no
  model-request count: model_requests_reported stays null. The `stream` variant reports no tokens: the model
  router builds the `{id, url, apiKey}` model with `createOpenAICompatible(...)` and no `includeUsage`
  (`ModelRouterLanguageModel.resolveLanguageModel`), so the streaming request carries no
  `stream_options.include_usage`, an OpenAI server sends no usage chunk and `totalUsage` has input/output tokens
  undefined (and a totalTokens 0 nobody counted, which the adapter does not read): they stay null
  (adapters/mastra/probes/stream_no_usage.mjs; generate() makes a non-streaming request and counts them).
- retries: Mastra's own default, which is none: the loop retries `modelSettings?.maxRetries ?? 2` times, but the
  agent fills `modelSettings.maxRetries` from its own `maxRetries`, `config.maxRetries ?? 0` (agent chunk,
  `Agent` constructor and the loop's `resolvedModelSettings`), so a 429 or 500 ends the run on its first
  answer (adapters/mastra/probes/no_default_retry.mjs: 1 request, AI_APICallError).
- step limit on a resume: `maxSteps` counts the steps of each call, and a resume is a new call, so the resumed
  run gets the whole allowance again (resume_keeps_allowance); the inference compares the steps this call ran
  (its onStepFinish callbacks) with the bound, and the record keeps `result.steps` (the whole run) apart.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters.node_driver import NodeAdapter, NodeHome
from loopbench.adapters.vercel_ai import DriverError, NodeDriver
from loopbench.harness.adapter import Capabilities, Intent, NodeProject, RunContext
from loopbench.harness.own_work import OWN_WORK
from loopbench.harness.record import (
    LimitKind,
    LimitTranslation,
    NativeSignals,
    PendingCall,
    ReportedCounters,
    SegmentResult,
)
from loopbench.harness.scenario import Scenario

PROTOCOL_VERSION = 1
# the oldest @mastra/core the adapter's mechanisms exist in, found by running `loopbench run -f mastra --quick` against
# copies of adapters/mastra at 1.20.0, 1.30.0, 1.41.0, 1.47.0, 1.55.0, 1.60.0, 1.64.0 (LOOPBENCH_MASTRA_NODE_DIR):
# every release ran the suite, but before 1.60.0 `modelSettings.timeout` has no run deadline (no MastraTimeoutError in
# the dist: 1.59.0 has none, 1.60.0 has it), so the deadline cells ran on past it (deadline_slow_model: 3 requests,
# 7.1 s, completed); at 1.47.0 and older the deny stop did not end the loop (denied_action: the hook skipped the call,
# the stopWhen did not stop: 3 requests, incomplete) and the loop's `stopWhen ?? stepCountIs(5)` default is not in the
# source the driver reads (the default step limit goes unknown). 1.60.0 gave the same outcome and verdict as 1.71.0 on
# all 52 quick cells.
MIN_CORE = (1, 60)
HOME = NodeHome(
    shipped=Path(__file__).resolve().parent / "mastra",
    files=("driver.mjs", "package.json", "package-lock.json"),
    dir_env="LOOPBENCH_MASTRA_NODE_DIR",
    marker="@mastra/core",
    cache_prefix="mastra-driver",
    needs="the Mastra driver (the npm packages @mastra/core, @mastra/libsql and node@22 from the shipped "
          "package-lock.json)",
)

# errors the vendored AI SDK throws when the model or its API misbehaves (names as it sets them)
MODEL_ERRORS = {
    "AI_APICallError", "AI_RetryError", "AI_NoSuchToolError", "AI_InvalidToolInputError",
    "AI_ToolChoiceViolationError", "AI_NoContentGeneratedError", "AI_InvalidResponseDataError",
    "AI_JSONParseError", "AI_TypeValidationError", "AI_EmptyResponseBodyError", "AI_ToolCallRepairError",
    "AI_NoOutputGeneratedError", "AI_InvalidPromptError", "APICallError", "RetryError",
}

_driver: NodeDriver | None = None
_driver_lock = threading.Lock()


def driver() -> NodeDriver:
    """This worker's one Mastra driver (created on first use, installed into the user cache when needed)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            home = HOME.ensure_installed()
            _driver = NodeDriver([str(home / "node_modules" / ".bin" / "node"), str(home / "driver.mjs")], home,
                                 label="mastra driver", protocol=PROTOCOL_VERSION)
        return _driver


class MastraAdapter(NodeAdapter):
    id = "mastra"
    distribution = "@mastra/core"  # an npm package: versions come from adapters/mastra/node_modules
    package_index = "npm"
    extra = None
    packages = ("@mastra/libsql", "@mastra/schema-compat", "zod", "node")
    node_project = NodeProject(HOME.shipped, HOME.files, HOME.dir_env, runtime="node")
    # held to the release's day by the version matrix: the storage provider and zod of its time
    companions = ("@mastra/libsql", "zod")
    plain_script = "mastra.mjs"  # run by the locked Node beside the locked node_modules (`plain_command`)
    min_version = MIN_CORE
    about = "agent.generate() with Mastra's defaults; maxSteps/timeout/requireApproval/hooks from the scenario"
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls", "deadline_s"}),
        step_unit="step (one model call plus the tool executions it triggers)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="hooks.beforeToolCall returning {proceed: false, output}; the stop intent adds a stopWhen on the "
             "step that called the denied tool",
        # no retry by default: the Agent's maxRetries defaults to 0 and fills modelSettings.maxRetries
        # (adapters/mastra/probes/no_default_retry.mjs)
        retry_window_s=0.0,
        notes=("a step limit returns normally: the adapter infers it from the last step",
               "a deny stop (stopWhen) returns normally too: the adapter infers it from the denied call",
               "the pause lives in the task's LibSQL store; a resume is approveToolCallGenerate/"
               "declineToolCallGenerate on its run id"),
    )
    mechanism_table = {
        "deny_stop": "hooks.beforeToolCall returning {proceed: false, output} for <denied tool> + stopWhen on a step "
                     "that called <denied tool> (the loop ends after that step)",
        "deny_continue": "hooks.beforeToolCall returning {proceed: false, output} for <denied tool> (the model gets "
                         "the output as the tool result; the loop goes on)",
        "approval_pause": "createTool({requireApproval}) -> finishReason 'suspended' with suspendPayload, the run "
                          "suspended in the Mastra storage (LibSQLStore in the task dir); resumed with "
                          "agent.approveToolCallGenerate/declineToolCallGenerate({runId, toolCallId})",
        "reject": "agent.declineToolCallGenerate({runId, toolCallId}) on resume (the model gets the decline message)",
        "tool_choice_first": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's stored messages; 'none' makes Mastra send no tools)",
        "tool_choice_later": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's stored messages; 'none' makes Mastra send no tools)",
    }

    # ---- versions, availability and the plain command: NodeAdapter, from the driver's Node project
    npm_label = "`@mastra/core`"

    @classmethod
    def node_home(cls) -> NodeHome:
        return HOME

    @classmethod
    def warm(cls) -> None:
        """Start this worker's driver (Node start-up and importing Mastra) before any run is timed."""
        driver().ensure()

    # ---- running
    def _payload(self, scenario: Scenario, ctx: RunContext, op: str) -> dict[str, Any]:
        lim = scenario.limits
        return {
            "op": op, "variant": self.variant, "base_url": ctx.base_url, "api_key": ctx.api_key,
            "run_id": ctx.run_id, "ledger_token": ctx.ledger_token, "model_id": scenario.model.id,
            "prompt": scenario.prompt, "snapshot_dir": str(ctx.snapshot_dir), "task_dir": str(ctx.task_dir),
            "tools": [{"name": n, "description": t.description, "parameters": t.parameters, "approval": t.approval}
                      for n, t in scenario.tools.items()],
            "limits": {"max_model_calls": lim.max_model_calls, "deadline_s": lim.deadline_s},
            "deny": scenario.policy.deny,
            "tool_choice": [{"after": r.after_regex, "choice": r.choice} for r in scenario.tool_choice_rules()],
        }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        return await self._request(scenario, ctx, self._payload(scenario, ctx, "run"))

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        if not (ctx.task_dir / "mastra.db").exists():  # the live store is the task's, never a copy
            raise FileNotFoundError(f"the task's Mastra storage {ctx.task_dir / 'mastra.db'} is missing")
        payload = {**self._payload(scenario, ctx, "resume"), "snapshot": str(snapshot), "decisions": decisions}
        return await self._request(scenario, ctx, payload)

    async def _request(self, scenario: Scenario, ctx: RunContext, payload: dict[str, Any]) -> SegmentResult:
        # Mastra runs in Node (its CPU comes back as the driver's cpu_us): this process's part is loopbench's own
        with OWN_WORK.measured():
            d = driver()
            answer = await asyncio.to_thread(d.request, payload)
            ctx.work_dir.mkdir(parents=True, exist_ok=True)
            with open(ctx.work_dir / "driver-events.jsonl", "w", encoding="utf-8") as fh:
                for ev in answer.get("events") or []:
                    fh.write(json.dumps(ev) + "\n")
            if answer.get("type") == "error":
                raise DriverError(f"the Mastra driver refused the {payload['op']} request: {answer.get('error')}")
            if answer.get("harness_errors"):
                raise DriverError("the ledger refused a tool call: " + "; ".join(answer["harness_errors"]))
            return self._segment(scenario, ctx, answer, d.hello or {})

    # ---- mapping what the driver reported
    def _segment(self, scenario: Scenario, ctx: RunContext, a: dict[str, Any], hello: dict[str, Any]
                 ) -> SegmentResult:
        lim = scenario.limits
        settings = dict(a.get("settings", {}))
        settings.update(node=hello.get("node"), driver_protocol=hello.get("protocol"))
        defaults = hello.get("defaults", {})
        deny = a.get("deny") or {}
        limits: dict[str, LimitTranslation] = {}
        if lim.max_model_calls is not None:
            limits["max_model_calls"] = LimitTranslation(neutral=lim.max_model_calls,
                                                         native=f"maxSteps: {lim.max_model_calls}")
        elif deny.get("stop_tools"):
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"maxSteps: {deny.get('step_bound')} (the Mastra default "
                                     f"{defaults.get('stopWhen')}, restated next to the deny stopWhen)")
        else:
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"maxSteps not set (Mastra default {defaults.get('stopWhen')})")
        step_limit = deny.get("step_bound")
        if lim.deadline_s is not None:
            limits["deadline_s"] = LimitTranslation(
                neutral=lim.deadline_s, native=f"modelSettings.timeout: {{totalMs: {round(lim.deadline_s * 1000)}}}")
        missing = self.unsupported_limits(scenario)
        limits.update(missing)
        unsupported = list(missing)
        mechanisms = self.mechanisms(scenario, a.get("mechanisms") or {})
        unsupported += self.unsupported_tool_choice(mechanisms)
        usage = a.get("usage") or {}
        counters = ReportedCounters(
            model_requests_reported=None,
            tool_calls_requested=a.get("tool_calls_requested"),
            runtime_steps=a.get("step_count"), runtime_step_unit="step",
            input_tokens_reported=usage.get("input_tokens"), output_tokens_reported=usage.get("output_tokens"),
            cumulative=True,  # a resumed run's result holds the whole run's steps and usage
        )
        extra: dict[str, Any] = {
            "steps": a.get("result_steps") or a.get("steps") or [],
            "steps_seen_by_onStepFinish": len(a.get("steps") or []),
            "run_id": a.get("run_id"),
            "driver_pid": a.get("driver_pid"),
        }
        if a.get("resumed"):
            extra["resumed_calls"] = a["resumed"]
            extra["pending_before_resume"] = a.get("pending_before_resume")
        if (a.get("driver_wait_s") or 0) > 0.01:
            extra["driver_wait_s"] = a["driver_wait_s"]
        if a.get("denied"):
            extra["denied_calls"] = a["denied"]
        notes: list[str] = []
        common: dict[str, Any] = dict(counters=counters, settings=settings, limits=limits, unsupported=unsupported,
                                      mechanisms=mechanisms,
                                      live_child_cpu_s=(a.get("cpu_us") or 0) / 1e6,
                                      live_child_own_cpu_s=(a.get("own_cpu_us") or 0) / 1e6)

        if a["ended"] == "raised":
            # it threw: only the steps onStepFinish saw are known; the result's counters are not
            common["counters"] = counters.model_copy(update=dict(
                tool_calls_requested=None, input_tokens_reported=None, output_tokens_reported=None,
                runtime_steps=None, cumulative=False))
            return SegmentResult(signals=self._raised(a["thrown"], lim.deadline_s is not None, extra), notes=notes,
                                 **common)
        if a.get("result_error"):
            extra["error_returned"] = True
            return SegmentResult(signals=self._raised(a["result_error"], lim.deadline_s is not None, extra),
                                 notes=notes, **common)

        if a["ended"] == "paused":
            pending = [PendingCall(call_id=p["call_id"], tool=p["tool"], args=p.get("input") or {})
                       for p in a["pending"]]
            extra["approval_requests"] = len(pending)
            signals = NativeSignals(ended="paused", pending=pending, finish_reason=a.get("finish_reason"),
                                    final_text=a.get("text") or None, extra=extra)
            return SegmentResult(signals=signals, snapshot=a.get("snapshot") or str(ctx.snapshot_dir), notes=notes,
                                 **common)

        last = a.get("last_step") or {}
        limit: LimitKind | None = None
        denied = False
        could_go_on = (last.get("tool_calls", 0) > 0 and last.get("tool_outputs") == last.get("tool_calls"))
        stop_calls = last.get("denied_stop_calls") or []
        # Mastra's stop condition counts the steps of this call: a resume's result.steps also holds the steps before
        # the pause, so the steps this call ran (onStepFinish) are compared with the bound
        own_steps = len(a.get("steps") or [])
        at_step_limit = step_limit is not None and own_steps == step_limit
        if could_go_on and stop_calls and deny.get("stop_tools"):
            denied = True
            tools = sorted({c["tool"] for c in stop_calls})
            why = (f"inferred deny stop: the loop ended after step {a.get('step_count')}, whose tool calls all had "
                   f"outputs, with a call of {', '.join(tools)} skipped by beforeToolCall and named in the stopWhen")
            if at_step_limit:
                why += f"; the step limit ({limits['max_model_calls'].native}) was reached at the same step"
            notes.append(why)
            extra["inference"] = why
            extra["denied_signal"] = "inferred"
        elif could_go_on and at_step_limit:
            limit = "steps"
            why = (f"inferred step limit: the last step ended with finishReason {last.get('finish_reason')!r} and "
                   f"all {last['tool_calls']} tool call(s) had outputs, and the steps this call ran (onStepFinish) "
                   f"== {step_limit} ({limits['max_model_calls'].native})"
                   + (f"; result.steps holds {a.get('step_count')} (the run before the pause too)"
                      if a.get("step_count") != own_steps else ""))
            notes.append(why)
            extra["inference"] = why
        elif could_go_on:
            extra["inference"] = (f"the loop stopped after a step with tool calls at {own_steps} steps, "
                                  f"not at the step limit {step_limit}: no limit inferred")
        signals = NativeSignals(
            ended="returned", final_text=a.get("text") or None, finish_reason=a.get("finish_reason"),
            limit=limit, limit_signal="inferred" if limit else None, denied=denied, extra=extra,
        )
        return SegmentResult(signals=signals, notes=notes, **common)

    @staticmethod
    def _raised(thrown: dict[str, Any], deadline_set: bool, extra: dict[str, Any]) -> NativeSignals:
        chain: list[dict[str, Any]] = []
        cur: dict[str, Any] | None = thrown
        while cur is not None and len(chain) < 6:
            chain.append(cur)
            cur = cur.get("cause") or cur.get("lastError")
        names = {c.get("name") for c in chain} | {c.get("constructor") for c in chain}
        extra["thrown"] = thrown
        base: dict[str, Any] = dict(ended="raised", exception_type=thrown.get("name"),
                                    exception_message=thrown.get("message"), extra=extra)
        if deadline_set and names & {"MastraTimeoutError", "TimeoutError"}:
            return NativeSignals(**base, limit="deadline", limit_signal="raised")
        if names & MODEL_ERRORS or any(c.get("category") == "THIRD_PARTY" or c.get("domain") == "LLM" for c in chain):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")


class MastraStream(MastraAdapter):
    variant = "stream"
    about = ("agent.stream() read to the end (tool-call-approval chunks), resumed with approveToolCall/"
             "declineToolCall")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **MastraAdapter.mechanism_table,
        "approval_pause": "createTool({requireApproval}) -> a 'tool-call-approval' chunk, the run suspended in the "
                          "Mastra storage (LibSQLStore in the task dir); resumed with agent.approveToolCall/"
                          "declineToolCall({runId, toolCallId})",
        "reject": "agent.declineToolCall({runId, toolCallId}) on resume (the model gets the decline message)",
    }

