"""Vercel AI SDK adapter (`vercel-ai`): a Python adapter driving one long-lived Node program per worker.

The SDK is Node-only, so every segment is a request to `adapters/vercel/driver.mjs` over loopbench's Node line
protocol (adapters/node/README.md), run on the Node binary the locked `node` package installs
(`adapters/vercel/node_modules/.bin/node`, the version `ai` declares), from the locked `package-lock.json`.
The process, the requests and what every npm framework reads the same way are adapters/node/ (`NodeAdapter`):
each worker process owns ONE driver, started on first use (in `warm`, before a run is timed) and reused by every
run of that worker; a driver that dies is reported for its in-flight runs (the adapter raises, so the runner
records `error` with the reason) and is restarted at once, in the background, for the next run. This module
holds what is the SDK's: its request and answer fields, its words, and mapping its counters and limits.

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
  (`messages.json`: the prompt plus `responseMessages`) and the requests (`approvals.json`) in the snapshot;
  a resume appends a `tool` message with one `tool-approval-response` per decision (keyed by scripted call id).
- sub-agents (`scenario.agents`): the SDK's subagents docs (a tool whose `execute` runs the child's own loop on
  the task and returns its text): one `tool({description, inputSchema: {task}, execute})` per child, named after
  it; the child has its own `system`/`instructions`, its own ledger-backed tools and their `toolApproval`, the
  parent's model and the tool's `abortSignal`, nothing else of the parent's (stopWhen, prepareStep, callbacks). The
  main agent gets `system: scenario.instructions` (a scenario without agents sends none, as before). The
  `generateText` variants (and `stream-text`: the tool awaits the child) run the child with `generateText`, whose
  default `isStepCount(1)` would end the child at its first tool call, so it gets ToolLoopAgent's default bound
  (read from the installed source, `isStepCount(20)`: the bound the docs' ToolLoopAgent subagent runs under;
  `settings.subagents` says so); the ToolLoopAgent variants run a `ToolLoopAgent` child with its own defaults.
  Measured (every variant): the run's `result.usage` is the parent's steps only (subagent_usage: 2000/200 reported
  of 4000/400 served; the child's own usage is in `extra.subagent_runs`); the parent's step limit does not reach
  the child (subagent_runaway: research 20 + main 2 requests); an approval inside the child ends the child's call
  with its approval request unanswered, the parent never sees it and answers (subagent_approval: incomplete, no
  pause); the child's tool error goes to the child, which answers (subagent_tool_failure: incomplete).
  adapters/vercel/probes/subagent_usage.mjs shows the usage split against the raw SDK.
- the caller's cancel: the driver holds the ledger's cancel URL open (the request's `cancel_url`) and, when told,
  aborts an AbortController whose signal every loop API got as its `abortSignal`; the SDK hands the signal to each
  tool's execute, which passes it to its ledger request (the ledger sees the call abandoned), as a user's tool that
  passes the signal on does. The streaming entry points also get `onAbort({steps})` (ToolLoopAgent in its
  settings: its `stream()` passes it on, `generate()` has none) and end with an `abort` part; every idiom then
  rejects / throws the `AbortError`: ended="cancelled", exception_type AbortError, terminal_reason "onAbort + abort
  part" for the streaming ones. What was completed: onAbort's steps (streaming), else the steps onStepEnd got
  (generateText has no onAbort, generate-text.ts:1833); their usage is reported, and a step list with none
  counts no request. vercel/ai #8107 (onAbort not called during a tool call) does not reproduce in 7.0.173: onAbort
  is called, with 0 steps (the step in flight is dropped). generateText's onStepEnd, though, gets the step whose
  tool was aborted, with a `tool-error` part (adapters/vercel/probes/abort_in_tool.mjs);
- resume after the cancel: the snapshot keeps the prompt plus those steps' `response.messages` (`cancel.json`);
  the resume sends them as `messages` to a new call of the same API in a new process, as the docs continue a
  conversation. Measured on cancel_then_resume: the streaming idioms re-ask the model, which looks the policy up
  again (lookup_policy 2 executions: the abandoned one and the new one; post_to_portal 1); the generateText
  idioms hand the model the aborted lookup as an error result, so it is not run again (lookup_policy 1) and the
  model answers that error (the scripted model classifies it from the ledger, which finishes the abandoned call
  5 s later: completed or script_error depending on when the resume's request comes).
- structured answers (a scenario's `output`; a request without one is sent as before): the SDK's documented
  structured output with tools (ai/docs/03-ai-sdk-core/10-generating-structured-data.mdx; docs/09-troubleshooting/
  14-tool-calling-with-structured-outputs.mdx), `output: Output.object({schema, name, description})` on
  generateText / streamText / the ToolLoopAgent's settings; the schema a zod `z.strictObject` of the fields (an enum
  as `z.enum`), the check a `.refine(fn, {message})` on its field (adapters/node/protocol.mjs `outputZod`); the answer
  is `result.output` (final_output), its JSON text final_text. Output.object hands the provider `responseFormat
  {type: 'json', schema}` (ai/src/generate-text/output.ts:140-156): @ai-sdk/anthropic's default structuredOutputMode
  'auto' sends native `output_config.format {type: 'json_schema'}` for claude-sonnet-4-5, whose catalog entry has
  native structured output (@ai-sdk/anthropic/src/anthropic-language-model.ts:605-658, 985-1010;
  anthropic-model-catalog.ts:215-223; else it would be a forced 'json' tool), and @ai-sdk/openai's chat model
  `response_format {type: 'json_schema', json_schema: {strict: true}}` (`strictJsonSchema ?? true`:
  src/chat/openai-chat-language-model.ts:213, 250-262): on both routes the server treats the answer as constrained
  and never sends one that breaks the schema. The final step's text is parsed with the zod schema; one that fails
  throws `NoObjectGeneratedError` ("response did not match schema", its cause the zod issue: output.ts:165-191),
  thrown by generateText (generate-text.ts:1798-1819) and by streamText's `output` promise when read
  (stream-text.ts:3846-3866: the fullStream ends normally, no error part, onError not called). The SDK has no retry
  or repair for it (no option re-asks the model): measured on every variant, output_check_rejects and
  output_never_valid end raised (failure="model") after 2 requests, the read and one answer, the correction never
  asked; output_invalid_then_valid completes in 2 (the strict schema kept the broken answer from coming)
  (adapters/vercel/probes/output_invalid.mjs, against the raw SDK). When the run returned but reading
  `result.output` throws (generateText's NoOutputGeneratedError after a tool step a stop condition ended; streamText's
  NoObjectGeneratedError), the driver reports it as `output_error`: raised (failure="model") when the loop ended on
  the model's answer, else kept in `extra.output_error` beside the inferred limit;
Variants (each a request field of the driver's, never a branch on a scenario):
- `tool-loop-agent`: `new ToolLoopAgent({...}).generate()` with the same translation and model, so the agent's own
  defaults (its default stop condition) apply wherever the scenario sets nothing;
- `stream-text` and `tool-loop-agent-stream`: the streaming entry points of the default and of `tool-loop-agent`
  (`streamText({...})`, `new ToolLoopAgent({...}).stream({...})`), each `fullStream` read to the end and then the
  result's promises (`steps`, `usage`, `finishReason`, `text`, `response`) read, with the same translation; every
  request is streamed (`stream: true`: Anthropic's SSE events, usage in `message_start` and `message_delta`).
  Errors do not throw from a stream: they reach `onError` (the driver passes one; without it the SDK logs them)
  and the stream's `error` parts, and the first one is what the run raised; a timeout ends the stream with an
  `abort` part and rejects the promises with the `TimeoutError`. Measured difference (the report's
  streamed-vs-not table): a timeout that passes while a tool runs leaves the streamed run nothing to report —
  no `finish-step` part and no `onStepEnd` for the step whose tool was cut — where `generateText` calls
  `onStepEnd` for that step with its usage (deadline_slow_tool: 1 request, 1000/100 tokens reported against
  null; adapters/vercel/probes/stream_timeout_in_tool.mjs);
- `openai-compatible`: `generateText` as the default, with Claude reached the way a user reaches it through an
  OpenAI-compatible endpoint: `createOpenAI({baseURL, apiKey}).chat(<model id>)` (Chat Completions). It was the
  default before the Anthropic provider was; every cell but the retry timing of a 429 is the same on both
  routes (the OpenAI-style 429 carries no retry hint).

Signal mapping (no scenario knowledge):
- thrown: model/API errors (APICallError, RetryError, NoSuchToolError, InvalidToolInputError,
  ToolChoiceViolationError...) and a structured answer that failed (NoObjectGeneratedError, NoOutputGeneratedError)
  -> failure="model"; a `TimeoutError` with a `timeout` set -> limit="deadline"
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

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from loopbench.adapters.node.adapter import NodeAdapter
from loopbench.adapters.node.driver import Reply
from loopbench.adapters.node.home import NodeHome
from loopbench.adapters.node.protocol import Hello, SegmentAnswer, SegmentRequest, SubagentRun, Thrown, Wire
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Capabilities, Intent, NodeProject, RunContext
from loopbench.harness.record import LimitTranslation, NativeSignals, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario

MIN_AI = (7,)
# the shipped Node project (read at each call: tests point SHIPPED elsewhere)
SHIPPED = Path(__file__).resolve().parent / "vercel"
FILES = ("driver.mjs", "protocol.mjs", "package.json", "package-lock.json")
NODE_DIR_ENV = "LOOPBENCH_NODE_DIR"  # a driver directory of its own: the version matrix's other `ai` releases


def node_home() -> NodeHome:
    """The Vercel driver's Node project, as this module's constants say now."""
    return NodeHome(SHIPPED, FILES, NODE_DIR_ENV, marker="ai", cache_prefix="vercel-driver",
                    needs="the Vercel AI SDK driver (the npm packages ai, @ai-sdk/openai, @ai-sdk/anthropic and "
                          "node@22 from the shipped package-lock.json)")


# ---- the SDK's fields of the Node protocol (adapters/node/protocol.py holds the shared ones)
class VercelDefaults(Wire):
    """The SDK's default stop conditions, read from the installed source (None when not found)."""

    generateText_stopWhen: str | None
    streamText_stopWhen: str | None
    ToolLoopAgent_stopWhen: str | None


