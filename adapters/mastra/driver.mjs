// loopbench's long-lived driver for Mastra (@mastra/core). One process serves many runs.
//
// It speaks loopbench's Node line protocol (../node/README.md), served by `./protocol.mjs` (the shared framing, the
// ledger client and the CPU accounting). This file holds only what is Mastra's: importing it, its defaults read from
// the installed source, and the ops. A `prepare` builds what an application builds once before it serves a request
// (the tools, the Agent, the Mastra instance with the task's LibSQLStore, its init) and keeps it under a key; the
// segment's `run` or `resume` names the key, uses it and releases it.
//
// The adapter (adapters/mastra_agent.py) maps what this driver reports onto loopbench's native signals; this
// file only runs Mastra and reports what it said. It knows nothing about scenarios beyond the request.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import {
  GuardStop, HarnessError, agentsPlan, authorize, callTool, causedByAbort, checkRequest, denyPlan, describeError, emit,
  guardClient, ledgerPost, neutralId, outputZod, outputZodWords, packageVersions, pickToolChoice, serve,
  toolChoiceSetting, watchCancel,
} from './protocol.mjs';

const HERE = new URL('.', import.meta.url);
const STORE_FILE = 'mastra.db'; // the Mastra instance's LibSQL storage, one per business task (ctx.task_dir)
const PAUSE_FILE = 'pause.json'; // what the app keeps of a pause: the run id and the pending calls
const CANCEL_FILE = 'cancel.json'; // what a cancelled run kept: the conversation to continue from

// the caller's cancel and continuing after it (the adapter's mechanism table says the same)
const CANCEL_WORDS = "AbortController whose signal is the call's abortSignal, with onAbort({steps, text}), aborted on "
  + "the caller's cancel (reference-agents-generate.md: options.abortSignal, options.onAbort); Mastra hands the signal "
  + "to every tool's execute context (passed on to the tool's ledger request, as docs-agents-tools.md's fetch does)";
const RESUME_WORDS = "the prompt plus the response messages of the steps onAbort gave (cancel.json), passed as the "
  + 'messages of a new call in a new process (reference-agents-generate.md: messages may be an array)';

// the structured answer (a request with `output`), as docs-agents-structured-output.md shows it: generate/stream
// options `structuredOutput: {schema}` with a zod schema (protocol.mjs outputZod: its refinement carries the check),
// read as `result.object`. Without a `model` Mastra runs it in its "direct" mode (agent chunk: `structuredOutputMode
// = structuredOutput?.schema ? structuredOutput?.model ? "processor" : "direct"`): the schema goes to the model as
// the call's responseFormat (`getResponseFormat(schema, {model: {supportsStructuredOutputs: true}})`, unless
// jsonPromptInjection), and the step's text is validated when the step finishes (createObjectStreamTransformer); a
// failure under the default errorStrategy 'strict' becomes an `error` chunk that ends the run (no retry: the
// structuring agent's processor mode, with a `model`, is the one maxProcessorRetries re-asks)
const OUTPUT_WORDS = (streaming) => `agent.${streaming ? 'stream' : 'generate'}(prompt, {..., structuredOutput: `
  + "{schema}}) -> result.object (Mastra's direct mode: no structuring model; the schema as the model call's "
  + "responseFormat; errorStrategy default 'strict': a failing answer ends the run with an error, no retry)";
const OUTPUT_CHECK_WORDS = "a zod .refine(v => pattern.test(v), {message}) on the field, applied by Mastra's "
  + "validation of the final text (direct mode, errorStrategy 'strict': an error, no retry)";

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
// prepared instances a long-lived driver holds at most: a prepare whose segment never comes is closed when a newer
// one pushes it out (a worker prepares one segment at a time, so a few is plenty)
const PREPARED_KEEP = 4;

// Mastra's own defaults, read from the installed source (reported, never assumed): the loop's stop condition
// when neither maxSteps nor stopWhen is given, and the model-call retries when modelSettings.maxRetries is unset.
function mastraDefaults() {
  const out = { stopWhen: null, maxSteps: null, agent_maxRetries: null, loop_retries_fallback: null,
    retry_min_timeout_ms: null, retry_factor: null };
  try {
    const dist = new URL('node_modules/@mastra/core/dist/', HERE);
    const src = readdirText(dist);
    const stop = /else stopWhenToUse = stopWhen \?\? stepCountIs\((\d+)\)/.exec(src);
    // the loop retries `modelSettings.maxRetries ?? 2` times, but the agent fills modelSettings.maxRetries with its
    // own `maxRetries`, whose default is the constructor's `config.maxRetries ?? 0`
    const retries = /retries: modelSettings\?\.maxRetries \?\? (\d+)/.exec(src);
    const agentRetries = /this\.maxRetries = config\.maxRetries \?\? (\d+);/.exec(src);
    const minTimeout = /const RETRY_MIN_TIMEOUT_MS = ([\de.]+);/.exec(src);
    const factor = /const RETRY_BACKOFF_FACTOR = ([\d.]+);/.exec(src);
    if (stop) { out.stopWhen = `stepCountIs(${stop[1]})`; out.maxSteps = Number(stop[1]); }
    if (retries) out.loop_retries_fallback = Number(retries[1]);
    if (agentRetries) out.agent_maxRetries = Number(agentRetries[1]);
    if (minTimeout) out.retry_min_timeout_ms = Number(minTimeout[1]);
    if (factor) out.retry_factor = Number(factor[1]);
  } catch {
    // unknown stays null
  }
  return out;
}

// the chunk of dist/ that holds the Agent's loop (its file name carries a build hash): read the agent entry's
// imports to find it
function readdirText(dist) {
  const entry = readFileSync(new URL('agent/index.js', dist), 'utf8');
  const chunks = [...entry.matchAll(/from "\.\.\/([^"]+\.js)"/g)].map((m) => m[1]);
  return chunks.map((c) => { try { return readFileSync(new URL(c, dist), 'utf8'); } catch { return ''; } }).join('\n');
}

let sdk; // the imported modules, once per process
let defaults;

