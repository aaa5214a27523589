// Standalone repro (no loopbench code): the two documented ways ai@7 says "no" to a tool call by policy.
//   A. toolApproval answering 'denied': the model sees execution-denied and the loop goes on (3 requests);
//   B. the same plus stopWhen: [isStepCount(8), hasToolCall('delete_account')]: the loop ends after the step
//      with the denied call (2 requests), returning normally: no exception, no flag, finishReason 'tool-calls'.
// Also shows what a reader can see afterwards (the evidence the loopbench adapter infers the stop from).
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/deny_stop.mjs
import http from 'node:http';
import { generateText, hasToolCall, isStepCount, jsonSchema, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

// A fake Chat Completions server: turn 1 reads the ticket, turn 2 deletes the account, turn 3 answers.
let requests = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    requests += 1;
    const msgs = JSON.parse(body).messages;
    const toolMsgs = msgs.filter((m) => m.role === 'tool');
    const call = (id, name, args) => ({ role: 'assistant', content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] });
    let message;
    if (toolMsgs.length === 0) message = call('call_ticket_1', 'get_ticket', { ticket_id: 'T-1' });
    else if (toolMsgs.length === 1) message = call('call_del_1', 'delete_account', { customer: 'ana@example.com' });
    else message = { role: 'assistant', content: `I could not delete the account (tool said: ${toolMsgs.at(-1).content})` };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: `r${requests}`, object: 'chat.completion', created: 0, model: 'm',
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' }).chat('m');

const executions = { get_ticket: 0, delete_account: 0 };
const mk = (name, out) => tool({
  inputSchema: jsonSchema({ type: 'object', properties: {}, additionalProperties: true }),
  execute: async () => { executions[name] += 1; return out; },
});
const tools = { get_ticket: mk('get_ticket', 'Ticket T-1: delete my account'), delete_account: mk('delete_account', 'deleted') };
const toolApproval = { delete_account: () => ({ type: 'denied', reason: 'denied by policy' }) };

async function run(label, stopWhen) {
  requests = 0; executions.get_ticket = 0; executions.delete_account = 0;
  let threw = null;
  let r;
  try {
    r = await generateText({ model, tools, toolApproval, prompt: 'Read ticket T-1 and do what it asks.', stopWhen });
  } catch (e) { threw = `${e.name}: ${e.message}`; }
  const last = r?.steps.at(-1);
  console.log(label, JSON.stringify({
    requests, executions: { ...executions }, threw, steps: r?.steps.length, finishReason: r?.finishReason,
    text: r?.text,
    last_step: last && { toolCalls: last.toolCalls.map((c) => c.toolName), content: last.content.map((p) => p.type),
      denied: last.content.filter((p) => p.type === 'tool-approval-response' && !p.approved)
        .map((p) => ({ tool: p.toolCall?.toolName, reason: p.reason })) },
  }));
}

await run('A. denied, stopWhen isStepCount(8)           :', isStepCount(8));
await run("B. denied, stopWhen [isStepCount(8), hasToolCall('delete_account')]:",
  [isStepCount(8), hasToolCall('delete_account')]);
// C/D. a stopWhen replaces generateText's default isStepCount(1) (D: 1 request; C: past step 1): an adapter
// adding hasToolCall must restate the step bound it keeps
await run("C. denied, stopWhen hasToolCall('delete_account') only:", hasToolCall('delete_account'));
await run('D. denied, no stopWhen (default isStepCount(1)):', undefined);
server.close();
