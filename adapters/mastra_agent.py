"""Mastra adapter (`mastra`): a Python adapter driving one long-lived Node program per worker.

Mastra (`@mastra/core`) is Node-only, so every segment is a request to `adapters/mastra/driver.mjs` (protocol
in adapters/mastra/README.md), run on the Node binary the locked `node` package installs
(`adapters/mastra/node_modules/.bin/node`: @mastra/core 1.x declares `node >= 22.13`, the machines have Node 20),
from the locked `package-lock.json`, over loopbench's Node line protocol (adapters/node/README.md). The process,
the requests and what every npm framework reads the same way are adapters/node/ (`NodeAdapter`): one driver per
worker, started in `warm`, restarted after a crash. This module holds what is Mastra's: the prepare, its answer's
fields, its words, and mapping its counters and limits.

Translation (the `default` variant keeps every other Mastra default; the docs shipped in the package,
node_modules/@mastra/core/dist/docs/references/, are cited by file):
- model: the scenario's Claude through the model router's own route for it, `anthropic/<model>` (Mastra's model
  docs, mastra.ai/models/providers/anthropic: "provider/model-name"; the router's models.dev gateway builds it
  with @ai-sdk/anthropic: Anthropic Messages), as the config `{id: 'anthropic/<model>', apiKey: <run key>}`. Its
  base URL is the provider's variable ANTHROPIC_BASE_URL=<server>/v1, set in the driver's environment as an
  application's environment sets it: the router's `url` field cannot carry it, because a config with a `url` is
  always built as an OpenAI-compatible model whatever its provider prefix (`{id: 'anthropic/...', url}` sends
  Chat Completions to `<url>/chat/completions`), while without one the router passes @ai-sdk/anthropic no
  baseURL (the registry's `anthropic` entry has no url) and the provider reads ANTHROPIC_BASE_URL itself, default
  https://api.anthropic.com/v1 (adapters/mastra/probes/anthropic_base_url.mjs, with the source it cites). The
  route the adapter took before, the router's config for an OpenAI-compatible endpoint `{id: 'openai/<model>',
  url: <server>/v1, apiKey}` (llm/model/shared.types.d.ts `OpenAICompatibleConfig`; Chat Completions through
  @ai-sdk/openai-compatible), is the variant `openai-compatible`;
- agent: `new Agent({id, name, instructions, model, tools})` registered on a `new Mastra({agents, storage})`
  whose storage is `LibSQLStore({url: 'file:<task_dir>/mastra.db'})` (@mastra/libsql), whatever the scenario: ONE
  live store per business task, as docs-agents-human-in-the-loop.md ("Resuming after a restart") asks for a
  persistent storage provider; every segment of the task opens it. Mastra creates a store's tables lazily, on its
  first use, which would fall inside the run and its deadline, so `mastra.getStorage().init()` (Mastra's own init,
  the one its workers call at start-up) runs first, as an application has its store ready before it serves a
  request. All of that — the tools, the Agent, the Mastra instance, opening the store and its init — is what an
  application builds once before it calls generate/stream, so it is `prepare` (`Adapter.prepare`: the worker calls
  it before the segment's clock and records its time as `segments[].prepare_s`): a `prepare` request makes the
  driver build it and keep it under a key; the segment's `run` / `resume` request names the key, uses that instance
  and releases it (the store closed) when it ends. The driver keeps at most a few unused prepared instances
  (`PREPARED_KEEP`), closing the oldest, so a prepare whose segment never comes does not hold a store forever.
  Building it with a fresh database took 0.02-0.17 s of `prepare_s` (median 0.04 s alone, 0.10 s beside a CPU hog
  of one busy process per core), time that is now neither in the segment's elapsed time nor in the run's
  deadline (inside the segment it had taken 0.07-0.57 s on a loaded machine, docs/decisions.md). A segment the
  adapter did not prepare (`run` without `prepare`, or the preparing driver has died since) builds the instance
  inside its request and says so (`extra.setup_s`; a note when a prepare was lost);
- tools: `createTool({id, description, inputSchema: z.fromJSONSchema(<scenario schema>), execute})` (Standard
  JSON Schema input, reference-tools-create-tool.md); `execute` POSTs to the ledger with the scripted call id and
  the tool's abortSignal; a ledger error (recoverable, fatal or a timeout) throws, so Mastra's own tool-error path
  applies: the model gets the error as the tool's result (the driver reports this for both tool-error intents);
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
- sub-agents (`scenario.agents`): Mastra's supervisor agents (docs: agents given to an agent), `new Agent({...,
  agents: {<child id>: new Agent({id, name, description, instructions, model, tools})}})`, each child registered on
  the Mastra instance too (the task's storage, for a resume); Mastra offers the model each child as a tool
  `agent-<child id>` ({prompt} plus optional threadId, resourceId, instructions, maxSteps..., which a strict
  route lists as required and nullable: the server leaves them null) running the child's own generate/stream on
  the prompt, with the parent's messages as context. The main agent gets `instructions: scenario.instructions`
  (a scenario without agents keeps 'You are a helpful assistant.'). The parent's options (maxSteps, hooks,
  prepareStep, onStepFinish) are the parent's: the child runs under its own default `stepCountIs(5)` unless the
  model passes maxSteps. Measured (every variant): `totalUsage` is the parent's only (subagent_usage: 2000/200 of
  4000/400 served; the tool's result carries no usage, so `extra.subagent_runs` has null tokens); runaway:
  research 5 + main 2 requests against the task's 8, the parent answers (incomplete); an approval inside the child
  suspends the parent on its delegation call, the child's call nested in its suspendPayload (generate) or in the
  child's forwarded tool-output chunk (stream): the driver reports the child's call as pending and resumes it with
  approveToolCall*({runId, toolCallId: <the delegation's>}), which continues the child (lookup_refund not re-run;
  subagent_approval conforms); a child's tool error goes to the child, which answers (incomplete).
  adapters/mastra/probes/subagent_usage.mjs shows the three against the raw SDK;
- the deny intent (`policy.deny`): both use the documented `hooks.beforeToolCall` returning `{proceed: false,
  output}` (docs-agents-tools.md: the tool does not run, the model gets `output` as its result); "continue"
  -> that alone; "stop" -> plus a `stopWhen` predicate true on a step that called a denied tool. A stopWhen
  without maxSteps replaces the default stepCountIs(5), so with no scenario limit the default is restated as
  `maxSteps` (read from the source);
- tool_choice: `prepareStep` returning `{toolChoice}` for the step a turn answers, chosen from the stored
  messages prepareStep gets (MastraDBMessage parts, not AI SDK model messages); for 'none' Mastra's
  `prepareToolsAndToolChoice` sends no tools at all, which the judge takes as `none` in effect.
- the caller's cancel: the driver holds the ledger's cancel URL open (the request's `cancel_url`) and, when told,
  aborts an AbortController whose signal generate/stream got as `abortSignal`, with `onAbort({steps, text})`
  (reference-agents-generate.md); Mastra hands the signal to each tool's execute context, which passes it to its
  ledger request (docs-agents-tools.md's fetch does the same). Measured (adapters/mastra/probes/abort_in_tool.mjs):
  during a model request Mastra returns (it does not throw) with finishReason 'aborted' and calls onAbort with the
  finished steps (stream: an `abort` chunk too): ended="cancelled", terminal_reason "onAbort" ("onAbort + abort
  part"), the steps' usage reported. During a tool call the run stops at once but returns a normal result
  (finishReason 'tool-calls', no onAbort, no abort chunk, no error): nothing Mastra returned says cancelled, so it
  is mapped as it returned (incomplete), with a note, and nothing is kept for a resume;
- resume after the cancel: the snapshot keeps the prompt plus onAbort's steps' `response.messages` (`cancel.json`),
  sent as the messages of a new generate/stream call (a new process; no Memory is configured: @mastra/memory is
  not in the lock). Those steps hold the finished call and its result among their parts, but their response
  messages hold an empty tool message, and Mastra drops the call without a result, so the continuation starts
  from the prompt alone and repeats the finished tool (the probe; not in the suite: its cancel_then_resume cancels
  during a tool, where Mastra keeps nothing).
- structured answers (a scenario's `output`; a request without one is sent as before): the generate/stream option
  docs-agents-structured-output.md shows, `structuredOutput: {schema}` with a zod schema (a `z.strictObject` of the
  fields, an enum as `z.enum`, the check a `.refine(fn, {message})` on its field: adapters/node/protocol.mjs
  `outputZod`), every other key at its default, read as `result.object` (final_output; `text` its JSON). Without a
  `model` Mastra runs it in its "direct" mode (agent chunk agent-BOxKOk3n.js:26044: `structuredOutput?.model ?
  "processor" : "direct"`): the schema is the model call's `responseFormat` (agent-BOxKOk3n.js:26045-26049, 26129),
  which the Anthropic route sends as `output_config.format {type: 'json_schema'}` and the OpenAI-compatible one as
  `response_format` json_schema with strict: true (the server's log: output_constrained on both), and the step's
  text is validated when it finishes (trip-wire-BdvkIm0C.js:3479-3560, `createObjectStreamTransformer`); a failure
  under the default errorStrategy 'strict' is an `error` chunk (handleValidationError, :3543-3556) that rejects the
  output's promises (:4551-4563), so generate() and getFullOutput() throw a MastraError
  STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED (domain AGENT, category SYSTEM, the ZodError its cause: :3240-3250).
  That id is one Mastra itself counts as a structured-output format error (`isStructuredOutputFormatError`, :93-95),
  so the adapter maps it to failure="model" (its category says nothing of a model). No retry in direct mode:
  `maxProcessorRetries` re-asks only the processor mode's structuring agent (agent-BOxKOk3n.js:28791-28794,
  28842). Measured on every variant: output_check_rejects and output_never_valid raise after 2 requests (the read and
  one answer), the correction never asked, every counter null as for any throw (the error carries no steps; the 2
  steps onStepFinish saw, the second with finishReason 'error', stay in extra); output_invalid_then_valid completes
  in 2 (the strict schema kept the broken answer from coming). The processor mode (a `structuredOutput.model`:
  a structuring agent) with `maxProcessorRetries` does correct, but re-asks the MAIN agent without its earlier answer
  (the feedback as a "[Processor Feedback]" block in the system prompt), then structures afresh in a new call with
  no history; a retry budget spent returns finishReason 'tripwire' with no object and no error
  (adapters/mastra/probes/output_invalid.mjs). It is no variant: the scripted server counts attempts by the
  answers sent back, which that mode never sends, and its structuring calls carry no instructions of the agent's;
Variant `stream`: `agent.stream()` reading `fullStream` (its `tool-call-approval` chunks are the pending calls)
and `getFullOutput()`; resume with `approveToolCall` / `declineToolCall({runId, toolCallId})`: the idiom the
human-in-the-loop page's quickstart shows; its model is the default's. Chosen over a workflow variant because
Mastra's workflow HITL (docs-workflows-human-in-the-loop.md) suspends developer-written steps with `suspend()`,
not the model's tool calls, so it cannot carry the suite's intents (a model-chosen call paused, denied, rejected)
without writing the agent loop by hand.
Variant `openai-compatible`: `agent.generate()` as the default, the model through `{id: 'openai/<model>', url,
apiKey}` (mastra.ai/models, "custom OpenAI-compatible endpoints"): a user reaching Claude through an
OpenAI-compatible gateway. It sends the same model id (the `openai/` prefix is the router's, stripped).

Signal mapping (no scenario knowledge):
- thrown: a `MastraTimeoutError` (or a TimeoutError in its chain) with a deadline set -> limit="deadline"
  (raised); model/API errors (AI_APICallError, AI_RetryError, ... as the vendored AI SDK names them, or a
  MastraError of category THIRD_PARTY / domain LLM) and a structured answer that failed (a MastraError
  STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED / _OBJECT_UNDEFINED / _TRUNCATED, the ids Mastra's
  `isStructuredOutputFormatError` names) -> failure="model"; anything else -> failure="other";
- `finishReason: 'suspended'` with suspended tool calls -> ended="paused" with the pending calls;
- a result that carries `error` (Mastra returned instead of throwing) is reported as raised, with the same
  mapping, and marked `extra.error_returned` (the framework's own error, not an invented one);
- a deny stop has no flag: the adapter infers it (denied=True, `extra.denied_signal = "inferred"`) only with the
  stop intent, when the loop ended after a step whose tool calls all had an output and that called a denied
  tool named in the stopWhen; a step limit has no flag either: inferred (limit="steps", limit_signal="inferred")
  when the last step still had tool calls, every one of them with an output, nothing is pending, and the step
  count of this call equals the maxSteps set (or the default read from the source) — the rules of vercel_ai.py;
- counters: model_requests_reported = `result.steps.length`: Mastra's result holds one step per model response
  (each step is one model call and the tools it triggered); runtime_steps the same steps (unit "step"); tokens =
  `result.totalUsage`; tool calls requested = tool calls over the steps plus the calls pending at a pause. A
  resumed run's result holds the steps and usage of the whole run (the pre-pause steps come back from the
  snapshot), so the counters are marked cumulative. The suspended step is in no result's steps until the resume,
  while the pause itself reports that response (finishReason 'suspended' with the model's calls in
  suspendPayload / the tool-call-approval chunks): a paused segment counts its steps plus that one response (as
  tool_calls_requested counts its pending calls), and the resumed result then holds it among its steps. A run
  that threw returns no result: Mastra gives only the error (a MastraTimeoutError, an AI_APICallError, a
  MastraError), which carries no steps and no usage, so every count is null there. The steps the driver's
  onStepFinish callback saw before the throw stay in `extra.steps`: they are no count of model calls either (a
  model call that failed finishes a step with finishReason 'error', model_transient_error: 1 request, 1 step; a
  step the deadline cut finishes none, deadline_slow_tool: 1 response, 0 steps). A result that carries an error
  is mapped like a throw and its model-request count is null too: its steps are the responses before the error,
  not the run's calls.
  Tokens: both Anthropic routes report them (Anthropic Messages sends usage in the plain answer and in a stream's
  message_start/message_delta). The router's OpenAI-compatible config reports them for generate() only: it builds
  the model with `createOpenAICompatible(...)` and no `includeUsage` (`ModelRouterLanguageModel.
  resolveLanguageModel`), so a streaming request carries no `stream_options.include_usage`, an OpenAI server sends
  no usage chunk and `totalUsage` has input/output tokens undefined (adapters/mastra/probes/stream_no_usage.mjs).
  No variant streams over that route now; the finding is kept with its probe.
- retries: Mastra's own default, which is none: the loop retries `modelSettings?.maxRetries ?? 2` times, but the
  agent fills `modelSettings.maxRetries` from its own `maxRetries`, `config.maxRetries ?? 0` (agent chunk,
  `Agent` constructor and the loop's `resolvedModelSettings`), so a 429 or 500 ends the run on its first
  answer (adapters/mastra/probes/no_default_retry.mjs: 1 request, AI_APICallError), on either route.
- step limit on a resume: `maxSteps` counts the steps of each call, and a resume is a new call, so the resumed
  run gets the whole allowance again (resume_keeps_allowance); the inference compares the steps this call ran
  (its onStepFinish callbacks) with the bound, and the record keeps `result.steps` (the whole run) apart.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters.node.adapter import NodeAdapter
from loopbench.adapters.node.driver import NodeDriver, Reply
from loopbench.adapters.node.home import NodeHome
from loopbench.adapters.node.protocol import (
    DriverError,
    ErrorAnswer,
    Hello,
    PrepareAnswer,
    PrepareRequest,
    SegmentAnswer,
    SegmentRequest,
    StepCalls,
    SubagentRun,
    Thrown,
    Wire,
)
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Capabilities, Intent, NodeProject, RunContext
from loopbench.harness.models import Provider
from loopbench.harness.record import LimitTranslation, NativeSignals, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario

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
    files=("driver.mjs", "protocol.mjs", "package.json", "package-lock.json"),
    dir_env="LOOPBENCH_MASTRA_NODE_DIR",
    marker="@mastra/core",
    cache_prefix="mastra-driver",
    needs="the Mastra driver (the npm packages @mastra/core, @mastra/libsql and node@22 from the shipped "
          "package-lock.json)",
)

# a ledger error is thrown from the tool's execute: Mastra hands the model the error as the tool's result (the driver
# reports the same words for the two tool-error intents)
TOOL_ERROR_THROWN = "createTool execute throws an Error (Mastra's tool-error path: the model gets the error)"
# the caller's cancel and continuing after it (the driver's words: adapters/mastra/driver.mjs CANCEL_WORDS)
CANCEL_WORDS = ("AbortController whose signal is the call's abortSignal, with onAbort({steps, text}), aborted on the "
                "caller's cancel (reference-agents-generate.md: options.abortSignal, options.onAbort); Mastra hands "
                "the signal to every tool's execute context (passed on to the tool's ledger request, as "
                "docs-agents-tools.md's fetch does)")
RESUME_WORDS = ("the prompt plus the response messages of the steps onAbort gave (cancel.json), passed as the "
                "messages of a new call in a new process (reference-agents-generate.md: messages may be an array)")
# the structured answer (the driver's words: adapters/mastra/driver.mjs OUTPUT_WORDS, OUTPUT_CHECK_WORDS)
def _output_words(api: str) -> str:
    return (f"agent.{api}(prompt, {{..., structuredOutput: {{schema}}}}) -> result.object (Mastra's direct mode: no "
            "structuring model; the schema as the model call's responseFormat; errorStrategy default 'strict': a "
            "failing answer ends the run with an error, no retry)")


# the errors Mastra itself counts as a structured answer's format failure (trip-wire chunk,
# `isStructuredOutputFormatError`: the AI SDK's JSONParseError / NoObjectGeneratedError / TypeValidationError, and its
# own MastraError ids below): the model's answer failed, though a MastraError of domain AGENT, category SYSTEM says
# nothing of a model
STRUCTURED_OUTPUT_ERROR_IDS = frozenset({
    "STRUCTURED_OUTPUT_OBJECT_UNDEFINED", "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED", "STRUCTURED_OUTPUT_TRUNCATED"})
STRUCTURED_OUTPUT_ERROR_NAMES = frozenset({"AI_JSONParseError", "AI_NoObjectGeneratedError", "AI_TypeValidationError"})
OUTPUT_CHECK_WORDS = ("a zod .refine(v => pattern.test(v), {message}) on the field, applied by Mastra's validation of "
                      "the final text (direct mode, errorStrategy 'strict': an error, no retry)")
# the model router's route for a Claude model, as Mastra's model docs name it ("provider/model-name", resolved by the
# router's models.dev gateway to the AI SDK's Anthropic provider)
ANTHROPIC_ROUTE = ("Mastra model router: anthropic/<model> (@ai-sdk/anthropic, Anthropic Messages; base URL from "
                   "ANTHROPIC_BASE_URL)")
STEP_NOTES = ("a step limit returns normally: the adapter infers it from the last step",
              "a deny stop (stopWhen) returns normally too: the adapter infers it from the denied call",
              "the Mastra instance always has the task's LibSQLStore, opened and initialised in prepare, before the "
              "segment's clock")


# ---- Mastra's fields of the Node protocol (adapters/node/protocol.py holds the shared ones)
class MastraDefaults(Wire):
    """Mastra's own defaults, read from the installed source (None when not found)."""

    stopWhen: str | None  # the loop's stop condition when neither maxSteps nor stopWhen is given
    maxSteps: int | None
    agent_maxRetries: int | None
    loop_retries_fallback: int | None
    retry_min_timeout_ms: float | None
    retry_factor: float | None


