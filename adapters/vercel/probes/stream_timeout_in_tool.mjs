// Standalone repro (no loopbench code): a `timeout: {totalMs}` that passes while a tool runs, in generateText and
// in streamText (its fullStream read to the end), ai@7 with Claude through @ai-sdk/anthropic against a fake
// Anthropic Messages server (a plain JSON answer, or an SSE stream when the request says `stream: true`). The
// model calls a tool that takes 3 s; the timeout is 1.5 s. Printed for each: the requests (streamed or not),
// how many steps `onStepEnd` saw with their usage, the `onLanguageModelCallEnd` calls, the error, and for
// streamText the fullStream's part types.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/stream_timeout_in_tool.mjs
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, streamText, tool } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';

let requests = [];
const USAGE = { input_tokens: 1000, output_tokens: 100 };
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const { stream } = JSON.parse(body);
    requests.push(stream ? 'stream' : 'plain');
    const call = { type: 'tool_use', id: 'toolu_ticket_1', name: 'get_ticket', input: { ticket_id: 'T-1' } };
    if (!stream) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
        content: [call], stop_reason: 'tool_use', stop_sequence: null, usage: USAGE }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const emit = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    emit('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
      content: [], stop_reason: null, stop_sequence: null, usage: { ...USAGE, output_tokens: 0 } } });
    emit('content_block_start', { index: 0, content_block: { ...call, input: {} } });
    emit('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.input) } });
    emit('content_block_stop', { index: 0 });
    emit('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 100 } });
    emit('message_stop', {});
    res.end();
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createAnthropic({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' })('claude-sonnet-4-5');
const get_ticket = tool({
  inputSchema: jsonSchema({ type: 'object', properties: { ticket_id: { type: 'string' } }, required: ['ticket_id'] }),
  execute: async (_input, { abortSignal }) => new Promise((resolve, reject) => {
    const t = setTimeout(() => resolve('ticket T-1: a refund'), 3000);
    abortSignal?.addEventListener('abort', () => { clearTimeout(t); reject(abortSignal.reason); });
  }),
});

async function run(label, streamed) {
  requests = [];
  const seen = { onStepEnd: [], onLanguageModelCallEnd: 0 };
  const options = { model, tools: { get_ticket }, prompt: 'Read ticket T-1.', stopWhen: isStepCount(5),
    timeout: { totalMs: 1500 },
    onStepEnd: (s) => seen.onStepEnd.push({ finish: s.finishReason, in: s.usage?.inputTokens, out: s.usage?.outputTokens }),
    onLanguageModelCallEnd: () => { seen.onLanguageModelCallEnd += 1; } };
  const out = {};
  try {
    if (streamed) {
      const parts = [];
      const r = streamText({ ...options, onError: ({ error }) => { out.onError = error?.name; } });
      for await (const p of r.fullStream) parts.push(p.type);
      out.parts = parts;
      out.usage = await r.usage;
    } else {
      const r = await generateText(options);
      out.usage = r.usage;
    }
  } catch (e) {
    out.threw = e?.name;
  }
  console.log(label.padEnd(12), JSON.stringify({ requests, ...seen, ...out }));
}

await run('generateText', false);
await run('streamText', true);
server.close();
