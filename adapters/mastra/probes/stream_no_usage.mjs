// Standalone (no loopbench code): agent.stream() through the model router's OpenAI-compatible config reports no
// token usage, because its request asks for none; agent.generate() reports it.
//
// A tiny local server speaks OpenAI Chat Completions (JSON, or SSE when the body has `stream: true`) and records
// each request body's `stream` and `stream_options`. Like OpenAI, it sends the usage chunk of a stream only when
// the request asks for it (`stream_options.include_usage`); a second pass makes it always send one, to show the
// stream reader would count usage that arrives (the gap is the request, not the parser). Every answer says
// prompt_tokens 11, completion_tokens 7.
//
// Why (@mastra/core 1.71.0 source): `ModelRouterLanguageModel.resolveLanguageModel` (dist/llm-*.js) builds a
// `{id, url, apiKey}` config as `createOpenAICompatible({name, apiKey, baseURL, headers,
// supportsStructuredOutputs: true}).chatModel(id)`, with no `includeUsage`; the vendored
// @ai-sdk/openai-compatible 2.0.62 `OpenAICompatibleChatLanguageModel.doStream` (dist/dist-*.js) sends
// `stream_options: this.config.includeUsage ? {include_usage: true} : undefined`. The config type
// (llm/model/shared.types.d.ts `OpenAICompatibleConfig`: id, url, apiKey, headers, api) has no field to set it.
//
// Run: adapters/mastra/node_modules/.bin/node adapters/mastra/probes/stream_no_usage.mjs
// Printed (@mastra/core 1.71.0):
//   server sends usage only when asked (as OpenAI does):
//     agent.generate(): request {"stream":"(absent)","stream_options":"(absent)"} -> usage {"inputTokens":11,"outputTokens":7,"totalTokens":18}, totalUsage {"inputTokens":11,"outputTokens":7,"totalTokens":18}
//     agent.stream(): request {"stream":true,"stream_options":"(absent)"} -> usage {"inputTokens":"undefined","outputTokens":"undefined","totalTokens":0}, totalUsage {"inputTokens":"undefined","outputTokens":"undefined","totalTokens":0}
//   server always sends a usage chunk:
//     agent.generate(): request {"stream":"(absent)","stream_options":"(absent)"} -> usage {"inputTokens":11,"outputTokens":7,"totalTokens":18}, totalUsage {"inputTokens":11,"outputTokens":7,"totalTokens":18}
//     agent.stream(): request {"stream":true,"stream_options":"(absent)"} -> usage {"inputTokens":11,"outputTokens":7,"totalTokens":18}, totalUsage {"inputTokens":11,"outputTokens":7,"totalTokens":18}
// So against an OpenAI-like server a stream's input/output tokens are undefined (unknown, not zero), while its
// totalTokens is a 0 nobody counted; generate() sends a non-streaming request and counts both.
import http from 'node:http';
import { Agent } from '@mastra/core/agent';

const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
let alwaysUsage = false;
const seen = [];

const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => { raw += c; });
  req.on('end', () => {
    const body = JSON.parse(raw || '{}');
    seen.push({ stream: body.stream ?? '(absent)', stream_options: body.stream_options ?? '(absent)' });
    const base = { id: 'chatcmpl-1', created: 0, model: body.model };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...base, object: 'chat.completion', usage: USAGE, choices: [
        { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello.' } }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (obj) => res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...obj })}\n\n`);
    send({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello.' }, finish_reason: null }] });
    send({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    if (alwaysUsage || body.stream_options?.include_usage) send({ choices: [], usage: USAGE });
    res.end('data: [DONE]\n\n');
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/v1`;

// the three counts as the result holds them (undefined shown as "undefined", not dropped by JSON)
const shown = (v) => (v === undefined ? 'undefined' : v);
const pick = (u) => ({ inputTokens: shown(u?.inputTokens), outputTokens: shown(u?.outputTokens),
  totalTokens: shown(u?.totalTokens) });

for (const [label, always] of [['server sends usage only when asked (as OpenAI does)', false],
  ['server always sends a usage chunk', true]]) {
  alwaysUsage = always;
  console.log(`${label}:`);
  const agent = new Agent({ id: 'probe', name: 'probe', instructions: 'Be brief.',
    model: { id: 'openai/gpt-4o-mini', url, apiKey: 'k' } });

  seen.length = 0;
  const gen = await agent.generate('hello');
  console.log(`  agent.generate(): request ${JSON.stringify(seen[0])} -> usage ${JSON.stringify(pick(gen.usage))}, `
    + `totalUsage ${JSON.stringify(pick(gen.totalUsage))}`);

  seen.length = 0;
  const out = await agent.stream('hello');
  for await (const _chunk of out.fullStream) { /* read to the end, as the docs' loop does */ }
  const full = await out.getFullOutput();
  console.log(`  agent.stream(): request ${JSON.stringify(seen[0])} -> usage ${JSON.stringify(pick(full.usage))}, `
    + `totalUsage ${JSON.stringify(pick(full.totalUsage))}`);
}
server.close();