class MastraHello(Hello):
    defaults: MastraDefaults
    prepared_keep: int  # unused prepared instances the driver holds at most


class Resumed(Wire):
    call_id: str
    decision: str


class MastraSubagentRun(SubagentRun):
    """A child's run as the delegation tool's result in the parent's steps reported it (Mastra's subagent output)."""

    is_error: bool | None


class MastraAnswer(SegmentAnswer):
    resumed: list[Resumed]  # the decisions a resume applied, in the order of the pending calls
    prepared: str | None  # the prepared instance it used
    setup_ms: float | None = None  # only when no key was named: the instance built inside the request
    pending_before_resume: int | None = None
    result_error: Thrown | None = None  # an error Mastra returned on the result instead of throwing
    run_id: str | None = None
    result_steps: list[StepCalls] | None = None  # result.steps (on a resume, the whole run's)
    subagent_runs: list[MastraSubagentRun] = []  # each delegation tool's result: the child's own finish and usage
    continued_after_cancel: bool = False  # a resume that continued a cancelled run from the messages it kept


@dataclass(frozen=True)
class Prepared:
    """What `prepare` left on the adapter instance for the segment's request."""

    key: str
    driver_pid: int
    store_existed: bool  # whether the task's mastra.db was there before the prepare opened it (a resume needs it)


