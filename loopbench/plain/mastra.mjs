// A plain Mastra script for `support_draft_completes` — no loopbench code: what a user would write.
//
// Long-lived, like a service: one JSON request per stdin line (`base_url`, `api_key`, `model`, `prompt`,
// `max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and CPU
// time around the run). `loopbench bench` runs it beside a `node_modules` from the locked package-lock.json
// and times it against loopbench's run of the same scenario.
import { createInterface } from 'node:readline';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

const tools = {
  get_ticket: createTool({
    id: 'get_ticket',
    description: 'Read a support ticket by id.',
    inputSchema: z.object({ ticket_id: z.string() }),
    execute: async ({ ticket_id }) =>
      `Ticket ${ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago.`,
  }),
  lookup_policy: createTool({
    id: 'lookup_policy',
    description: 'Look up the support policy that applies to a topic.',
    inputSchema: z.object({ topic: z.string() }),
    execute: async () => 'Policy POL-7: refunds are accepted within 30 days of delivery.',
  }),
};

const cpuS = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

async function run(req) {
  const agent = new Agent({
    id: 'support', name: 'support', instructions: 'You are a support agent.', tools,
    model: { id: `openai/${req.model}`, url: req.base_url, apiKey: req.api_key },
  });
  const result = await agent.generate(req.prompt, { maxSteps: req.max_turns });
  return result.text;
}

// Mastra logs to stdout: the protocol line goes out through the original write
const out = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
out(JSON.stringify({ ready: true }) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  const req = JSON.parse(line);
  const c0 = cpuS();
  const t0 = performance.now();
  const text = await run(req);
  out(JSON.stringify({ ok: true, text, wall_s: (performance.now() - t0) / 1000, cpu_s: cpuS() - c0 }) + '\n');
}
