// Standalone repro (no loopbench code): ai@7's structured output with tools (`output: Output.object({schema})`, a
// zod schema whose check is a `.refine`) against a fake provider server in this script that answers a tool call
// first, then the k-th structured answer of a list on the k-th request after it. What it shows:
//   1. what each provider sends for the schema: @ai-sdk/anthropic (structuredOutputMode 'auto', claude-sonnet-4-5)
//      `output_config.format` {type: 'json_schema'} and no extra tool; @ai-sdk/openai's chat model `response_format`
//      {type: 'json_schema', json_schema: {strict: true}}; the refinement is in neither schema;
//   2. an answer failing the refinement: generateText / ToolLoopAgent.generate throw NoObjectGeneratedError ("did
//      not match schema", its cause the zod issue) after 2 requests; the next answer (which would pass) is never
//      asked for: no correction, no retry knob; onStepEnd saw both steps; the error carries text and the last
//      step's usage only;
//   3. the same with streamText: fullStream ends normally (no error part), onError is not called, and `await
//      result.output` rejects with the same NoObjectGeneratedError (streamText parses when `output` is read);
//   4. an answer breaking the schema itself (an enum value outside it; a real strict provider could not send it):
//      the same NoObjectGeneratedError after 2 requests.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/output_invalid.mjs
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, Output, streamText, tool, ToolLoopAgent } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

let answers = []; // the structured answers, the k-th served on the k-th request after the tool result
let requests = 0;
let seen = []; // what each request asked for: its schema mechanism
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    requests += 1;
    const b = JSON.parse(body);
    const openai = req.url.endsWith('/chat/completions');
    const msgs = b.messages;
    const assistantAfterTool = (() => {
      const i = msgs.findIndex((m) => m.role === 'assistant');
      return i < 0 ? -1 : msgs.slice(i + 1).filter((m) => m.role === 'assistant').length;
    })();
    seen.push({
      path: req.url,
      tools: (b.tools ?? []).map((t) => t.name ?? t.function?.name),
      output_config: b.output_config ?? null,
      response_format: b.response_format ? { type: b.response_format.type, strict: b.response_format.json_schema?.strict,
        name: b.response_format.json_schema?.name } : null,
    });
    const first = assistantAfterTool < 0;
    const k = assistantAfterTool + 1;
    const answer = answers[Math.min(k, answers.length) - 1];
    res.setHeader('content-type', 'application/json');
    if (openai) {
      const message = first
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_t1', type: 'function',
          function: { name: 'get_ticket', arguments: '{"ticket_id":"T-1"}' } }] }
        : { role: 'assistant', content: JSON.stringify(answer) };
      res.end(JSON.stringify({ id: `c${requests}`, object: 'chat.completion', created: 0, model: 'claude-sonnet-4-5',
        choices: [{ index: 0, message, finish_reason: first ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } }));
      return;
    }
    const content = first ? [{ type: 'tool_use', id: 'toolu_t1', name: 'get_ticket', input: { ticket_id: 'T-1' } }]
      : [{ type: 'text', text: JSON.stringify(answer) }];
    if (b.stream) {
      res.setHeader('content-type', 'text/event-stream');
      const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      ev('message_start', { message: { id: `m${requests}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
        content: [], stop_reason: null, usage: { input_tokens: 100, output_tokens: 0 } } });
      if (first) {
        ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_t1', name: 'get_ticket', input: {} } });
        ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"ticket_id":"T-1"}' } });
      } else {
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: content[0].text } });
      }
      ev('content_block_stop', { index: 0 });
      ev('message_delta', { delta: { stop_reason: first ? 'tool_use' : 'end_turn' }, usage: { output_tokens: 10 } });
      ev('message_stop', {});
      res.end();
      return;
    }
    res.end(JSON.stringify({ id: `m${requests}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
      content, stop_reason: first ? 'tool_use' : 'end_turn', stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 10 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
const anthropic = createAnthropic({ baseURL, apiKey: 'k' })('claude-sonnet-4-5');
const openaiChat = createOpenAI({ baseURL, apiKey: 'k' }).chat('claude-sonnet-4-5');

const schema = z.strictObject({
  ticket_id: z.string(),
  priority: z.enum(['low', 'normal', 'urgent']),
  policy_id: z.string().refine((v) => /^POL-[0-9]+$/.test(v), { message: 'policy_id must be a policy id' }),
}).describe('The triage of one support ticket.');
const output = Output.object({ schema, name: 'TicketTriage', description: 'The triage of one support ticket.' });
const getTicket = tool({
  inputSchema: jsonSchema({ type: 'object', properties: { ticket_id: { type: 'string' } }, required: ['ticket_id'] }),
  execute: async () => 'ticket T-1: the customer asks for a refund',
});
const BAD_ID = { ticket_id: 'T-1', priority: 'urgent', policy_id: 'the refund policy' };
const GOOD = { ticket_id: 'T-1', priority: 'urgent', policy_id: 'POL-7' };
const BAD_ENUM = { ticket_id: 'T-1', priority: 'asap', policy_id: 'POL-7' };

const threw = (e) => ({ threw: e.name, message: e.message, cause: e.cause?.name ?? null,
  causeIssues: (() => { try { return JSON.parse(e.cause?.cause?.message ?? e.cause?.message ?? 'null'); } catch { return e.cause?.message ?? null; } })(),
  text: e.text ?? null, usage: e.usage ? { input: e.usage.inputTokens, output: e.usage.outputTokens } : null });

async function run(label, list, how, model = anthropic) {
  answers = list; requests = 0; seen = [];
  let steps = 0;
  let onErrorCalls = 0;
  let errorParts = 0;
  const common = { model, tools: { get_ticket: getTicket }, output, stopWhen: isStepCount(8),
    prompt: 'Read ticket T-1 and triage it.', onStepEnd: () => { steps += 1; } };
  let outcome;
  try {
    let result;
    if (how === 'generateText') result = await generateText(common);
    else if (how === 'ToolLoopAgent') {
      const { prompt, onStepEnd, ...settings } = common; // the agent's settings; the call's prompt and callback
      result = await new ToolLoopAgent(settings).generate({ prompt, onStepEnd });
    }
    else {
      result = streamText({ ...common, onError: () => { onErrorCalls += 1; } });
      for await (const part of result.fullStream) if (part.type === 'error') errorParts += 1;
    }
    outcome = { returned: true, output: await result.output };
  } catch (e) {
    outcome = threw(e);
  }
  console.log(label.padEnd(48), JSON.stringify({ requests, onStepEnd: steps,
    ...(how === 'streamText' ? { errorParts, onErrorCalls } : {}), ...outcome }));
  return seen;
}

const wire = await run('1a. anthropic generateText, valid answer:', [GOOD], 'generateText');
console.log('    what the requests carried:', JSON.stringify(wire));
const wireOpenAI = await run('1b. openai chat generateText, valid answer:', [GOOD], 'generateText', openaiChat);
console.log('    what the requests carried:', JSON.stringify(wireOpenAI));
await run('2a. generateText, refine fails then valid:', [BAD_ID, GOOD], 'generateText');
await run('2b. ToolLoopAgent.generate, refine fails then valid:', [BAD_ID, GOOD], 'ToolLoopAgent');
await run('2c. openai chat generateText, refine fails:', [BAD_ID, GOOD], 'generateText', openaiChat);
await run('3.  streamText, refine fails then valid:', [BAD_ID, GOOD], 'streamText');
await run('4.  generateText, enum broken then valid:', [BAD_ENUM, GOOD], 'generateText');
server.close();