// how a tool hands Mastra a ledger error, for both tool-error intents (the adapter's mechanism table says the same)
const TOOL_ERROR_THROWN = "createTool execute throws an Error (Mastra's tool-error path: the model gets the error)";

// each variant: the Agent's API it calls and the model router route it sends the scenario's model through
// (`guarded`: the default's, with loopbench's guard installed: see "the guard" below)
const VARIANTS = {
  default: { streaming: false, route: 'anthropic' },
  stream: { streaming: true, route: 'anthropic' },
  'openai-compatible': { streaming: false, route: 'openai-compatible' },
  guarded: { streaming: false, route: 'anthropic', guarded: true },
};

// ---- the guard (the `guarded` variant only; every other variant builds and runs exactly as before). loopbench.guard
// runs in the adapter's process; `guardClient(req)` (protocol.mjs) is its HTTP face, one POST per hook. It is
// installed through Mastra's documented extension points:
// - an input processor on each Agent (docs-agents-processors.md, reference-processors-processor-interface.md):
//   `processLLMRequest`, "once per provider call ... before the provider call", reserves the call
//   (`beforeModelCall`): its refusal is thrown, and a non-TripWire error thrown there is rethrown by the loop
//   (agent chunk: "Error in processLLMRequest processors"), so generate() throws it before the model is asked;
//   `processLLMResponse`, "once per completed provider stream" with the step's chunks, the same `state`, before the
//   step's tools run, settles it with the `finish` chunk's usage (an `error` chunk: settled as failed);
// - each tool's `execute` (the driver's own code): `beforeToolCall` before the ledger call (`refused` -> the model
//   gets `Not run: <reason>`; `recorded` -> the recorded result, no ledger call), then `afterToolCall` (the stall
//   check; the result handed to the model bounded), `toolFailed` or `toolTimedOut`;
// - the delegation tools Mastra builds for sub-agents (`agent-<child>`): the documented `hooks.beforeToolCall` /
//   `afterToolCall` of generate() (they wrap every tool, agent tools included) reserve and settle the delegation as
//   a tool call of the parent's; a child run that threw is a definitive failure of the delegation (`toolFailed`,
//   fatal);
// - approval: Mastra's own `requireApproval` (as the default) suspends a call that needs it; the adapter tells the
//   guard the resume's decisions, and the guard's check in execute admits exactly the approved call once;
// - the deadline: an AbortController aborted when `remaining()` runs out, merged with the caller's cancel into
//   generate()'s documented `abortSignal` (handed on to every tool's execute and to a child's run); the native
//   `modelSettings.timeout` stays as the default sets it.
// Whatever a tool's execute (or a hook around it) throws is Mastra's tool-error path: the model would read it. So a
// stop is kept (the first wins) and thrown again by the next hook the run reaches — the next model call's
// processLLMRequest, in the child's run and then the parent's — before the model is asked; a run that returns with a
// stop kept (its last step allowed) is reported as raising it, as a caller checks its guard.
const GUARD_WORDS = "input processor processLLMRequest (beforeModelCall) / processLLMResponse (afterModelCall, "
  + "modelCallFailed) on each Agent; each tool's execute (beforeToolCall, afterToolCall, toolFailed, toolTimedOut); "
  + "hooks.beforeToolCall/afterToolCall around the agent-<child> delegation tools; requireApproval as the default; "
  + "an AbortController on remaining() merged into abortSignal; a kept stop thrown by the next hook; the caller's "
  + "cancel told to the guard (cancel: its cancelled exit, raised when generate() returns as if not cancelled)";
const GUARD_MECHANISMS = {
  approval_pause: "createTool({requireApproval}) -> finishReason 'suspended' with suspendPayload, the run suspended "
    + 'in the Mastra storage (LibSQLStore in the task dir); resumed with agent.approveToolCallGenerate/'
    + 'declineToolCallGenerate({runId, toolCallId}), the decisions also told to the guard (guard.decide), whose '
    + "check in the tool's execute admits exactly the approved call once",
  reject: 'agent.declineToolCallGenerate({runId, toolCallId}) on resume (the model gets the decline message), told to '
    + "the guard too: the rejected effect is refused in any tool's execute afterwards (the guard's denied stop)",
  tool_error_recoverable: "tool execute tells the guard (toolFailed, not fatal) and throws an Error (Mastra's "
    + "tool-error path: the model gets the error; the guard's stall check bounds identical retries)",
  tool_error_fatal: "tool execute tells the guard (toolFailed, fatal): its `failed` stop is kept and thrown by the "
    + "next model call's processLLMRequest, so generate() throws it before the model reads the error",
};

// the segment's guard, or null (not the guarded variant): the client, the stop kept, the model calls reserved and
// not settled yet, and the deadline's AbortController
function segmentGuard(req, io) {
  const client = guardClient(req);
  if (!client) return null;
  const g = { client, stop: null, open: new Map(), controller: new AbortController(), timer: null };
  const keep = (error) => {
    if (error instanceof GuardStop && g.stop === null) g.stop = error;
    if (error instanceof HarnessError) io.harnessErrors.push(error.message);
    return error;
  };
  // a hook asking before an operation: a kept stop first (the run goes no further once stopped), then the guard
  g.ask = async (fn) => {
    if (g.stop) throw g.stop;
    try { return await fn(); } catch (error) { throw keep(error); }
  };
  // settling what ran: always told, a stop it answers kept
  g.settle = async (fn) => {
    try { return await fn(); } catch (error) { throw keep(error); }
  };
  g.keep = keep;
  return g;
}

// the deadline: when `remaining()` runs out, the guard records its `wall_s` stop and the run's abortSignal fires.
// The service has no op that only records it, so the timer asks for a model call, which the guard refuses with its
// LimitReached("wall_s") once the deadline has passed (Budget.reserve checks the time before anything else)
async function armDeadline(g) {
  const left = await g.settle(() => g.client.remaining());
  if (left == null) return;
  const fire = async () => {
    g.timer = null;
    try {
      const now = await g.client.remaining();
      if (now != null && now > 0) { g.timer = setTimeout(fire, Math.ceil(now * 1000) + 1); return; }
      const { held } = await g.client.beforeModelCall();
      if (held) g.open.set(held, 'main'); // not reached: the deadline has passed
    } catch (error) {
      g.keep(error);
    }
    if (g.stop) g.controller.abort(g.stop);
  };
  g.timer = setTimeout(fire, Math.max(0, Math.ceil(left * 1000)));
}

