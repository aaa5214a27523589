// Standalone (no loopbench code): Mastra's structured output (`structuredOutput: {schema}` in agent.generate /
// agent.stream options, a zod schema whose check is a `.refine`) with a tool, against a fake Anthropic Messages server
// in this script. The server answers the first request with a get_ticket call, then each later request of the main
// agent with the k-th structured answer of a list (k = 1 + the assistant messages after the tool call: a correction
// is served only when the earlier answer is sent back). The model goes through the model router's own route
// (`anthropic/<model>`, base URL from ANTHROPIC_BASE_URL, as the adapter drives it). What it shows:
//   1. direct mode (no structuredOutput.model, the default): the schema is sent as Anthropic's
//      `output_config.format` {type: 'json_schema'} (no extra tool), the refinement in no schema;
//   2. direct mode, an answer failing the refinement: generate() throws a MastraError
//      STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED (domain AGENT, category SYSTEM, the zod error its cause) after 2
//      requests: no correction is asked; onStepFinish saw 2 steps, the second with finishReason 'error';
//      `maxProcessorRetries: 3` changes nothing (direct mode has no processor to retry);
//   3. the same with stream(): the fullStream carries an `error` chunk, getFullOutput() throws the same MastraError;
//   4. errorStrategy 'warn': returns normally after 2 requests with `object` undefined (the failure only logged);
//   5. processor mode (a structuredOutput.model: a structuring agent) with maxProcessorRetries 2 — the other
//      documented mechanism, not the adapter's: the main agent answers in text (no output_config), a fresh
//      structuring-agent call (output_config, no tools) structures it; a structure failing the refinement makes
//      Mastra re-ask the MAIN agent (a 'retry' step of the main loop) with a "[Processor Feedback] Your previous
//      response was not accepted: ... policy_id must be a policy id" block in its system prompt and WITHOUT its
//      earlier answer (3 messages: the prompt, the tool call, its result), then structure afresh. 5a: the second
//      structuring passes: 5 requests, object returned; 5b: every one fails: after the 2 retries the run returns
//      (no throw) with finishReason 'tripwire', object null, no error (7 requests; steps tool-calls, retry, retry,
//      tripwire). Here the fake server's structuring calls are counted per run, since each call has no history.
// Run (from the repo root): adapters/mastra/node_modules/.bin/node adapters/mastra/probes/output_invalid.mjs
import http from 'node:http';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

let answers = [];
let log = [];
let structurings = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const b = JSON.parse(body);
    const msgs = b.messages ?? [];
    const system = JSON.stringify(b.system ?? '');
    const structuring = !system.includes('You triage tickets');
    const firstAssistant = msgs.findIndex((m) => m.role === 'assistant');
    const after = firstAssistant < 0 ? -1 : msgs.slice(firstAssistant + 1).filter((m) => m.role === 'assistant').length;
    const tools = (b.tools ?? []).map((t) => t.name);
    let content;
    let stop = 'end_turn';
    let kind;
    if (structuring) {
      // the structuring agent (processor mode): each structuring call starts afresh (no earlier answer in it), so
      // here k counts the structuring calls of the run, to show what a second one does
      structurings += 1;
      const k = structurings;
      kind = `structuring #${k}`;
      content = [{ type: 'text', text: JSON.stringify(answers[Math.min(k, answers.length) - 1]) }];
    } else if (firstAssistant < 0) {
      kind = 'main: tool call';
      content = [{ type: 'tool_use', id: 'toolu_t1', name: 'get_ticket', input: { ticket_id: 'T-1' } }];
      stop = 'tool_use';
    } else if (b.output_config?.format || b.output_format) {
      const k = after + 1;
      kind = `main: answer #${k}`;
      content = [{ type: 'text', text: JSON.stringify(answers[Math.min(k, answers.length) - 1]) }];
    } else {
      // processor mode re-asks the main agent: where is it told why, and is its earlier answer sent back?
      const inSystem = system.includes('[Processor Feedback]');
      kind = `main: text${inSystem ? ' (Processor Feedback in system)' : ''}, ${msgs.length} messages`;
      content = [{ type: 'text', text: 'Ticket T-1 is urgent; the refund policy applies.' }];
    }
    log.push({ kind, tools, output_config: b.output_config?.format?.type ?? null, output_format: b.output_format?.type ?? null,
      stream: !!b.stream, messages: msgs.length });
    const usage = { input_tokens: 100, output_tokens: 10 };
    if (b.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      ev('message_start', { message: { id: `m${log.length}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
        content: [], stop_reason: null, usage: { input_tokens: 100, output_tokens: 0 } } });
      const c = content[0];
      if (c.type === 'tool_use') {
        ev('content_block_start', { index: 0, content_block: { ...c, input: {} } });
        ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(c.input) } });
      } else {
        ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
        ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: c.text } });
      }
      ev('content_block_stop', { index: 0 });
      ev('message_delta', { delta: { stop_reason: stop }, usage: { output_tokens: 10 } });
      ev('message_stop', {});
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: `m${log.length}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content,
      stop_reason: stop, stop_sequence: null, usage }));
  });
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
process.env.ANTHROPIC_BASE_URL = `http://127.0.0.1:${server.address().port}/v1`;
const model = { id: 'anthropic/claude-sonnet-4-5', apiKey: 'k' };

