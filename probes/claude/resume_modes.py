"""Standalone probe (raw SDK, no loopbench code): how a deferred tool call is resumed, with and without a prompt,
and what a SECOND resume of the same (by then finished) session does. Reuses fair.py's fake Anthropic server
(127.0.0.1), tools and options.

    .venv/bin/python probes/claude/resume_modes.py [MODE ...]      (default: all modes, ~1-2 minutes)

Every segment is a new process against ONE live config dir per mode (as the adapter does). The first segment
is a fresh run whose PreToolUse hook answers "defer" for send_reply; every resume's hook answers "allow".

    none-none     resume 1 and resume 2: ClaudeSDKClient(ClaudeAgentOptions(resume=id)), no prompt,
                  receive_response()  (what adapters/claude_agent.py does)
    prompt-prompt resume 1 and resume 2: query(prompt="...", options=ClaudeAgentOptions(resume=id))
    none-prompt   resume 1 without a prompt, resume 2 with a prompt
    cli           after a none-prompt-like pause and resume 1 (no prompt): the bundled CLI itself,
                  `claude -p --resume <id> --output-format json` with no prompt, on the finished session
                  (the headless form the hooks reference shows)

Each segment is bounded by SEG_TIMEOUT_S (default 20 s; the child's process group is killed then). Per segment it
prints: the requests the server got (with the new messages each request carried beyond the previous one), the
hook calls, the tool runs, the messages the SDK yielded and the ResultMessage fields.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fair  # noqa: E402  (fair.py: Fake server, tools, options(), runs())
from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeSDKClient,
    HookMatcher,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
    query,
)

SEG_TIMEOUT_S = float(os.environ.get("SEG_TIMEOUT_S", "20"))
RESUME_PROMPTS = {1: "Resume prompt #1: the reviewer has decided, go on.",
                  2: "Resume prompt #2: anything left to do?"}
CLI = Path(fair.__file__).resolve().parents[2] / ".venv/lib/python3.11/site-packages/claude_agent_sdk/_bundled/claude"


# ------------------------------------------------------------------ the model's script (decides from the request)
def block_summary(b: dict[str, Any]) -> str:
    t = b.get("type")
    if t == "text":
        return f"text:{b.get('text', '')[:70]!r}"
    if t == "tool_use":
        return f"tool_use:{b.get('id')}:{b.get('name')}"
    if t == "tool_result":
        c = b.get("content")
        text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c or [])
        return f"tool_result:{b.get('tool_use_id')}:{'ERR' if b.get('is_error') else 'ok'}:{text[:45]!r}"
    return str(t)


def message_summary(m: dict[str, Any]) -> str:
    c = m.get("content")
    blocks = [f"text:{c[:70]!r}"] if isinstance(c, str) else [block_summary(b) for b in c or []]
    # the CLI adds <system-reminder> text blocks to user turns: keep them short
    blocks = [("text:<system-reminder…>" if b.startswith("text:") and "system-reminder" in b else b) for b in blocks]
    return f"{m.get('role')}[{', '.join(blocks)}]"


class Recorder:
    """Wraps fair.send_plan and records each request's messages (the server's view of the conversation)."""

    def __init__(self) -> None:
        self.requests: list[list[str]] = []

    def plan(self, body: dict[str, Any], n: int) -> tuple:
        self.requests.append([message_summary(m) for m in body.get("messages", [])])
        return fair.send_plan(body, n)


# ------------------------------------------------------------------ one segment, in a child process
async def segment(kind: str, config: str, url: str, session: str | None, prompt: str | None) -> None:
    hooks_seen: list[list[Any]] = []

    async def hook(data: dict[str, Any], tool_use_id: str | None, _ctx: Any) -> dict[str, Any]:
        decision = "defer" if kind == "run" else "allow"
        hooks_seen.append([data.get("tool_name"), tool_use_id, decision])
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                       "permissionDecisionReason": decision}}

    hooks = {"PreToolUse": [HookMatcher(matcher="mcp__t__send_reply", hooks=[hook])]}
    got: list[Any] = []
    exc: BaseException | None = None

    def summary() -> None:
        rm = next((m for m in reversed(got) if isinstance(m, ResultMessage)), None)
        kinds: dict[str, int] = {}
        for m in got:
            k = type(m).__name__ + (f"/{m.subtype}" if isinstance(m, SystemMessage) else "")
            kinds[k] = kinds.get(k, 0) + 1
        keep = ("subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "deferred_tool_use",
                "permission_denials", "result", "session_id", "total_cost_usd")
        seq = [type(m).__name__.replace("Message", "") + (f"/{m.subtype}" if isinstance(m, SystemMessage) else "")
               for m in got]
        out = {"hooks": hooks_seen, "messages": kinds, "sequence": seq,
               "assistant_ids": sorted({m.message_id for m in got if isinstance(m, AssistantMessage)
                                        and m.message_id and m.error is None}),
               "user_messages": [[getattr(b, "text", None) and b.text[:60] or type(b).__name__ for b in m.content]
                                 if isinstance(m.content, list) else [str(m.content)[:60]]
                                 for m in got if isinstance(m, UserMessage)],
               "results": [{k: getattr(m, k) for k in keep if k != "session_id"} for m in got
                           if isinstance(m, ResultMessage)],
               "result": {k: getattr(rm, k) for k in keep} if rm else None,
               "exception": f"{type(exc).__name__}: {str(exc)[:300]}" if exc else None}
        print("SUMMARY " + json.dumps(out, default=str), flush=True)

    try:
        if kind == "run":
            stream = query(prompt=fair.PROMPT, options=fair.options(url, config, hooks=hooks))
        elif prompt is not None:  # the sessions guide's form: query(prompt, options=ClaudeAgentOptions(resume=id))
            stream = query(prompt=prompt, options=fair.options(url, config, hooks=hooks, resume=session))
        else:  # the adapter's form: ClaudeSDKClient(resume=id), no prompt, receive_response()
            opts = fair.options(url, config, hooks=hooks, resume=session)

            async def resumed() -> Any:
                async with ClaudeSDKClient(opts) as client:
                    async for m in client.receive_response():
                        yield m

            stream = resumed()
        async for m in stream:
            got.append(m)
            if not isinstance(m, StreamEvent):
                print("  MSG", type(m).__name__, getattr(m, "subtype", ""), flush=True)
                summary()  # a running summary, so a killed child still reports what it saw
    except Exception as e:  # the SDK raises after an error result: it is part of the finding
        exc = e
    summary()


# ------------------------------------------------------------------ the parent: segments, bounded
def run_child(args: list[str], env: dict[str, str]) -> tuple[str, str, float, bool, int | None]:
    t0 = time.time()
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)  # own process group: the CLI grandchild dies with it
    try:
        out, err = p.communicate(timeout=SEG_TIMEOUT_S)
        return out, err, time.time() - t0, False, p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the group of the child this script started
        out, err = p.communicate()
        return out, err, time.time() - t0, True, None


def report(label: str, rec: Recorder, n0: int, out: str, err: str, elapsed: float, timed_out: bool,
           rc: int | None, seen: int) -> dict[str, Any]:
    sums = [json.loads(line[len("SUMMARY "):]) for line in out.splitlines() if line.startswith("SUMMARY ")]
    s = sums[-1] if sums else {}
    new = rec.requests[n0:]
    print(f"--- {label}: {'TIMEOUT (killed)' if timed_out else f'exit {rc}'} after {elapsed:.1f} s; "
          f"requests {len(new)}; tool runs so far {fair.runs()}")
    for i, msgs in enumerate(new):
        print(f"    request {n0 + i + 1}: {len(msgs)} messages; new beyond the previous request: "
              f"{msgs[seen:] if i == 0 else msgs[len(new[i - 1]) :]}")
        seen = len(msgs)
    for k in ("hooks", "messages", "sequence", "assistant_ids", "user_messages", "results", "exception"):
        if k in s:
            print(f"    {k}: {json.dumps(s[k], default=str)}")
    if not sums:
        print("    the SDK yielded no message (no ResultMessage) before the kill")
    if rc not in (0, None) or (not sums and err):
        print("    stderr tail:", err.strip()[-600:])
    return s


def run_mode(mode: str) -> None:
    print(f"\n================ mode {mode}")
    rec = Recorder()
    fake = fair.Fake(rec.plan)
    config = tempfile.mkdtemp(prefix="claude-resume-modes-") + "/config"
    Path(config).mkdir()
    runs_file = Path(tempfile.mktemp(prefix="claude-resume-modes-runs-"))
    fair.RUNS_FILE = runs_file  # the parent's runs() reads the children's file
    env = {**os.environ, "PROBE_RUNS": str(runs_file)}
    me = [sys.executable, __file__, "segment"]
    second = {"none-none": (None, None), "prompt-prompt": (RESUME_PROMPTS[1], RESUME_PROMPTS[2]),
              "none-prompt": (None, RESUME_PROMPTS[2]), "cli": (None, "CLI")}[mode]
    session = ""
    seen = 0  # messages the server has seen so far in this session (to print only what each request adds)
    for i, (kind, prompt) in enumerate([("run", None), ("resume", second[0]), ("resume", second[1])]):
        n0 = len(rec.requests)
        if prompt == "CLI":
            cwd = Path(config).parent / "cwd"
            cli_env = {**os.environ, "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "probe",
                       "CLAUDE_CONFIG_DIR": config, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
            args = [str(CLI), "-p", f"--resume={session}", "--output-format", "json", "--model", fair.MODEL,
                    "--strict-mcp-config", "--setting-sources", ""]
            label = "resume 2: `claude -p --resume <id>` (bundled CLI, no prompt, stdin closed)"
            t0 = time.time()
            p = subprocess.run(args, env=cli_env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=SEG_TIMEOUT_S)
            print(f"--- {label}: exit {p.returncode} after {time.time() - t0:.1f} s; "
                  f"requests {len(rec.requests) - n0}; tool runs so far {fair.runs()}")
            print("    stdout:", p.stdout.strip()[:600])
            print("    stderr:", p.stderr.strip()[-600:])
            continue
        label = ("segment 0: run (hook: defer)" if kind == "run" else
                 f"resume {i}: " + ("ClaudeSDKClient(resume=id), no prompt" if prompt is None
                                     else f"query(prompt={prompt!r}, options=ClaudeAgentOptions(resume=id))"))
        out, err, elapsed, timed_out, rc = run_child([*me, kind, config, fake.url, session, prompt or ""], env)
        s = report(label, rec, n0, out, err, elapsed, timed_out, rc, seen)
        if rec.requests:
            seen = len(rec.requests[-1])
        if kind == "run":
            session = (s.get("result") or {}).get("session_id") or ""
            if not session:
                print("    no session id: stopping this mode")
                return
    print(f"requests in mode {mode}: {len(rec.requests)}; tool runs: {fair.runs()}")


MODES = ["none-none", "prompt-prompt", "none-prompt", "cli"]

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "segment":
        _, _, kind, config, url, session, prompt = sys.argv
        asyncio.run(segment(kind, config, url, session or None, prompt or None))
    else:
        chosen = sys.argv[1:] or MODES
        bad = [m for m in chosen if m not in MODES]
        if bad:
            sys.exit(f"usage: resume_modes.py [{'|'.join(MODES)} ...]")
        t0 = time.time()
        for m in chosen:
            run_mode(m)
        print(f"\ntotal {time.time() - t0:.0f} s")
