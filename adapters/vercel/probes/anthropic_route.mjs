// Standalone repro (no loopbench code): ai@7 driving Claude through its Anthropic provider (@ai-sdk/anthropic,
// `createAnthropic({baseURL, apiKey})(modelId)`, as the SDK's docs show for Claude) against a fake Anthropic
// Messages server. What it shows:
//   1. a three-turn run: `result.steps` has one entry per model response (3 requests, 3 steps), `result.usage`
//      sums the responses' usage, the tool call ids arrive as sent (`toolu_...`);
//   2. the SDK's own retries (maxRetries 2, 2 s then 4 s) on this provider, by the headers Anthropic documents:
//      a 429 `rate_limit_error` with `retry-after: 1` (honoured: 1 s), then a 500 `api_error` with no hint (the
//      exponential 4 s of the second retry), then the three turns: 5 requests over ~5.1 s, and the returned
//      result has 3 steps (the two failed attempts appear nowhere in it);
//   3. a 500 with no hint, forever: 3 requests over ~6 s, then a RetryError (reason maxRetriesExceeded) that
//      lists its attempts (`errors`) and carries no steps; `onStepEnd` saw none;
//   4. a 500 with `x-should-retry: false`: retried like any 500 (the provider reads no such header);
//   5. a `timeout: {totalMs}` passing during the second response: a TimeoutError (a DOMException, nothing of the
//      run on it); only `onStepEnd` had seen the first step.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/anthropic_route.mjs
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';

let plan = []; // per request: {status, headers} | {delayMs} | 'ok'
let requests = 0;
const paths = new Set();
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const step = plan[Math.min(requests, plan.length - 1)];
    requests += 1;
    paths.add(`${req.method} ${req.url} x-api-key=${req.headers['x-api-key']}`);
    if (step.status) {
      const type = step.status === 429 ? 'rate_limit_error' : 'api_error';
      res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
      res.end(JSON.stringify({ type: 'error', error: { type, message: `scripted ${step.status}` } }));
      return;
    }
    const msgs = JSON.parse(body).messages;
    const results = msgs.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b) => b.type === 'tool_result').length;
    const content = results < 2
      ? [{ type: 'tool_use', id: `toolu_call_${results + 1}`, name: 'search', input: { q: `q${results + 1}` } }]
      : [{ type: 'text', text: 'done' }];
    const answer = () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: `msg_${requests}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
        content, stop_reason: results < 2 ? 'tool_use' : 'end_turn', stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 10 } }));
    };
    if (step.delayMs) setTimeout(answer, step.delayMs); else answer();
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createAnthropic({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' })('claude-sonnet-4-5');
const search = tool({
  inputSchema: jsonSchema({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }),
  execute: async ({ q }) => `nothing for ${q}`,
});

async function run(label, steps, extra = {}) {
  plan = steps; requests = 0;
  let seen = 0;
  const t0 = performance.now();
  let outcome;
  try {
    const r = await generateText({ model, tools: { search }, prompt: 'go', stopWhen: isStepCount(8),
      onStepEnd: () => { seen += 1; }, ...extra });
    outcome = { returned: r.text, steps: r.steps.length, finishReasons: r.steps.map((s) => s.finishReason),
      usage: { input: r.usage.inputTokens, output: r.usage.outputTokens },
      toolCallIds: r.steps.flatMap((s) => s.toolCalls.map((c) => c.toolCallId)) };
  } catch (e) {
    const last = e.lastError ?? e;
    outcome = { threw: e.name, reason: e.reason ?? null, attempts: e.errors?.length ?? null,
      attemptStatuses: e.errors?.map((x) => x.statusCode) ?? null, lastStatus: last.statusCode ?? null,
      errorCarriesSteps: 'steps' in e, errorKeys: Object.keys(e) };
  }
  console.log(label.padEnd(44), JSON.stringify({ requests, seconds: +((performance.now() - t0) / 1000).toFixed(2),
    onStepEnd: seen, ...outcome }));
}

await run('1. three turns:', ['ok']);
await run('2. 429 (retry-after: 1), 500, then ok:',
  [{ status: 429, headers: { 'retry-after': '1' } }, { status: 500, headers: {} }, 'ok']);
await run('3. 500 forever, no hint:', [{ status: 500, headers: {} }]);
await run('4. 500 forever, x-should-retry: false:', [{ status: 500, headers: { 'x-should-retry': 'false' } }]);
await run('5. 2 s per response, timeout 3.5 s:', [{ delayMs: 2000 }], { timeout: { totalMs: 3500 } });
console.log('requests seen as:', [...paths].join('; '));
server.close();
