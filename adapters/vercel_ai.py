"""Vercel AI SDK adapter (`vercel-ai`): a Python adapter driving one long-lived Node program per worker.

The SDK is Node-only, so every segment is a request to `adapters/vercel/driver.mjs` (protocol documented in
adapters/vercel/README.md), run on the Node binary the locked `node` package installs
(`adapters/vercel/node_modules/.bin/node`, the version `ai` declares), from the locked `package-lock.json`.
Each worker process owns ONE driver, started on first use (in `warm`, before a run is timed) and reused by
every run of that worker; a driver that dies is reported for its in-flight runs (the adapter raises, so the
runner records `error` with the reason) and is restarted at once, in the background, for the next run.

Translation of the neutral scenario into native controls (the `default` variant keeps every other default):
- model: the scenario's Claude through the SDK's Anthropic provider, as its docs connect Claude:
  `createAnthropic({baseURL: <server>/v1, apiKey: <run key>})(<model id>)` (Anthropic Messages), sending exactly
  `Adapter.model_id(scenario)`;
- tools: `tool({description, inputSchema: jsonSchema(<scenario schema>), execute})`; `execute` POSTs to the
  ledger's HTTP face (`node:http`, keep-alive) with the scripted call id and passes the SDK's `abortSignal` to
  the request (an aborted call is recorded by the ledger as abandoned); a ledger error throws, so the SDK's own
  tool-error path applies (a `tool-error` part the model sees, for a recoverable error, a fatal one and a
  timeout alike: the driver reports it as the mechanism of both tool-error intents);
- max model calls -> `stopWhen: isStepCount(n)`; unset -> nothing (the SDK default stays, so a scenario without a
  limit shows it); deadline -> `timeout: {totalMs}`; token and cost budgets -> unsupported;
- `approval: required` -> `toolApproval: {<tool>: fn}` returning 'user-approval'; `approval: deny` -> the
  same returning 'denied'. The per-tool function is the SDK's approval check point, so the `authorize` event is
  recorded there (including the SDK's re-check of an approved call when a resume starts);
- the deny intent (`policy.deny`): "continue" -> only that 'denied' answer (the model sees execution-denied and
  the loop goes on); "stop" -> the same plus the documented loop control `hasToolCall(<each denied tool>)` in
  `stopWhen`, next to the step limit: `[isStepCount(n), hasToolCall(...)]`. Any `stopWhen` replaces the SDK's
  default step bound, so with no scenario limit the default read from the installed source is restated
  (adapters/vercel/probes/deny_stop.mjs: 3 requests vs 2). The mechanism per intent is reported by the driver
  and kept in the segment's `mechanisms`;
- the pause: the run returns with `tool-approval-request` parts; the driver saves the conversation
  (`messages.json`: the prompt plus `response.messages`) and the requests (`approvals.json`) in the snapshot;
  a resume appends a `tool` message with one `tool-approval-response` per decision (keyed by scripted call id).
Variants (each a request field of the driver's, never a branch on a scenario):
- `tool-loop-agent`: `new ToolLoopAgent({...}).generate()` with the same translation and model, so the agent's own
  defaults (its default stop condition) apply wherever the scenario sets nothing;
- `openai-compatible`: `generateText` as the default, with Claude reached the way a user reaches it through an
  OpenAI-compatible endpoint: `createOpenAI({baseURL, apiKey}).chat(<model id>)` (Chat Completions). It was the
  default before the Anthropic provider was; every cell but the retry timing of a 429 is the same on both
  routes (the OpenAI-style 429 carries no retry hint).

Signal mapping (no scenario knowledge):
- thrown: model/API errors (APICallError, RetryError, NoSuchToolError, InvalidToolInputError,
  ToolChoiceViolationError...) -> failure="model"; a `TimeoutError` with a `timeout` set -> limit="deadline"
  (raised); anything else -> failure="other";
- approval requests left in the last step -> ended="paused" with the pending calls;
- a deny stop has no flag: the SDK returns normally with `finishReason: 'tool-calls'`. The adapter infers
  it (denied=True, `extra.denied_signal = "inferred"`) only with the stop intent, when the loop ended right
  after a step that still had tool calls, all with an output (so only a stop condition could end it), among
  them a call of a tool named in the `hasToolCall` condition whose approval was denied. It is checked before
  the step limit: when both conditions hold at the same step, both are recorded (denied, and a note that the
  step limit was reached too), and no step limit is inferred;
- a step limit has no flag in v7: the SDK returns normally with `finishReason: 'tool-calls'`. The adapter infers
  it (limit="steps", limit_signal="inferred") when the last step still had tool calls, every one of them has
  an output (so the loop could have gone on: a stop condition ended it), nothing waits for approval, and the
  step count equals the `isStepCount(n)` it set — or, when the scenario set no limit, the step count equals
  the SDK's default read from the installed source (`generateText`: isStepCount(1); `ToolLoopAgent`:
  isStepCount(20), whose warning the driver captures as supporting evidence);
- counters: runtime_steps = `result.steps.length` (unit "step"; when it threw, the steps `onStepEnd` saw);
  tokens = `result.usage` (when it threw, the sum of those steps' usage); tool calls requested = tool calls over
  all steps. model_requests_reported = one per step of the result, a step being one model response
  (`result.steps`); a step's retries appear nowhere in a returned result, so a retried request is not counted
  (model_transient_error: 3 reported of 5 seen). A call that threw returned no result, and what it threw carries
  no steps (a `RetryError` has its failed attempts in `errors`, kept as `extra.thrown.attempts`; a
  `TimeoutError` is a bare DOMException: probes/anthropic_route.mjs): the count is then the steps it reported
  to `onStepEnd`, null when it reported none (a model that failed at the first call). Each segment is a new
  call: counters are not cumulative.
- retries: the SDK's own, whatever the provider (`maxRetries` 2, 2 s then 4 s, honouring `retry-after-ms` /
  `retry-after` when 0–60 s); neither provider reads `x-should-retry`, so a 500 that says "do not retry" is
  retried like any 500: 3 requests over ~6 s (probes/anthropic_route.mjs, probes/retry_headers.mjs). What
  differs by route is the hint: Anthropic's 429 carries `retry-after: 1` (harness/model_server/provider_errors.py,
  as Anthropic documents), so a 429 then a 500 costs 1 s + 4 s on the Anthropic route and 2 s + 4 s on the
  OpenAI-compatible one (model_transient_error: ~5.1 s vs ~6.1 s); a model that is down (a 500 with no hint)
  holds a run ~6 s on both (`retry_window_s`).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters import node_install
from loopbench.adapters.node_driver import NodeAdapter, NodeHome
from loopbench.harness.adapter import Capabilities, NodeProject, RunContext
from loopbench.harness.errors import LoopbenchError
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

PROTOCOL_VERSION = 3
HELLO_TIMEOUT_S = 60.0
MIN_AI = (7,)

# errors the SDK throws when the model or its API misbehaves (names as the SDK sets them)
MODEL_ERRORS = {
    "AI_APICallError", "AI_RetryError", "AI_NoSuchToolError", "AI_InvalidToolInputError",
    "AI_ToolChoiceViolationError", "AI_NoContentGeneratedError", "AI_InvalidResponseDataError",
    "AI_JSONParseError", "AI_TypeValidationError", "AI_EmptyResponseBodyError", "AI_ToolCallRepairError",
    "AI_NoOutputGeneratedError", "AI_InvalidPromptError",
}


class DriverDied(LoopbenchError):
    """The Node driver process ended while a request was in flight."""


class DriverError(LoopbenchError):
    """The driver answered a request with an `error` (a protocol, driver or harness problem)."""


class NodeDriver:
    """One long-lived `driver.mjs` process, spoken to over line-delimited JSON (thread-safe, sync API).

    Started lazily; after an unexpected death restarted at once in the background (or by the next request).
    It stays in the worker's process group, so killing the worker kills it too. Requests may overlap; answers
    are routed by request id. Lines the driver sends without a known id (errors for malformed input) go to `unrouted`.
    """

    def __init__(self, argv: list[str] | None = None, cwd: Path | None = None, label: str = "vercel driver",
                 protocol: int = PROTOCOL_VERSION):
        # the driver runs beside its node_modules (installed into the user cache on first use, when needed)
        home = cwd or node_install.ensure_installed()
        self.label = label  # how its lines are tagged in the worker's log (the Mastra adapter reuses this class)
        self.protocol = protocol  # the driver's protocol version this adapter speaks
        self.argv = argv or [str(home / "node_modules" / ".bin" / "node"), str(home / "driver.mjs")]
        self.cwd = home
        self.proc: subprocess.Popen[str] | None = None
        self.hello: dict[str, Any] | None = None
        self.starts = 0
        self.unrouted: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[subprocess.Popen[str], queue.Queue[dict[str, Any]]]] = {}
        self._ids = itertools.count(1)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._hello_q: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._closing = False

    # ---- process
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> dict[str, Any]:
        with self._lock:
            self._closing = False
            if not self.alive():
                self._start()
            assert self.hello is not None
            return self.hello

    def _restart_quietly(self) -> None:
        with self._lock:
            if self._closing:
                return
        try:
            self.ensure()
        except (DriverDied, DriverError, OSError) as exc:  # the next request will try again and raise
            print(f"[{self.label}] restart after a crash failed: {exc}", file=sys.stderr)

    def _start(self) -> None:
        self._stderr_tail.clear()
        self._hello_q = queue.Queue()
        proc = subprocess.Popen(
            self.argv, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
        )
        self.proc = proc
        self.starts += 1
        threading.Thread(target=self._read_stdout, args=(proc, self._hello_q), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(proc,), daemon=True).start()
        try:
            hello = self._hello_q.get(timeout=HELLO_TIMEOUT_S)
        except queue.Empty:
            self._kill(proc)
            raise DriverDied(f"the Node driver sent no hello within {HELLO_TIMEOUT_S:.0f} s") from None
        if hello is None:
            raise DriverDied(f"the Node driver exited before its hello: {self._death_reason(proc)}")
        if not hello.get("ok") or hello.get("protocol") != self.protocol:
            self._kill(proc)
            raise DriverError(f"the Node driver cannot serve protocol {self.protocol}: {hello}")
        self.hello = hello

    @staticmethod
    def _kill(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def _death_reason(self, proc: subprocess.Popen[str]) -> str:
        code = proc.wait()
        how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        tail = " | ".join(self._stderr_tail)
        return f"the Node driver (pid {proc.pid}) {how}" + (f"; stderr: {tail[-800:]}" if tail else "")

    def _read_stdout(self, proc: subprocess.Popen[str], hello_q: queue.Queue[dict[str, Any] | None]) -> None:
        assert proc.stdout is not None
        got_hello = False
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                print(f"[{self.label}] not a protocol line: {line.rstrip()[:300]}", file=sys.stderr)
                continue
            if not got_hello and msg.get("type") == "hello":
                got_hello = True
                hello_q.put(msg)
                continue
            with self._lock:
                target = self._pending.get(str(msg.get("id")))
            (target[1] if target else self.unrouted).put(msg)
        # EOF: the driver is gone. Everything in flight on it learns why.
        if not got_hello:
            hello_q.put(None)
        reason = self._death_reason(proc)
        with self._lock:
            waiting = [q for owner, q in self._pending.values() if owner is proc]
            unexpected = got_hello and self.proc is proc and not self._closing
        for q in waiting:
            q.put({"type": "died", "reason": reason})
        if unexpected:  # a healthy driver died: start the next one now, so the next run finds it warm
            print(f"[{self.label}] {reason}; restarting", file=sys.stderr)
            threading.Thread(target=self._restart_quietly, daemon=True).start()

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line.rstrip())
            sys.stderr.write(f"[{self.label} {proc.pid}] {line}")
        sys.stderr.flush()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._kill(proc)

    # ---- requests
    def send_raw(self, line: str) -> None:
        """Write one raw line (tests use it for malformed input)."""
        self.ensure()
        assert self.proc is not None and self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(line if line.endswith("\n") else line + "\n")
            self.proc.stdin.flush()

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its terminal line (its events inside). Raises DriverDied."""
        t0 = time.perf_counter()
        self.ensure()
        waited_s = time.perf_counter() - t0  # > 0 when this request waited for a driver (re)start
        rid = f"r{next(self._ids)}"
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            proc = self.proc
            if proc is None or proc.poll() is not None:
                raise DriverDied("the Node driver exited before the request was sent")
            self._pending[rid] = (proc, q)
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps({**payload, "id": rid}) + "\n")
                proc.stdin.flush()
            except OSError as exc:
                self._pending.pop(rid, None)
                raise DriverDied(f"cannot write to the Node driver (pid {proc.pid}): {exc}") from None
        try:
            msg = q.get()
            if msg.get("type") == "died":
                raise DriverDied(f"{msg['reason']} while request {rid} ({payload.get('op')}) was in flight")
            return {**msg, "driver_pid": proc.pid, "driver_wait_s": round(waited_s, 3)}
        finally:
            with self._lock:
                self._pending.pop(rid, None)


