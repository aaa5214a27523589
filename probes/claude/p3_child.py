import asyncio, sys, json, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from lib import options, dump
from loopbench.harness.scenario import load_scenarios
from claude_agent_sdk import ClaudeSDKClient, ResultMessage
a = json.loads(sys.argv[1])
sc = next(s for s in load_scenarios() if s.id == a["sid"])
async def main():
    async def hook(inp, tuid, ctx):
        name = inp["tool_name"].split("__")[-1]
        print("CHILD HOOK", name, tuid, file=sys.stderr)
        if sc.tools[name].approval == "required":
            d = "allow" if a["decision"] == "approve" else ("deny" if a["decision"] == "reject" else "defer")
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d, "permissionDecisionReason": "rejected by the reviewer" if d == "deny" else ""}}
        return {}
    import shutil, tempfile; w2 = tempfile.mkdtemp(prefix="clp3b-"); shutil.copytree(a["work"] + "/config", w2 + "/config"); opts = options(sc, a["base"], a["token"], a["run_id"], a["key"], w2, hook, resume=a["session"])
    t0 = time.time()
    try:
        async with ClaudeSDKClient(opts) as client:
            async for m in client.receive_response():
                dump(m)
    except Exception as e:
        print("RAISED", type(e).__name__, str(e)[:300])
    print("child elapsed", round(time.time() - t0, 2))
asyncio.run(main())