class VercelHello(Hello):
    defaults: VercelDefaults


class VercelRequest(SegmentRequest):
    api: Literal["generateText", "ToolLoopAgent", "streamText", "ToolLoopAgent.stream"]  # the loop API
    provider: Literal["anthropic", "openai-chat"]  # the provider factory the model comes from


class SdkWarning(Wire):
    """A warning the SDK logged during the request (AI_SDK_LOG_WARNINGS)."""

    type: str | None = None
    message: str | None = None
    feature: str | None = None


class VercelSubagentRun(SubagentRun):
    """A child's run, as the child's own result (or ToolLoopAgent.generate's) reported it to the delegation tool."""

    steps: int
    pending_approvals: list[str | None]  # approval requests left in the child's last step (the parent never sees)


class VercelAnswer(SegmentAnswer):
    # one per step, a step being one model response (result.steps; when it threw, the steps onStepEnd saw)
    model_responses: int
    model_responses_source: str
    language_model_calls: int  # onLanguageModelCallStart callbacks seen (once per step, not per HTTP retry)
    language_model_responses: int  # onLanguageModelCallEnd callbacks seen (one per parsed response)
    warnings: list[SdkWarning]
    raw_finish_reason: str | None = None
    subagent_runs: list[VercelSubagentRun] = []  # each child run a delegation tool finished, as its own result said
    # a request with `output`: what reading `result.output` threw when the run itself returned (None: it gave one)
    output_error: Thrown | None = None