const getTicket = createTool({ id: 'get_ticket', description: 'Read a ticket',
  inputSchema: z.object({ ticket_id: z.string() }), execute: async () => 'ticket T-1: the customer asks for a refund' });
const agent = new Agent({ id: 'triage', name: 'triage', instructions: 'You triage tickets.', model,
  tools: { get_ticket: getTicket } });
const schema = z.strictObject({
  ticket_id: z.string(),
  priority: z.enum(['low', 'normal', 'urgent']),
  policy_id: z.string().refine((v) => /^POL-[0-9]+$/.test(v), { message: 'policy_id must be a policy id' }),
}).describe('The triage of one support ticket.');
const BAD_ID = { ticket_id: 'T-1', priority: 'urgent', policy_id: 'the refund policy' };
const GOOD = { ticket_id: 'T-1', priority: 'urgent', policy_id: 'POL-7' };

async function run(label, list, { streaming = false, structuredOutput = {}, extra = {} } = {}) {
  answers = list; log = []; structurings = 0;
  const steps = [];
  const chunks = [];
  const options = { maxSteps: 8, structuredOutput: { schema, ...structuredOutput }, ...extra,
    onStepFinish: (s) => steps.push(s.finishReason) };
  let outcome;
  try {
    let result;
    if (streaming) {
      const stream = await agent.stream('Read ticket T-1 and triage it.', options);
      for await (const c of stream.fullStream) if (['error', 'object-result'].includes(c.type)) chunks.push(c.type);
      result = await stream.getFullOutput();
    } else {
      result = await agent.generate('Read ticket T-1 and triage it.', options);
    }
    outcome = { returned: result.finishReason, object: result.object ?? null, error: result.error?.message ?? null,
      steps: result.steps?.length };
  } catch (e) {
    outcome = { threw: e.constructor?.name, id: e.id ?? null, domain: e.domain ?? null, category: e.category ?? null,
      message: e.message, cause: e.cause?.constructor?.name ?? null };
  }
  console.log(label);
  console.log('   ', JSON.stringify({ requests: log.length, onStepFinish: steps, ...(streaming ? { chunks } : {}), ...outcome }));
  console.log('    requests:', JSON.stringify(log.map((r) => `${r.kind} [tools ${r.tools.join(',') || '-'}; `
    + `output_config ${r.output_config}; output_format ${r.output_format}]`)));
}

await run('1. direct mode, valid answer (generate):', [GOOD]);
await run('2a. direct mode, refine fails then valid (generate):', [BAD_ID, GOOD]);
await run('2b. direct mode + maxProcessorRetries 3, refine fails then valid:', [BAD_ID, GOOD],
  { extra: { maxProcessorRetries: 3 } });
await run('3. direct mode, refine fails then valid (stream):', [BAD_ID, GOOD], { streaming: true });
await run("4. direct mode, errorStrategy 'warn', refine fails then valid:", [BAD_ID, GOOD],
  { structuredOutput: { errorStrategy: 'warn' } });
await run('5a. processor mode (structuredOutput.model) + maxProcessorRetries 2, refine fails then valid:', [BAD_ID, GOOD],
  { structuredOutput: { model }, extra: { maxProcessorRetries: 2 } });
await run('5b. processor mode + maxProcessorRetries 2, refine always fails:', [BAD_ID],
  { structuredOutput: { model }, extra: { maxProcessorRetries: 2 } });
server.close();
