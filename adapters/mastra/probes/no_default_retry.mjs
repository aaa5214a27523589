// Standalone (no loopbench code): a Mastra Agent does not retry a failed model call by default.
//
// A tiny local server answers every /v1/chat/completions request with HTTP 429 (an OpenAI-style error body, no
// retry hint). An Agent built with the model router's OpenAI-compatible config is asked once with
// agent.generate(), then once more with `maxRetries: 2` on the Agent. The Agent's `maxRetries` defaults to 0
// (`this.maxRetries = config.maxRetries ?? 0`) and the loop takes `modelSettings.maxRetries` from it, so the
// `?? 2` fallback of the loop's p-retry never applies.
//
// Run: adapters/mastra/node_modules/.bin/node adapters/mastra/probes/no_default_retry.mjs
// Printed (@mastra/core 1.71.0):
//   default Agent: threw AI_APICallError after 1 request(s)
//   Agent maxRetries: 2: threw AI_APICallError after 3 request(s)
import http from 'node:http';
import { Agent } from '@mastra/core/agent';

let requests = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    requests += 1;
    res.writeHead(429, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }));
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/v1`;

for (const [label, extra] of [['default Agent', {}], ['Agent maxRetries: 2', { maxRetries: 2 }]]) {
  requests = 0;
  const agent = new Agent({ id: 'probe', name: 'probe', instructions: 'Be brief.',
    model: { id: 'openai/gpt-4o-mini', url, apiKey: 'k' }, ...extra });
  try {
    await agent.generate('hello');
    console.log(`${label}: returned after ${requests} request(s)`);
  } catch (error) {
    console.log(`${label}: threw ${error.name} after ${requests} request(s)`);
  }
}
server.close();