// the input processor of one agent (`agent`: the guard's name for it, `main` or the child's id): each provider call
// reserved before it is sent and settled with its response's usage. `app.guard` is the segment's (set per request)
function guardProcessor(app, agent) {
  return {
    id: 'loopbench-guard',
    processLLMRequest: async ({ state }) => {
      const g = app.guard;
      if (!g) return undefined;
      const { held } = await g.ask(() => g.client.beforeModelCall(agent));
      state.held = held;
      g.open.set(held, agent);
      return undefined;
    },
    processLLMResponse: async ({ state, chunks }) => {
      const g = app.guard;
      const held = state.held;
      if (!g || !held) return;
      state.held = null;
      g.open.delete(held);
      const finish = (chunks ?? []).find((c) => c?.type === 'finish');
      const usage = finish?.payload?.output?.usage ?? finish?.payload?.usage;
      if ((chunks ?? []).some((c) => c?.type === 'error') || !usage) {
        await g.settle(() => g.client.modelCallFailed(held, agent)); // sent, no response: a call, no tokens known
      } else {
        await g.settle(() => g.client.afterModelCall(held, usage, agent));
      }
    },
  };
}

// a guarded tool's execute: the guard before and after the ledger call (the ledger's error kind is the tool's own
// knowledge of its service's answer: a timeout, a definitive failure or one worth retrying)
async function guardedToolCall(req, app, agent, tool, input, callId, signal) {
  const g = app.guard;
  const io = app.io;
  const answer = await g.ask(() => g.client.beforeToolCall(tool, input, callId, agent));
  if (answer.recorded !== undefined && answer.recorded !== null) return answer.recorded;
  if (answer.refused != null) return `Not run: ${answer.refused}`;
  if (answer.pause != null) {
    // the guard holds no approval for exactly this call, though Mastra's requireApproval let it run: the guard
    // recorded its awaiting_approval exit; the run ends on it (Mastra offers execute no approval of its own)
    throw g.keep(new GuardStop({ exit: 'awaiting_approval', reason: `${tool} needs approval (${answer.pause})` }));
  }
  const { held } = answer;
  emit(io, 'tool-start', { tool, call_id: callId });
  let out;
  try {
    out = await ledgerPost(req, 'call', { tool, args: input ?? {}, call_id: callId }, signal);
  } catch (error) {
    if (error instanceof HarnessError) io.harnessErrors.push(error.message);
    emit(io, 'tool-end', { tool, call_id: callId, ok: false, error: describeError(error).name });
    // sent and no answer came (an abort cut it): its outcome is unknown
    await g.settle(() => g.client.toolTimedOut(held, tool, input, agent)).catch(() => {});
    throw error;
  }
  emit(io, 'tool-end', { tool, call_id: callId, ok: out.ok, error_kind: out.error_kind ?? null });
  if (!out.ok) {
    if (out.error_kind === 'timeout') await g.settle(() => g.client.toolTimedOut(held, tool, input, agent));
    else await g.settle(() => g.client.toolFailed(held, tool, out.error_kind === 'fatal', out.text, agent));
    throw new Error(out.text); // Mastra's tool-error path, as the default
  }
  return g.settle(() => g.client.afterToolCall(held, tool, input, out.text, callId, agent));
}

// the delegation tools (`agent-<child>`, built by Mastra) as the parent's tool calls, through generate()'s
// documented tool hooks, composed with the deny hook (`base`) the default may install
function guardDelegationHooks(g, delegations, base) {
  const heldOf = new Map();
  const idOf = (ctx) => ctx.context?.toolCallId ?? ctx.context?.agent?.toolCallId ?? null;
  return {
    beforeToolCall: async (ctx) => {
      if (!delegations.has(ctx.toolName)) return base?.beforeToolCall?.(ctx);
      const callId = neutralId(idOf(ctx));
      const answer = await g.ask(() => g.client.beforeToolCall(ctx.toolName, ctx.input, callId));
      if (answer.recorded !== undefined && answer.recorded !== null) return { proceed: false, output: answer.recorded };
      if (answer.refused != null) return { proceed: false, output: `Not run: ${answer.refused}` };
      if (answer.pause != null) {
        throw g.keep(new GuardStop({ exit: 'awaiting_approval', reason: `${ctx.toolName} needs approval` }));
      }
      heldOf.set(idOf(ctx), answer.held);
      return undefined;
    },
    afterToolCall: async (ctx) => {
      if (!delegations.has(ctx.toolName)) return base?.afterToolCall?.(ctx);
      const held = heldOf.get(idOf(ctx));
      if (!held) return;
      heldOf.delete(idOf(ctx));
      if (ctx.error !== undefined) {
        // the child's run threw (its model failed, or it stopped on the guard): the delegation has no answer
        await g.settle(() => g.client.toolFailed(held, ctx.toolName, true, describeError(ctx.error).message));
        return;
      }
      const out = ctx.output;
      await g.settle(() => g.client.afterToolCall(held, ctx.toolName, ctx.input,
        typeof out === 'string' ? out : out?.text ?? out ?? null, neutralId(idOf(ctx))));
    },
  };
}

