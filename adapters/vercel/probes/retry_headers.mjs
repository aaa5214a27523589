// Standalone repro (no loopbench code): how ai@7's default retries (maxRetries 2) treat an always-failing
// Chat Completions endpoint, by the headers of the 500 it gets:
//   - no hint (what a provider that is down sends);
//   - `retry-after-ms: 10` (a speed hint loopbench's server used to add; real providers do not send it);
//   - `x-should-retry: false` (what OpenAI/Anthropic send for "do not retry");
// and a 429 then a 500 then success, with no hints (model_transient_error's shape).
// Prints the requests the server saw, the wall time and what generateText threw.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/retry_headers.mjs
import http from 'node:http';
import { generateText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

let plan = []; // per request: {status, headers} or 'ok'
let requests = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const step = plan[Math.min(requests, plan.length - 1)];
    requests += 1;
    if (step === 'ok') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
      return;
    }
    res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    res.end(JSON.stringify({ error: { message: 'The server had an error.', type: 'server_error', param: null, code: null } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' }).chat('m');

async function run(label, steps) {
  plan = steps; requests = 0;
  const t0 = performance.now();
  let outcome;
  try {
    const r = await generateText({ model, prompt: 'hi' });
    outcome = { returned: r.text };
  } catch (e) {
    const last = e.lastError ?? e;
    outcome = { threw: e.name, reason: e.reason ?? null, attempts: e.errors?.length ?? null,
      lastStatus: last.statusCode ?? null, lastIsRetryable: last.isRetryable ?? null };
  }
  console.log(label.padEnd(46), JSON.stringify({ requests, seconds: +((performance.now() - t0) / 1000).toFixed(2), ...outcome }));
}

await run('500 forever, no hint:', [{ status: 500, headers: {} }]);
await run('500 forever, retry-after-ms: 10:', [{ status: 500, headers: { 'retry-after-ms': '10' } }]);
await run('500 forever, x-should-retry: false:', [{ status: 500, headers: { 'x-should-retry': 'false' } }]);
await run('429, 500, then 200 (no hints):', [{ status: 429, headers: {} }, { status: 500, headers: {} }, 'ok']);
server.close();