def _capabilities(resume: str) -> Capabilities:
    """What every Mastra idiom can do; `resume` names the calls its pause is resumed with."""
    return Capabilities(
        native_limits=frozenset({"max_model_calls", "deadline_s"}),
        step_unit="step (one model call plus the tool executions it triggers)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="hooks.beforeToolCall returning {proceed: false, output}; the stop intent adds a stopWhen on the "
             "step that called the denied tool",
        # no retry by default: the Agent's maxRetries defaults to 0 and fills modelSettings.maxRetries
        # (adapters/mastra/probes/no_default_retry.mjs)
        retry_window_s=0.0,
        notes=(*STEP_NOTES, f"the pause lives in the task's LibSQL store; a resume is {resume} on its run id"),
    )


class MastraAdapter(NodeAdapter):
    id = "mastra"
    distribution = "@mastra/core"  # an npm package: versions come from adapters/mastra/node_modules
    display_name = "Mastra"
    claim_prefix = "MA"
    model_class: ClassVar[str | None] = ANTHROPIC_ROUTE
    model_provider: ClassVar[Provider | None] = "anthropic"
    package_index = "npm"
    extra = None
    packages = ("@mastra/libsql", "@mastra/schema-compat", "zod", "node")
    node_project = NodeProject(HOME.shipped, HOME.files, HOME.dir_env, runtime="node")
    # held to the release's day by the version matrix: the storage provider and zod of its time
    companions = ("@mastra/libsql", "zod")
    plain_script = "mastra.mjs"  # run by the locked Node beside the locked node_modules (`plain_command`)
    min_version = MIN_CORE
    about = ("agent.generate() with Mastra's defaults, the scenario's Claude through the model router's "
             "anthropic/<model>; maxSteps/timeout/requireApproval/hooks from the scenario")
    capabilities = _capabilities("approveToolCallGenerate/declineToolCallGenerate")
    mechanism_table = {
        "cancel": f"agent.generate(prompt, {{..., abortSignal, onAbort}}): {CANCEL_WORDS}",
        "resume_after_cancel": f"agent.generate(messages, {{...}}): {RESUME_WORDS}",
        "delegate": "new Agent({..., agents: {<child id>: new Agent({instructions, tools})}}): Mastra offers each "
                    "child as a tool agent-<child id> running the child's own generate/stream on the prompt (the "
                    "supervisor-agent docs)",
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
        "tool_error_recoverable": TOOL_ERROR_THROWN,
        "tool_error_fatal": TOOL_ERROR_THROWN,
        "structured_output": _output_words("generate"),
        "output_check": OUTPUT_CHECK_WORDS,
    }

    # ---- Mastra's side of the protocol (versions, the driver, the requests: NodeAdapter)
    npm_label = "`@mastra/core`"
    driver_label = "mastra driver"
    hello_model = MastraHello
    answer_model = MastraAnswer
    deadline_errors = frozenset({"MastraTimeoutError", "TimeoutError"})
    steps_ran_words = "the steps this call ran (onStepFinish)"
    tool_calls_step_words = "a step with tool calls"

    @classmethod
    def node_home(cls) -> NodeHome:
        return HOME

    def _raised(self, thrown: Thrown, deadline_set: bool, extra: dict[str, Any]) -> NativeSignals:
        signals = super()._raised(thrown, deadline_set, extra)
        output_failed = any(c.id in STRUCTURED_OUTPUT_ERROR_IDS or c.name in STRUCTURED_OUTPUT_ERROR_NAMES
                            for c in thrown.chain())
        if signals.failure == "other" and output_failed:
            return signals.model_copy(update={"failure": "model"})  # the model's structured answer failed
        return signals

    def _deny_evidence(self, tools: str, stop_tools: str) -> str:
        return f"with a call of {tools} skipped by beforeToolCall and named in the stopWhen"

    def _limit_evidence(self, a: MastraAnswer, steps_ran: int | None) -> str:
        if a.step_count == steps_ran:
            return ""
        return f"; result.steps holds {a.step_count} (the run before the pause too)"

    # ---- running
    _prepared: Prepared | None = None

    async def prepare(self, scenario: Scenario, ctx: RunContext) -> None:
        """The driver builds the segment's Mastra instance — tools, Agent, `new Mastra({agents, storage})` with the
        task's LibSQLStore — and awaits its store's init, before the worker starts the segment's clock."""
        store_existed = (ctx.task_dir / "mastra.db").exists()
        d = self.driver()
        reply = await asyncio.to_thread(d.request, PrepareRequest(**self._setup(scenario, ctx)), PrepareAnswer)
        ready = reply.answer
        if isinstance(ready, ErrorAnswer):
            raise DriverError(f"the Mastra driver refused the prepare request: {ready.error}")
        self._prepared = Prepared(key=ready.prepared, driver_pid=reply.driver_pid, store_existed=store_existed)
        self.prepare_child_cpu_s = ready.cpu_us / 1e6  # the driver is a live child: the worker cannot see its CPU

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        # the live store is the task's, never a copy: it must be there before this segment (a prepare opening the
        # store creates the file, so the prepare says whether it existed)
        existed = self._prepared.store_existed if self._prepared else (ctx.task_dir / "mastra.db").exists()
        if not existed:
            raise FileNotFoundError(f"the task's Mastra storage {ctx.task_dir / 'mastra.db'} is missing")
        return await super().resume(scenario, snapshot, decisions, ctx)

    def _before_request(self, req: SegmentRequest, d: NodeDriver[Any]) -> tuple[SegmentRequest, list[str]]:
        ready, self._prepared = self._prepared, None  # one segment per prepare: the driver releases it after
        if ready is not None and d.alive() and d.pid == ready.driver_pid:
            return req.model_copy(update={"prepared": ready.key}), []
        if ready is not None:
            return req, [f"the Mastra instance prepared in driver pid {ready.driver_pid} is gone with that driver: "
                         f"this segment built its own inside the request (extra.setup_s)"]
        return req, []

    # ---- mapping what the driver reported
    def _segment(self, scenario: Scenario, ctx: RunContext, a: MastraAnswer, reply: Reply[MastraAnswer],
                 hello: MastraHello, notes: list[str]) -> SegmentResult:
        lim = scenario.limits
        defaults = hello.defaults
        deny = a.deny
        limits: dict[str, LimitTranslation] = {}
        if lim.max_model_calls is not None:
            limits["max_model_calls"] = LimitTranslation(neutral=lim.max_model_calls,
                                                         native=f"maxSteps: {lim.max_model_calls}")
        elif deny.stop_tools:
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"maxSteps: {deny.step_bound} (the Mastra default "
                                     f"{defaults.stopWhen}, restated next to the deny stopWhen)")
        else:
            limits["max_model_calls"] = LimitTranslation(
                neutral=None, native=f"maxSteps not set (Mastra default {defaults.stopWhen})")
        if lim.deadline_s is not None:
            limits["deadline_s"] = LimitTranslation(
                neutral=lim.deadline_s, native=f"modelSettings.timeout: {{totalMs: {round(lim.deadline_s * 1000)}}}")
        usage = a.usage
        counters = ReportedCounters(
            model_requests_reported=a.step_count,  # result.steps: one entry per model response
            tool_calls_requested=a.tool_calls_requested,
            runtime_steps=a.step_count, runtime_step_unit="step",
            input_tokens_reported=usage.input_tokens if usage else None,
            output_tokens_reported=usage.output_tokens if usage else None,
            # a resumed run's result holds the whole run's steps and usage; a run continued after a cancel is a new
            # call on the messages kept, whose result holds its own steps only
            cumulative=not a.continued_after_cancel,
        )
        extra: dict[str, Any] = {
            "steps": [s.wire() for s in a.result_steps or a.steps or []],
            "steps_seen_by_onStepFinish": len(a.steps),
            "run_id": a.run_id,
            "driver_pid": reply.driver_pid,
        }
        if a.setup_ms is not None:
            # no prepared instance: the request built it (the store's init included) inside the segment's clock,
            # before the run and its deadline
            extra["setup_s"] = a.setup_ms / 1000
        if a.resumed:
            extra["resumed_calls"] = [r.wire() for r in a.resumed]
            extra["pending_before_resume"] = a.pending_before_resume
        if reply.waited_s > 0.01:
            extra["driver_wait_s"] = reply.waited_s
        if a.denied:
            extra["denied_calls"] = [d.wire() for d in a.denied]
        if a.subagent_runs:  # the children's own results: the run's usage does not hold them
            extra["subagent_runs"] = [r.wire() for r in a.subagent_runs]
        if a.cancel is not None:
            extra["cancel"] = a.cancel.wire()
        common = self._common(a, hello, limits, counters)

        if a.ended == "cancelled":
            return self._cancelled(a, extra, notes, common)
        if a.ended == "raised":
            assert a.thrown is not None
            # it threw: there is no result, so none of its counters (the steps onStepFinish saw stay in extra)
            common["counters"] = counters.model_copy(update=dict(
                model_requests_reported=None, tool_calls_requested=None, input_tokens_reported=None,
                output_tokens_reported=None, runtime_steps=None, cumulative=False))
            return SegmentResult(signals=self._raised(a.thrown, lim.deadline_s is not None, extra), notes=notes,
                                 **common)
        if a.result_error is not None:
            # an error on the result ends the run like a throw: its steps hold the responses before the error, not
            # the call that failed, so they count no model requests of the run
            extra["error_returned"] = True
            common["counters"] = counters.model_copy(update=dict(model_requests_reported=None))
            return SegmentResult(signals=self._raised(a.result_error, lim.deadline_s is not None, extra),
                                 notes=notes, **common)

        if a.ended == "paused":
            # the suspended step is Mastra's report of the response that asked for the pending calls (finishReason
            # 'suspended', its calls in suspendPayload / the tool-call-approval chunks); result.steps holds it only
            # once resumed, so a pause counts it apart, as tool_calls_requested counts its pending calls
            common["counters"] = counters.model_copy(update=dict(
                model_requests_reported=None if a.step_count is None else a.step_count + 1))
            return self._paused(a, ctx, extra, notes, common)

        if a.cancel is not None and a.cancel.aborted:
            # measured, not guessed: an abort while a tool runs ends Mastra's run at once with a normal result
            # (finishReason 'tool-calls', no onAbort, no abort chunk, no error: probes/abort_in_tool.mjs), so
            # nothing the framework returned says it was cancelled: mapped as it returned
            notes.append(f"the caller's cancel aborted the run ({a.cancel.abort_ms} ms before it settled), but Mastra "
                         f"returned a normal result (finishReason {a.finish_reason!r}, onAbort not called): mapped "
                         "as returned")
        last = a.last_step
        could_go_on = last is not None and last.tool_calls > 0 and last.tool_outputs == last.tool_calls
        # Mastra's stop condition counts the steps of this call: a resume's result.steps also holds the steps before
        # the pause, so the steps this call ran (onStepFinish) are compared with the bound
        return self._returned(a, extra, notes, common, could_go_on=could_go_on, steps_ran=len(a.steps),
                              step_limit=deny.step_bound, limit_native=str(limits["max_model_calls"].native))