_driver: NodeDriver | None = None
_driver_lock = threading.Lock()


def driver() -> NodeDriver:
    """This worker's one driver (created on first use)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = NodeDriver()
        return _driver


def _step_limit_of(text: str | None) -> int | None:
    m = re.search(r"isStepCount\((\d+)\)", text or "")
    return int(m.group(1)) if m else None


# a ledger error is thrown from the tool's execute: the SDK turns it into a tool-error part the model sees (the
# driver reports the same words for the two tool-error intents)
TOOL_ERROR_THROWN = ("tool execute throws an Error (the SDK's tool-error part: the model gets the error; the loop "
                     "goes on)")


# how a stop that returns normally is read (every variant)
STOP_NOTES = ("a step limit returns normally with finishReason 'tool-calls': the adapter infers it",
              "a deny stop (hasToolCall) returns normally too: the adapter infers it from the denied call")


class VercelAIAdapter(NodeAdapter):
    id = "vercel-ai"
    distribution = "ai"  # an npm package: versions come from adapters/vercel/node_modules
    display_name = "the Vercel AI SDK"
    # the SDK's provider for Claude, as its docs connect it (`createAnthropic({baseURL, apiKey})(modelId)`)
    model_class = "@ai-sdk/anthropic createAnthropic(...)"
    model_provider = "anthropic"
    # what the driver is asked to run: the loop API and the provider factory (adapters/vercel/driver.mjs)
    driver_api: ClassVar[str] = "generateText"
    driver_provider: ClassVar[str] = "anthropic"
    package_index = "npm"
    packages = ("@ai-sdk/anthropic", "@ai-sdk/openai", "@ai-sdk/provider-utils", "zod", "node")
    node_project = NodeProject(node_install.SHIPPED, node_install.FILES, node_install.NODE_DIR_ENV, runtime="node")
    # held to the release's day by the version matrix (Node itself within its locked major): ai 7.0.4 pairs with
    # the @ai-sdk/anthropic and @ai-sdk/openai of its day
    companions = ("@ai-sdk/anthropic", "@ai-sdk/openai", "zod")
    plain_script = "vercel_ai.mjs"  # run by the locked Node beside the locked node_modules (`plain_command`)
    min_version = MIN_AI
    about = ("generateText with the SDK's defaults, Claude through @ai-sdk/anthropic; stopWhen/timeout/toolApproval "
             "from the scenario")
    # the driver runs the idiom named by `variant`; its default step bound, as the driver read it from the SDK
    default_stop_key: ClassVar[str] = "generateText_stopWhen"
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls", "deadline_s"}),
        step_unit="step (one generation plus the tool executions it triggers)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="toolApproval status 'denied'; the stop intent adds stopWhen hasToolCall(<denied tool>)",
        # the SDK's maxRetries 2, whatever the provider: 2 s / 4 s when the failure carries no retry hint (an
        # Anthropic 500 sends none: probes/anthropic_route.mjs), so a model that is down holds a run ~6 s
        retry_window_s=6.0,
        notes=(*STOP_NOTES,
               "retries: maxRetries 2 (2 s, then 4 s), honouring retry-after: Anthropic's 429 carries retry-after: 1 "
               "(its first retry waits 1 s); x-should-retry is not read (probes/anthropic_route.mjs)"),
    )
    # what the driver does for each intent; each run's `mechanisms` are the driver's own words for it, the denied
    # tools named (adapters/vercel/driver.mjs; tests/test_adapter_contract.py checks that the two agree)
    mechanism_table = {
        "deny_stop": "toolApproval: {<denied tool>: fn} returning {type: 'denied'} + stopWhen: [..., "
                     "hasToolCall(<denied tool>)] (the loop ends after the step with the denied call)",
        "deny_continue": "toolApproval: {<denied tool>: fn} returning {type: 'denied'} (the model sees "
                         "execution-denied; the loop goes on)",
        "approval_pause": "toolApproval: {<tool>: fn} returning 'user-approval' -> tool-approval-request parts; "
                          "messages (prompt + response.messages) saved; a tool-approval-response appended on resume",
        "reject": "tool-approval-response {approved: false, reason} on resume (the model sees execution-denied)",
        "tool_choice_first": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's messages)",
        "tool_choice_later": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's messages)",
        "tool_error_recoverable": TOOL_ERROR_THROWN,
        "tool_error_fatal": TOOL_ERROR_THROWN,
    }

    # ---- versions, availability and the plain command: NodeAdapter, from the driver's Node project
    npm_label = "`ai`"

    @classmethod
    def node_home(cls) -> NodeHome:
        return node_install.home()

    @classmethod
    def warm(cls) -> None:
        """Start this worker's driver (Node start-up and import('ai')) before any run is timed."""
        driver().ensure()

    # ---- running
    def _payload(self, scenario: Scenario, ctx: RunContext, op: str) -> dict[str, Any]:
        lim = scenario.limits
        return {
            "op": op, "variant": self.variant, "api": self.driver_api, "provider": self.driver_provider,
            "base_url": ctx.base_url, "api_key": ctx.api_key, "run_id": ctx.run_id, "ledger_token": ctx.ledger_token,
            "model_id": self.model_id(scenario),
            "prompt": scenario.prompt, "snapshot_dir": str(ctx.snapshot_dir),
            "tools": [{"name": n, "description": t.description, "parameters": t.parameters, "approval": t.approval}
                      for n, t in scenario.tools.items()],
            "limits": {"max_model_calls": lim.max_model_calls, "deadline_s": lim.deadline_s},
            "deny": scenario.policy.deny,
            # each turn's tool_choice, its `after` call as a regex (a repeating turn's kb_{n} matches kb_1, ...)
            "tool_choice": [{"after": r.after_regex, "choice": r.choice} for r in scenario.tool_choice_rules()],
        }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        return await self._request(scenario, ctx, self._payload(scenario, ctx, "run"))

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        payload = {**self._payload(scenario, ctx, "resume"), "snapshot": str(snapshot), "decisions": decisions}
        return await self._request(scenario, ctx, payload)

    async def _request(self, scenario: Scenario, ctx: RunContext, payload: dict[str, Any]) -> SegmentResult:
        # the framework runs in Node (its CPU comes back as the driver's cpu_us): everything this Python process
        # does for the segment — the request, the hop, reading the answer, mapping it — is loopbench's own work
        with OWN_WORK.measured():
            return await self._request_measured(scenario, ctx, payload)

    async def _request_measured(self, scenario: Scenario, ctx: RunContext, payload: dict[str, Any]
                                ) -> SegmentResult:
        d = driver()
        answer = await asyncio.to_thread(d.request, payload)
        events = answer.get("events") or []
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        with open(ctx.work_dir / "driver-events.jsonl", "w", encoding="utf-8") as fh:
            for ev in events:
                fh.write(json.dumps(ev) + "\n")
        if answer.get("type") == "error":
            raise DriverError(f"the Node driver refused the {payload['op']} request: {answer.get('error')}")
        if answer.get("harness_errors"):
            raise DriverError("the ledger refused a tool call: " + "; ".join(answer["harness_errors"]))
        hello = d.hello or {}
        return self._segment(scenario, ctx, answer, hello)

    # ---- mapping what the driver reported
    def _segment(self, scenario: Scenario, ctx: RunContext, a: dict[str, Any], hello: dict[str, Any]
                 ) -> SegmentResult:
        lim = scenario.limits
        settings = dict(a.get("settings", {}))
        settings.update(node=hello.get("node"), driver_protocol=hello.get("protocol"))
        defaults = hello.get("defaults", {})
        default_stop = defaults.get(self.default_stop_key)
        limits: dict[str, LimitTranslation] = {}
        deny = a.get("deny") or {}
        if lim.max_model_calls is not None:
            limits["max_model_calls"] = LimitTranslation(neutral=lim.max_model_calls,
                                         native=f"stopWhen: isStepCount({lim.max_model_calls})")
            step_limit: int | None = lim.max_model_calls
        elif deny.get("step_bound") is not None:  # hasToolCall replaced the default: the driver restated it
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"stopWhen not set (SDK default {default_stop}, restated next to hasToolCall)")
            step_limit = deny["step_bound"]
        else:
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"stopWhen not set (SDK default {default_stop})")
            step_limit = _step_limit_of(default_stop)
        if lim.deadline_s is not None:
            limits["deadline_s"] = LimitTranslation(neutral=lim.deadline_s,
                                    native=f"timeout: {{totalMs: {round(lim.deadline_s * 1000)}}}")
        missing = self.unsupported_limits(scenario)
        limits.update(missing)
        unsupported = list(missing)
        mechanisms = self.mechanisms(scenario, a.get("mechanisms") or {})  # the driver's own words per intent
        unsupported += self.unsupported_tool_choice(mechanisms)
        usage = a.get("usage") or {}
        # one per step (a step is one model response): the returned result's steps; a call that threw returned no
        # result and its error carries no steps (probes/anthropic_route.mjs), so the steps it reported to onStepEnd
        # (the source of its steps and tokens then too), and none when it reported no step
        responses = a.get("model_responses")
        counters = ReportedCounters(
            model_requests_reported=responses if a["ended"] != "raised" or responses else None,
            tool_calls_requested=a.get("tool_calls_requested"),
            runtime_steps=a.get("step_count"), runtime_step_unit="step",
            input_tokens_reported=usage.get("input_tokens"), output_tokens_reported=usage.get("output_tokens"),
            cumulative=False,
        )
        extra: dict[str, Any] = {
            "steps": [{k: s.get(k) for k in ("step", "finish_reason", "tool_calls")} for s in a.get("steps", [])],
            "language_model_calls_seen_by_callbacks": a.get("language_model_calls"),
            "language_model_responses_seen_by_callbacks": a.get("language_model_responses"),
            "driver_pid": a.get("driver_pid"),
        }
        if (a.get("driver_wait_s") or 0) > 0.01:
            extra["driver_wait_s"] = a["driver_wait_s"]  # this segment's time includes waiting for a driver start
        if a.get("warnings"):
            extra["sdk_warnings"] = a["warnings"]
        notes: list[str] = []
        common: dict[str, Any] = dict(counters=counters, settings=settings, limits=limits, unsupported=unsupported,
                      mechanisms=mechanisms,
                      # the driver outlives the segment: the worker's CPU clock cannot see it, the driver reports it
                      live_child_cpu_s=(a.get("cpu_us") or 0) / 1e6,
                      live_child_own_cpu_s=(a.get("own_cpu_us") or 0) / 1e6)

        if a["ended"] == "raised":
            signals = self._raised(a["thrown"], lim.deadline_s is not None, extra)
            return SegmentResult(signals=signals, notes=notes, **common)

        if a.get("denied"):
            extra["denied_calls"] = a["denied"]
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
        could_go_on = (last.get("finish_reason") == "tool-calls" and last.get("tool_calls", 0) > 0
                       and last.get("tool_outputs") == last.get("tool_calls"))
        stop_calls = last.get("denied_stop_calls") or []
        at_step_limit = step_limit is not None and a.get("step_count") == step_limit
        if could_go_on and stop_calls and deny.get("stop_tools"):
            denied = True
            tools = sorted({c["tool"] for c in stop_calls})
            why = (f"inferred deny stop: the loop ended after step {a.get('step_count')}, whose tool calls all had "
                   f"outputs, with a denied approval for {', '.join(tools)} named in stopWhen hasToolCall("
                   f"{', '.join(deny['stop_tools'])})")
            if at_step_limit:
                why += f"; the step limit ({limits['max_model_calls'].native}) was reached at the same step"
            notes.append(why)
            extra["inference"] = why
            extra["denied_signal"] = "inferred"
        elif could_go_on and at_step_limit:
            limit = "steps"
            warned = any("stopWhen" in (w.get("message") or "") for w in a.get("warnings", []))
            why = (f"inferred step limit: the last step ended with finishReason 'tool-calls' and all "
                   f"{last['tool_calls']} tool call(s) had outputs, and steps == {step_limit} "
                   f"({limits['max_model_calls'].native})" + ("; the SDK logged its default-stop warning"
                                                                 if warned else ""))
            notes.append(why)
            extra["inference"] = why
        elif could_go_on:
            extra["inference"] = (f"the loop stopped after a 'tool-calls' step at {a.get('step_count')} steps, "
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
        names = [c.get("name") for c in chain]
        extra["thrown"] = thrown
        base: dict[str, Any] = dict(ended="raised", exception_type=thrown.get("name"),
                                    exception_message=thrown.get("message"), extra=extra)
        if deadline_set and "TimeoutError" in names:
            return NativeSignals(**base, limit="deadline", limit_signal="raised")
        if any(n in MODEL_ERRORS for n in names):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")


class VercelToolLoopAgent(VercelAIAdapter):
    variant = "tool-loop-agent"
    about = "ToolLoopAgent.generate() with the agent's own defaults where the scenario sets none"
    default_stop_key = "ToolLoopAgent_stopWhen"
    driver_api = "ToolLoopAgent"


class VercelOpenAICompatible(VercelAIAdapter):
    variant = "openai-compatible"
    about = ("generateText with the SDK's defaults, Claude through @ai-sdk/openai's Chat Completions model at an "
             "OpenAI-compatible endpoint")
    model_class = "@ai-sdk/openai createOpenAI(...).chat (an OpenAI-compatible endpoint)"
    driver_provider = "openai-chat"
    capabilities = VercelAIAdapter.capabilities.model_copy(update={"notes": (
        *STOP_NOTES,
        "retries: maxRetries 2 (2 s, then 4 s): the OpenAI-style 429 carries no retry hint; x-should-retry is not "
        "read (probes/retry_headers.mjs)")})


# the framework's other idioms, in the order runs and reports show them
VercelAIAdapter.variant_classes = (VercelToolLoopAgent, VercelOpenAICompatible)
