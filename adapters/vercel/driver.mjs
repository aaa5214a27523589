// loopbench's long-lived driver for the Vercel AI SDK. One process serves many runs.
//
// It speaks loopbench's Node line protocol (../node/README.md), served by `./protocol.mjs` (the shared framing, the
// ledger client and the CPU accounting): a `hello` when ready, then one terminal line per request. This file holds
// only what is the SDK's: importing it, its defaults read from the installed source, and the `run` / `resume` ops.
//
// The adapter (adapters/vercel_ai.py) maps what this driver reports onto loopbench's native signals; this file
// only runs the SDK and reports what it said. It knows nothing about scenarios beyond the request.

import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import {
  agentsPlan, authorize, callTool, causedByAbort, checkRequest, denyPlan, describeError, emit, GuardStop, guardClient,
  HarnessError, ledgerPost, neutralId, outputZod, outputZodWords, packageVersions, pickToolChoice, serve,
  toolChoiceSetting, watchCancel,
} from './protocol.mjs';

const HERE = new URL('.', import.meta.url);

// The SDK's own default stop conditions, read from the installed source (reported, never assumed).
function sdkDefaults() {
  const out = { generateText_stopWhen: null, streamText_stopWhen: null, ToolLoopAgent_stopWhen: null };
  try {
    const src = readFileSync(new URL('node_modules/ai/dist/index.js', HERE), 'utf8');
    const gt = /async function generateTextInternal\(\{[^)]*?stopWhen = (isStepCount\(\d+\))/.exec(src);
    const agent = /stopWhen: this\.settings\.stopWhen \?\? createDefaultStopCondition\((\d+)\)/.exec(src);
    const st = /function streamTextInternal\(\{[^)]*?stopWhen = (isStepCount\(\d+\))/.exec(src);
    if (gt) out.generateText_stopWhen = gt[1];
    if (st) out.streamText_stopWhen = st[1];
    if (agent) out.ToolLoopAgent_stopWhen = `isStepCount(${agent[1]})`;
  } catch {
    // unknown stays null
  }
  return out;
}

// ---- per-request context: SDK warnings are attributed to the run that caused them
const requestContext = new AsyncLocalStorage();
globalThis.AI_SDK_LOG_WARNINGS = (options) => {
  const store = requestContext.getStore();
  const warnings = (options.warnings ?? []).map((w) => ({
    type: w.type, message: w.message ?? w.details ?? null, feature: w.feature ?? w.setting ?? null,
  }));
  if (store) store.warnings.push(...warnings);
  else console.error('AI SDK warning outside a request:', JSON.stringify(warnings));
};

let sdk; // the imported modules, once per process

// the model class a request names: the provider package's factory, as its docs connect a model to an endpoint
const PROVIDERS = {
  // @ai-sdk/anthropic, the SDK's provider for Claude (Anthropic Messages, POST {baseURL}/messages)
  anthropic: {
    text: 'createAnthropic({baseURL, apiKey})(modelId) (Anthropic Messages)',
    model: (req) => sdk.anthropic.createAnthropic({ baseURL: baseUrlV1(req), apiKey: req.api_key })(req.model_id),
  },
  // @ai-sdk/openai's Chat Completions model, as for an OpenAI-compatible endpoint (POST {baseURL}/chat/completions)
  'openai-chat': {
    text: 'createOpenAI({baseURL, apiKey}).chat(modelId) (Chat Completions, an OpenAI-compatible endpoint)',
    model: (req) => sdk.openai.createOpenAI({ baseURL: baseUrlV1(req), apiKey: req.api_key }).chat(req.model_id),
  },
};
// the loop API a request names
const APIS = {
  generateText: 'generateText()', ToolLoopAgent: 'new ToolLoopAgent({...}).generate()',
  streamText: 'streamText() read to the end (fullStream)',
  'ToolLoopAgent.stream': 'new ToolLoopAgent({...}).stream() read to the end (fullStream)',
};
// the streaming entry points: each result's promises (steps, usage, ...) are read after its fullStream ends
const STREAMED = new Set(['streamText', 'ToolLoopAgent.stream']);
const baseUrlV1 = (req) => `${req.base_url.replace(/\/$/, '')}/v1`;

// ---- the structured answer (a request with `output`): the SDK's documented structured output with tools, `output:
// Output.object({schema, name, description})` on generateText / streamText / the ToolLoopAgent's settings, the schema a
// zod object (protocol.mjs outputZod) whose refinement carries the check. Output.object hands the provider a
// responseFormat {type: 'json', schema} (ai/src/generate-text/output.ts:140-156) and parses the final step's text with
// the zod schema: a text that does not parse or match throws NoObjectGeneratedError (output.ts:165-191; generateText
// parses at generate-text.ts:1798-1819, streamText when `output` is read: stream-text.ts:3846-3866). The SDK has no
// retry of its own for it (no option re-asks the model)
const OUTPUT_CALL = {
  generateText: 'generateText({..., output: Output.object({schema, name, description})}) -> result.output',
  ToolLoopAgent: 'new ToolLoopAgent({..., output: Output.object({schema, name, description})}).generate() -> '
    + 'result.output',
  streamText: 'streamText({..., output: Output.object({schema, name, description})}), fullStream read, then '
    + 'await result.output',
  'ToolLoopAgent.stream': 'new ToolLoopAgent({..., output: Output.object({schema, name, description})}).stream(), '
    + 'fullStream read, then await result.output',
};
// what each provider sends for that responseFormat, with its defaults (read in the installed provider sources)
const OUTPUT_WIRE = {
  // @ai-sdk/anthropic (src/anthropic-language-model.ts:605-658, 985-1010): providerOptions.anthropic.
  // structuredOutputMode 'auto' uses native structured output (output_config.format json_schema) when the model's
  // catalog entry says it supports it (claude-sonnet-4-5 does: src/anthropic-model-catalog.ts:215-223), else a
  // forced 'json' tool
  anthropic: {
    setting: "providerOptions.anthropic.structuredOutputMode not set (provider default 'auto': output_config.format "
      + "{type: 'json_schema'} where the model's catalog entry supports native structured output, else a forced "
      + "'json' tool)",
    words: "@ai-sdk/anthropic's structuredOutputMode 'auto' (output_config.format json_schema, or a 'json' tool)",
  },
  // @ai-sdk/openai chat (src/chat/openai-chat-language-model.ts:213, 250-262): response_format json_schema with
  // strict: providerOptions.openai.strictJsonSchema ?? true
  'openai-chat': {
    setting: 'providerOptions.openai.strictJsonSchema not set (provider default true: response_format '
      + "{type: 'json_schema', json_schema: {schema, strict: true, name}})",
    words: "@ai-sdk/openai's response_format json_schema, strict (strictJsonSchema default true)",
  },
};

function validate(req) {
  const problem = checkRequest(req, ['api', 'provider']);
  if (problem) return problem;
  if (!Object.hasOwn(APIS, req.api)) return `unknown api ${JSON.stringify(req.api)} (expected ${Object.keys(APIS).join(' or ')})`;
  if (!Object.hasOwn(PROVIDERS, req.provider)) {
    return `unknown provider ${JSON.stringify(req.provider)} (expected ${Object.keys(PROVIDERS).join(' or ')})`;
  }
  return null;
}

// the scenario's tool_choice for the step about to send `messages` (AI SDK model messages): the tool results of
// the trailing tool messages are the ones the step answers
function toolChoiceFor(rules, messages) {
  const ids = (m) => (m.role === 'tool' && Array.isArray(m.content)
    ? m.content.filter((p) => p.type === 'tool-result' && p.toolCallId).map((p) => neutralId(p.toolCallId)) : []);
  const trailing = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i -= 1) trailing.push(...ids(messages[i]));
  return pickToolChoice(rules, messages.some((m) => ids(m).length > 0), trailing);
}

const TOOL_ERROR_THROWN = "tool execute throws an Error (the SDK's tool-error part: the model gets the error; the "
  + 'loop goes on)';

// ---- the caller's cancel and continuing after it, per loop API (the adapter's mechanism table says the same)
const CANCEL_FILE = 'cancel.json'; // what a cancelled run kept: the conversation to continue from
const ABORT_GENERATE = "AbortController whose signal is the call's abortSignal, aborted on the caller's cancel; the "
  + "SDK hands it to every tool's execute (passed on to the tool's ledger request). The call has no onAbort: it "
  + 'throws the abort, the completed steps are the onStepEnd ones (ai/src/generate-text/generate-text.ts:1833)';
const ABORT_STREAM = "AbortController whose signal is the call's abortSignal, with onAbort({steps}), aborted on the "
  + "caller's cancel; the SDK hands the signal to every tool's execute (passed on to the tool's ledger request); the "
  + "stream ends with an abort part (docs: ai/docs/06-advanced/02-stopping-streams.mdx; stream-text.ts:2101-2126)";
const CANCEL = {
  generateText: `generateText({..., abortSignal}): ${ABORT_GENERATE}`,
  ToolLoopAgent: `agent.generate({..., abortSignal}): ${ABORT_GENERATE}`,
  streamText: `streamText({..., abortSignal, onAbort}): ${ABORT_STREAM}`,
  'ToolLoopAgent.stream': `new ToolLoopAgent({..., onAbort}).stream({..., abortSignal}): ${ABORT_STREAM}`,
};
const CONTINUE = "the prompt plus the completed steps' response.messages kept at the abort (cancel.json), sent as "
  + "`messages` to a new call in a new process, as the docs continue a conversation (ai/docs/03-ai-sdk-core/"
  + '15-tools-and-tool-calling.mdx "Response Messages")';
const RESUME_AFTER_CANCEL = {
  generateText: `generateText({messages}): ${CONTINUE}; the steps are onStepEnd's`,
  ToolLoopAgent: `agent.generate({messages}): ${CONTINUE}; the steps are onStepEnd's`,
  streamText: `streamText({messages}): ${CONTINUE}; the steps are onAbort's`,
  'ToolLoopAgent.stream': `agent.stream({messages}): ${CONTINUE}; the steps are onAbort's`,
};

// a snapshot a cancelled run left (null: an approval pause's)
async function readCancelKept(dir) {
  let text;
  try {
    text = await readFile(`${dir}/${CANCEL_FILE}`, 'utf8');
  } catch {
    return null;
  }
  return JSON.parse(text);
}

// ---- the guard (the `guarded` variant only: a request with `guard_url`). loopbench.guard runs in the adapter's
// Python process; `guardClient(req)` (protocol.mjs) is its HTTP face, each method one hook of the policy. Installed
// through the SDK's own extension points only:
// - before each model call: `prepareStep` (awaited before each step's model call, generate-text.ts:1048; what it
//   throws ends generateText with that error: the step's try rethrows it, generate-text.ts:1826-1838) reserves the
//   call (`beforeModelCall`); a refusal is thrown from it, so the run ends raised on the guard's stop;
// - the response's usage: `onLanguageModelCallEnd({usage})`, called once per step when the response is parsed,
//   before the step's tools run (generate-text.ts:1309-1355), settles the reservation; `onStepError` (a step whose
//   provider call threw, was aborted or timed out: generate-text.ts:1832-1838) settles it as failed;
// - around each tool call: the tools' `execute` (the driver's own code): `beforeToolCall` before the ledger call,
//   `afterToolCall` / `toolFailed` / `toolTimedOut` after it. The SDK turns whatever execute throws into a
//   tool-error part (execute-tool-call.ts:163-192), so a stop raised there is kept and the next step's prepareStep
//   throws it before the model is asked; when a stop condition (isStepCount, hasToolCall) ends the loop at that very
//   step, generateText returns and the driver raises the stop after it, as a caller checks the guard;
// - approval: the SDK's own `toolApproval` pauses the tools that need it, as the default (the guard is told the
//   resume's decisions by the adapter and admits exactly the approved call);
// - the deadline: an AbortController aborted when the guard's `remaining()` runs out, merged into the call's
//   abortSignal (the SDK hands it to every model request and tool execute, and on to a child's loop); the
//   segment's clock starts at the loop's first hook (its first prepareStep, or a resume's approved tool call);
// - sub-agents: each child run gets the same hooks under the child's name (the guard's `child()` for it); the
//   delegation tool is a tool call of the parent's, and a child's stop, or its loop throwing, ends the parent's.
function guardHooks(req, store, guard) {
  let stopped = null; // the task's stop (the first GuardStop), kept for the loop to end on
  const stop = (error) => {
    if (error instanceof GuardStop) stopped ??= error;
    if (error instanceof HarnessError) store.harnessErrors.push(error.message);
    return error;
  };
  // the hooks in the SDK's callbacks must not throw (the SDK ignores what a callback throws: util/notify.ts)
  const quiet = (promise) => promise.catch((error) => { stop(error); });

  // one loop's model hooks: the main agent's run, or one run of a child
  const loop = (agent) => {
    let held = null; // the reservation of the step's model call, until its response (or failure) settles it
    const failed = async () => {
      if (held == null) return;
      const h = held;
      held = null;
      await quiet(guard.modelCallFailed(h, agent));
    };
    return {
      prepareStep: async () => {
        if (stopped) throw stopped;
        await first();
        await failed();
        try {
          held = (await guard.beforeModelCall(agent)).held;
        } catch (error) {
          throw stop(error);
        }
      },
      onLanguageModelCallEnd: async ({ usage }) => {
        if (held == null) return;
        const h = held;
        held = null;
        await quiet(guard.afterModelCall(h, usage, agent));
      },
      onStepError: failed,
      settle: failed, // after the loop: a reservation still open was a call that never settled
    };
  };

  // before a tool runs: the guard's answer, handled; null: run it with the reservation in `held`
  const admit = async (name, input, callId, agent) => {
    await first(); // a resume's approved call runs before the loop's first step
    let answer;
    try {
      answer = await guard.beforeToolCall(name, input, callId, agent);
    } catch (error) {
      throw stop(error);
    }
    if (answer.recorded != null) return { result: answer.recorded }; // this call id already ran: its result
    if (answer.refused != null) return { result: `Not run: ${answer.refused}` }; // the model is told
    if (answer.pause != null) {
      // the guard holds no approval for exactly this call and the SDK's toolApproval let it through (a tool's
      // execute cannot pause the loop): the task stops awaiting approval
      throw stop(new GuardStop({ exit: 'awaiting_approval', reason: `${name} needs approval for exactly this call` }));
    }
    return { held: answer.held };
  };

  // a tool's execute: the guard around the ledger call (protocol.mjs callTool's events, with the error kind kept)
  const toolExecute = (name, agent) => async (input, { toolCallId, abortSignal }) => {
    const callId = neutralId(toolCallId);
    const admitted = await admit(name, input, callId, agent);
    if (admitted.held == null) return admitted.result;
    const { held } = admitted;
    emit(store, 'tool-start', { tool: name, call_id: callId });
    let answer;
    try {
      answer = await ledgerPost(req, 'call', { tool: name, args: input ?? {}, call_id: callId }, abortSignal);
    } catch (error) {
      if (error instanceof HarnessError) store.harnessErrors.push(error.message);
      emit(store, 'tool-end', { tool: name, call_id: callId, ok: false, error: describeError(error).name });
      await quiet(guard.toolTimedOut(held, name, input, agent)); // sent, no answer (cut): a write's outcome unknown
      throw error;
    }
    emit(store, 'tool-end', { tool: name, call_id: callId, ok: answer.ok, error_kind: answer.error_kind ?? null });
    try {
      if (answer.ok) return await guard.afterToolCall(held, name, input, answer.text, callId, agent);
      if (answer.error_kind === 'timeout') await guard.toolTimedOut(held, name, input, agent);
      else await guard.toolFailed(held, name, answer.error_kind === 'fatal', answer.text, agent);
    } catch (error) {
      throw stop(error); // stalled, or a fatal failure: the task's stop
    }
    throw new Error(answer.text); // the SDK's tool-error path: the model gets the error
  };

  // a delegation tool's execute: a tool call of the parent's whose work is the child's loop (`run`)
  const delegateExecute = (name, run) => async (input, options) => {
    const callId = neutralId(options.toolCallId);
    const admitted = await admit(name, input, callId, 'main');
    if (admitted.held == null) return admitted.result;
    const { held } = admitted;
    let text;
    try {
      text = await run(input, options);
    } catch (error) {
      if (stopped || error instanceof GuardStop || options.abortSignal?.aborted) {
        await quiet(guard.toolTimedOut(held, name, input)); // the child was stopped or cut: it counts
        throw stop(stopped ?? error);
      }
      // the child's loop threw (its model failed past the SDK's retries): the delegation failed for good
      try {
        await guard.toolFailed(held, name, true, describeError(error).message);
      } catch (failure) {
        throw stop(failure);
      }
      throw error;
    }
    if (stopped) { // the child's stop condition ended its loop on a step the guard stopped
      await quiet(guard.toolTimedOut(held, name, input));
      throw stopped;
    }
    try {
      return await guard.afterToolCall(held, name, input, text, callId);
    } catch (error) {
      throw stop(error);
    }
  };

  // the deadline: aborted when the guard's wall-clock runs out; the guard records its stop (wall_s) first, as it
  // refuses the model call the loop would make next
  const deadline = new AbortController();
  let timer = null;
  let finished = false;
  const fire = async () => {
    timer = null;
    try {
      const left = await guard.remaining();
      if (finished) return;
      if (left != null && left > 0) {
        timer = setTimeout(fire, Math.ceil(left * 1000));
        return;
      }
      await guard.beforeModelCall('main'); // throws its LimitReached (wall_s): the deadline has passed
    } catch (error) {
      stop(error);
    }
    if (finished) return;
    deadline.abort(new DOMException(`loopbench.guard: ${stopped?.message ?? 'the deadline passed'}`, 'AbortError'));
  };
  // the signal goes into the call before it starts; its timer starts at the loop's first hook, where the segment's
  // clock starts (the SDK's own timeout is already running then: on the same deadline it is the one that fires)
  let deadlineSet = false;
  const arm = async () => {
    deadlineSet = (await guard.remaining()) != null;
    return deadlineSet ? deadline.signal : undefined;
  };
  let clockStarted = false;
  const first = async () => {
    if (clockStarted) return;
    clockStarted = true;
    const left = await guard.startClock();
    if (deadlineSet && left != null && !finished) timer = setTimeout(fire, Math.ceil(left * 1000));
  };
  const disarm = () => {
    finished = true;
    if (timer != null) clearTimeout(timer);
  };

  return { loop, toolExecute, delegateExecute, arm, disarm, stopped: () => stopped };
}

// the mechanisms a guarded request uses where the guard changes the default's (adapters/vercel_ai.py says the same)
const GUARD_MECHANISMS = {
  approval_pause: "toolApproval: {<tool>: fn} returning 'user-approval' -> tool-approval-request parts; messages "
    + '(prompt + responseMessages) saved; a tool-approval-response appended on resume, the decisions also told to '
    + "the guard (guard.decide), whose check in the tool's execute admits exactly the approved call once",
  reject: 'tool-approval-response {approved: false, reason} on resume (the model sees execution-denied), told to the '
    + "guard too: the rejected effect is refused in any tool's execute afterwards (the guard's denied stop)",
  tool_error_recoverable: "tool execute tells the guard (toolFailed, not fatal) and throws an Error (the SDK's "
    + "tool-error part: the model gets the error; the guard's stall check bounds identical retries)",
  tool_error_fatal: "tool execute tells the guard (toolFailed, fatal): its `failed` stop is thrown by the next step's "
    + 'prepareStep, so generateText throws it before the model reads the error',
};

// the settings a guarded request reports
const GUARD_SETTINGS = {
  before_model_call: 'prepareStep: guard.beforeModelCall (a refusal thrown: generateText ends with it)',
  model_usage: 'onLanguageModelCallEnd({usage}): guard.afterModelCall; onStepError: guard.modelCallFailed',
  tools: "each tool's execute: guard.beforeToolCall / afterToolCall / toolFailed / toolTimedOut around the ledger "
    + "call; a stop raised there is thrown by the next step's prepareStep (or after generateText returns)",
  approval: 'toolApproval as the default (the resume\'s decisions also told to the guard)',
  deadline: "AbortController aborted at guard.remaining() (the segment's clock from the loop's first hook), merged "
    + "into the call's abortSignal",
};

// ---- one run segment (a run from the prompt, or a resume from a snapshot)
async function runSegment(req, store) {
  const { generateText, streamText, ToolLoopAgent, Output, hasToolCall, isStepCount, jsonSchema, tool } = sdk.ai;
  // events travel with the terminal line: a line per event cost ~2 ms per run, and a driver that dies loses
  // its in-flight answer either way
  const note = (event, data) => emit(store, event, data);
  const limits = req.limits ?? {};
  // the stop intent: the documented loop control `hasToolCall` ends the loop after the step with the denied call
  const { approvalOf, intent: denyIntent, deniedTools, stopTools } = denyPlan(req);
  // the guarded variant: the task's guard, installed through the SDK's hooks (guardHooks); null: not guarded
  const guard = guardClient(req);
  const g = guard ? guardHooks(req, store, guard) : null;

  // resume: the saved conversation plus one tool message with the decisions, keyed by scripted call id; or, after
  // the caller's cancel, the conversation kept at the abort (cancel.json), continued as the docs continue one
  let messages = null;
  const approvedOnResume = new Set();
  const cancelKept = req.op === 'resume' ? await readCancelKept(req.snapshot) : null;
  if (cancelKept) {
    messages = cancelKept.messages;
  } else if (req.op === 'resume') {
    messages = JSON.parse(await readFile(`${req.snapshot}/messages.json`, 'utf8'));
    const requests = JSON.parse(await readFile(`${req.snapshot}/approvals.json`, 'utf8'));
    const content = [];
    for (const r of requests) {
      const decision = req.decisions[r.call_id];
      if (decision === undefined) continue; // no decision given: no response (documented)
      const approved = decision === 'approve';
      if (approved) approvedOnResume.add(r.tool_call_id);
      content.push({
        type: 'tool-approval-response', approvalId: r.approval_id, approved,
        ...(approved ? {} : { reason: 'rejected by the user' }),
      });
    }
    if (content.length) messages.push({ role: 'tool', content });
  }

  const authorized = (name, input, toolCallId, decision) => authorize(req, store, name, input, neutralId(toolCallId),
    decision);

  const ledgerTool = (spec, agentName = 'main') => tool({
    description: spec.description,
    inputSchema: jsonSchema(spec.parameters),
    // a ledger error is thrown: the SDK's own tool-error path (a tool-error part); guarded: the guard around it
    execute: g ? g.toolExecute(spec.name, agentName)
      : (input, { toolCallId, abortSignal }) => callTool(req, store, spec.name, input, neutralId(toolCallId),
        abortSignal),
  });
  const { mainSpecs, children } = agentsPlan(req);
  const tools = {};
  for (const spec of mainSpecs) tools[spec.name] = ledgerTool(spec);

  // approval policy -> toolApproval; the per-tool function is the SDK's check point: record it there
  const toolApproval = {};
  const approvalSettings = {};
  for (const spec of req.tools) {
    if (approvalOf[spec.name] === 'required') {
      approvalSettings[spec.name] = 'user-approval';
      toolApproval[spec.name] = async (input, { toolCallId }) => {
        const revalidation = approvedOnResume.has(toolCallId);
        await authorized(spec.name, input, toolCallId,
          revalidation ? 'revalidated on resume (approved by the user)' : 'approval required');
        return 'user-approval';
      };
    } else if (approvalOf[spec.name] === 'deny') {
      approvalSettings[spec.name] = 'denied';
      toolApproval[spec.name] = async (input, { toolCallId }) => {
        await authorized(spec.name, input, toolCallId, 'denied by policy');
        return { type: 'denied', reason: 'denied by policy' };
      };
    }
  }

  const model = PROVIDERS[req.provider].model(req);
  const agent = req.api.startsWith('ToolLoopAgent');
  const streamed = STREAMED.has(req.api);
  const settings = { api: APIS[req.api], provider: PROVIDERS[req.provider].text, maxRetries: 'SDK default' };
  // a tool's approval function belongs with the agent whose tool it is
  const approvalOfTools = (specs) => Object.fromEntries(specs.filter((s) => toolApproval[s.name])
    .map((s) => [s.name, toolApproval[s.name]]));
  const mainApproval = approvalOfTools(mainSpecs);

  // sub-agents, as the SDK's subagents docs show: a tool whose execute runs the child's own loop on the task and
  // returns its text. The child has its own instructions, tools and toolApproval, the parent's model and the
  // tool's abortSignal; nothing else of the parent's (stopWhen, prepareStep, callbacks) reaches it
  const subagentRuns = [];
  // guarded: a child's run with its own loop hooks under its name (the guard's child()), settled when it ends
  const guardedChild = async (agentName, start) => {
    const hooks = g.loop(agentName);
    try {
      return await start({ prepareStep: hooks.prepareStep, onLanguageModelCallEnd: hooks.onLanguageModelCallEnd,
        onStepError: hooks.onStepError });
    } finally {
      await hooks.settle();
    }
  };
  const childStop = /isStepCount\((\d+)\)/.exec(sdkDefaults().ToolLoopAgent_stopWhen ?? '');
  if (children.length) {
    settings[agent ? 'instructions' : 'system'] = "the request's instructions (the main agent's)";
    settings.subagents = {};
  }
  for (const child of children) {
    const childTools = Object.fromEntries(child.specs.map((s) => [s.name, ledgerTool(s, child.id)]));
    const childApproval = approvalOfTools(child.specs);
    const childSettings = {
      tool: `tool({description, inputSchema: {task: string}, execute}) named ${child.id}, returning the child's text`,
      toolApproval: Object.keys(childApproval).length ? Object.fromEntries(Object.keys(childApproval)
        .map((n) => [n, approvalSettings[n]])) : 'none',
    };
    let runChild;
    if (agent) {
      // the ToolLoopAgent variants: the child is a ToolLoopAgent with its own defaults (the docs' subagent)
      const subSettings = { model, instructions: child.instructions, tools: childTools,
        ...(Object.keys(childApproval).length ? { toolApproval: childApproval } : {}) };
      const sub = new ToolLoopAgent(subSettings);
      runChild = g ? (task, abortSignal) => guardedChild(child.id, (hooks) => new ToolLoopAgent({ ...subSettings,
        ...hooks }).generate({ prompt: task, abortSignal }))
        : (task, abortSignal) => sub.generate({ prompt: task, abortSignal });
      childSettings.loop = 'new ToolLoopAgent({model, instructions, tools}).generate({prompt: task, abortSignal})';
      childSettings.stopWhen = `not set (ToolLoopAgent default: ${sdkDefaults().ToolLoopAgent_stopWhen ?? 'unknown'})`;
    } else {
      // generateText (the streaming variants too: the tool's execute awaits the child's result) defaults to one
      // step, which would end the child at its first tool call: it gets the step bound of the SDK's own agent
      // loop (ToolLoopAgent's default, read from the installed source), the bound the docs' subagent runs under
      const bound = childStop ? Number(childStop[1]) : null;
      const runOnce = (task, abortSignal, hooks = {}) => generateText({ model, system: child.instructions,
        tools: childTools, ...(Object.keys(childApproval).length ? { toolApproval: childApproval } : {}),
        ...(bound != null ? { stopWhen: isStepCount(bound) } : {}), prompt: task, abortSignal, ...hooks });
      runChild = g ? (task, abortSignal) => guardedChild(child.id, (hooks) => runOnce(task, abortSignal, hooks))
        : (task, abortSignal) => runOnce(task, abortSignal);
      childSettings.loop = 'generateText({model, system: instructions, tools, stopWhen, prompt: task, abortSignal})';
      childSettings.stopWhen = bound != null
        ? `isStepCount(${bound}) (ToolLoopAgent's default, read from the SDK: generateText's own isStepCount(1) `
          + 'would stop the child at its first tool call)'
        : 'not set (the ToolLoopAgent default could not be read)';
    }
    settings.subagents[child.id] = childSettings;
    const delegate = async ({ task }, { toolCallId, abortSignal }) => {
      const r = await runChild(task, abortSignal);
      const last = r.steps.at(-1);
      const childPending = (last?.content ?? []).filter((p) => p.type === 'tool-approval-request' && !p.isAutomatic);
      const run = { agent: child.id, call_id: neutralId(toolCallId), steps: r.steps.length,
        finish_reason: r.finishReason, input_tokens: r.usage?.inputTokens ?? null,
        output_tokens: r.usage?.outputTokens ?? null,
        pending_approvals: childPending.map((p) => neutralId(p.toolCall.toolCallId)) };
      subagentRuns.push(run);
      note('subagent', run);
      return r.text;
    };
    tools[child.id] = tool({
      description: child.description,
      inputSchema: jsonSchema({ type: 'object', properties: { task: { type: 'string', description: 'The task to hand over' } },
        required: ['task'], additionalProperties: false }),
      // guarded: the delegation is a tool call of the parent's, around the child's loop
      execute: g ? g.delegateExecute(child.id, delegate) : delegate,
    });
  }
  const options = {};
  const stopWhen = [];
  const stopText = [];
  let stepBound = null; // the isStepCount the loop runs under
  if (limits.max_model_calls != null) {
    stepBound = limits.max_model_calls;
    stopWhen.push(isStepCount(stepBound));
    stopText.push(`isStepCount(${stepBound})`);
  } else {
    const d = sdkDefaults();
    const dflt = (agent ? d.ToolLoopAgent_stopWhen : streamed ? d.streamText_stopWhen : d.generateText_stopWhen) ?? null;
    if (stopTools.length) {
      // any stopWhen replaces the SDK's default step bound: restate the installed default (read, not assumed)
      const n = /isStepCount\((\d+)\)/.exec(dflt ?? '');
      if (n) {
        stepBound = Number(n[1]);
        stopWhen.push(isStepCount(stepBound));
        stopText.push(`isStepCount(${stepBound}) (the SDK default, restated: a stopWhen replaces it)`);
      }
    } else {
      settings.stopWhen = `not set (SDK default: ${dflt ?? 'unknown'})`;
    }
  }
  if (stopTools.length) {
    stopWhen.push(hasToolCall(...stopTools));
    stopText.push(`hasToolCall(${stopTools.map((t) => JSON.stringify(t)).join(', ')})`);
  }
  if (stopWhen.length) {
    options.stopWhen = stopWhen.length === 1 ? stopWhen[0] : stopWhen;
    settings.stopWhen = stopWhen.length === 1 ? stopText[0] : `[${stopText.join(', ')}]`;
  }
  // intent -> the native mechanism used for it (the adapter keeps the intents the scenario states)
  const deniedList = deniedTools.length ? deniedTools.join(', ') : '<tool>';
  const mechanisms = {
    delegate: agent
      ? 'a tool per child whose execute runs new ToolLoopAgent({instructions, tools}).generate({prompt: task, '
        + "abortSignal}) and returns its text (the SDK's subagents docs; the child's own loop and defaults)"
      : 'a tool per child whose execute runs generateText({system: instructions, tools, stopWhen: '
        + "isStepCount(<ToolLoopAgent's default>), prompt: task, abortSignal}) and returns its text (the SDK's "
        + 'subagents docs; the child has its own loop)',
    deny_stop: `toolApproval: {${deniedList}: fn} returning {type: 'denied'} + stopWhen: [..., `
      + `hasToolCall(${deniedList})] (the loop ends after the step with the denied call)`,
    deny_continue: `toolApproval: {${deniedList}: fn} returning {type: 'denied'} (the model sees execution-denied; `
      + 'the loop goes on)',
    approval_pause: "toolApproval: {<tool>: fn} returning 'user-approval' -> tool-approval-request parts; messages "
      + '(prompt + responseMessages) saved; a tool-approval-response appended on resume',
    reject: 'tool-approval-response {approved: false, reason} on resume (the model sees execution-denied)',
    tool_choice_first: 'prepareStep returning {toolChoice} for the step the turn answers (chosen from the '
      + "step's messages)",
    tool_choice_later: 'prepareStep returning {toolChoice} for the step the turn answers (chosen from the '
      + "step's messages)",
    // the tool's own code: the service's error (a timeout included) is thrown from execute
    tool_error_recoverable: TOOL_ERROR_THROWN,
    tool_error_fatal: TOOL_ERROR_THROWN,
    cancel: CANCEL[req.api],
    resume_after_cancel: RESUME_AFTER_CANCEL[req.api],
  };
  if (g) Object.assign(mechanisms, GUARD_MECHANISMS);
  // the structured answer: Output.object with the zod schema (only for a request with `output`: others as before)
  let output = null;
  if (req.output) {
    const words = outputZodWords(req.output);
    output = Output.object({ schema: outputZod(sdk.zod, req.output), name: req.output.name,
      description: req.output.description });
    settings.output = {
      api: OUTPUT_CALL[req.api], schema: words.schema, check: words.check ?? 'none',
      name: req.output.name, provider: OUTPUT_WIRE[req.provider].setting,
      retries: "none: the SDK has no structured-output retry (an answer failing the schema throws "
        + 'NoObjectGeneratedError)',
    };
    mechanisms.structured_output = `${OUTPUT_CALL[req.api]}, the schema a zod z.strictObject; `
      + `${OUTPUT_WIRE[req.provider].words}; no retry: an answer failing it throws NoObjectGeneratedError`;
    mechanisms.output_check = "a zod .refine(v => pattern.test(v), {message}) on the field, applied by "
      + 'Output.object\'s parse (safeValidateTypes) after the answer: NoObjectGeneratedError, no retry';
  }
  const choiceRules = req.tool_choice ?? [];
  if (choiceRules.length) {
    options.prepareStep = ({ messages: sent }) => {
      const toolChoice = toolChoiceFor(choiceRules, sent);
      return toolChoice ? { toolChoice } : {};
    };
    settings.prepareStep = toolChoiceSetting(choiceRules);
  }
  // guarded: the main agent's loop hooks (guardHooks), prepareStep before the tool_choice one
  const mainHooks = g ? g.loop('main') : null;
  if (mainHooks) {
    const choose = options.prepareStep;
    options.prepareStep = async (step) => {
      await mainHooks.prepareStep();
      return choose ? choose(step) : {};
    };
    settings.guard = GUARD_SETTINGS;
  }
  let timeout;
  if (limits.deadline_s != null) {
    timeout = { totalMs: Math.round(limits.deadline_s * 1000) };
    settings.timeout = timeout;
  }
  if (Object.keys(mainApproval).length) {
    settings.toolApproval = Object.fromEntries(Object.keys(mainApproval).map((n) => [n, approvalSettings[n]]));
  }

  const steps = [];
  let languageModelCalls = 0;
  let languageModelResponses = 0; // onLanguageModelCallEnd: one per parsed response (evidence kept when it throws)
  const stepResults = []; // the SDK's own step results, kept for what a cancelled run leaves to continue from
  const callbacks = {
    onStepEnd: (step) => {
      stepResults.push(step);
      const summary = {
        step: step.stepNumber,
        finish_reason: step.finishReason,
        tool_calls: step.toolCalls.map((c) => ({ call_id: neutralId(c.toolCallId), tool: c.toolName })),
        content: step.content.map((p) => p.type),
        input_tokens: step.usage?.inputTokens ?? null,
        output_tokens: step.usage?.outputTokens ?? null,
      };
      steps.push(summary);
      note('step', summary);
    },
  };
  const prompt = req.op === 'run' ? { prompt: req.prompt } : { messages };

  note('started', { op: req.op, variant: req.variant, settings });
  let result;
  let structured = null; // result.output (a request with `output`)
  let outputError = null; // what reading it threw, when the run itself returned
  let thrown = null;
  let thrownError = null;
  // a streaming entry point reports its errors to onError and in the stream's 'error' parts, not by throwing
  // (without onError the SDK logs them to the console): the first one is what the run raised
  let streamError = null;
  const onError = ({ error }) => { streamError ??= error; };
  // the caller's cancel: an AbortController whose signal is the call's abortSignal (the SDK merges it into every
  // model request and hands it to each tool's execute); the streaming entry points also take onAbort({steps})
  const cancel = watchCancel(req, store);
  let aborted = null; // what onAbort was given
  let abortPart = false;
  const onAbort = ({ steps: given }) => { aborted = { steps: given }; };
  const cancelOptions = cancel.signal ? { abortSignal: cancel.signal } : {};
  if (cancel.signal) settings.abortSignal = `AbortController().signal${streamed ? ' + onAbort' : ''}, aborted on the caller's cancel`;
  const modelCalls = {
    onLanguageModelCallStart: () => { languageModelCalls += 1; },
    onLanguageModelCallEnd: () => { languageModelResponses += 1; },
  };
  if (mainHooks) {
    // guarded: the response's usage settles the model call's reservation; a failed step settles it as failed
    modelCalls.onLanguageModelCallEnd = async (event) => {
      languageModelResponses += 1;
      await mainHooks.onLanguageModelCallEnd(event);
    };
    modelCalls.onStepError = mainHooks.onStepError;
    // the guard's deadline, merged with the caller's cancel into the call's abortSignal
    const deadlineSignal = await g.arm();
    if (deadlineSignal) {
      cancelOptions.abortSignal = cancel.signal ? AbortSignal.any([cancel.signal, deadlineSignal]) : deadlineSignal;
    }
  }
  try {
    let run;
    if (agent) {
      const loop = new ToolLoopAgent({
        model, tools, ...(Object.keys(mainApproval).length ? { toolApproval: mainApproval } : {}),
        ...(req.instructions != null ? { instructions: req.instructions } : {}),
        ...(options.stopWhen ? { stopWhen: options.stopWhen } : {}),
        ...(options.prepareStep ? { prepareStep: options.prepareStep } : {}),
        ...(output ? { output } : {}),
        ...modelCalls, ...(streamed ? { onError } : {}),
        // ToolLoopAgent takes onAbort in its settings (its stream() passes it to streamText; generate() has none)
        ...(streamed && cancel.signal ? { onAbort } : {}),
      });
      const call = { ...prompt, ...(timeout ? { timeout } : {}), ...callbacks, ...cancelOptions };
      run = streamed ? await loop.stream(call) : await loop.generate(call);
    } else {
      const call = {
        model, tools, ...(Object.keys(mainApproval).length ? { toolApproval: mainApproval } : {}), ...options,
        ...(req.instructions != null ? { system: req.instructions } : {}), ...(output ? { output } : {}),
        ...(timeout ? { timeout } : {}), ...prompt, ...callbacks, ...modelCalls, ...cancelOptions,
      };
      run = streamed ? streamText({ ...call, onError, ...(cancel.signal ? { onAbort } : {}) }) : await generateText(call);
    }
    if (streamed) {
      for await (const part of run.fullStream) {
        if (part.type === 'error') streamError ??= part.error;
        if (part.type === 'abort') abortPart = true;
      }
      if (streamError) throw streamError;
      result = {
        steps: await run.steps, finishReason: await run.finishReason, rawFinishReason: await run.rawFinishReason,
        text: await run.text, usage: await run.usage, responseMessages: await run.responseMessages,
      };
    } else {
      result = run;
    }
    if (output) {
      // the structured answer as the docs read it (`result.output`: a getter on generateText's result, a promise on
      // streamText's). What it throws when the run returned is kept apart (`output_error`): generateText throws
      // NoOutputGeneratedError when the last step did not finish with 'stop' (a stop condition ended the loop on a
      // tool step); streamText parses the last step's text when read and rejects with NoObjectGeneratedError
      try {
        structured = await run.output;
      } catch (error) {
        outputError = describeError(error);
      }
    }
  } catch (error) {
    thrown = describeError(error);
    thrownError = error;
  }
  if (g) {
    g.disarm();
    await mainHooks.settle();
    // a stop raised in the last step's tools, when a stop condition ended the loop there: generateText returned,
    // and the caller raises the guard's stop (the model never read past it)
    if (!thrown && g.stopped()) {
      thrownError = g.stopped();
      thrown = describeError(thrownError);
    }
  }
  cancel.stop();
  const abortMs = cancel.settled();

  const out = {
    settings, mechanisms, steps, language_model_calls: languageModelCalls, subagent_runs: subagentRuns,
    language_model_responses: languageModelResponses,
    warnings: store.warnings, harness_errors: store.harnessErrors,
    deny: { intent: denyIntent, denied_tools: deniedTools, stop_tools: stopTools, step_bound: stepBound },
  };
  const cancelSeen = cancel.seen ? {
    told: cancel.seen.told, at_s: cancel.seen.at_s, aborted: cancel.seen.aborted, abort_ms: abortMs,
    on_abort: aborted ? { steps: aborted.steps.length } : null, abort_part: streamed ? abortPart : null,
    steps: null, steps_source: null,
  } : null;
  if (cancelSeen) out.cancel = cancelSeen;
  // the framework stopped on the caller's cancel: it threw the abort (generateText, ToolLoopAgent.generate) or ended
  // its stream with an abort part and called onAbort (streamText, ToolLoopAgent.stream; its promises reject with
  // the abort reason). A run that returned normally after the abort is mapped as it returned
  if (cancelSeen?.aborted && (aborted || abortPart || (thrownError && causedByAbort(thrownError, cancel.signal)))) {
    // the completed steps the SDK gave at the abort: onAbort's (the streaming entry points; the docs' "persist
    // partial results"), else those it reported to onStepEnd (generateText has no onAbort: generate-text.ts:1833)
    const given = aborted ? aborted.steps : stepResults;
    const source = aborted ? 'onAbort steps' : 'onStepEnd callbacks';
    cancelSeen.steps = given.length;
    cancelSeen.steps_source = source;
    const sumOf = (k) => (given.some((s) => s.usage?.[k] != null)
      ? given.reduce((a, s) => a + (s.usage?.[k] ?? 0), 0) : null);
    // what a caller continues from: the conversation so far plus each completed step's response messages, as the
    // docs add response messages to a conversation (03-ai-sdk-core/15-tools-and-tool-calling.mdx "Response
    // Messages"; 03-agents/04-loop-control.mdx: steps.flatMap(step => step.response.messages))
    const conversation = [...(messages ?? [{ role: 'user', content: req.prompt }]),
      ...given.flatMap((s) => s.response?.messages ?? [])];
    await mkdir(req.snapshot_dir, { recursive: true });
    await writeFile(`${req.snapshot_dir}/${CANCEL_FILE}`, JSON.stringify({
      kind: 'cancel', steps: given.length, steps_source: source, messages: conversation }));
    return {
      ...out, ended: 'cancelled', ...(thrown ? { thrown } : {}), step_count: given.length, step_count_source: source,
      model_responses: given.length, model_responses_source: source,
      usage: { input_tokens: sumOf('inputTokens'), output_tokens: sumOf('outputTokens'), source },
      tool_calls_requested: given.reduce((a, s) => a + (s.toolCalls?.length ?? 0), 0),
      snapshot: req.snapshot_dir,
    };
  }
  if (thrown) {
    const sum = (k) => (steps.some((s) => s[k] != null) ? steps.reduce((a, s) => a + (s[k] ?? 0), 0) : null);
    return {
      ...out, ended: 'raised', thrown, step_count: steps.length, step_count_source: 'onStepEnd callbacks',
      // no result, and the error carries no steps: the steps the SDK reported to onStepEnd are all it said
      model_responses: steps.length, model_responses_source: 'onStepEnd callbacks',
      usage: { input_tokens: sum('input_tokens'), output_tokens: sum('output_tokens'), source: 'onStepEnd callbacks' },
    };
  }

  const last = result.steps[result.steps.length - 1];
  const partsOf = (step, type) => step.content.filter((p) => p.type === type);
  const pending = partsOf(last, 'tool-approval-request').filter((p) => !p.isAutomatic).map((p) => ({
    approval_id: p.approvalId, tool_call_id: p.toolCall.toolCallId, call_id: neutralId(p.toolCall.toolCallId),
    tool: p.toolCall.toolName, input: p.toolCall.input,
  }));
  const denied = result.steps.flatMap((s) => partsOf(s, 'tool-approval-response').filter((p) => !p.approved))
    .map((p) => ({ call_id: neutralId(p.toolCall?.toolCallId), tool: p.toolCall?.toolName, reason: p.reason ?? null }));
  // evidence for a deny stop: calls of a hasToolCall tool in the last step whose approval was denied
  const deniedStopCallsOfLast = partsOf(last, 'tool-approval-response')
    .filter((p) => !p.approved && stopTools.includes(p.toolCall?.toolName))
    .map((p) => ({ call_id: neutralId(p.toolCall?.toolCallId), tool: p.toolCall?.toolName }));
  const outputsOfLast = new Set([
    ...partsOf(last, 'tool-result'), ...partsOf(last, 'tool-error'),
    ...last.content.filter((p) => p.type === 'tool-approval-response' && !p.approved),
  ].map((p) => p.toolCallId ?? p.toolCall?.toolCallId));

  let snapshot = null;
  if (pending.length) {
    // responseMessages: every step's messages plus the tool results the SDK made from the decisions before its
    // first step (a denial's execution-denied result); `response.messages` is the last step's only
    // (node_modules/ai/dist/index.d.ts: `responseMessages`, "The accumulated response messages of all steps";
    // docs/03-agents/06-tool-approvals.mdx: `messages.push(...result.responseMessages)`)
    const conversation = [...(messages ?? [{ role: 'user', content: req.prompt }]), ...result.responseMessages];
    await mkdir(req.snapshot_dir, { recursive: true });
    await writeFile(`${req.snapshot_dir}/messages.json`, JSON.stringify(conversation));
    await writeFile(`${req.snapshot_dir}/approvals.json`, JSON.stringify(pending));
    snapshot = req.snapshot_dir;
    for (const p of pending) note('approval-request', { tool: p.tool, call_id: p.call_id, approval_id: p.approval_id });
  }
  return {
    ...out,
    ended: pending.length ? 'paused' : 'returned',
    finish_reason: result.finishReason,
    raw_finish_reason: result.rawFinishReason ?? null,
    text: result.text,
    ...(output ? { output: structured, output_error: outputError } : {}),
    step_count: result.steps.length,
    step_count_source: 'result.steps',
    // one step per model response: what the SDK's result reports of the model (its retries are in no result)
    model_responses: result.steps.length,
    model_responses_source: 'result.steps',
    usage: { input_tokens: result.usage?.inputTokens ?? null, output_tokens: result.usage?.outputTokens ?? null,
      source: 'result.usage' },
    tool_calls_requested: result.steps.reduce((a, s) => a + s.toolCalls.length, 0),
    last_step: {
      finish_reason: last.finishReason,
      tool_calls: last.toolCalls.length,
      tool_outputs: last.toolCalls.filter((c) => outputsOfLast.has(c.toolCallId)).length,
      denied_stop_calls: deniedStopCallsOfLast,
    },
    pending,
    denied,
    snapshot,
  };
}

serve({
  framework: 'the SDK',
  load: async () => {
    sdk = { ai: await import('ai'), anthropic: await import('@ai-sdk/anthropic'), openai: await import('@ai-sdk/openai'),
      zod: (await import('zod')).z };
  },
  hello: () => ({ packages: packageVersions(HERE, ['ai', '@ai-sdk/anthropic', '@ai-sdk/openai', 'zod']), defaults: sdkDefaults() }),
  validate,
  ops: { run: runSegment, resume: runSegment },
  // SDK warnings are attributed to the request that caused them
  around: (store, fn) => requestContext.run(store, fn),
});