def _step_limit_of(text: str | None) -> int | None:
    m = re.search(r"isStepCount\((\d+)\)", text or "")
    return int(m.group(1)) if m else None


# a ledger error is thrown from the tool's execute: the SDK turns it into a tool-error part the model sees (the
# driver reports the same words for the two tool-error intents)
TOOL_ERROR_THROWN = ("tool execute throws an Error (the SDK's tool-error part: the model gets the error; the loop "
                     "goes on)")


# the SDK's subagents docs: a tool whose execute runs the child's own loop on the task and returns its text (the
# driver's words; the ToolLoopAgent variants run a ToolLoopAgent child)
DELEGATE_GENERATE_TEXT = ("a tool per child whose execute runs generateText({system: instructions, tools, stopWhen: "
                          "isStepCount(<ToolLoopAgent's default>), prompt: task, abortSignal}) and returns its text "
                          "(the SDK's subagents docs; the child has its own loop)")
DELEGATE_TOOL_LOOP_AGENT = ("a tool per child whose execute runs new ToolLoopAgent({instructions, tools}).generate("
                            "{prompt: task, abortSignal}) and returns its text (the SDK's subagents docs; the child's "
                            "own loop and defaults)")


# the caller's cancel, per loop API (the driver's words: adapters/vercel/driver.mjs CANCEL, RESUME_AFTER_CANCEL)
_ABORT_GENERATE = ("AbortController whose signal is the call's abortSignal, aborted on the caller's cancel; the "
                   "SDK hands it to every tool's execute (passed on to the tool's ledger request). The call has no "
                   "onAbort: it throws the abort, the completed steps are the onStepEnd ones "
                   "(ai/src/generate-text/generate-text.ts:1833)")