class MastraStream(MastraAdapter):
    variant = "stream"
    about = ("agent.stream() read to the end (tool-call-approval chunks), resumed with approveToolCall/"
             "declineToolCall; the model as the default's (anthropic/<model>)")
    capabilities = _capabilities("approveToolCall/declineToolCall").model_copy(update={"stream_of": "default"})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **MastraAdapter.mechanism_table,
        "approval_pause": "createTool({requireApproval}) -> a 'tool-call-approval' chunk, the run suspended in the "
                          "Mastra storage (LibSQLStore in the task dir); resumed with agent.approveToolCall/"
                          "declineToolCall({runId, toolCallId})",
        "reject": "agent.declineToolCall({runId, toolCallId}) on resume (the model gets the decline message)",
        "cancel": f"agent.stream(prompt, {{..., abortSignal, onAbort}}): {CANCEL_WORDS}",
        "resume_after_cancel": f"agent.stream(messages, {{...}}): {RESUME_WORDS}",
        "structured_output": _output_words("stream"),
    }


class MastraOpenAICompatible(MastraAdapter):
    """The scenario's Claude behind an OpenAI-compatible endpoint: the route the adapter took before Mastra's own
    Anthropic route was used, kept so the comparison keeps what it shows (docs/decisions.md)."""

    variant = "openai-compatible"
    about = ("agent.generate() as the default, the model through the model router's config for an OpenAI-compatible "
             "endpoint: {id: 'openai/<model>', url, apiKey} (Chat Completions)")
    model_class: ClassVar[str | None] = ("Mastra model router: {id: 'openai/<model>', url, apiKey}, a custom "
                                         "OpenAI-compatible endpoint (@ai-sdk/openai-compatible, Chat Completions)")


