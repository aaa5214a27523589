import asyncio, os, sys, json, time, contextvars
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # the repo root
from claude_agent_sdk import (ClaudeAgentOptions, query, create_sdk_mcp_server, ResultMessage, SdkMcpTool,
                              AssistantMessage, HookMatcher, ClaudeSDKClient)
from loopbench.harness.ledger.http import LedgerClient
CALL_ID = contextvars.ContextVar("cid", default=None)

def options(sc, base, token, run_id, key, work, hook=None, extra_env=None, **kw):
    lc = LedgerClient(base, token, run_id)
    def make(name):
        spec = sc.tools[name]
        async def handler(args):
            out = await lc.call(name, args, CALL_ID.get())
            return {"content": [{"type": "text", "text": out.text}], "is_error": not out.ok}
        return SdkMcpTool(name, spec.description, spec.parameters, handler)
    cfg = create_sdk_mcp_server("loopbench", tools=[make(n) for n in sc.tools])
    inst = cfg["instance"]
    if hasattr(inst, "get_request_handler"):  # older mcp releases (beside claude-agent-sdk 0.2.90) lack it: no call ids
        entry = inst.get_request_handler("tools/call")
        async def wrapped(ctx, params):
            meta = params.meta or {}
            tok = CALL_ID.set((meta.get("claudecode/toolUseId") or "").removeprefix("toolu_") or None)
            try:
                return await entry.handler(ctx, params)
            finally:
                CALL_ID.reset(tok)
        inst.add_request_handler("tools/call", entry.params_type, wrapped)
    os.makedirs(f"{work}/config", exist_ok=True); os.makedirs(f"{work}/cwd", exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": key, "CLAUDE_CONFIG_DIR": f"{work}/config",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **(extra_env or {})}
    hooks = {"PreToolUse": [HookMatcher(hooks=[hook])]} if hook else None
    base_kw = dict(tools=[], mcp_servers={"loopbench": cfg}, setting_sources=[], cwd=f"{work}/cwd",
                   model=sc.model.id, env=env, max_turns=sc.limits.max_model_calls,
                   allowed_tools=[f"mcp__loopbench__{n}" for n in sc.tools if sc.tools[n].approval == "none"],
                   hooks=hooks, stderr=lambda l: print("CLI:", l, file=sys.stderr))
    base_kw.update(kw)
    return ClaudeAgentOptions(**base_kw)

def dump(m):
    if isinstance(m, ResultMessage):
        d = {k: v for k, v in vars(m).items() if k not in ("usage", "model_usage", "uuid", "origin", "user_message_uuid", "user_message_uuids", "structured_output")}
        print("RESULT", json.dumps(d, default=str)[:1200]); print("  USAGE", {k: m.usage.get(k) for k in ("input_tokens", "output_tokens")} if m.usage else None, "MODEL_USAGE", {k: (v.get("inputTokens"), v.get("outputTokens"), v.get("costUSD")) for k, v in (m.model_usage or {}).items()})
    elif isinstance(m, AssistantMessage):
        print("ASSIST", [getattr(b, "name", type(b).__name__) for b in m.content])
    else:
        print("MSG", type(m).__name__, getattr(m, "subtype", ""))

async def drain_query(prompt, opts):
    t0 = time.time(); last = None
    try:
        async for m in query(prompt=prompt, options=opts):
            dump(m)
            if isinstance(m, ResultMessage): last = m
    except Exception as e:
        print("RAISED", type(e).__name__, str(e)[:300])
    print("elapsed", round(time.time() - t0, 2))
    return last
