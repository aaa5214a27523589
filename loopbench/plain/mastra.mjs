// A plain Mastra script for `support_draft_completes` — no loopbench code: what a user would write.
//
// Long-lived, like a service: one JSON request per stdin line (`base_url`, `api_key`, `model`, `prompt`,
// `max_turns`, `config_dir`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall
// and CPU time around the run). `loopbench bench` runs it beside a `node_modules` from the locked
// package-lock.json and times it against loopbench's run of the same scenario.
//
// The model is a Claude model, so it goes through the model router's own Anthropic route (`anthropic/<model>`:
// @ai-sdk/anthropic, Anthropic Messages); the router takes that provider's base URL from ANTHROPIC_BASE_URL (a
// config `url` would make it an OpenAI-compatible model). The agent is registered on a Mastra instance with a
// LibSQLStore, as loopbench's default idiom has it: loopbench opens one store per business task (its task
// directory), so this script opens one per request, in the bench's directory, to do the same work.
import { createInterface } from 'node:readline';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
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

let runs = 0;

async function run(req) {
  process.env.ANTHROPIC_BASE_URL = req.base_url; // the bench's base_url ends in /v1, as the provider's does
  const storage = new LibSQLStore({ id: 'plain', url: `file:${req.config_dir}/mastra-${(runs += 1)}.db` });
  const support = new Agent({
    id: 'support', name: 'support', instructions: 'You are a support agent.', tools,
    model: { id: `anthropic/${req.model}`, apiKey: req.api_key },
  });
  const mastra = new Mastra({ agents: { support }, storage, logger: false });
  try {
    await mastra.getStorage().init();
    const result = await mastra.getAgent('support').generate(req.prompt, { maxSteps: req.max_turns });
    return result.text;
  } finally {
    await storage.close();
  }
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
