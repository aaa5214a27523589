import asyncio, os, sys, tempfile, time, json
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from claude_agent_sdk import (ClaudeAgentOptions, query, create_sdk_mcp_server, tool, ResultMessage, SdkMcpTool,
                              AssistantMessage, HookMatcher)
from harness.ledger_http import LedgerClient
import contextvars
CALL_ID = contextvars.ContextVar("cid", default=None)

sid = sys.argv[1] if len(sys.argv) > 1 else "support_draft_completes"
async def main():
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg(sid)
        lc = LedgerClient(base, token, run_id)
        def make(name):
            spec = sc.tools[name]
            async def handler(args):
                cid = CALL_ID.get()
                out = await lc.call(name, args, cid)
                return {"content": [{"type": "text", "text": out.text}], "is_error": not out.ok}
            return SdkMcpTool(name, spec.description, spec.parameters, handler)
        cfg = create_sdk_mcp_server("loopbench", tools=[make(n) for n in sc.tools])
        inst = cfg["instance"]
        entry = inst.get_request_handler("tools/call")
        async def wrapped(ctx, params):
            meta = params.meta or {}
            tok = CALL_ID.set((meta.get("claudecode/toolUseId") or "").removeprefix("toolu_") or None)
            try:
                return await entry.handler(ctx, params)
            finally:
                CALL_ID.reset(tok)
        inst.add_request_handler("tools/call", entry.params_type, wrapped)
        work = tempfile.mkdtemp(prefix="clprobe-")
        os.makedirs(f"{work}/config"); os.makedirs(f"{work}/cwd")
        env = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": key, "CLAUDE_CONFIG_DIR": f"{work}/config",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        async def pre(inp, tuid, ctx):
            print("PreToolUse", inp.get("tool_name"), tuid, file=sys.stderr)
            return {}
        opts = ClaudeAgentOptions(tools=[], mcp_servers={"loopbench": cfg}, setting_sources=[], cwd=f"{work}/cwd",
                                  model=sc.model.id, env=env, max_turns=sc.limits.max_model_calls,
                                  allowed_tools=[],
                                  
                                  stderr=lambda l: print("CLI:", l, file=sys.stderr))
        t0 = time.time()
        try:
            async for m in query(prompt=sc.prompt, options=opts):
                if isinstance(m, ResultMessage):
                    d = {k: v for k, v in vars(m).items() if k not in ("usage",)}
                    print("RESULT", json.dumps(d, default=str)[:1500]); print("USAGE", m.usage)
                elif isinstance(m, AssistantMessage):
                    print("ASSIST", [type(b).__name__ for b in m.content])
                else:
                    print("MSG", type(m).__name__, getattr(m, "subtype", ""))
        except Exception as e:
            print("RAISED", type(e).__name__, str(e)[:300])
        print("elapsed", round(time.time() - t0, 2))
        show(server, ledger, run_id)
        print("work", work)
asyncio.run(main())