_ABORT_STREAM = ("AbortController whose signal is the call's abortSignal, with onAbort({steps}), aborted on the "
                 "caller's cancel; the SDK hands the signal to every tool's execute (passed on to the tool's ledger "
                 "request); the stream ends with an abort part (docs: ai/docs/06-advanced/02-stopping-streams.mdx; "
                 "stream-text.ts:2101-2126)")
_CONTINUE = ("the prompt plus the completed steps' response.messages kept at the abort (cancel.json), sent as "
             "`messages` to a new call in a new process, as the docs continue a conversation (ai/docs/03-ai-sdk-core/"
             "15-tools-and-tool-calling.mdx \"Response Messages\")")
CANCEL = {
    "generateText": f"generateText({{..., abortSignal}}): {_ABORT_GENERATE}",
    "ToolLoopAgent": f"agent.generate({{..., abortSignal}}): {_ABORT_GENERATE}",
    "streamText": f"streamText({{..., abortSignal, onAbort}}): {_ABORT_STREAM}",
    "ToolLoopAgent.stream": f"new ToolLoopAgent({{..., onAbort}}).stream({{..., abortSignal}}): {_ABORT_STREAM}",
}
RESUME_AFTER_CANCEL = {
    "generateText": f"generateText({{messages}}): {_CONTINUE}; the steps are onStepEnd's",
    "ToolLoopAgent": f"agent.generate({{messages}}): {_CONTINUE}; the steps are onStepEnd's",
    "streamText": f"streamText({{messages}}): {_CONTINUE}; the steps are onAbort's",
    "ToolLoopAgent.stream": f"agent.stream({{messages}}): {_CONTINUE}; the steps are onAbort's",
}


def _cancel_mechanisms(api: str) -> dict[Intent, str]:
    return {"cancel": CANCEL[api], "resume_after_cancel": RESUME_AFTER_CANCEL[api]}


