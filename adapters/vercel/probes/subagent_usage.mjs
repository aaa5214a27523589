// Standalone repro (no loopbench code): a sub-agent as the AI SDK's subagents docs show it (a tool whose execute
// runs the child's own loop and returns its text), against a fake Chat Completions server that tells the two
// agents apart by their system prompt and serves 100 input / 10 output tokens per request.
//   A. usage: the parent's result.usage holds its own 2 requests only (200/20), not the child's 2 (the server
//      served 4); the child's usage is only in the child's own result;
//   B. approval inside the child: the child's generateText returns with a tool-approval-request part; the parent
//      never sees it (the tool's output is the child's empty text) and goes on to answer: no pause.
// Run (from the repo root): adapters/vercel/node_modules/.bin/node adapters/vercel/probes/subagent_usage.mjs
// Printed (ai 7):
//   A. usage                    : {"served":{"main":2,"billing":2},"parent":{"steps":2,"usage":[200,20],...},
//                                  "child":{"steps":2,"usage":[200,20],"text":"Refund RF-88.","last_content":["text"]}}
//   B. approval inside the child: {"served":{"main":2,"billing":1},"parent":{"steps":2,"usage":[200,20],
//                                  "finishReason":"stop","text":"RF-88"},"child":{"steps":1,"usage":[100,10],"text":"",
//                                  "last_content":["tool-call","tool-approval-request"]}}
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const served = { main: 0, billing: 0 };
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const msgs = JSON.parse(body).messages;
    const agent = msgs.find((m) => m.role === 'system')?.content.includes('billing specialist') ? 'billing' : 'main';
    served[agent] += 1;
    const tools = msgs.filter((m) => m.role === 'tool').length;
    const call = (id, name, args) => ({ role: 'assistant', content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] });
    let message;
    if (agent === 'main') message = tools ? { role: 'assistant', content: 'RF-88' } : call('call_a1', 'billing', { task: 'Was 1042 refunded?' });
    else message = tools ? { role: 'assistant', content: 'Refund RF-88.' } : call('call_r1', 'lookup_refund', { order_id: '1042' });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: 'r', object: 'chat.completion', created: 0, model: 'm',
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' }).chat('m');

async function run(label, childApproval) {
  served.main = 0; served.billing = 0;
  let child = null;
  const lookup = tool({ inputSchema: jsonSchema({ type: 'object', properties: { order_id: { type: 'string' } } }),
    execute: async () => 'refunded: RF-88' });
  const billing = tool({
    description: 'The billing specialist.',
    inputSchema: jsonSchema({ type: 'object', properties: { task: { type: 'string' } }, required: ['task'] }),
    execute: async ({ task }, { abortSignal }) => {
      const r = await generateText({ model, system: 'You are the billing specialist.', tools: { lookup_refund: lookup },
        ...(childApproval ? { toolApproval: { lookup_refund: () => 'user-approval' } } : {}),
        stopWhen: isStepCount(20), prompt: task, abortSignal });
      child = { steps: r.steps.length, usage: [r.usage.inputTokens, r.usage.outputTokens], text: r.text,
        last_content: r.steps.at(-1).content.map((p) => p.type) };
      return r.text;
    },
  });
  const r = await generateText({ model, system: 'You are the support lead.', tools: { billing },
    stopWhen: isStepCount(8), prompt: 'Was order 1042 refunded?' });
  console.log(label, JSON.stringify({ served: { ...served }, parent: { steps: r.steps.length,
    usage: [r.usage.inputTokens, r.usage.outputTokens], finishReason: r.finishReason, text: r.text }, child }));
}

await run('A. usage                    :', false);
await run('B. approval inside the child:', true);
server.close();
