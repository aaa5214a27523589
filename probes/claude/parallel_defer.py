"""Standalone probe (no loopbench code): a PreToolUse hook answering "defer" for TWO calls of one response.

The fake Anthropic Messages server of `fair.py` (imported from this directory) answers the first request with
one response holding three tool_use blocks: get_ticket (no gate), send_reply and issue_refund (both gated).
The hook defers both gated calls. Every segment is a child process against ONE config dir (as an app resumes a
deferred call: `resume=<session id>`, no prompt, the hooks reference's way).

    .venv/bin/python probes/claude/parallel_defer.py [DECISIONS]

DECISIONS (default `send=allow,refund=deny`) is what the hook answers on the resume for each gated call; a call
left out is deferred again. After the first resume the script resumes once more (the same decisions) to see
whether the CLI ever asks about the other deferred call.

Observed (claude-agent-sdk 0.2.189, bundled CLI 2.1.332): the hook is asked for send_reply, then issue_refund, and
defers both; get_ticket runs; the run ends `tool_deferred` with ONE `deferred_tool_use` (issue_refund, the last;
the raw result frame has no other deferral field) though the transcript holds a `hook_deferred_tool` attachment
for each. The resume asks the hook about issue_refund only, and its request's assistant message has lost
send_reply's tool_use (tool_use ids: get_ticket, issue_refund); send_reply never runs. The further resume makes
no request and yields no ResultMessage (stopped after 60 s).

What it prints per segment: every hook call (tool, tool_use_id, answer), the ResultMessage's stop_reason /
terminal_reason / deferred_tool_use, the RAW result frame's keys that carry deferral (the SDK's parser keeps only
`deferred_tool_use`), the requests the server got with the tool results each carried, and the tool runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import claude_agent_sdk._internal.client as sdk_client
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

sys.path.insert(0, str(Path(__file__).parent))
from fair import Fake, drain, results_in  # noqa: E402  (the probe's fake server, no loopbench code)

MODEL = "claude-sonnet-4-5"
PROMPT = "Read ticket T-1, send Ana the refund reply and issue the 120 EUR refund for order 1042."
RUNS_FILE = Path(os.environ.get("PROBE_RUNS", tempfile.mktemp(prefix="claude-pdefer-runs-")))


def ran(name: str) -> None:
    with RUNS_FILE.open("a") as f:
        f.write(name + "\n")


def runs() -> dict[str, int]:
    names = RUNS_FILE.read_text().split() if RUNS_FILE.exists() else []
    return {n: names.count(n) for n in sorted(set(names))}


@tool("get_ticket", "Read a support ticket by id.", {"ticket_id": str})
async def get_ticket(args: dict[str, Any]) -> dict[str, Any]:
    ran("get_ticket")
    return {"content": [{"type": "text", "text": f"Ticket {args['ticket_id']}: Ana asks for a refund."}]}


@tool("send_reply", "Send a reply email to the customer.", {"to": str, "body": str})
async def send_reply(args: dict[str, Any]) -> dict[str, Any]:
    ran("send_reply")
    return {"content": [{"type": "text", "text": f"Reply sent to {args['to']}."}]}


@tool("issue_refund", "Issue a refund for an order.", {"order_id": str, "amount_eur": int})
async def issue_refund(args: dict[str, Any]) -> dict[str, Any]:
    ran("issue_refund")
    return {"content": [{"type": "text", "text": "Refund RF-90 issued."}]}


def plan(body: dict[str, Any], n: int) -> tuple:
    done = results_in(body)
    uses = [b["id"] for m in body.get("messages", []) if m.get("role") == "assistant"
            for b in (m["content"] if isinstance(m.get("content"), list) else []) if b.get("type") == "tool_use"]
    print(f"  SERVER request {n}: tool_use ids in the conversation {uses}, tool results {sorted(done)}")
    if "toolu_r1" in done or "toolu_s1" in done:
        return ("text", "results: " + "; ".join(f"{k}={v[:60]}" for k, v in sorted(done.items())))
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"}),
                      ("toolu_s1", "send_reply", {"to": "ana@example.com", "body": "Hello Ana"}),
                      ("toolu_r1", "issue_refund", {"order_id": "1042", "amount_eur": 120})])


def options(url: str, config: str, **kw: Any) -> ClaudeAgentOptions:
    cwd = Path(config).parent / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "probe", "CLAUDE_CONFIG_DIR": config,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    server = create_sdk_mcp_server("t", tools=[get_ticket, send_reply, issue_refund])
    return ClaudeAgentOptions(tools=[], mcp_servers={"t": server}, strict_mcp_config=True, setting_sources=[],
                              cwd=str(cwd), model=MODEL, env=env, allowed_tools=["mcp__t__get_ticket"], **kw)


# the raw frames the CLI sends, before the SDK's parser keeps what its dataclasses have
RAW: list[dict[str, Any]] = []
_parse = sdk_client.parse_message


def _recording_parse(data: dict[str, Any]) -> Any:
    RAW.append(data)
    return _parse(data)


sdk_client.parse_message = _recording_parse


async def segment(kind: str, config: str, url: str, session: str | None, decisions: dict[str, str]) -> None:
    async def hook(data: dict[str, Any], tool_use_id: str | None, _ctx: Any) -> dict[str, Any]:
        key = "send" if "send_reply" in str(data.get("tool_name")) else "refund"
        answer = "defer" if kind == "run" else decisions.get(key, "defer")
        print(f"  HOOK {data.get('tool_name')} {tool_use_id} -> {answer}")
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": answer,
                                       "permissionDecisionReason": answer}}

    hooks = {"PreToolUse": [HookMatcher(matcher="mcp__t__send_reply|mcp__t__issue_refund", hooks=[hook])]}
    if kind == "run":
        got = await drain(query(prompt=PROMPT, options=options(url, config, hooks=hooks)))
    else:
        opts = options(url, config, hooks=hooks, resume=session)

        async def resumed() -> Any:
            async with ClaudeSDKClient(opts) as client:
                async for m in client.receive_response():
                    yield m

        got = await drain(resumed())
    for raw in RAW:
        if raw.get("type") == "result":
            print("  RAW result keys:", sorted(raw))
            print("  RAW deferred fields:", json.dumps({k: v for k, v in raw.items() if "defer" in k.lower()}))
        elif raw.get("type") not in ("assistant", "user", "system", "stream_event", "result"):
            print("  RAW other frame:", json.dumps(raw)[:400])
    last = [m for m in got if isinstance(m, ResultMessage)]
    if last:
        print("SESSION", last[-1].session_id)


def transcript(config: str) -> None:
    """The session transcript on disk: which tool_use got which tool_result."""
    for f in Path(config).glob("projects/*/*.jsonl"):
        print(f"  transcript {f.name}:")
        for line in f.read_text().splitlines():
            e = json.loads(line)
            msg = e.get("message") or {}
            content = msg.get("content") if isinstance(msg.get("content"), list) else []
            for b in content:
                if b.get("type") == "tool_use":
                    print(f"    {e.get('type')}: tool_use {b['id']} {b['name']}")
                elif b.get("type") == "tool_result":
                    c = b.get("content")
                    text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c or [])
                    print(f"    {e.get('type')}: tool_result {b['tool_use_id']} is_error={b.get('is_error')} "
                          f"{text[:100]!r}")
            if e.get("type") not in ("user", "assistant"):
                print(f"    {e.get('type')}: {json.dumps(e)[:200]}")


def main(decisions_arg: str) -> None:
    fake = Fake(plan)
    config = tempfile.mkdtemp(prefix="claude-pdefer-") + "/config"
    Path(config).mkdir()
    env = {**os.environ, "PROBE_RUNS": str(RUNS_FILE)}
    session = None
    for i, (kind, decisions) in enumerate([("run", ""), ("resume", decisions_arg),
                                           ("resume", decisions_arg)]):
        print(f"--- segment {i}: {kind} {decisions} (new process)")
        n0 = fake.n
        t0 = time.time()
        try:
            out = subprocess.run([sys.executable, __file__, "segment", kind, config, fake.url, session or "",
                                  decisions], env=env, capture_output=True, text=True, timeout=60)
            print(out.stdout.rstrip())
            if out.returncode:
                print("  exit", out.returncode, out.stderr[-800:])
        except subprocess.TimeoutExpired:
            print("  TIMEOUT: no ResultMessage after 60 s (the CLI idles: nothing left to resume)")
        print(f"  requests in this segment: {fake.n - n0}, elapsed {time.time() - t0:.1f} s, tool runs: {runs()}")
        if session is None:
            session = next((ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("SESSION")), None)
        transcript(config)
    print("requests (at, n, reply, tool results in the request, ...):")
    for row in fake.log:
        print("   ", row)
    print("tool runs:", runs())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "segment":
        decisions = dict(p.split("=") for p in sys.argv[6].split(",") if p)
        asyncio.run(segment(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] or None, decisions))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "send=allow,refund=deny")