# the structured answer (the driver's words: adapters/vercel/driver.mjs OUTPUT_CALL, OUTPUT_WIRE)
_OUTPUT_CALL = {
    "generateText": "generateText({..., output: Output.object({schema, name, description})}) -> result.output",
    "ToolLoopAgent": ("new ToolLoopAgent({..., output: Output.object({schema, name, description})}).generate() -> "
                      "result.output"),
    "streamText": ("streamText({..., output: Output.object({schema, name, description})}), fullStream read, then "
                   "await result.output"),
    "ToolLoopAgent.stream": ("new ToolLoopAgent({..., output: Output.object({schema, name, description})}).stream(), "
                             "fullStream read, then await result.output"),
}
_OUTPUT_WIRE = {
    "anthropic": "@ai-sdk/anthropic's structuredOutputMode 'auto' (output_config.format json_schema, or a 'json' tool)",
    "openai-chat": "@ai-sdk/openai's response_format json_schema, strict (strictJsonSchema default true)",
}
# what the SDK throws when the model's structured answer fails (ai/src/error/no-object-generated-error.ts,
# no-output-generated-error.ts): the model's failure, whatever its cause chain says
OUTPUT_ERRORS = frozenset({"AI_NoObjectGeneratedError", "NoObjectGeneratedError", "AI_NoOutputGeneratedError"})
OUTPUT_CHECK = ("a zod .refine(v => pattern.test(v), {message}) on the field, applied by Output.object's parse "
                "(safeValidateTypes) after the answer: NoObjectGeneratedError, no retry")