// the model router config for a route, and how the record names it. `anthropic`: the router's own route for a
// Claude model (models.dev gateway -> @ai-sdk/anthropic, Anthropic Messages) with the run's key; a config `url`
// would turn any id into an OpenAI-compatible model, so the base URL is the provider's variable
// ANTHROPIC_BASE_URL, which @ai-sdk/anthropic reads when the router passes no baseURL
// (probes/anthropic_base_url.mjs). `openai-compatible`: `{id: 'openai/<model>', url, apiKey}`, the router's
// config for an OpenAI-compatible endpoint (Chat Completions through @ai-sdk/openai-compatible).
function modelFor(req, route) {
  const server = req.base_url.replace(/\/$/, '');
  if (route === 'anthropic') {
    // what an application's environment sets once; every run of this driver talks to the same server
    process.env.ANTHROPIC_BASE_URL = `${server}/v1`;
    return { model: { id: `anthropic/${req.model_id}`, apiKey: req.api_key },
      described: "model router config {id: 'anthropic/<model>', apiKey} with ANTHROPIC_BASE_URL=<server>/v1 "
        + '(@ai-sdk/anthropic, Anthropic Messages)' };
  }
  return { model: { id: `openai/${req.model_id}`, url: `${server}/v1`, apiKey: req.api_key },
    described: "model router config {id: 'openai/<model>', url: <server>/v1, apiKey} (@ai-sdk/openai-compatible, "
      + 'Chat Completions)' };
}

// the request fields a prepared instance is built from: a run or resume that names it must carry the same ones
const BUILT_FROM = ['variant', 'base_url', 'api_key', 'run_id', 'ledger_token', 'model_id', 'tools', 'task_dir',
  'instructions', 'agents'];

function validate(req) {
  const problem = checkRequest(req, ['task_dir']);
  if (problem) return problem;
  if (!Object.hasOwn(VARIANTS, req.variant)) return `unknown variant ${JSON.stringify(req.variant)}`;
  if (req.op !== 'prepare' && req.prepared != null && typeof req.prepared !== 'string') {
    return '`prepared` must be the key a prepare answered';
  }
  return null;
}

// a tool call as Mastra reports it in a step (a chunk `{type, payload: {...}}` or a flat AI SDK part)
const callOf = (c) => ({ toolCallId: c?.payload?.toolCallId ?? c?.toolCallId, toolName: c?.payload?.toolName ?? c?.toolName });

// the scenario's tool_choice for the step about to send `messages`: Mastra's prepareStep gets its own stored
// messages (MastraDBMessage: an assistant message holds each step's `tool-invocation` parts, state 'result' once
// the tool ran, steps separated by 'step-start' parts), not AI SDK model messages. A rule with `after: null` is the
// opening call (no tool result yet), one with `after: <regex>` the call after that call's result (a result of the
// step just finished: the last message's invocations after its last step boundary)
function toolChoiceFor(rules, messages) {
  const results = (parts) => parts.filter((p) => p?.type === 'tool-invocation' && p.toolInvocation?.state === 'result')
    .map((p) => neutralId(p.toolInvocation.toolCallId));
  const partsOf = (m) => (Array.isArray(m?.content?.parts) ? m.content.parts : []);
  const anyResults = messages.some((m) => results(partsOf(m)).length > 0);
  const last = partsOf(messages[messages.length - 1]);
  let end = last.length;
  while (end > 0 && last[end - 1]?.type === 'step-start') end -= 1;
  const begin = last.slice(0, end).map((p) => p?.type).lastIndexOf('step-start') + 1;
  return pickToolChoice(rules, anyResults, results(last.slice(begin, end)));
}

// ---- what an application builds once before it serves a request: the tools, the Agent, the Mastra instance with
// the task's storage, the store's init. Built by a `prepare` (before the segment's clock), or by a run that names
// no prepared instance (then inside it). The tools report into `app.io`, which each request sets to its own.
const prepared = new Map(); // key -> app, oldest first; a run or resume takes its app out
let preparedCount = 0;

async function buildApp(req) {
  const began = performance.now();
  const { Agent, Mastra, createTool, LibSQLStore, z } = sdk;
  const app = { io: { events: [], harnessErrors: [] }, built_from: Object.fromEntries(BUILT_FROM.map((k) => [k, req[k]])) };
  const { approvalOf } = denyPlan(req);
  // the guarded variant: each tool's execute and each Agent's input processor consult the segment's guard
  const guarded = VARIANTS[req.variant].guarded === true;
  app.guard = null;

  const makeTool = (spec, agent = 'main') => {
    const needsApproval = approvalOf[spec.name] === 'required';
    return createTool({
      id: spec.name,
      description: spec.description,
      inputSchema: z.fromJSONSchema(spec.parameters),
      // the function form of requireApproval is Mastra's per-call approval check point: record it there (it gets
      // the input, not the call id)
      ...(needsApproval ? {
        requireApproval: async (input) => {
          await authorize(req, app.io, spec.name, input, null, 'approval required');
          return true;
        },
      } : {}),
      // a ledger error is thrown: Mastra's own tool-error path
      execute: guarded
        ? (input, context) => guardedToolCall(req, app, agent, spec.name, input,
          neutralId(context?.toolCallId ?? context?.agent?.toolCallId ?? null), context?.abortSignal)
        : (input, context) => callTool(req, app.io, spec.name, input,
          neutralId(context?.toolCallId ?? context?.agent?.toolCallId ?? null), context?.abortSignal),
    });
  };
  const { mainSpecs, children } = agentsPlan(req);
  const tools = Object.fromEntries(mainSpecs.map((spec) => [spec.name, makeTool(spec)]));

  const { model, described } = modelFor(req, VARIANTS[req.variant].route);
  app.described = described;
  // the Mastra instance with its storage, whatever the scenario: the task's one live database (every segment of
  // the task opens it), as an application configures its Mastra once. Mastra creates a store's tables lazily, on
  // its first use, which would be inside the run and its deadline (modelSettings.timeout.totalMs); an application
  // has its store ready before it serves a request, so the driver initialises it (Mastra's own init, the one its
  // workers call at start-up) here
  await mkdir(req.task_dir, { recursive: true });
  app.storage = new LibSQLStore({ id: 'loopbench-task', url: `file:${req.task_dir}/${STORE_FILE}` });
  // sub-agents, as Mastra's supervisor-agent docs show: Agents given to the agent's `agents`, which Mastra offers the
  // model as tools (`agent-<key>`) running the child's own generate/stream; each child has its own instructions,
  // description and tools (registered on the Mastra instance too, so it shares the storage)
  const subAgents = Object.fromEntries(children.map((child) => [child.id, new Agent({
    id: child.id, name: child.id, description: child.description, instructions: child.instructions, model,
    tools: Object.fromEntries(child.specs.map((spec) => [spec.name, makeTool(spec, child.id)])),
    ...(guarded ? { inputProcessors: [guardProcessor(app, child.id)] } : {}),
  })]));
  app.delegations = new Set(children.map((c) => `agent-${c.id}`));
  const agentDef = new Agent({ id: 'support-agent', name: 'support-agent',
    instructions: req.instructions ?? 'You are a helpful assistant.', model, tools,
    ...(children.length ? { agents: subAgents } : {}),
    ...(guarded ? { inputProcessors: [guardProcessor(app, 'main')] } : {}) });
  const mastra = new Mastra({ agents: { agent: agentDef, ...subAgents }, storage: app.storage, logger: false });
  app.subagents = children.length ? Object.fromEntries(children.map((c) => [c.id, {
    agent: `new Agent({id, description, instructions, model, tools}) in the main Agent's agents, offered as tool `
      + `agent-${c.id}`,
    maxSteps: `not set by the parent (the delegation tool's optional maxSteps; Mastra default: ${
      defaults.stopWhen ?? 'unknown'})`,
  }])) : null;
  app.agent = mastra.getAgent('agent');
  try {
    await mastra.getStorage().init();
  } catch (error) {
    await releaseApp(app);
    throw error;
  }
  app.setup_ms = Math.round(performance.now() - began);
  return app;
}

