// Standalone (no loopbench code): a Mastra supervisor agent with a sub-agent (`new Agent({..., agents: {billing}})`,
// which Mastra offers the model as a tool `agent-billing`), against a local Chat Completions server that tells the
// two agents apart by their system prompt and serves 100 input / 10 output tokens per request.
//   A. usage: agent.generate()'s totalUsage holds the parent's 2 requests only (200/20 where the server served 4);
//      the agent-billing tool's result in the parent's steps carries the child's text but no usage;
//   B. runaway: a child that calls its tool forever stops after its own default 5 steps; the parent's maxSteps: 8
//      does not reach it (the tool's optional `maxSteps` is the only way in);
//   C. approval inside the child: the child's requireApproval suspends the parent's run; what the parent reports
//      is the delegation call (agent-billing, the parent's tool call id), and approving THAT call resumes the
//      child, which runs the tool and answers.
// Run: adapters/mastra/node_modules/.bin/node adapters/mastra/probes/subagent_usage.mjs
// Printed (@mastra/core 1.71.0):
//   A. usage   : {"served":{"main":2,"billing":2},"totalUsage":[200,20],"finishReason":"stop","text":"RF-88",
//                "child":[{"usage":[null,null],"text":"Refund RF-88."}]}
//   B. runaway : {"served":{"main":2,"billing":5},"lookups":5,"child":[{"usage":[null,null],"text":""}]}
//   C. paused  : {"served":{"main":1,"billing":1},"finishReason":"suspended","suspendPayload":{"toolCallId":"call_ask_1",
//                "toolName":"agent-billing","args":{"prompt":"Was order 1042 refunded?"},
//                "inner":{"toolCallId":"call_r1","toolName":"lookup_refund"}}}
//   C. resumed : {"served":{"main":2,"billing":2},"lookups":1,"finishReason":"stop","text":"RF-88"}
import http from 'node:http';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
import { z } from 'zod';

let mode = 'usage';
const served = { main: 0, billing: 0 };
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const msgs = JSON.parse(body).messages;
    const system = msgs.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    const agent = system.includes('billing specialist') ? 'billing' : 'main';
    served[agent] += 1;
    const results = msgs.filter((m) => m.role === 'tool').length;
    const call = (id, name, args) => ({ role: 'assistant', content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] });
    let message;
    if (agent === 'main') {
      message = results ? { role: 'assistant', content: 'RF-88' }
        : call('call_ask_1', 'agent-billing', { prompt: 'Was order 1042 refunded?' });
    } else if (mode === 'runaway' || !results) {
      message = call(`call_r${served.billing}`, 'lookup_refund', { order_id: '1042' });
    } else {
      message = { role: 'assistant', content: 'Refund RF-88.' };
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: 'r', object: 'chat.completion', created: 0, model: 'm',
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = { id: 'openai/m', url: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' };

async function build(approval) {
  let runs = 0;
  const lookup = createTool({ id: 'lookup_refund', description: 'Look a refund up.',
    inputSchema: z.object({ order_id: z.string() }), ...(approval ? { requireApproval: true } : {}),
    execute: async () => { runs += 1; return 'refunded: RF-88'; } });
  const billing = new Agent({ id: 'billing', name: 'billing', description: 'The billing specialist.',
    instructions: 'You are the billing specialist.', model, tools: { lookup_refund: lookup } });
  const lead = new Agent({ id: 'lead', name: 'lead', instructions: 'You are the support lead.', model,
    agents: { billing } });
  const storage = new LibSQLStore({ id: 'probe', url: ':memory:' });
  const mastra = new Mastra({ agents: { lead, billing }, storage, logger: false });
  await mastra.getStorage().init();
  return { agent: mastra.getAgent('lead'), runs: () => runs };
}
const reset = (m) => { mode = m; served.main = 0; served.billing = 0; };
const usageOf = (u) => [u?.inputTokens ?? null, u?.outputTokens ?? null];
const childRuns = (r) => (r.steps ?? []).flatMap((s) => s.toolResults ?? []).map((t) => t.payload ?? t)
  .filter((t) => t.toolName === 'agent-billing').map((t) => ({ finishReason: t.result?.finishReason,
    usage: usageOf(t.result?.usage), text: t.result?.text }));

reset('usage');
let app = await build(false);
let r = await app.agent.generate('Was order 1042 refunded?', { maxSteps: 8 });
console.log('A. usage   :', JSON.stringify({ served: { ...served }, totalUsage: usageOf(r.totalUsage),
  finishReason: r.finishReason, text: r.text, child: childRuns(r) }));

reset('runaway');
app = await build(false);
r = await app.agent.generate('Was order 1042 refunded?', { maxSteps: 8 });
console.log('B. runaway :', JSON.stringify({ served: { ...served }, lookups: app.runs(), child: childRuns(r) }));

reset('approval');
app = await build(true);
r = await app.agent.generate('Was order 1042 refunded?', { maxSteps: 8 });
const p = r.suspendPayload ?? {};
console.log('C. paused  :', JSON.stringify({ served: { ...served }, finishReason: r.finishReason,
  suspendPayload: { toolCallId: p.toolCallId, toolName: p.toolName, args: p.args,
    inner: p.suspendPayload && { toolCallId: p.suspendPayload.toolCallId, toolName: p.suspendPayload.toolName } } }));
r = await app.agent.approveToolCallGenerate({ runId: r.runId, toolCallId: p.toolCallId, maxSteps: 8 });
console.log('C. resumed :', JSON.stringify({ served: { ...served }, lookups: app.runs(), finishReason: r.finishReason,
  text: r.text }));
server.close();
