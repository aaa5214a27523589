// Standalone (no loopbench code): how Mastra's model router reaches a Claude model at a base URL of one's own.
//
// A tiny local server logs each request's path and auth headers, and answers Anthropic Messages
// (`POST /v1/messages`) and OpenAI Chat Completions (`POST /v1/chat/completions`) with one short text answer.
// Four Agents ask it once each with agent.generate():
//   1. `{id: 'anthropic/claude-sonnet-4-5', url: '<server>/v1', apiKey}`: the router's config with a `url`;
//   2. the same with `url: '<server>'` (no /v1);
//   3. `{id: 'anthropic/claude-sonnet-4-5', apiKey}` with ANTHROPIC_BASE_URL=<server>/v1 in the environment;
//   4. the same with `model: 'anthropic/claude-sonnet-4-5'` (a string) and ANTHROPIC_API_KEY set too.
//
// Why (@mastra/core 1.71.0 source, dist/llm-*.js `ModelRouterLanguageModel.resolveLanguageModel`): a config with
// a `url` is always built as `createOpenAICompatible({baseURL: url}).chatModel(id)` (or OpenAI Responses with
// `api: 'responses'`), whatever the provider prefix of `id` — so 1 and 2 speak Chat Completions, not Anthropic
// Messages. Without a `url` the router resolves `anthropic/...` through its models.dev gateway
// (dist/models-dev-*.js `ModelsDevGateway.resolveLanguageModel`, `case "anthropic"`): `createAnthropic({apiKey,
// baseURL: buildUrl(...)})`. The registry's `anthropic` entry has no `url`, so `buildUrl` gives undefined and the
// vendored @ai-sdk/anthropic takes its own setting `loadOptionalSetting({settingValue: baseURL,
// environmentVariableName: 'ANTHROPIC_BASE_URL'})`, default `https://api.anthropic.com/v1` — the versioned
// prefix, so the variable carries the `/v1`. The key is the config's `apiKey` (sent as `x-api-key`), else
// ANTHROPIC_API_KEY. So the router's Anthropic route (Anthropic Messages, @ai-sdk/anthropic) reaches another
// base URL through ANTHROPIC_BASE_URL, and only through it.
//
// Run: adapters/mastra/node_modules/.bin/node adapters/mastra/probes/anthropic_base_url.mjs
// Printed (@mastra/core 1.71.0):
//   1. {id: 'anthropic/claude-sonnet-4-5', url: <server>/v1, apiKey}: POST /v1/chat/completions (authorization: Bearer k1; x-api-key: -) -> "hello from chat completions"
//   2. {id: 'anthropic/claude-sonnet-4-5', url: <server>, apiKey}: POST /chat/completions (authorization: Bearer k2; x-api-key: -) -> "hello from chat completions"
//   3. {id: 'anthropic/claude-sonnet-4-5', apiKey} + ANTHROPIC_BASE_URL=<server>/v1: POST /v1/messages (authorization: -; x-api-key: k3; anthropic-version: 2023-06-01) model "claude-sonnet-4-5" -> "hello from messages"
//   4. 'anthropic/claude-sonnet-4-5' + ANTHROPIC_BASE_URL=<server>/v1, ANTHROPIC_API_KEY=k4: POST /v1/messages (authorization: -; x-api-key: k4; anthropic-version: 2023-06-01) model "claude-sonnet-4-5" -> "hello from messages"
import http from 'node:http';
import { Agent } from '@mastra/core/agent';

let seen = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    seen.push({ path: req.url, auth: req.headers.authorization ?? '-', key: req.headers['x-api-key'] ?? '-',
      version: req.headers['anthropic-version'], model: body.model });
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url.endsWith('/messages')) {
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: body.model,
        content: [{ type: 'text', text: 'hello from messages' }], stop_reason: 'end_turn', stop_sequence: null,
        usage: { input_tokens: 3, output_tokens: 4 } }));
    } else {
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 0, model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'hello from chat completions' },
          finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }));
    }
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const base = `http://127.0.0.1:${server.address().port}`;
const MODEL = 'anthropic/claude-sonnet-4-5';

const cases = [
  [`1. {id: '${MODEL}', url: <server>/v1, apiKey}`, () => ({ id: MODEL, url: `${base}/v1`, apiKey: 'k1' }), {}],
  [`2. {id: '${MODEL}', url: <server>, apiKey}`, () => ({ id: MODEL, url: base, apiKey: 'k2' }), {}],
  [`3. {id: '${MODEL}', apiKey} + ANTHROPIC_BASE_URL=<server>/v1`, () => ({ id: MODEL, apiKey: 'k3' }),
    { ANTHROPIC_BASE_URL: `${base}/v1` }],
  [`4. '${MODEL}' + ANTHROPIC_BASE_URL=<server>/v1, ANTHROPIC_API_KEY=k4`, () => MODEL,
    { ANTHROPIC_BASE_URL: `${base}/v1`, ANTHROPIC_API_KEY: 'k4' }],
];
for (const [label, model, env] of cases) {
  seen = [];
  delete process.env.ANTHROPIC_BASE_URL;
  delete process.env.ANTHROPIC_API_KEY;
  Object.assign(process.env, env);
  const agent = new Agent({ id: 'probe', name: 'probe', instructions: 'Be brief.', model: model() });
  let answer;
  try {
    answer = JSON.stringify((await agent.generate('hello')).text);
  } catch (error) {
    answer = `threw ${error.name}: ${error.message}`;
  }
  const sent = seen.map((s) => `${s.path} (authorization: ${s.auth}; x-api-key: ${s.key}`
    + `${s.version ? `; anthropic-version: ${s.version}` : ''})${s.version ? ` model "${s.model}"` : ''}`);
  console.log(`${label}: POST ${sent.join(', ') || '(no request)'} -> ${answer}`);
}
server.close();