async function releaseApp(app) {
  await app.storage?.close?.().catch?.(() => {});
}

// a prepare: build the app and keep it under a fresh key, closing the oldest kept ones beyond PREPARED_KEEP
async function prepareApp(req) {
  const app = await buildApp(req);
  const key = `p${++preparedCount}`;
  const evicted = [];
  while (prepared.size >= PREPARED_KEEP) {
    const [oldest, old] = prepared.entries().next().value;
    prepared.delete(oldest);
    evicted.push(oldest);
    await releaseApp(old);
  }
  prepared.set(key, app);
  return { prepared: key, setup_ms: app.setup_ms, held: prepared.size, evicted };
}

// the app a run or resume uses: the prepared one it names (taken out: it is this segment's), else one built now
async function appFor(req) {
  if (req.prepared == null) return { app: await buildApp(req), builtInRun: true };
  const app = prepared.get(req.prepared);
  if (!app) {
    throw new HarnessError(`no prepared instance ${JSON.stringify(req.prepared)} in this driver (released after `
      + 'its segment, pushed out by newer prepares, or prepared in another driver)');
  }
  const differs = BUILT_FROM.filter((k) => JSON.stringify(app.built_from[k]) !== JSON.stringify(req[k]));
  if (differs.length) {
    throw new HarnessError(`the prepared instance ${req.prepared} was built for another segment (${differs.join(', ')} differ)`);
  }
  prepared.delete(req.prepared);
  return { app, builtInRun: false };
}

