// Standalone repro against the raw SDK (ai 7.0.173, @ai-sdk/openai 4.0.118) with a tiny fake Chat Completions server.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/repro.mjs
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

let requests = 0;
let mode = 'always-tool';
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    requests += 1;
    const msgs = JSON.parse(body).messages;
    const toolMsgs = msgs.filter((m) => m.role === 'tool');
    let message;
    if (mode === 'always-tool' || (mode === 'approval' && toolMsgs.length === 0)) {
      const n = msgs.filter((m) => m.role === 'assistant').length + 1;
      message = { role: 'assistant', content: null, tool_calls: [{ id: `call_${n}`, type: 'function',
        function: { name: mode === 'approval' ? 'send' : 'search', arguments: JSON.stringify({ q: `q${n}` }) } }] };
    } else {
      message = { role: 'assistant', content: `done; tool said: ${toolMsgs.at(-1).content}` };
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'm',
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' }).chat('m');
const schema = jsonSchema({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] });

// 1. isStepCount(3) with a model that always calls a tool: no error, no flag.
let executions = 0;
const search = tool({ inputSchema: schema, execute: async () => { executions += 1; return 'nothing'; } });
const r1 = await generateText({ model, tools: { search }, prompt: 'go', stopWhen: isStepCount(3) });
console.log('1. isStepCount(3):', { requests, executions, steps: r1.steps.length, finishReason: r1.finishReason,
  text: r1.text, threw: false });

// 2. toolApproval function: how often is the approval point evaluated across pause + resume?
mode = 'approval'; requests = 0; executions = 0;
let checks = [];
const send = tool({ inputSchema: schema, execute: async () => { executions += 1; return 'sent'; } });
const toolApproval = { send: (input, { toolCallId }) => { checks.push(toolCallId); return 'user-approval'; } };
const r2 = await generateText({ model, tools: { send }, toolApproval, prompt: 'go', stopWhen: isStepCount(5) });
const reqPart = r2.content.find((p) => p.type === 'tool-approval-request');
console.log('2a. paused:', { finishReason: r2.finishReason, approvalChecks: checks.length, executions,
  request: { approvalId: reqPart.approvalId, toolCallId: reqPart.toolCall.toolCallId } });
const messages = JSON.parse(JSON.stringify([{ role: 'user', content: 'go' }, ...r2.response.messages]));
const approve = { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: reqPart.approvalId, approved: true }] };
const r3 = await generateText({ model, tools: { send }, toolApproval, messages: [...messages, approve], stopWhen: isStepCount(5) });
console.log('2b. resumed (approve):', { approvalChecks: checks, executions, text: r3.text });
// the same saved pause resumed again: the approved call runs again
const r4 = await generateText({ model, tools: { send }, toolApproval, messages: [...messages, approve], stopWhen: isStepCount(5) });
console.log('2c. same pause resumed twice:', { approvalChecks: checks.length, executions, text: r4.text });

// 3. toolApproval 'denied': the loop goes on (the model sees execution-denied).
requests = 0; executions = 0;
const r5 = await generateText({ model, tools: { send }, toolApproval: { send: 'denied' }, prompt: 'go', stopWhen: isStepCount(5) });
console.log('3. denied:', { requests, executions, finishReason: r5.finishReason, text: r5.text });
server.close();
