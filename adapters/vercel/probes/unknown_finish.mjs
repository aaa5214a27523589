// Standalone repro (no loopbench code): ai@7 + @ai-sdk/anthropic (`createAnthropic({baseURL, apiKey})(modelId)`, as
// the SDK's docs show for Claude) against a fake Anthropic Messages server whose first answer calls a tool with a
// `stop_reason` the provider does not know (a provider's newer value: here `paused_for_review`). What it shows:
//   1. control: `stop_reason: tool_use` -> the call runs, 2 requests, the final text;
//   2. an unknown stop_reason on the same tool_use answer -> the provider maps it to finishReason "other"
//      (@ai-sdk/anthropic mapAnthropicStopReason: `default: return "other"`), and generateText returns after that
//      one step: 1 request, the tool call in `steps[0].toolCalls` but never executed (no tool result), no error,
//      empty text — a silent stop, not a failure.
// Run: cd adapters/vercel && node probes/unknown_finish.mjs
import http from 'node:http';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';

let firstStop = 'tool_use';
let requests = 0;
let executed = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    requests += 1;
    const msgs = JSON.parse(body).messages;
    const answered = msgs.some((m) => Array.isArray(m.content) && m.content.some((b) => b.type === 'tool_result'));
    const content = answered ? [{ type: 'text', text: 'done' }]
      : [{ type: 'tool_use', id: 'toolu_call_1', name: 'search', input: { q: 'q1' } }];
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: `msg_${requests}`, type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
      content, stop_reason: answered ? 'end_turn' : firstStop, stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 10 } }));
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const model = createAnthropic({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: 'k' })('claude-sonnet-4-5');
const search = tool({
  inputSchema: jsonSchema({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }),
  execute: async ({ q }) => { executed += 1; return `nothing for ${q}`; },
});

for (const stop of ['tool_use', 'paused_for_review']) {
  firstStop = stop; requests = 0; executed = 0;
  const r = await generateText({ model, tools: { search }, prompt: 'go', stopWhen: isStepCount(8) });
  console.log(`first stop_reason ${stop}:`.padEnd(36), JSON.stringify({ requests, executed, text: r.text,
    steps: r.steps.length, finishReasons: r.steps.map((s) => s.finishReason),
    toolCalls: r.steps.flatMap((s) => s.toolCalls.map((c) => c.toolCallId)),
    toolResults: r.steps.flatMap((s) => s.toolResults.map((c) => c.toolCallId)) }));
}
server.close();