// ---- one run segment (a run from the prompt, or a resume of the run held in the task's storage)
async function runSegment(req, store) {
  const note = (event, data) => emit(store, event, data);
  const limits = req.limits ?? {};
  const { approvalOf, intent: denyIntent, deniedTools, stopTools } = denyPlan(req);
  const { streaming } = VARIANTS[req.variant];
  const { app, builtInRun } = await appFor(req);
  app.io = store; // the tools built with the app report into this request's events
  const { agent } = app;
  const guard = segmentGuard(req, store); // null unless the guarded variant
  app.guard = guard;

  // policy denial: the documented beforeToolCall hook skips the call and hands the model `output` as its result
  const deniedCalls = [];
  let hooks = deniedTools.length ? {
    beforeToolCall: async ({ toolName, input, context }) => {
      if (!deniedTools.includes(toolName)) return undefined;
      const callId = neutralId(context?.toolCallId ?? context?.agent?.toolCallId ?? null);
      await authorize(req, store, toolName, input, callId, 'denied by policy');
      deniedCalls.push({ call_id: callId, tool: toolName });
      return { proceed: false, output: 'Tool call denied by policy.' };
    },
  } : undefined;

  const settings = {
    api: streaming ? 'agent.stream()' : 'agent.generate()',
    model_config: app.described,
    storage: `LibSQLStore({url: 'file:<task_dir>/${STORE_FILE}'}) on the Mastra instance, initialised `
      + (builtInRun ? 'inside the run request, before agent.generate/stream (no prepare named)'
        : 'by the prepare request, before the segment'),
    maxRetries: `not set (Agent default maxRetries: ${defaults.agent_maxRetries ?? 'unknown'})`,
  };
  if (app.subagents) settings.subagents = app.subagents;
  const options = {};
  let stepBound = null;
  if (limits.max_model_calls != null) {
    stepBound = limits.max_model_calls;
    options.maxSteps = stepBound;
    settings.maxSteps = stepBound;
  } else if (stopTools.length && defaults.maxSteps != null) {
    // a stopWhen without maxSteps replaces Mastra's default stepCountIs(n): restate the installed default
    stepBound = defaults.maxSteps;
    options.maxSteps = stepBound;
    settings.maxSteps = `${stepBound} (the Mastra default, restated: a stopWhen alone replaces it)`;
  } else {
    stepBound = defaults.maxSteps;
    settings.maxSteps = `not set (Mastra default: ${defaults.stopWhen ?? 'unknown'})`;
  }
  if (stopTools.length) {
    // the loop ends after the step that called a denied tool
    options.stopWhen = ({ steps }) => (steps.at(-1)?.toolCalls ?? []).some((c) => stopTools.includes(callOf(c).toolName));
    settings.stopWhen = `step's toolCalls include ${stopTools.join(', ')} (a stopWhen predicate)`;
  }
  if (hooks) {
    options.hooks = hooks;
    settings.hooks = `beforeToolCall returning {proceed: false, output} for ${deniedTools.join(', ')}`;
  }
  if (guard && app.delegations.size) {
    hooks = guardDelegationHooks(guard, app.delegations, hooks);
    options.hooks = hooks;
    settings.hooks = `${settings.hooks ? `${settings.hooks}; ` : ''}beforeToolCall/afterToolCall: the guard around `
      + [...app.delegations].join(', ');
  }
  if (limits.deadline_s != null) {
    options.modelSettings = { timeout: { totalMs: Math.round(limits.deadline_s * 1000) } };
    settings.timeout = options.modelSettings.timeout;
  }
  const choiceRules = req.tool_choice ?? [];
  if (choiceRules.length) {
    options.prepareStep = ({ messages: sent }) => {
      const toolChoice = toolChoiceFor(choiceRules, sent ?? []);
      return toolChoice ? { toolChoice } : undefined;
    };
    settings.prepareStep = toolChoiceSetting(choiceRules);
  }
  const approvalTools = req.tools.filter((t) => approvalOf[t.name] === 'required').map((t) => t.name);
  if (approvalTools.length) settings.requireApproval = approvalTools;
  if (req.output) {
    // the structured answer, only for a request with `output` (others as before): the documented option, defaults kept
    const words = outputZodWords(req.output);
    options.structuredOutput = { schema: outputZod(sdk.z, req.output) };
    settings.output = {
      api: `structuredOutput: {schema} in agent.${streaming ? 'stream' : 'generate'}() options -> result.object`,
      schema: words.schema, check: words.check ?? 'none', name: req.output.name,
      mode: "direct (no structuredOutput.model: no structuring agent)",
      errorStrategy: "not set (Mastra default 'strict')",
      jsonPromptInjection: 'not set (the schema as the call\'s responseFormat)',
      retries: 'none in direct mode (maxProcessorRetries re-asks only the processor mode\'s structuring agent)',
    };
  }

  const deniedList = deniedTools.length ? deniedTools.join(', ') : '<tool>';
  const mechanisms = {
    delegate: "new Agent({..., agents: {<child id>: new Agent({instructions, tools})}}): Mastra offers each child as "
      + "a tool agent-<child id> running the child's own generate/stream on the prompt (the supervisor-agent docs)",
    deny_stop: `hooks.beforeToolCall returning {proceed: false, output} for ${deniedList} + stopWhen on a step that `
      + `called ${deniedList} (the loop ends after that step)`,
    deny_continue: `hooks.beforeToolCall returning {proceed: false, output} for ${deniedList} (the model gets the `
      + 'output as the tool result; the loop goes on)',
    approval_pause: streaming
      ? "createTool({requireApproval}) -> a 'tool-call-approval' chunk, the run suspended in the Mastra storage "
        + '(LibSQLStore in the task dir); resumed with agent.approveToolCall/declineToolCall({runId, toolCallId})'
      : "createTool({requireApproval}) -> finishReason 'suspended' with suspendPayload, the run suspended in the "
        + 'Mastra storage (LibSQLStore in the task dir); resumed with agent.approveToolCallGenerate/'
        + 'declineToolCallGenerate({runId, toolCallId})',
    reject: streaming
      ? 'agent.declineToolCall({runId, toolCallId}) on resume (the model gets the decline message)'
      : 'agent.declineToolCallGenerate({runId, toolCallId}) on resume (the model gets the decline message)',
    tool_choice_first: "prepareStep returning {toolChoice} for the step the turn answers (chosen from the step's "
      + "stored messages; 'none' makes Mastra send no tools)",
    tool_choice_later: "prepareStep returning {toolChoice} for the step the turn answers (chosen from the step's "
      + "stored messages; 'none' makes Mastra send no tools)",
    // the tools' execute (above) throws the ledger's error: Mastra's own tool-error path
    tool_error_recoverable: TOOL_ERROR_THROWN,
    tool_error_fatal: TOOL_ERROR_THROWN,
    cancel: `agent.${streaming ? 'stream' : 'generate'}(prompt, {..., abortSignal, onAbort}): ${CANCEL_WORDS}`,
    resume_after_cancel: `agent.${streaming ? 'stream' : 'generate'}(messages, {...}): ${RESUME_WORDS}`,
    ...(req.output ? { structured_output: OUTPUT_WORDS(streaming), output_check: OUTPUT_CHECK_WORDS } : {}),
    ...(guard ? GUARD_MECHANISMS : {}),
  };

  // the caller's cancel: an AbortController whose signal is the call's abortSignal, and onAbort({steps, text})
  const cancel = watchCancel(req, store);
  let aborted = null;
  if (cancel.signal) {
    options.abortSignal = cancel.signal;
    options.onAbort = ({ steps: given, text }) => { aborted = { steps: given ?? [], text: text ?? null }; };
    settings.abortSignal = "AbortController().signal + onAbort, aborted on the caller's cancel";
  }
  if (guard) {
    // the guard's deadline: its AbortController, merged with the caller's cancel
    options.abortSignal = cancel.signal ? AbortSignal.any([cancel.signal, guard.controller.signal])
      : guard.controller.signal;
    settings.abortSignal = `${cancel.signal ? `${settings.abortSignal}, ` : ''}the guard's AbortController (aborted `
      + 'when remaining() runs out)';
    settings.guard = GUARD_WORDS;
    if (cancel.signal) {
      // the caller's cancel told to the guard as well: its `cancelled` exit, raised below if Mastra returns as if
      // nothing happened (as a caller that checks its guard after generate() does)
      cancel.signal.addEventListener('abort', () => {
        guard.cancelling = guard.settle(() => guard.client.cancel("the caller's abort signal fired")).catch(() => {});
      }, { once: true });
    }
  }

  const steps = [];
  options.onStepFinish = (step) => {
    const summary = {
      step: steps.length + 1,
      finish_reason: step.finishReason ?? null,
      tool_calls: (step.toolCalls ?? []).map((c) => ({ call_id: neutralId(callOf(c).toolCallId), tool: callOf(c).toolName })),
      input_tokens: step.usage?.inputTokens ?? null,
      output_tokens: step.usage?.outputTokens ?? null,
    };
    steps.push(summary);
    note('step', summary);
  };

  // a run that named no prepared instance built it inside the request: how long that took (else it was the prepare's)
  const setupMs = builtInRun ? app.setup_ms : null;
  note('started', { op: req.op, variant: req.variant, settings, prepared: req.prepared ?? null,
    ...(builtInRun ? { setup_ms: setupMs } : {}) });
  let output = null;
  let thrown = null;
  let thrownError = null;
  let abortPart = false;
  const cancelKept = req.op === 'resume' ? await readCancelKept(req.snapshot) : null;
  const approvalChunks = [];
  const resumed = [];
  let pauseBefore = null;
  try {
    if (guard) await armDeadline(guard);
    if (req.op === 'run' || cancelKept) {
      // a run from the prompt, or the continuation of a cancelled one from the conversation it kept
      const input = cancelKept ? cancelKept.messages : req.prompt;
      output = await drive(streaming ? await agent.stream(input, options) : await agent.generate(input, options),
        streaming, approvalChunks, () => { abortPart = true; });
    } else {
      pauseBefore = JSON.parse(await readFile(`${req.snapshot}/${PAUSE_FILE}`, 'utf8'));
      // one decision per pending call, in the order the run suspended them; a call without a decision stays pending
      for (const p of pauseBefore.pending) {
        const decision = req.decisions[p.call_id];
        if (decision === undefined) continue;
        const args = { ...options, runId: pauseBefore.run_id, toolCallId: p.tool_call_id };
        const approve = decision === 'approve';
        resumed.push({ call_id: p.call_id, decision });
        let res;
        if (streaming) res = approve ? await agent.approveToolCall(args) : await agent.declineToolCall(args);
        else res = approve ? await agent.approveToolCallGenerate(args) : await agent.declineToolCallGenerate(args);
        output = await drive(res, streaming, approvalChunks);
        if (output.finishReason !== 'suspended') break;
      }
      if (output === null) throw new HarnessError('the resume carried no decision for any pending call');
    }
  } catch (error) {
    if (error instanceof HarnessError) throw error;
    thrown = describeError(error);
    thrownError = error;
  } finally {
    cancel.stop();
    if (guard) {
      clearTimeout(guard.timer);
      await guard.cancelling;
      // a model call reserved and never settled (its request cut or thrown): sent, no response
      for (const [held, name] of guard.open) await guard.settle(() => guard.client.modelCallFailed(held, name)).catch(() => {});
      guard.open.clear();
      app.guard = null;
    }
    await releaseApp(app); // the segment's app goes with it: a long-lived driver accumulates no stores
  }
  const abortMs = cancel.settled();
  if (guard?.stop && !cancel.seen?.aborted) {
    // the guard stopped the run: what the run threw (or returned, when the stop came in its last step) is that stop
    thrown = describeError(guard.stop);
    thrownError = guard.stop;
  }

  const out = {
    settings, mechanisms, steps, harness_errors: store.harnessErrors,
    deny: { intent: denyIntent, denied_tools: deniedTools, stop_tools: stopTools, step_bound: stepBound },
    denied: deniedCalls, resumed, prepared: req.prepared ?? null, ...(builtInRun ? { setup_ms: setupMs } : {}),
    ...(cancelKept ? { continued_after_cancel: true } : {}),
  };
  const cancelSeen = cancel.seen ? {
    told: cancel.seen.told, at_s: cancel.seen.at_s, aborted: cancel.seen.aborted, abort_ms: abortMs,
    on_abort: aborted ? { steps: aborted.steps.length, text: aborted.text } : null,
    abort_part: streaming ? abortPart : null, steps: null, steps_source: null,
  } : null;
  if (cancelSeen) out.cancel = cancelSeen;
  // Mastra stopped on the caller's cancel: it called onAbort, or threw / returned the abort; or, guarded, it returned
  // as if not cancelled and the caller, checking its guard, raises the guard's `cancelled` stop
  const abortedOutput = output != null && (output.finishReason === 'aborted' || causedByAbort(output.error, cancel.signal));
  const guardCancelled = guard?.stop?.exit === 'cancelled';
  if (guardCancelled && !thrown && !(aborted || abortPart || abortedOutput)) {
    thrown = describeError(guard.stop);
    thrownError = guard.stop;
  }
  if (cancelSeen?.aborted && (aborted || abortPart || abortedOutput || guardCancelled
      || (thrownError && causedByAbort(thrownError, cancel.signal)))) {
    // the completed steps onAbort gave (the output's steps when it was not called)
    const given = aborted ? aborted.steps : (output?.steps ?? []);
    const source = aborted ? 'onAbort steps' : 'result.steps';
    cancelSeen.steps = given.length;
    cancelSeen.steps_source = source;
    const sumOf = (k) => (given.some((st) => st.usage?.[k] != null)
      ? given.reduce((a, st) => a + (st.usage?.[k] ?? 0), 0) : null);
    const conversation = [...(cancelKept ? cancelKept.messages : [{ role: 'user', content: req.prompt }]),
      ...given.flatMap((st) => st.response?.messages ?? [])];
    await mkdir(req.snapshot_dir, { recursive: true });
    await writeFile(`${req.snapshot_dir}/${CANCEL_FILE}`, JSON.stringify({
      kind: 'cancel', steps: given.length, steps_source: source, messages: conversation,
      // what each step held (its parts' types), beside the messages: what a resume can and cannot continue from
      step_parts: given.map((st) => (st.content ?? []).map((p) => p?.type)) }));
    return {
      ...out, ended: 'cancelled', ...(thrown ? { thrown } : {}), step_count: given.length, step_count_source: source,
      usage: { input_tokens: sumOf('inputTokens'), output_tokens: sumOf('outputTokens'), source },
      tool_calls_requested: given.reduce((a, st) => a + (st.toolCalls?.length ?? 0), 0),
      finish_reason: output?.finishReason ?? null, text: aborted?.text ?? output?.text ?? null,
      snapshot: req.snapshot_dir,
    };
  }
  if (thrown) {
    return { ...out, ended: 'raised', thrown, step_count_source: 'onStepFinish callbacks',
      pending_before_resume: pauseBefore ? pauseBefore.pending.length : null };
  }
  if (output.error) {
    // Mastra returned (did not throw) with an error on the result: reported as it is, the adapter decides
    out.result_error = describeError(output.error);
  }

  const resultSteps = output.steps ?? [];
  const last = resultSteps.at(-1);
  const lastCalls = (last?.toolCalls ?? []).map(callOf);
  const lastResults = new Set((last?.toolResults ?? []).map((r) => r?.payload?.toolCallId ?? r?.toolCallId));
  const pending = [];
  if (output.finishReason === 'suspended') {
    const payloads = approvalChunks.length ? approvalChunks : (output.suspendPayload ? [output.suspendPayload] : []);
    const seen = new Set();
    for (const p of payloads) {
      if (!p?.toolCallId || seen.has(p.toolCallId)) continue;
      seen.add(p.toolCallId);
      // an approval inside a sub-agent suspends the parent on its delegation call (agent-<child>, the parent's
      // tool call id: the one approveToolCall* resumes), the child's own call nested in its suspendPayload (generate)
      // or in the child's forwarded chunk (stream; adapters/mastra/probes/subagent_usage.mjs): the pending call is
      // the child's, resumed through the parent's
      const inner = p.suspendPayload?.toolCallId ? p.suspendPayload : approvalChunks.nested?.get(p.toolCallId) ?? null;
      pending.push({ tool_call_id: p.toolCallId, call_id: neutralId(inner?.toolCallId ?? p.toolCallId),
        tool: inner?.toolName ?? p.toolName, input: inner?.args ?? p.args ?? {},
        ...(inner ? { delegated_by: neutralId(p.toolCallId) } : {}) });
    }
  }
  let snapshot = null;
  if (pending.length) {
    await mkdir(req.snapshot_dir, { recursive: true });
    await writeFile(`${req.snapshot_dir}/${PAUSE_FILE}`, JSON.stringify({ run_id: output.runId, pending, store: STORE_FILE }));
    snapshot = req.snapshot_dir;
    for (const p of pending) note('approval-request', { tool: p.tool, call_id: p.call_id });
  }
  const usage = output.totalUsage ?? output.usage ?? {};
  return {
    ...out,
    ended: pending.length ? 'paused' : 'returned',
    finish_reason: output.finishReason ?? null,
    run_id: output.runId ?? null,
    text: output.text ?? '',
    // the structured answer (a request with `output`): result.object
    ...(req.output ? { output: output.object ?? null } : {}),
    step_count: resultSteps.length,
    step_count_source: 'result.steps',
    usage: { input_tokens: usage.inputTokens ?? null, output_tokens: usage.outputTokens ?? null,
      source: output.totalUsage ? 'result.totalUsage' : 'result.usage' },
    tool_calls_requested: resultSteps.reduce((a, s) => a + (s.toolCalls?.length ?? 0), 0) + pending.length,
    // the children's runs, as each delegation tool's result said (Mastra's subagent output carries its usage)
    subagent_runs: resultSteps.flatMap((s) => s.toolResults ?? []).map((r) => r?.payload ?? r)
      .filter((r) => typeof r?.toolName === 'string' && r.toolName.startsWith('agent-')).map((r) => ({
        agent: r.toolName.slice('agent-'.length), call_id: neutralId(r.toolCallId ?? null),
        finish_reason: r.result?.finishReason ?? null, is_error: r.isError ?? null,
        input_tokens: r.result?.usage?.inputTokens ?? null, output_tokens: r.result?.usage?.outputTokens ?? null })),
    result_steps: resultSteps.map((s) => ({ finish_reason: s.finishReason ?? null,
      tool_calls: (s.toolCalls ?? []).map((c) => ({ call_id: neutralId(callOf(c).toolCallId), tool: callOf(c).toolName })) })),
    last_step: last ? {
      finish_reason: last.finishReason ?? null,
      tool_calls: lastCalls.length,
      tool_outputs: lastCalls.filter((c) => lastResults.has(c.toolCallId)).length,
      denied_stop_calls: lastCalls.filter((c) => stopTools.includes(c.toolName))
        .map((c) => ({ call_id: neutralId(c.toolCallId), tool: c.toolName })),
    } : null,
    pending,
    pending_before_resume: pauseBefore ? pauseBefore.pending.length : null,
    snapshot,
  };
}

