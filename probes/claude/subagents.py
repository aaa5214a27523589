"""Repro: a sub-agent scenario through the raw Claude SDK, as the adapter builds it (AgentDefinitions reached
through the CLI's Agent tool), dumping what the CLI sends (system prompt head, offered tools and the Agent
tool's schema, the last message) and every SDK message with its parent_tool_use_id.
A tool whose approval is `required` is deferred by the PreToolUse hook, as the adapter pauses.
Measured with it (CLI 2.1.332): subagent_usage: `usage` 2000/200 (main loop), `model_usage` 4000/400 (the
tree); subagent_runaway 8: the child searches until the server's safety cap (max_turns=8 does not count its
turns), `num_turns` 2; subagent_approval: the hook's defer inside the child ends the child ("Subagent completed
but returned no output"), the run completes, no deferred_tool_use; bg=1: the Agent call returns "Async agent
launched" and the query yields two ResultMessages.
Usage: subagents.py [SCENARIO] [max_turns] [bg]  (bg=1: leave the CLI's background agents on; default: off with
CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1)"""
import asyncio, json, sys, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options
from claude_agent_sdk import AgentDefinition, ResultMessage, query
from loopbench.harness.model_server.app import ModelServer

_handle = ModelServer._handle
async def handle(self, proto, request):
    raw = json.loads(await request.body())
    system = raw.get("system")
    text = " | ".join(b.get("text", "")[:160] for b in system) if isinstance(system, list) else str(system)[:300]
    agent_tool = next((t for t in raw.get("tools", []) if t.get("name") in ("Agent", "Task")), None)
    print(f"REQ system={text!r}\n    tools={[t.get('name') for t in raw.get('tools', [])]} "
          f"last={json.dumps(raw.get('messages', [])[-1])[:400]}", file=sys.stderr)
    if agent_tool:
        print("    AGENT TOOL SCHEMA", json.dumps(agent_tool.get("input_schema"))[:1500], file=sys.stderr)
    return await _handle(self, proto, request)
ModelServer._handle = handle

async def main(sid, max_turns):
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg(sid)
        agents = {a: AgentDefinition(description=s.description, prompt=s.instructions,
                                     tools=[f"mcp__loopbench__{t}" for t in s.tools]) for a, s in sc.agents.items()}
        async def pre(inp, tuid, ctx):
            print("PreToolUse", inp.get("tool_name"), tuid, "agent_id=", inp.get("agent_id"), file=sys.stderr)
            spec = sc.tools.get(str(inp.get("tool_name")).removeprefix("mcp__loopbench__"))
            if spec is not None and spec.approval == "required":  # the adapter's pause: defer the call
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer",
                                               "permissionDecisionReason": "waiting for approval"}}
            return {}
        env = {} if BG else {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}
        opts = options(sc, base, token, run_id, key, tempfile.mkdtemp(prefix="clsub-"), hook=pre, extra_env=env,
                       tools=["Agent"], agents=agents, system_prompt=sc.instructions, include_partial_messages=False,
                       allowed_tools=["Agent"] + [f"mcp__loopbench__{n}" for n in sc.tools], max_turns=max_turns)
        try:
            await drain(sc, opts)
        except Exception as e:  # query() raises after an error result
            print("RAISED", type(e).__name__, str(e)[:300])
        show(server, ledger, run_id)

async def drain(sc, opts):
        async for m in query(prompt=sc.prompt, options=opts):
            if isinstance(m, ResultMessage):
                print("RESULT", m.subtype, m.terminal_reason, "num_turns", m.num_turns, "usage",
                      {k: (m.usage or {}).get(k) for k in ("input_tokens", "output_tokens")}, "model_usage",
                      {k: (v.get("inputTokens"), v.get("outputTokens")) for k, v in (m.model_usage or {}).items()},
                      "cost", m.total_cost_usd, "result", (m.result or "")[:200])
            else:
                print("MSG", type(m).__name__, getattr(m, "subtype", ""), "parent=", getattr(m, "parent_tool_use_id", None),
                      str(getattr(m, "content", getattr(m, "data", "")))[:LIMIT])
LIMIT = 1200
BG = len(sys.argv) > 3 and sys.argv[3] == "1"
asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "subagent_usage", int(sys.argv[2]) if len(sys.argv) > 2 else None))
