import asyncio, sys, subprocess, json, tempfile
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from env import served, show
from lib import options, drain_query
sid = sys.argv[1] if len(sys.argv) > 1 else "approval_approved_resume"
decision = sys.argv[2] if len(sys.argv) > 2 else "approve"
async def main():
    with served() as (server, ledger, token, base, reg):
        sc, run_id, key = reg(sid)
        async def hook(inp, tuid, ctx):
            name = inp["tool_name"].split("__")[-1]
            print("HOOK", name, tuid, file=sys.stderr)
            if sc.tools[name].approval == "required":
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}
            return {}
        work = tempfile.mkdtemp(prefix="clp3-")
        last = await drain_query(sc.prompt, options(sc, base, token, run_id, key, work, hook))
        show(server, ledger, run_id)
        print("---- resume in another process", last.session_id)
        args = json.dumps(dict(sid=sid, base=base, token=token, run_id=run_id, key=key, work=work, session=last.session_id, decision=decision))
        p = await asyncio.create_subprocess_exec(sys.executable, str(__import__("pathlib").Path(__file__).resolve().parent / "p3_child.py"), args)
        await p.wait()
        show(server, ledger, run_id)
asyncio.run(main())
