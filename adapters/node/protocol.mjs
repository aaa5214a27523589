// loopbench's Node line protocol, shared by every npm framework's driver (adapters/<dir>/driver.mjs imports it as
// `./protocol.mjs`, a link to this file that every copy of a driver's project holds as a file of its own).
// Documented in README.md beside this file; the Python side's models are adapters/node/protocol.py.
//
// What every driver shares lives here: stdout kept for protocol lines, the `hello`, reading requests and writing
// exactly one terminal line (`result` or `error`) per request with the request's events and the driver's CPU, the
// ledger's HTTP face (and the CPU spent in it: loopbench's own), the errors described, the tool calls and the
// authorize events reported, the policy's deny plan and the tool_choice rules. A driver supplies only what its
// framework does: how it imports the framework, its defaults, and one function per op.

import http from 'node:http';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

export const PROTOCOL_VERSION = 4;

// ---- keep stdout for the protocol only (everything a framework prints goes to stderr)
const writeProtocol = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => process.stderr.write(chunk, ...rest);
for (const name of ['log', 'info', 'debug']) console[name] = (...args) => console.error(...args);

function send(message) {
  writeProtocol(JSON.stringify(message) + '\n');
}

// `home`: the driver's own directory (its import.meta.url's), where its node_modules are
export function packageVersions(home, names) {
  const one = (name) => {
    try {
      return JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, home), 'utf8')).version;
    } catch {
      return null;
    }
  };
  return Object.fromEntries(names.map((n) => [n, one(n)]));
}

// the scripted call id: the provider's tool call id without its protocol's prefix (Chat Completions `call_`,
// Anthropic Messages `toolu_`)
export const neutralId = (id) => (typeof id === 'string' ? id.replace(/^(call_|toolu_)/, '') : id);

// a driver or harness problem (the ledger refused, a snapshot is unreadable): never a framework signal
export class HarnessError extends Error {
  name = 'HarnessError';
}

// an error as the adapter reads it: its name, constructor and message, the primitive fields frameworks set
// (the AI SDK's statusCode/isRetryable/..., Mastra's id/domain/category/timeoutType) and its cause chain
const ERROR_KEYS = ['id', 'domain', 'category', 'statusCode', 'isRetryable', 'reason', 'url', 'timeoutType', 'toolName',
  'toolCallId'];

export function describeError(error, depth = 0) {
  if (error == null || typeof error !== 'object') return { name: typeof error, message: String(error) };
  const out = {
    name: error.name ?? error.constructor?.name ?? 'Error',
    constructor: error.constructor?.name ?? null,
    message: String(error.message ?? '').slice(0, 1000),
  };
  for (const key of ERROR_KEYS) {
    if (error[key] !== undefined && typeof error[key] !== 'object') out[key] = error[key];
  }
  if (depth < 3) {
    if (error.lastError) out.lastError = describeError(error.lastError, depth + 1);
    if (Array.isArray(error.errors)) out.attempts = error.errors.length;
    if (error.cause) out.cause = describeError(error.cause, depth + 1);
  }
  return out;
}

// ---- the ledger's HTTP face
// CPU the driver spends in loopbench's own code: while at least one ledger call is in flight (counted once
// when calls overlap). Reported with every answer next to the driver's whole CPU for the request.
let ledgerInFlight = 0;
let ledgerSince = null;
let ledgerCpuUs = 0;
const cpuUs = () => { const u = process.cpuUsage(); return u.user + u.system; };

export async function ledgerPost(req, path, body, signal) {
  if (ledgerInFlight++ === 0) ledgerSince = cpuUs();
  try {
    return await ledgerPostOnce(req, path, body, signal);
  } finally {
    if (--ledgerInFlight === 0) ledgerCpuUs += cpuUs() - ledgerSince;
  }
}

// node:http with one keep-alive agent, not fetch: on this loopback call undici's fetch cost ~2.4 ms of CPU per
// call (measured by the driver's own cpu_us), on every tool call. An abort (the framework's abortSignal) destroys
// the request's socket, so the ledger sees the caller leave.
const ledgerAgent = new http.Agent({ keepAlive: true });