# the extension points the policy needs that Mastra lacks, or offers only in part (loopbench/guard/hooks.py)
GUARD_LACKS: dict[Hook, str] = {
    "pause": "requireApproval suspends one call per pause: while approval may be required Mastra runs a step's tool "
             "calls one at a time (generate's toolCallConcurrency defaults to 1) and suspends at the first that needs "
             "it, so parallel calls that need decisions come in successive pauses and a resume's decision for a call "
             "not yet suspended reaches neither Mastra nor the guard; and a finished run's snapshot is deleted from "
             "the storage, so resuming the same pause again throws (AGENT_RESUME_NO_SNAPSHOT_FOUND) before any hook "
             "runs: the guard's recorded-result replay cannot answer it",
}


class MastraGuarded(MastraAdapter):
    """The default (agent.generate(), Claude through the model router's anthropic/<model>, the same native limits:
    maxSteps, modelSettings.timeout, requireApproval, the deny hooks) with loopbench.guard installed by the driver
    (adapters/mastra/driver.mjs, "the guard") through Mastra's documented extension points. The guard runs in this
    process (loopbench/guard/service.py), each hook one POST (adapters/node/protocol.mjs `guardClient`); the binding:

    - an input processor on each Agent (`inputProcessors`, reference-processors-processor-interface.md):
      `processLLMRequest` ("once per provider call", before it is sent) reserves the call: `beforeModelCall`, whose
      refusal (a call, token or cost cap, the deadline) is thrown; the loop rethrows a non-TripWire error of a
      processor (agent chunk: "Error in processLLMRequest processors"), so generate() throws it before the model is
      asked. `processLLMResponse` ("once per completed provider stream", the same per-processor `state`, before the
      step's tools run) settles it with the `finish` chunk's usage, or as failed on an `error` chunk; a call the run
      threw out of (the deadline, an abort) is settled as failed when the run ends;
    - each tool's `execute` (the driver's code): `beforeToolCall` (approval bound to the exact call, a rejected
      effect, a blind repeat of a write of unknown outcome -> `Not run: ...` as the result, a write already run under
      that call id -> its recorded result, no model call left to read the result), then the ledger call, then
      `afterToolCall` (the stall check; the result handed to the model bounded), `toolFailed` (fatal or not, as the
      ledger's answer says) or `toolTimedOut`;
    - the delegation tools Mastra builds for sub-agents (`agent-<child>`): generate()'s documented `hooks`
      (`beforeToolCall` / `afterToolCall`, which wrap every tool, agent tools included; composed with the default's
      deny hook) reserve and settle each delegation as a tool call of the parent's; a child run that threw (its model
      failed, or it stopped on the guard) is a definitive failure of the delegation (`toolFailed`, fatal). Each
      child Agent has the same input processor and tools under its own name (the guard's `child()`: the task's
      allowance, approvals and writes);
    - approval: Mastra's own `requireApproval` (as the default) suspends a call that needs it; the adapter tells the
      guard the resume's decisions (adapters/node/adapter.py `_guarded`), and the guard's check in execute admits
      exactly the approved call once; a rejection is told to the guard too, which refuses the rejected effect
      through any tool afterwards (its `denied` stop);
    - the deadline: an AbortController aborted when `remaining()` runs out (the guard records its `wall_s` stop
      first), merged with the caller's cancel into generate()'s `abortSignal`, which Mastra hands to every model
      request, tool execute and child run; the native `modelSettings.timeout` stays as the default sets it.

    Whatever a tool's execute, or a tool hook, throws is Mastra's tool-error path (the model reads the error), so a
    stop is kept (the first wins) and thrown again by the next hook the run reaches — the next processLLMRequest, in
    the child's run and then the parent's — before the model is asked; a run that returns with a stop kept (the
    stop came in its last allowed step) is reported as raising it, as a caller checks its guard.
    """

    variant = "guarded"
    guarded_mode = True
    about = ("the default with loopbench.guard installed through Mastra's extension points: an input processor "
             "(processLLMRequest / processLLMResponse) on each Agent, each tool's execute, hooks around the "
             "delegation tools, requireApproval and an abortSignal; native limits as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = GUARD_LACKS
    capabilities = MastraAdapter.capabilities.model_copy(update={"guard_of": "default", "guard_lacks": GUARD_LACKS})
    # the driver's words where the guard changes the default's mechanism (driver.mjs GUARD_MECHANISMS)
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **MastraAdapter.mechanism_table,
        "approval_pause": "createTool({requireApproval}) -> finishReason 'suspended' with suspendPayload, the run "
                          "suspended in the Mastra storage (LibSQLStore in the task dir); resumed with "
                          "agent.approveToolCallGenerate/declineToolCallGenerate({runId, toolCallId}), the decisions "
                          "also told to the guard (guard.decide), whose check in the tool's execute admits exactly the "
                          "approved call once",
        "reject": "agent.declineToolCallGenerate({runId, toolCallId}) on resume (the model gets the decline message), "
                  "told to the guard too: the rejected effect is refused in any tool's execute afterwards (the "
                  "guard's denied stop)",
        "tool_error_recoverable": "tool execute tells the guard (toolFailed, not fatal) and throws an Error (Mastra's "
                                  "tool-error path: the model gets the error; the guard's stall check bounds "
                                  "identical retries)",
        "tool_error_fatal": "tool execute tells the guard (toolFailed, fatal): its `failed` stop is kept and thrown by "
                            "the next model call's processLLMRequest, so generate() throws it before the model reads "
                            "the error",
    }


# the framework's other idioms, in the order runs and reports show them
MastraAdapter.variant_classes = (MastraStream, MastraOpenAICompatible, MastraGuarded)
