// Standalone (no loopbench code): what a Mastra Agent reports when its caller aborts while a tool runs, against the
// same abort while a model request is in flight.
//
// A tiny local Chat Completions server answers the first request with one call of `slow_lookup` at once and the
// second (after the tool's result) 3 s late, with text. The tool awaits a 5 s timer and honours the execute
// context's abortSignal, as docs-agents-tools.md's fetch does. The caller passes an AbortController's signal and
// onAbort to agent.generate() / agent.stream() (reference-agents-generate.md) and aborts 0.5 s into the tool (case
// `tool`) or ~1 s into the second model request (case `model`).
//
// Run: adapters/mastra/node_modules/.bin/node adapters/mastra/probes/abort_in_tool.mjs
// Printed (@mastra/core 1.71.0):
//   generate / tool: returned in 0.02 s after the abort: finishReason tool-calls, error undefined, steps 1, onAbort not called, 1 request(s), 0.7 s in all
//   generate / model: returned in 0.01 s after the abort: finishReason aborted, error undefined, steps 1, onAbort called with 1 step(s) (parts tool-call,tool-result; response messages assistant[tool-call] tool[]), 2 request(s), 6.0 s in all
//     continued from them: the first request sends [system,user]
//   stream / tool: returned in 0.00 s after the abort: finishReason tool-calls, error undefined, steps 1, onAbort not called, no abort chunk, 1 request(s), 0.6 s in all
//   stream / model: returned in 0.01 s after the abort: finishReason aborted, error undefined, steps 1, onAbort called with 1 step(s) (parts tool-call,tool-result; response messages assistant[tool-call] tool[]), an abort chunk, 2 request(s), 6.0 s in all
// An abort while a tool runs stops the run at once, but Mastra reports a normal end: no onAbort, no abort chunk, no
// error, finishReason 'tool-calls' (the AI SDK's #8107 symptom, in Mastra's loop); during a model request it
// returns finishReason 'aborted' and calls onAbort, whose steps hold the finished call and its result among their
// parts, but their response messages hold an empty tool message; continued from those messages, Mastra sends the
// prompt alone (the call without a result is dropped), so the model asks for the finished tool again.
import http from 'node:http';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

let requests = 0;
const sentMessages = []; // each request's message roles
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    requests += 1;
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    sentMessages.push(body.messages.map((m) => m.role).join(','));
    const hasResult = body.messages.some((m) => m.role === 'tool');
    const message = hasResult ? { role: 'assistant', content: 'Policy POL-7 applies.' } : {
      role: 'assistant', content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'slow_lookup', arguments: '{"topic":"refund"}' } }],
    };
    const answer = {
      id: `r${requests}`, object: 'chat.completion', created: 0, model: 'm',
      choices: [{ index: 0, message, finish_reason: hasResult ? 'stop' : 'tool_calls' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    };
    const send = () => { if (!res.destroyed) { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(answer)); } };
    if (body.stream) {
      // the stream variant: the same answer as SSE chunks
      const delta = hasResult ? { role: 'assistant', content: message.content }
        : { role: 'assistant', tool_calls: [{ index: 0, ...message.tool_calls[0] }] };
      const sse = () => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
        res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: hasResult ? 'stop' : 'tool_calls' }], usage: answer.usage })}\n\n`);
        res.end('data: [DONE]\n\n');
      };
      setTimeout(sse, hasResult ? 3000 : 0);
      return;
    }
    setTimeout(send, hasResult ? 3000 : 0);
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/v1`;

let toolStarted = null;
const slowLookup = createTool({
  id: 'slow_lookup', description: 'Look up a policy', inputSchema: z.object({ topic: z.string() }),
  execute: (input, { abortSignal }) => new Promise((ok, fail) => {
    toolStarted?.();
    const t = setTimeout(() => ok('Policy POL-7'), 5000);
    abortSignal?.addEventListener('abort', () => { clearTimeout(t); fail(abortSignal.reason); }, { once: true });
  }),
});

for (const mode of ['generate', 'stream']) {
  for (const during of ['tool', 'model']) {
    requests = 0;
    const agent = new Agent({ id: 'probe', name: 'probe', instructions: 'Be brief.',
      model: { id: 'openai/m', url, apiKey: 'k' }, tools: { slow_lookup: slowLookup } });
    const controller = new AbortController();
    let onAbort = null;
    const began = performance.now();
    let abortedAt;
    const arm = () => setTimeout(() => { abortedAt = performance.now(); controller.abort(); }, 500);
    toolStarted = during === 'tool' ? arm : null;
    const options = { abortSignal: controller.signal, onAbort: ({ steps, text }) => {
      onAbort = { steps: steps.length, text,
        kept: steps.flatMap((st) => st.response?.messages ?? []),
        // what a caller would keep to continue: each step's parts and its response messages
        parts: steps.flatMap((st) => (st.content ?? []).map((p) => p.type)).join(','),
        messages: steps.flatMap((st) => st.response?.messages ?? [])
          .map((m) => `${m.role}[${Array.isArray(m.content) ? m.content.map((p) => p.type).join(',') : 'text'}]`).join(' ') };
    } };
    let line;
    try {
      let out;
      let abortChunk = false;
      if (during === 'model') setTimeout(() => { abortedAt = performance.now(); controller.abort(); }, 5500 + 500);
      if (mode === 'generate') {
        out = await agent.generate('Look up the refund policy.', options);
      } else {
        const s = await agent.stream('Look up the refund policy.', options);
        for await (const chunk of s.fullStream) if (chunk.type === 'abort') abortChunk = true;
        out = await s.getFullOutput();
      }
      line = `returned in ${((performance.now() - abortedAt) / 1000).toFixed(2)} s after the abort: finishReason `
        + `${out.finishReason}, error ${out.error?.name}, steps ${out.steps?.length}, `
        + `${onAbort ? `onAbort called with ${onAbort.steps} step(s) (parts ${onAbort.parts}; response messages `
          + `${onAbort.messages})` : 'onAbort not called'}`
        + `${mode === 'stream' ? (abortChunk ? ', an abort chunk' : ', no abort chunk') : ''}`;
    } catch (error) {
      line = `threw ${error.name} ${((performance.now() - abortedAt) / 1000).toFixed(2)} s after the abort, `
        + `${onAbort ? `onAbort called with ${onAbort.steps} step(s)` : 'onAbort not called'}`;
    }
    console.log(`${mode} / ${during}: ${line}, ${requests} request(s), ${((performance.now() - began) / 1000).toFixed(1)} s in all`);
    if (mode === 'generate' && during === 'model' && onAbort) {
      // continue from the prompt plus the kept response messages, as a conversation is continued: what is sent?
      sentMessages.length = 0;
      toolStarted = null;
      const again = new Agent({ id: 'probe', name: 'probe', instructions: 'Be brief.',
        model: { id: 'openai/m', url, apiKey: 'k' }, tools: { slow_lookup: slowLookup } });
      const cont = again.generate([{ role: 'user', content: 'Look up the refund policy.' }, ...onAbort.kept], { maxSteps: 1 });
      await cont.catch(() => {});
      console.log(`  continued from them: the first request sends [${sentMessages[0]}]`);
    }
  }
}
server.close();
