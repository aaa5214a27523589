// A plain Vercel AI SDK script for `support_draft_completes` — no loopbench code: what a user would write.
//
// Long-lived, like a service: one JSON request per stdin line (`base_url`, `api_key`, `model`, `prompt`,
// `max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and CPU
// time around the run). `loopbench bench` runs it beside a `node_modules` from the locked package-lock.json
// and times it against loopbench's run of the same scenario.
//
// The model is a Claude model, so it goes through the SDK's Anthropic provider (`@ai-sdk/anthropic`, as the SDK's
// docs connect Claude).
import { createInterface } from 'node:readline';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';

const tools = {
  get_ticket: tool({
    description: 'Read a support ticket by id.',
    inputSchema: jsonSchema({ type: 'object', properties: { ticket_id: { type: 'string' } }, required: ['ticket_id'] }),
    execute: async ({ ticket_id }) =>
      `Ticket ${ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago.`,
  }),
  lookup_policy: tool({
    description: 'Look up the support policy that applies to a topic.',
    inputSchema: jsonSchema({ type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] }),
    execute: async () => 'Policy POL-7: refunds are accepted within 30 days of delivery.',
  }),
};

const cpuS = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

async function run(req) {
  const provider = createAnthropic({ baseURL: req.base_url, apiKey: req.api_key }); // base_url ends in /v1
  const result = await generateText({
    model: provider(req.model), tools, prompt: req.prompt, stopWhen: isStepCount(req.max_turns),
  });
  return result.text;
}

console.log(JSON.stringify({ ready: true }));
for await (const line of createInterface({ input: process.stdin })) {
  const req = JSON.parse(line);
  const c0 = cpuS();
  const t0 = performance.now();
  const text = await run(req);
  console.log(JSON.stringify({ ok: true, text, wall_s: (performance.now() - t0) / 1000, cpu_s: cpuS() - c0 }));
}