function ledgerPostOnce(req, path, body, signal) {
  const url = new URL(`${req.base_url.replace(/\/$/, '')}/ledger/${encodeURIComponent(req.run_id)}/${path}`);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST', agent: ledgerAgent, signal,
      headers: {
        'content-type': 'application/json', 'content-length': Buffer.byteLength(payload),
        'x-loopbench-token': req.ledger_token,
      },
    }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (response.statusCode < 200 || response.statusCode >= 300) {
          reject(new HarnessError(`ledger ${path} answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`));
          return;
        }
        try {
          resolve(JSON.parse(text));
        } catch {
          reject(new HarnessError(`ledger ${path} answered with no JSON: ${text.slice(0, 300)}`));
        }
      });
    });
    request.on('error', reject);
    request.end(payload);
  });
}

// ---- the caller's cancel. A request with a `cancel_url` (the scenario has a cancel) POSTs it at once: the ledger
// holds it open until the harness cancels the run ({"cancel": true, "at_s"}) or the run ends ({"cancel": false}).
// When told, the driver aborts its AbortController, whose `signal` the framework's call got as its `abortSignal`
// (both frameworks' documented cancel). The held request is not a ledger call: it runs on no keep-alive agent and
// outside the ledger CPU accounting (it is open for the whole run). `stop()` (the run ended) closes it.
export function watchCancel(req, io) {
  const controller = new AbortController();
  const seen = { told: false, at_s: null, aborted: false, abortedAt: null };
  if (!req.cancel_url) return { signal: undefined, seen: null, stop() {}, settled() { return null; } };
  let stopped = false;
  const request = http.request(req.cancel_url, {
    method: 'POST', agent: false,
    headers: { ...(req.cancel_headers ?? {}), 'content-type': 'application/json', 'content-length': 2 },
  }, (response) => {
    const chunks = [];
    response.on('data', (chunk) => chunks.push(chunk));
    response.on('error', () => {});
    response.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (response.statusCode < 200 || response.statusCode >= 300) {
        io.harnessErrors.push(`ledger cancel answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
        return;
      }
      let answer;
      try { answer = JSON.parse(text); } catch { io.harnessErrors.push(`ledger cancel answered no JSON: ${text.slice(0, 300)}`); return; }
      if (answer.cancel && !stopped) {
        seen.told = true;
        seen.at_s = answer.at_s ?? null;
        seen.aborted = true;
        seen.abortedAt = performance.now();
        controller.abort(); // the caller's cancel, as the frameworks' docs show it
      }
    });
  });
  request.on('error', (error) => { if (!stopped) io.harnessErrors.push(`ledger cancel: ${error.message}`); });
  request.end('{}');
  return {
    signal: controller.signal,
    seen,
    // the run ended: close the held request (the ledger answers {"cancel": false} to a caller that left)
    stop() { stopped = true; request.destroy(); },
    // the milliseconds from the abort to the framework's call settling (null: not aborted)
    settled() { return seen.abortedAt == null ? null : Math.round((performance.now() - seen.abortedAt) * 10) / 10; },
  };
}

// whether what a run threw is its abort: the abort reason itself (a DOMException AbortError, the default reason of
// controller.abort()) or an error caused by it, anywhere in its cause chain
export function causedByAbort(error, signal) {
  for (let e = error, depth = 0; e != null && depth < 6; e = e.cause ?? e.lastError, depth += 1) {
    if (signal?.aborted && e === signal.reason) return true;
    if (typeof e === 'object' && (e.name === 'AbortError' || e.constructor?.name === 'AbortError')) return true;
  }
  return false;
}

// `io`: the request's store ({events, harnessErrors}): what the tools report travels with its terminal line
export const emit = (io, event, data) => io.events.push({ event, ...data });

// a tool's execute: the call POSTed to the ledger with the scripted id; a ledger error is thrown, so the
// framework's own tool-error path applies (the model gets the error)
export async function callTool(req, io, tool, input, callId, signal) {
  emit(io, 'tool-start', { tool, call_id: callId });
  let answer;
  try {
    answer = await ledgerPost(req, 'call', { tool, args: input ?? {}, call_id: callId }, signal);
  } catch (error) {
    if (error instanceof HarnessError) io.harnessErrors.push(error.message);
    emit(io, 'tool-end', { tool, call_id: callId, ok: false, error: describeError(error).name });
    throw error;
  }
  emit(io, 'tool-end', { tool, call_id: callId, ok: answer.ok, error_kind: answer.error_kind ?? null });
  if (!answer.ok) throw new Error(answer.text);
  return answer.text;
}

// ---- the guard (a guarded variant only: the request carries `guard_url` and `guard_token`). loopbench.guard
// runs in the adapter's Python process (loopbench/guard/service.py); each hook of the framework is one POST, so
// the policy is written once. A stop is thrown as GuardStop, which ends the framework's run; `pause`, `refused`
// and `recorded` are answers for the hook to act on (README.md beside this file, "The guard").
export class GuardStop extends Error {
  name = 'GuardStop';
  constructor(stop) {
    super(`${stop.exit}${stop.measure ? ` (${stop.measure})` : ''}: ${stop.reason}`);
    this.exit = stop.exit;
    this.measure = stop.measure ?? null;
  }
}

const guardAgent = new http.Agent({ keepAlive: true });

function guardPost(req, op, body) {
  const url = new URL(`${req.guard_url.replace(/\/$/, '')}/guard/${op}`);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST', agent: guardAgent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload),
        'x-guard-token': req.guard_token },
    }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => {
        if (response.statusCode !== 200) {
          reject(new HarnessError(`guard ${op} answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`));
          return;
        }
        try { resolve(JSON.parse(text)); } catch { reject(new HarnessError(`guard ${op} answered no JSON`)); }
      });
    });
    request.on('error', (error) => reject(new HarnessError(`guard ${op}: ${error.message}`)));
    request.end(payload);
  });
}

// the guard's client for one request, or null (not a guarded variant). Every method throws GuardStop when the
// guard stops the task; `beforeToolCall` answers {held} (run it), {recorded} (this call id already ran: answer
// with it), {refused} (do not run it: tell the model) or {pause} (it needs a person's approval for exactly this
// call); `afterToolCall` answers the result to hand the model (bounded).
export function guardClient(req) {
  if (!req.guard_url) return null;
  const post = async (op, body) => {
    const answer = await guardPost(req, op, body);
    if (answer.stop) throw new GuardStop(answer.stop);
    return answer;
  };
  return {
    beforeModelCall: (agent = 'main') => post('before_model_call', { agent }),
    afterModelCall: (held, usage, agent = 'main') => post('after_model_call', {
      agent, held, input_tokens: usage?.inputTokens ?? 0, output_tokens: usage?.outputTokens ?? 0 }),
    modelCallFailed: (held, agent = 'main') => post('model_call_failed', { agent, held }),
    beforeToolCall: (tool, args, callId, agent = 'main') => post('before_tool_call', {
      agent, tool, args: args ?? {}, call_id: callId ?? null }),
    afterToolCall: async (held, tool, args, result, callId, agent = 'main') => (await post('after_tool_call', {
      agent, held, tool, args: args ?? {}, result, call_id: callId ?? null })).result,
    toolFailed: (held, tool, fatal, message, agent = 'main') => post('tool_failed', {
      agent, held, tool, fatal, message: String(message ?? '').slice(0, 500) }),
    toolTimedOut: (held, tool, args, agent = 'main') => post('tool_timed_out', { agent, held, tool, args: args ?? {} }),
    remaining: async () => (await post('remaining', {})).remaining_s ?? null,
    // the segment's wall-clock starts now (time in earlier segments stays): the time left
    startClock: async () => (await post('start_clock', {})).remaining_s ?? null,
    // the caller's abort signal fired: the guard records its `cancelled` exit (thrown as GuardStop)
    cancel: (message) => post('cancel', { message: String(message ?? '').slice(0, 500) }),
  };
}

// the framework's approval check point was reached: the ledger's `authorize` event, and the driver's
export async function authorize(req, io, tool, input, callId, decision) {
  await ledgerPost(req, 'authorize', { tool, args: input ?? {}, call_id: callId, decision });
  emit(io, 'authorize', { tool, call_id: callId, decision });
}

// the scenario's policy as a request states it: each tool's approval, the intent for denied tools, and the tools
// a stop intent ends the loop on
export function denyPlan(req) {
  const approvalOf = Object.fromEntries(req.tools.map((t) => [t.name, t.approval ?? 'none']));
  const intent = req.deny ?? 'stop';
  const deniedTools = req.tools.filter((t) => approvalOf[t.name] === 'deny').map((t) => t.name);
  return { approvalOf, intent, deniedTools, stopTools: intent === 'stop' ? deniedTools : [] };
}

// the first tool_choice rule that applies to the step about to be sent: `after: null` is the opening call (no tool
// result yet), `after: <regex>` the call after that scripted call's result (`trailing`: the results the step
// answers). A framework's driver reads both from its own messages.
export function pickToolChoice(rules, anyResults, trailing) {
  for (const rule of rules) {
    if (rule.after == null ? !anyResults : trailing.some((id) => new RegExp(rule.after).test(id))) {
      return ['auto', 'none', 'required'].includes(rule.choice) ? rule.choice : { type: 'tool', toolName: rule.choice };
    }
  }
  return null;
}

export const toolChoiceSetting = (rules) => `toolChoice per step: ${
  rules.map((r) => `${r.after ?? 'opening call'} -> ${r.choice}`).join('; ')}`;

// the structured answer a request asks for (`req.output`, only when the scenario has one) as a zod schema, built with
// the driver's own zod `z` (each framework's docs hand it a zod schema): exactly the spec's fields (`z.strictObject`:
// every field required, any other key rejected), a string field's enum as `z.enum`, an integer as `z.number().int()`,
// and the check as a zod refinement on its field (`.refine(fn, {message})`: the pattern searched, as Python's
// re.search does), which the framework's own validation applies beyond the JSON schema it sends
export function outputZod(z, spec) {
  const base = { string: () => z.string(), integer: () => z.number().int(), number: () => z.number(),
    boolean: () => z.boolean() };
  const shape = {};
  for (const [name, field] of Object.entries(spec.fields)) {
    if (!Object.hasOwn(base, field.type)) throw new HarnessError(`output field ${name}: unknown type ${field.type}`);
    let t = field.enum ? z.enum(field.enum) : base[field.type]();
    if (spec.check?.field === name) {
      const pattern = new RegExp(spec.check.pattern);
      t = t.refine((v) => typeof v === 'string' && pattern.test(v), { message: spec.check.message });
    }
    if (field.description) t = t.describe(field.description);
    shape[name] = t;
  }
  return z.strictObject(shape).describe(spec.description);
}

// how outputZod built the schema and its check (for a driver's settings and mechanisms)
export const outputZodWords = (spec) => ({
  schema: `z.strictObject({${Object.entries(spec.fields).map(([n, f]) => `${n}: ${f.enum ? `z.enum(${JSON.stringify(f.enum)})`
    : f.type === 'integer' ? 'z.number().int()' : `z.${f.type}()`}`).join(', ')}}).describe(<description>)`,
  check: spec.check ? `z.${spec.fields[spec.check.field]?.type ?? 'string'}().refine(v => /${spec.check.pattern}/.test(v), `
    + `{message}) on ${spec.check.field}` : null,
});

// the fields every request of an op carries (the framework's own come on top: `extra`)
const NEEDS = {
  prepare: ['variant', 'base_url', 'api_key', 'run_id', 'ledger_token', 'model_id', 'tools'],
  run: ['variant', 'base_url', 'api_key', 'run_id', 'ledger_token', 'model_id', 'prompt', 'tools', 'snapshot_dir'],
  resume: ['variant', 'base_url', 'api_key', 'run_id', 'ledger_token', 'model_id', 'tools', 'snapshot_dir', 'snapshot',
    'decisions'],
};

// what is wrong with a request (null when nothing): the shared fields, then `extra` fields the driver needs
export function checkRequest(req, extra = []) {
  const missing = [...NEEDS[req.op], ...extra].filter((k) => req[k] === undefined || req[k] === null);
  if (missing.length) return `missing field(s): ${missing.join(', ')}`;
  if (!Array.isArray(req.tools)) return '`tools` must be a list';
  if (req.deny != null && !['stop', 'continue'].includes(req.deny)) return `unknown deny intent ${JSON.stringify(req.deny)}`;
  if (req.tool_choice != null && !Array.isArray(req.tool_choice)) return '`tool_choice` must be a list of rules';
  if (req.agents != null && !Array.isArray(req.agents)) return '`agents` must be a list';
  const names = new Set(req.tools.map((t) => t.name));
  for (const a of req.agents ?? []) {
    if (typeof a?.id !== 'string' || typeof a.instructions !== 'string' || !Array.isArray(a.tools)) {
      return 'an agent needs `id`, `instructions` and a list of `tools`';
    }
    const unknown = a.tools.filter((t) => !names.has(t));
    if (unknown.length) return `agent ${a.id} names tools the request does not carry: ${unknown.join(', ')}`;
  }
  return null;
}

// the agents of a request: the main agent's tool specs (those no child names) and each child with its own specs
export function agentsPlan(req) {
  const children = (req.agents ?? []).map((a) => ({
    ...a, specs: a.tools.map((name) => req.tools.find((t) => t.name === name)),
  }));
  const owned = new Set(children.flatMap((c) => c.tools));
  return { mainSpecs: req.tools.filter((t) => !owned.has(t.name)), children };
}

// ---- serving: `load` imports the framework (a failure is a refusing hello), `hello` the driver's own hello fields,
// `validate(req)` the problem with a request (or null), `ops` one async function per op (ping is the protocol's),
// answering the op's fields; `around(store, fn)` runs a request's op (e.g. inside an AsyncLocalStorage).
export async function serve({ framework, load, hello, validate, ops, around = (store, fn) => fn() }) {
  try {
    await load();
  } catch (error) {
    send({ type: 'hello', ok: false, protocol: PROTOCOL_VERSION, error: `cannot import ${framework}: ${error.message}` });
    process.exit(1);
  }
  send({ type: 'hello', ok: true, protocol: PROTOCOL_VERSION, pid: process.pid, node: process.version, ...hello() });
  const known = ['ping', ...Object.keys(ops)];
  const expected = `${known.slice(0, -1).join(', ')} or ${known.at(-1)}`;

  async function handle(req) {
    if (req.op === 'ping') return { id: req.id, type: 'result', pong: true, pid: process.pid };
    const problem = validate(req);
    if (problem) return { id: req.id, type: 'error', error: `bad ${req.op} request: ${problem}` };
    const store = { warnings: [], harnessErrors: [], events: [] };
    try {
      const answer = await around(store, () => ops[req.op](req, store));
      return { id: req.id, type: 'result', ...answer, events: store.events };
    } catch (error) {
      // a driver or harness problem (snapshot unreadable, ledger refused...), not a framework signal
      const d = describeError(error);
      return {
        id: req.id, type: 'error', error: `${d.name}: ${d.message}`, detail: d, stack: error?.stack ?? null,
        events: store.events,
      };
    }
  }

  const inflight = new Set();
  function onLine(line) {
    if (!line.trim()) return;
    let req;
    try {
      req = JSON.parse(line);
    } catch (error) {
      send({ id: null, type: 'error', error: `malformed request (not JSON): ${error.message}` });
      return;
    }
    if (req === null || typeof req !== 'object' || Array.isArray(req)) {
      send({ id: null, type: 'error', error: 'malformed request: not a JSON object' });
      return;
    }
    const id = typeof req.id === 'string' || typeof req.id === 'number' ? req.id : null;
    if (id === null) {
      send({ id: null, type: 'error', error: 'malformed request: `id` must be a string or a number' });
      return;
    }
    if (!known.includes(req.op)) {
      send({ id, type: 'error', error: `unknown op ${JSON.stringify(req.op)} (expected ${expected})` });
      return;
    }
    // one request at a time per worker: the process's CPU over the request is the request's
    const cpuStart = cpuUs();
    const ownStart = ledgerCpuUs;
    const work = handle(req)
      .catch((error) => ({ id, type: 'error', error: `driver bug: ${error?.stack ?? error}` }))
      .then((answer) => send({ ...answer, cpu_us: cpuUs() - cpuStart, own_cpu_us: ledgerCpuUs - ownStart }))
      .finally(() => inflight.delete(work));
    inflight.add(work);
  }

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', onLine);
  // the adapter closed our stdin: finish what is in flight (its answers may still be read), then leave
  lines.on('close', () => Promise.allSettled([...inflight]).then(() => process.exit(0)));
}