def _output_mechanisms(api: str, provider: str) -> dict[Intent, str]:
    return {"structured_output": f"{_OUTPUT_CALL[api]}, the schema a zod z.strictObject; {_OUTPUT_WIRE[provider]}; "
                                 "no retry: an answer failing it throws NoObjectGeneratedError",
            "output_check": OUTPUT_CHECK}


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
    node_project = NodeProject(SHIPPED, FILES, NODE_DIR_ENV, runtime="node")
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
        **_cancel_mechanisms("generateText"),
        **_output_mechanisms("generateText", "anthropic"),
        "delegate": DELEGATE_GENERATE_TEXT,
        "deny_stop": "toolApproval: {<denied tool>: fn} returning {type: 'denied'} + stopWhen: [..., "
                     "hasToolCall(<denied tool>)] (the loop ends after the step with the denied call)",
        "deny_continue": "toolApproval: {<denied tool>: fn} returning {type: 'denied'} (the model sees "
                         "execution-denied; the loop goes on)",
        "approval_pause": "toolApproval: {<tool>: fn} returning 'user-approval' -> tool-approval-request parts; "
                          "messages (prompt + responseMessages) saved; a tool-approval-response appended on resume",
        "reject": "tool-approval-response {approved: false, reason} on resume (the model sees execution-denied)",
        "tool_choice_first": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's messages)",
        "tool_choice_later": "prepareStep returning {toolChoice} for the step the turn answers (chosen from the "
                             "step's messages)",
        "tool_error_recoverable": TOOL_ERROR_THROWN,
        "tool_error_fatal": TOOL_ERROR_THROWN,
    }

    # ---- the SDK's side of the protocol (versions, the driver, the requests: NodeAdapter)
    npm_label = "`ai`"
    driver_label = "vercel driver"
    hello_model = VercelHello
    request_model = VercelRequest
    answer_model = VercelAnswer
    steps_ran_words = "steps"
    tool_calls_step_words = "a 'tool-calls' step"

    @classmethod
    def node_home(cls) -> NodeHome:
        return node_home()

    def _request_fields(self, scenario: Scenario, ctx: RunContext) -> dict[str, Any]:
        return {"api": self.driver_api, "provider": self.driver_provider}

    def _raised(self, thrown: Thrown, deadline_set: bool, extra: dict[str, Any]) -> NativeSignals:
        signals = super()._raised(thrown, deadline_set, extra)
        names = {c.name for c in thrown.chain()} | {c.constructor for c in thrown.chain() if c.constructor}
        if signals.failure == "other" and names & OUTPUT_ERRORS:
            return signals.model_copy(update={"failure": "model"})  # the model's answer failed its schema
        return signals

    def _deny_evidence(self, tools: str, stop_tools: str) -> str:
        return f"with a denied approval for {tools} named in stopWhen hasToolCall({stop_tools})"

    def _limit_evidence(self, a: VercelAnswer, steps_ran: int | None) -> str:
        warned = any("stopWhen" in (w.message or "") for w in a.warnings)
        return "; the SDK logged its default-stop warning" if warned else ""

    # ---- mapping what the driver reported
    def _segment(self, scenario: Scenario, ctx: RunContext, a: VercelAnswer, reply: Reply[VercelAnswer],
                 hello: VercelHello, notes: list[str]) -> SegmentResult:
        lim = scenario.limits
        default_stop = getattr(hello.defaults, self.default_stop_key)
        limits: dict[str, LimitTranslation] = {}
        if lim.max_model_calls is not None:
            limits["max_model_calls"] = LimitTranslation(neutral=lim.max_model_calls,
                                         native=f"stopWhen: isStepCount({lim.max_model_calls})")
            step_limit: int | None = lim.max_model_calls
        elif a.deny.step_bound is not None:  # hasToolCall replaced the default: the driver restated it
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"stopWhen not set (SDK default {default_stop}, restated next to hasToolCall)")
            step_limit = a.deny.step_bound
        else:
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"stopWhen not set (SDK default {default_stop})")
            step_limit = _step_limit_of(default_stop)
        if lim.deadline_s is not None:
            limits["deadline_s"] = LimitTranslation(neutral=lim.deadline_s,
                                    native=f"timeout: {{totalMs: {round(lim.deadline_s * 1000)}}}")
        usage = a.usage
        # one per step (a step is one model response): the returned result's steps; a call that threw returned no
        # result and its error carries no steps (probes/anthropic_route.mjs), so the steps it reported to onStepEnd
        # (the source of its steps and tokens then too), and none when it reported no step
        # a run that threw or was cancelled returned no result: its steps are those onStepEnd (or onAbort) got, and
        # none is no count (the request the cut step answered is in no step), as for a timeout in a streamed tool
        from_callbacks = a.ended in ("raised", "cancelled")
        counters = ReportedCounters(
            model_requests_reported=a.model_responses if not from_callbacks or a.model_responses else None,
            tool_calls_requested=a.tool_calls_requested,
            runtime_steps=a.step_count, runtime_step_unit="step",
            input_tokens_reported=usage.input_tokens if usage else None,
            output_tokens_reported=usage.output_tokens if usage else None,
            cumulative=False,
        )
        extra: dict[str, Any] = {
            "steps": [{"step": s.step, "finish_reason": s.finish_reason, "tool_calls": [c.wire() for c in s.tool_calls]}
                      for s in a.steps],
            "language_model_calls_seen_by_callbacks": a.language_model_calls,
            "language_model_responses_seen_by_callbacks": a.language_model_responses,
            "driver_pid": reply.driver_pid,
        }
        if reply.waited_s > 0.01:
            extra["driver_wait_s"] = reply.waited_s  # this segment's time includes waiting for a driver start
        if a.warnings:
            extra["sdk_warnings"] = [w.wire() for w in a.warnings]
        if a.subagent_runs:  # the children's own results: the parent's usage does not hold them
            extra["subagent_runs"] = [r.wire() for r in a.subagent_runs]
        if a.cancel is not None:
            extra["cancel"] = a.cancel.wire()
        common = self._common(a, hello, limits, counters)

        if a.ended == "cancelled":
            return self._cancelled(a, extra, notes, common)
        if a.ended == "raised":
            assert a.thrown is not None
            signals = self._raised(a.thrown, lim.deadline_s is not None, extra)
            return SegmentResult(signals=signals, notes=notes, **common)

        if a.denied:
            extra["denied_calls"] = [d.wire() for d in a.denied]
        if a.ended == "paused":
            return self._paused(a, ctx, extra, notes, common)
        last = a.last_step
        could_go_on = (last is not None and last.finish_reason == "tool-calls" and last.tool_calls > 0
                       and last.tool_outputs == last.tool_calls)
        if a.output_error is not None:
            extra["output_error"] = a.output_error.wire()
            if not could_go_on:
                # the loop ended on the model's answer and reading `result.output` threw: the structured answer
                # failed (streamText parses it when read: NoObjectGeneratedError), as generateText throws it itself
                signals = self._raised(a.output_error, lim.deadline_s is not None, extra)
                notes.append(f"the run returned, and reading result.output threw {a.output_error.name}: mapped as "
                             "raised")
                return SegmentResult(signals=signals.model_copy(update={"finish_reason": a.finish_reason,
                                                                        "final_text": a.text or None}),
                                     notes=notes, **common)
            # a stop condition ended the loop on a tool step: the limit is what ended it (inferred below); the
            # output the SDK could not give is kept in extra
        return self._returned(a, extra, notes, common, could_go_on=could_go_on, steps_ran=a.step_count,
                              step_limit=step_limit, limit_native=str(limits["max_model_calls"].native))