// generate(): the output object itself; stream(): read the full stream (collecting the approval chunks, as the
// docs' loop does), then its full output
async function drive(res, streaming, approvalChunks, onAbortChunk = () => {}) {
  if (!streaming) return res;
  for await (const chunk of res.fullStream) {
    if (chunk.type === 'abort') onAbortChunk();
    if (chunk.type === 'tool-call-approval') approvalChunks.push(chunk.payload);
    // a sub-agent's own chunks come through as the delegation call's tool-output: its approval request names the
    // child's call, which the parent's tool-call-approval chunk (the delegation's id, the child's tool) does not
    const nested = chunk.type === 'tool-output' ? chunk.payload?.output : null;
    if (nested?.type === 'tool-call-approval' && nested.payload?.toolCallId) {
      approvalChunks.nested ??= new Map();
      approvalChunks.nested.set(chunk.payload.toolCallId, nested.payload);
    }
  }
  const full = await res.getFullOutput();
  return { ...full, runId: full.runId ?? res.runId, finishReason: full.finishReason ?? (await res.finishReason) };
}

serve({
  framework: 'Mastra',
  load: async () => {
    const [agentMod, coreMod, toolsMod, libsqlMod, zodMod] = await Promise.all([
      import('@mastra/core/agent'), import('@mastra/core'), import('@mastra/core/tools'), import('@mastra/libsql'),
      import('zod')]);
    sdk = { Agent: agentMod.Agent, Mastra: coreMod.Mastra, createTool: toolsMod.createTool,
      LibSQLStore: libsqlMod.LibSQLStore, z: zodMod.z };
    defaults = mastraDefaults();
  },
  hello: () => ({
    prepared_keep: PREPARED_KEEP,
    packages: packageVersions(HERE, ['@mastra/core', '@mastra/libsql', 'zod']),
    defaults,
  }),
  validate,
  ops: { prepare: prepareApp, run: runSegment, resume: runSegment },
});
