// Standalone (no loopbench code): what the AI SDK gives a caller that aborts while a tool runs (vercel/ai #8107:
// onAbort not called when aborted during a tool call), and what a caller keeps to continue the conversation.
//
// A tiny local Chat Completions server answers the first request with one call of `slow_lookup`. The tool awaits a
// 5 s timer and honours its execute's abortSignal. The caller passes an AbortController's signal (and onAbort,
// where the API has it) and aborts 0.5 s into the tool; onStepEnd records every step.
//
// Run: adapters/vercel/node_modules/.bin/node adapters/vercel/probes/abort_in_tool.mjs
// Printed (ai 7.0.173):
//   generateText: threw AbortError 0.00 s after the abort; onStepEnd steps 1 (parts tool-call,tool-error), response messages: assistant[tool-call] tool[tool-result], 1 request(s)
//   streamText: threw AbortError 0.01 s after the abort; onAbort called with 0 step(s); abort part: true; onStepEnd steps 0 (parts ), response messages: none, 1 request(s)
// streamText calls onAbort during a tool call (#8107 is fixed in this release), with no step: the step in flight is
// dropped. generateText has no onAbort; its onStepEnd still gets the step whose tool was aborted, with a tool-error
// part, so a caller that keeps onStepEnd's response messages continues with an error result for the aborted call.
import http from 'node:http';
import { generateText, jsonSchema, streamText, tool, isStepCount } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

let requests = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    requests += 1;
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const call = { id: 'call_1', type: 'function', function: { name: 'slow_lookup', arguments: '{"topic":"refund"}' } };
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, ...call }] }, finish_reason: null }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'r', object: 'chat.completion', created: 0, model: 'm', usage,
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }] }));
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' }).chat('m');

for (const api of ['generateText', 'streamText']) {
  requests = 0;
  const controller = new AbortController();
  let abortedAt = null;
  const tools = {
    slow_lookup: tool({
      description: 'Look up a policy', inputSchema: jsonSchema({ type: 'object', properties: { topic: { type: 'string' } } }),
      execute: (input, { abortSignal }) => new Promise((ok, fail) => {
        setTimeout(() => { abortedAt = performance.now(); controller.abort(); }, 500);
        const t = setTimeout(() => ok('Policy POL-7'), 5000);
        abortSignal?.addEventListener('abort', () => { clearTimeout(t); fail(abortSignal.reason); }, { once: true });
      }),
    }),
  };
  const stepsSeen = [];
  let onAbort = null;
  let abortPart = false;
  const call = { model, tools, prompt: 'Look up the refund policy.', stopWhen: isStepCount(5), abortSignal: controller.signal,
    onStepEnd: (step) => stepsSeen.push(step) };
  let how;
  try {
    if (api === 'generateText') {
      await generateText(call);
    } else {
      const r = streamText({ ...call, onAbort: ({ steps }) => { onAbort = steps.length; } });
      for await (const part of r.fullStream) if (part.type === 'abort') abortPart = true;
      await r.steps;
    }
    how = 'returned';
  } catch (error) {
    how = `threw ${error.name} ${((performance.now() - abortedAt) / 1000).toFixed(2)} s after the abort`;
  }
  const messages = stepsSeen.flatMap((s) => s.response.messages)
    .map((m) => `${m.role}[${Array.isArray(m.content) ? m.content.map((p) => p.type).join(',') : 'text'}]`);
  console.log(`${api}: ${how}; ${api === 'streamText' ? `onAbort ${onAbort == null ? 'not called' : `called with ${onAbort} step(s)`}; abort part: ${abortPart}; ` : ''}`
    + `onStepEnd steps ${stepsSeen.length} (parts ${stepsSeen.flatMap((s) => s.content.map((p) => p.type)).join(',')}), `
    + `response messages: ${messages.join(' ') || 'none'}, ${requests} request(s)`);
}
server.close();