class VercelToolLoopAgent(VercelAIAdapter):
    variant = "tool-loop-agent"
    about = "ToolLoopAgent.generate() with the agent's own defaults where the scenario sets none"
    default_stop_key = "ToolLoopAgent_stopWhen"
    driver_api = "ToolLoopAgent"
    mechanism_table = {**VercelAIAdapter.mechanism_table, "delegate": DELEGATE_TOOL_LOOP_AGENT,
                       **_cancel_mechanisms("ToolLoopAgent"), **_output_mechanisms("ToolLoopAgent", "anthropic")}


class VercelStreamText(VercelAIAdapter):
    variant = "stream-text"
    about = ("streamText with the SDK's defaults, its fullStream read to the end, Claude through @ai-sdk/anthropic; "
             "stopWhen/timeout/toolApproval from the scenario")
    default_stop_key = "streamText_stopWhen"
    driver_api = "streamText"
    capabilities = VercelAIAdapter.capabilities.model_copy(update={"stream_of": "default"})
    mechanism_table = {**VercelAIAdapter.mechanism_table, **_cancel_mechanisms("streamText"),
                       **_output_mechanisms("streamText", "anthropic")}


class VercelToolLoopAgentStream(VercelAIAdapter):
    variant = "tool-loop-agent-stream"
    about = "ToolLoopAgent.stream() read to the end, with the agent's own defaults where the scenario sets none"
    default_stop_key = "ToolLoopAgent_stopWhen"
    driver_api = "ToolLoopAgent.stream"
    capabilities = VercelAIAdapter.capabilities.model_copy(update={"stream_of": "tool-loop-agent"})
    mechanism_table = {**VercelAIAdapter.mechanism_table, "delegate": DELEGATE_TOOL_LOOP_AGENT,
                       **_cancel_mechanisms("ToolLoopAgent.stream"),
                       **_output_mechanisms("ToolLoopAgent.stream", "anthropic")}


class VercelOpenAICompatible(VercelAIAdapter):
    variant = "openai-compatible"
    about = ("generateText with the SDK's defaults, Claude through @ai-sdk/openai's Chat Completions model at an "
             "OpenAI-compatible endpoint")
    model_class = "@ai-sdk/openai createOpenAI(...).chat (an OpenAI-compatible endpoint)"
    driver_provider = "openai-chat"
    mechanism_table = {**VercelAIAdapter.mechanism_table, **_output_mechanisms("generateText", "openai-chat")}
    capabilities = VercelAIAdapter.capabilities.model_copy(update={"notes": (
        *STOP_NOTES,
        "retries: maxRetries 2 (2 s, then 4 s): the OpenAI-style 429 carries no retry hint; x-should-retry is not "
        "read (probes/retry_headers.mjs)")})


# the framework's other idioms, in the order runs and reports show them
VercelAIAdapter.variant_classes = (VercelToolLoopAgent, VercelStreamText, VercelToolLoopAgentStream,
                                   VercelOpenAICompatible)


# ---- the guarded variant: loopbench.guard through the SDK's hooks, served to the driver over HTTP
GUARD_LACKS: dict[Hook, str] = {
    "sub_agent": "an approval inside a sub-agent cannot pause the run: the SDK's docs rule out approvals in "
                 "subagent tools (ai/docs/03-agents/06-subagents.mdx \"No Tool Approvals in Subagents\"); the "
                 "child's generateText returns inside the parent's tool execute with its approval request "
                 "unanswered, and a running execute has no way to pause the parent's loop (toolApproval is decided "
                 "before execute). The child's other stops do reach the parent",
}


class VercelAIGuarded(VercelAIAdapter):
    """The default (generateText, Claude through @ai-sdk/anthropic, the same native limits) with loopbench.guard
    installed by the driver (adapters/vercel/driver.mjs `guardHooks`) through the SDK's own extension points; the
    guard runs in this process (loopbench/guard/service.py), each hook one POST (adapters/node/protocol.mjs
    `guardClient`):

    - `prepareStep` (awaited before each step's model call; what it throws ends generateText with it,
      generate-text.ts:1048, 1826-1838) reserves the call: `beforeModelCall`, whose refusal (a call, token or cost
      cap, the deadline) is thrown, so the run ends raised on the guard's stop;
    - `onLanguageModelCallEnd({usage})`, called once per step as the response is parsed, before the step's tools
      run (generate-text.ts:1309-1355), settles it with the response's usage; `onStepError` (the provider call
      threw, was aborted or timed out) settles it as failed. The SDK's retries of a request are inside one step:
      the guard counts the step's call once, as a capability around the request counts it;
    - each tool's `execute` (the driver's code): `beforeToolCall` (approval bound to the exact call, a rejected
      effect, a blind repeat of a write of unknown outcome -> `Not run: ...` as the result, a write already run
      under that call id -> its recorded result, no model call left to read the result), then the ledger call, then
      `afterToolCall` (the stall check; the result handed to the model bounded), `toolFailed` (fatal or not) or
      `toolTimedOut`. Whatever execute throws becomes a tool-error part (execute-tool-call.ts:163-192), so a stop
      raised there is kept and the next step's `prepareStep` throws it before the model is asked; when a stop
      condition (isStepCount, hasToolCall) ends the loop at that very step, generateText returns and the driver
      raises the stop after it, as a caller checks its guard;
    - approval: the SDK's own `toolApproval` (as the default) pauses the tools that need it; the adapter tells the
      guard the resume's decisions (adapters/node/adapter.py `_guarded`);
    - the deadline: an AbortController aborted when `remaining()` runs out (the guard records its `wall_s` stop
      first), merged with the caller's cancel into the call's `abortSignal`, which the SDK hands to every model
      request and tool execute and on to a child's loop; the native `timeout` stays as the default sets it;
    - sub-agents: each child run gets the same hooks under the child's name (the guard's `child()`, sharing the
      task's allowance); the delegation tool is a tool call of the parent's, and a child's stop, or its loop
      throwing (its model failing past the SDK's retries: a definitive failure of the delegation), ends the
      parent's run the same way.
    """

    variant = "guarded"
    guarded_mode = True
    about = ("the default with loopbench.guard installed through the SDK's hooks: prepareStep, onLanguageModelCallEnd "
             "/ onStepError, each tool's execute, toolApproval and an abortSignal, on the main agent and each "
             "sub-agent; native limits as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = GUARD_LACKS
    capabilities = VercelAIAdapter.capabilities.model_copy(update={"guard_of": "default", "guard_lacks": GUARD_LACKS})
    # the driver's words where the guard changes the default's mechanism (driver.mjs GUARD_MECHANISMS)
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **VercelAIAdapter.mechanism_table,
        "approval_pause": "toolApproval: {<tool>: fn} returning 'user-approval' -> tool-approval-request parts; "
                          "messages (prompt + responseMessages) saved; a tool-approval-response appended on resume, "
                          "the decisions also told to the guard (guard.decide), whose check in the tool's execute "
                          "admits exactly the approved call once",
        "reject": "tool-approval-response {approved: false, reason} on resume (the model sees execution-denied), told "
                  "to the guard too: the rejected effect is refused in any tool's execute afterwards (the guard's "
                  "denied stop)",
        "tool_error_recoverable": "tool execute tells the guard (toolFailed, not fatal) and throws an Error (the "
                                  "SDK's tool-error part: the model gets the error; the guard's stall check bounds "
                                  "identical retries)",
        "tool_error_fatal": "tool execute tells the guard (toolFailed, fatal): its `failed` stop is thrown by the next "
                            "step's prepareStep, so generateText throws it before the model reads the error",
    }


VercelAIAdapter.variant_classes = (*VercelAIAdapter.variant_classes, VercelAIGuarded)
