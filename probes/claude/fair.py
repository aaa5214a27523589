"""Standalone probes of the Claude Agent SDK (no loopbench code): a tiny fake Anthropic Messages server on
127.0.0.1 in this script, plain tool functions, the raw SDK. One case per finding:

    .venv/bin/python probes/claude/fair.py CASE

deny-hook-stop | deny-hook-continue | deny-cut-stop | deny-cut-continue   how each idiom denies
deny-cut-slow-tail         deny-cut-stop with the response's end (message_delta, message_stop) sent 1 s after
                           its tool_use block: the denial's abort lands while the response still streams
cut-no-decision            can_use_tool answering Deny(interrupt=True) for a call awaiting approval
fatal                      500 with `x-should-retry: false`, every time
transient                  429 (retry-after: 1), then 500 (no header), then a 3-turn run
outage                     500 with no hint, every time (~3 minutes: the CLI's default retries)
bad-request                400 with `x-should-retry: false`, every time
hints                      429, 500, 529 each with `retry-after: 3`, then a 3-turn run: which delays honour it
empty                      a response with no content blocks after a tool result
streaming-input            the same one-prompt task with the prompt as a string, then as an async iterable
                           (the SDK's streaming input mode): the requests (`stream` in each body) and usage
resume-twice               a deferred call resumed twice, each in a new process, against ONE live config dir
cut                        the first answer's stream cut half-way (chunked, no last chunk), the connection
                           closed at once and then 0.25 s after the bytes that got through: what the CLI
                           streams and counts for the cut answer

Each prints the requests the server got, the tool runs, every message the SDK yielded (condensed), the
ResultMessage and any exception.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

MODEL = "claude-sonnet-4-5"
PROMPT = "Read ticket T-1 and do what the customer asks."
USAGE_IN, USAGE_OUT = 1000, 100

# ------------------------------------------------------------------ the fake Anthropic Messages server
# A plan maps a request body to a reply: ("calls", [(id, name, input)]), ("text", str), ("empty",) or
# ("error", status, headers). It decides from the tool results in the request, never from a counter, except
# where a case fails the first attempts on purpose.
Plan = Callable[[dict[str, Any], int], tuple]


def results_in(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> result text of every tool_result in the conversation."""
    out = {}
    for m in body.get("messages", []):
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_result":
                c = b.get("content")
                text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c or [])
                out[b["tool_use_id"]] = text
    return out


class Fake:
    def __init__(self, plan: Plan, tail_delay: float = 0.0):
        self.plan, self.log, self.n, self.tail_delay = plan, [], 0, tail_delay
        fake = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    fake.log.append((self.path, 404))
                    self.send_response(404)
                    self.end_headers()
                    return
                fake.n += 1
                reply = fake.plan(body, fake.n)
                fake.log.append((round(time.time() - T0, 2), fake.n, reply[0], reply[1] if reply[0] == "error"
                                 else sorted(results_in(body)), len(json.dumps(body)),
                                 self.headers.get("x-stainless-retry-count"), f"stream={body.get('stream')}"))
                if reply[0] == "error":
                    _, status, headers = reply
                    data = json.dumps({"type": "error", "error": {"type": "api_error", "message": "scripted"}})
                    self.send_response(status)
                    for k, v in {"content-type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data.encode())
                    return
                if reply[0] == "cut":  # ("cut", pause_s): half a tool-call answer, chunked, then the drop
                    events = sse(("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})]), fake.n)
                    half = len(events) // 2
                    sent = b"".join(events[:half]) + events[half][:len(events[half]) // 2]
                    self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                     b"transfer-encoding: chunked\r\n\r\n")
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(sent), sent))
                    self.wfile.flush()
                    time.sleep(reply[1])
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                events = sse(reply, fake.n)
                for ev in events[:-2]:
                    self.wfile.write(ev)
                self.wfile.flush()
                time.sleep(fake.tail_delay)  # the response's end (message_delta, message_stop) comes late
                for ev in events[-2:]:
                    self.wfile.write(ev)
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


def sse(reply: tuple, n: int) -> list[bytes]:
    out: list[bytes] = []

    def emit(kind: str, **f: Any) -> None:
        out.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **f})}\n\n".encode())

    usage = {"input_tokens": USAGE_IN, "output_tokens": 0, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    emit("message_start", message={"id": f"msg_{n}", "type": "message", "role": "assistant", "model": MODEL,
                                   "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage})
    stop = "end_turn"
    if reply[0] == "text":
        emit("content_block_start", index=0, content_block={"type": "text", "text": ""})
        emit("content_block_delta", index=0, delta={"type": "text_delta", "text": reply[1]})
        emit("content_block_stop", index=0)
    elif reply[0] == "calls":
        stop = "tool_use"
        for i, (cid, name, args) in enumerate(reply[1]):
            emit("content_block_start", index=i, content_block={"type": "tool_use", "id": cid,
                                                                "name": f"mcp__t__{name}", "input": {}})
            emit("content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": json.dumps(args)})
            emit("content_block_stop", index=i)
    emit("message_delta", delta={"stop_reason": stop, "stop_sequence": None},
         usage={**usage, "output_tokens": USAGE_OUT})
    emit("message_stop")
    return out


# ------------------------------------------------------------------ tools (plain functions)
RUNS_FILE = Path(os.environ.get("PROBE_RUNS", tempfile.mktemp(prefix="claude-probe-runs-")))


def ran(name: str) -> None:
    with RUNS_FILE.open("a") as f:  # a file: resume cases run tools in child processes
        f.write(name + "\n")


def runs() -> dict[str, int]:
    names = RUNS_FILE.read_text().split() if RUNS_FILE.exists() else []
    return {n: names.count(n) for n in sorted(set(names))}


@tool("get_ticket", "Read a support ticket by id.", {"ticket_id": str})
async def get_ticket(args: dict[str, Any]) -> dict[str, Any]:
    ran("get_ticket")
    return {"content": [{"type": "text", "text": f"Ticket {args['ticket_id']}: delete ana's account / reply"}]}


@tool("delete_account", "Delete a customer account.", {"customer": str})
async def delete_account(args: dict[str, Any]) -> dict[str, Any]:
    ran("delete_account")
    return {"content": [{"type": "text", "text": f"Account {args['customer']} deleted."}]}


@tool("send_reply", "Send a reply email to the customer.", {"to": str, "body": str})
async def send_reply(args: dict[str, Any]) -> dict[str, Any]:
    ran("send_reply")
    return {"content": [{"type": "text", "text": f"Reply sent to {args['to']}."}]}


def options(url: str, config: str, **kw: Any) -> ClaudeAgentOptions:
    cwd = Path(config).parent / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    env = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "probe", "CLAUDE_CONFIG_DIR": config,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    server = create_sdk_mcp_server("t", tools=[get_ticket, delete_account, send_reply])
    base = dict(tools=[], mcp_servers={"t": server}, strict_mcp_config=True, setting_sources=[], cwd=str(cwd),
                model=MODEL, env=env, allowed_tools=["mcp__t__get_ticket"])
    if os.environ.get("PROBE_DEBUG") == "1":  # the CLI's own debug log on stderr
        base.update(extra_args={"debug-to-stderr": None}, stderr=lambda line: print("CLI:", line, file=sys.stderr))
    return ClaudeAgentOptions(**{**base, **kw})


def show(m: Any) -> Any:
    if isinstance(m, UserMessage):
        print("  USER", [getattr(b, "text", None) or type(b).__name__ for b in m.content])
    elif isinstance(m, ResultMessage):
        keep = ("subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "api_error_status",
                "total_cost_usd", "permission_denials", "deferred_tool_use", "errors", "result", "session_id")
        print("  RESULT", json.dumps({k: getattr(m, k) for k in keep}, default=str))
        print("  usage", {k: (m.usage or {}).get(k) for k in ("input_tokens", "output_tokens")},
              "model_usage", {k: (v.get("inputTokens"), v.get("outputTokens"), v.get("costUSD"))
                              for k, v in (m.model_usage or {}).items()})
    elif isinstance(m, AssistantMessage):
        blocks = [getattr(b, "name", None) or type(b).__name__ for b in m.content]
        print("  ASSISTANT", m.message_id, blocks, "error=", m.error)
    elif isinstance(m, StreamEvent):
        return m
    elif isinstance(m, SystemMessage):
        data = {k: v for k, v in m.data.items() if k in ("attempt", "max_retries", "retry_delay_ms",
                                                           "error_status", "error")}
        print("  SYSTEM", m.subtype, data if m.subtype != "init" else "")
    else:
        print("  MSG", type(m).__name__)
    return m


async def drain(stream: Any) -> list[Any]:
    got = []
    try:
        async for m in stream:
            got.append(show(m))
    except Exception as e:  # the SDK raises after an error result: print it, it is the finding
        print("  RAISED", type(e).__name__, str(e)[:300])
    return got


def summary(fake: Fake, got: list[Any]) -> None:
    print("requests:", fake.n)
    for row in fake.log:
        print("   ", row)
    print("tool runs:", runs())
    print("assistant message ids:", len({m.message_id for m in got if isinstance(m, AssistantMessage)
                                         and m.message_id and m.error is None}),
          "api_retry messages:", sum(isinstance(m, SystemMessage) and m.subtype == "api_retry" for m in got))


# ------------------------------------------------------------------ cases
def deny_plan(body: dict[str, Any], n: int) -> tuple:
    done = results_in(body)
    if "toolu_d1" in done:
        return ("text", f"tool said: {done['toolu_d1'][:80]}")
    if "toolu_t1" in done:
        return ("calls", [("toolu_d1", "delete_account", {"customer": "ana@example.com"})])
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])


async def deny_hook(stop: bool) -> None:
    async def hook(data: dict[str, Any], tool_use_id: str | None, _ctx: Any) -> dict[str, Any]:
        print("  HOOK", data.get("tool_name"), tool_use_id)
        out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                      "permissionDecisionReason": "denied by policy"}}
        if stop:
            out.update(continue_=False, stopReason="delete_account is denied by policy")
        return out

    fake = Fake(deny_plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    hooks = {"PreToolUse": [HookMatcher(matcher="mcp__t__delete_account", hooks=[hook])]}
    got = await drain(query(prompt=PROMPT, options=options(fake.url, config, hooks=hooks)))
    summary(fake, got)


async def deny_cut(interrupt: bool, tail_delay: float = 0.0) -> None:
    async def can_use_tool(name: str, args: dict[str, Any], ctx: Any) -> Any:
        print(f"  CAN_USE_TOOL at {time.time() - T0:.2f} s", name, getattr(ctx, "tool_use_id", None))
        return PermissionResultDeny(message="denied by policy", interrupt=interrupt)

    fake = Fake(deny_plan, tail_delay)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    got = await drain(query(prompt=PROMPT, options=options(fake.url, config, can_use_tool=can_use_tool)))
    summary(fake, got)


def send_plan(body: dict[str, Any], n: int) -> tuple:
    done = results_in(body)
    if "toolu_s1" in done:
        return ("text", f"tool said: {done['toolu_s1'][:80]}")
    if "toolu_t1" in done:
        return ("calls", [("toolu_s1", "send_reply", {"to": "ana@example.com", "body": "Hello"})])
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])


async def cut_no_decision() -> None:
    async def can_use_tool(name: str, args: dict[str, Any], ctx: Any) -> Any:
        print("  CAN_USE_TOOL", name, getattr(ctx, "tool_use_id", None), "-> no decision: Deny(interrupt=True)")
        return PermissionResultDeny(message="no decision available", interrupt=True)

    fake = Fake(send_plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    got = await drain(query(prompt=PROMPT, options=options(fake.url, config, can_use_tool=can_use_tool)))
    summary(fake, got)


def failing(first: list[tuple[int, dict[str, str]]], forever: tuple[int, dict[str, str]] | None) -> Plan:
    def plan(body: dict[str, Any], n: int) -> tuple:
        if forever is not None:
            return ("error", *forever)
        if n <= len(first):
            return ("error", *first[n - 1])
        done = results_in(body)
        if "toolu_t2" in done:
            return ("text", "Draft: policy POL-7 applies.")
        if "toolu_t1" in done:
            return ("calls", [("toolu_t2", "get_ticket", {"ticket_id": "T-2"})])
        return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])

    return plan


async def failures(plan: Plan) -> None:
    fake = Fake(plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    t0 = time.time()
    got = await drain(query(prompt=PROMPT, options=options(fake.url, config)))
    summary(fake, got)
    print("elapsed s:", round(time.time() - t0, 1))


def empty_plan(body: dict[str, Any], n: int) -> tuple:
    if "toolu_t1" in results_in(body):
        return ("empty",)
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])


async def empty() -> None:
    for partial in (False, True):  # the SDK's default stream, then with message_start stream events
        print(f"--- include_partial_messages={partial}")
        RUNS_FILE.unlink(missing_ok=True)
        fake = Fake(empty_plan)
        config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
        got = await drain(query(prompt=PROMPT, options=options(fake.url, config, include_partial_messages=partial)))
        summary(fake, got)
        for m in got:
            if isinstance(m, UserMessage):
                print("  user message:", [getattr(b, "text", None) or type(b).__name__ for b in m.content])
        starts = [m.event["message"]["id"] for m in got if isinstance(m, StreamEvent)
                  and m.event.get("type") == "message_start"]
        print("  message_start stream events:", starts)


def ticket_plan(body: dict[str, Any], n: int) -> tuple:
    if "toolu_t1" in results_in(body):
        return ("text", "Done: the ticket is read.")
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])


async def streaming_input() -> None:
    async def one_prompt() -> Any:  # the SDK's streaming input mode: user messages from an async iterable
        yield {"type": "user", "message": {"role": "user", "content": PROMPT}, "parent_tool_use_id": None,
               "session_id": "probe"}

    for mode in ("string", "async-iterable"):
        print(f"--- prompt as {mode}")
        RUNS_FILE.unlink(missing_ok=True)
        fake = Fake(ticket_plan)
        config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
        got = await drain(query(prompt=PROMPT if mode == "string" else one_prompt(), options=options(fake.url, config)))
        summary(fake, got)


# -- resume twice: every segment is a child process (`segment run|resume CONFIG URL [SESSION]`)
async def segment(kind: str, config: str, url: str, session: str | None) -> None:
    async def hook(data: dict[str, Any], tool_use_id: str | None, _ctx: Any) -> dict[str, Any]:
        decision = "defer" if kind == "run" else "allow"
        print(f"  HOOK {data.get('tool_name')} {tool_use_id} -> {decision}")
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                       "permissionDecisionReason": decision}}

    hooks = {"PreToolUse": [HookMatcher(matcher="mcp__t__send_reply", hooks=[hook])]}
    if kind == "run":
        got = await drain(query(prompt=PROMPT, options=options(url, config, hooks=hooks)))
    else:
        opts = options(url, config, hooks=hooks, resume=session)

        async def resumed() -> Any:
            async with ClaudeSDKClient(opts) as client:
                async for m in client.receive_response():
                    yield m

        got = await drain(resumed())
    last = [m for m in got if isinstance(m, ResultMessage)]
    if last:
        print("SESSION", last[-1].session_id)


WAIT_S = float(os.environ.get("PROBE_WAIT_S", "60"))


def resume_twice() -> None:
    fake = Fake(send_plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    Path(config).mkdir()
    env = {**os.environ, "PROBE_RUNS": str(RUNS_FILE)}
    me = [sys.executable, __file__, "segment"]
    session = None
    for i, kind in enumerate(["run", "resume", "resume"]):
        print(f"--- segment {i}: {kind} (new process, config {config})")
        n0 = fake.n
        t0 = time.time()
        try:
            out = subprocess.run([*me, kind, config, fake.url, session or ""], env=env, capture_output=True,
                                 text=True, timeout=WAIT_S)
            print(out.stdout.rstrip())
            if out.returncode:
                print("  exit", out.returncode, out.stderr[-800:])
        except subprocess.TimeoutExpired as e:
            print(f"  TIMEOUT: no ResultMessage after {WAIT_S} s; stdout: {e.stdout!r}")
            for line in (e.stderr or b"").decode(errors="replace").splitlines()[-25:]:
                print("   ", line[:300])
        print(f"  requests in this segment: {fake.n - n0}, elapsed {time.time() - t0:.1f} s, "
              f"tool runs so far: {runs()}")
        if session is None:
            session = next((line.split()[1] for line in out.stdout.splitlines() if line.startswith("SESSION")), None)
    print("requests:", fake.n)
    for row in fake.log:
        print("   ", row)
    print("tool runs:", runs())


def cut_plan(pause_s: float) -> Plan:
    def plan(body: dict[str, Any], n: int) -> tuple:
        return ("cut", pause_s) if n == 1 else ticket_plan(body, n)

    return plan


async def cut() -> None:
    for pause_s in (0.0, 0.25):
        print(f"--- the connection closes {pause_s} s after the bytes that got through")
        RUNS_FILE.unlink(missing_ok=True)
        fake = Fake(cut_plan(pause_s))
        config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
        got = await drain(query(prompt=PROMPT, options=options(fake.url, config, include_partial_messages=True)))
        summary(fake, got)
        print("  stream events:", [(m.event.get("type"), (m.event.get("message") or {}).get("id"))
                                   for m in got if isinstance(m, StreamEvent)
                                   and m.event.get("type") in ("message_start", "message_delta", "message_stop")])


T0 = time.time()
CASES: dict[str, Callable[[], Any]] = {
    "deny-hook-stop": lambda: deny_hook(True), "deny-hook-continue": lambda: deny_hook(False),
    "deny-cut-stop": lambda: deny_cut(True), "deny-cut-continue": lambda: deny_cut(False),
    "deny-cut-slow-tail": lambda: deny_cut(True, tail_delay=1.0),
    "cut-no-decision": cut_no_decision,
    "fatal": lambda: failures(failing([], (500, {"x-should-retry": "false"}))),
    "transient": lambda: failures(failing([(429, {"retry-after": "1"}), (500, {})], None)),
    "outage": lambda: failures(failing([], (500, {}))),
    "bad-request": lambda: failures(failing([], (400, {"x-should-retry": "false"}))),
    "hints": lambda: failures(failing([(429, {"retry-after": "3"}), (500, {"retry-after": "3"}),
                                       (529, {"retry-after": "3"})], None)),
    "empty": empty,
    "streaming-input": streaming_input,
    "cut": cut,
}

if __name__ == "__main__":
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    if case == "segment":
        asyncio.run(segment(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] or None))
    elif case == "resume-twice":
        resume_twice()
    elif case in CASES:
        asyncio.run(CASES[case]())
    else:
        sys.exit(f"usage: fair.py {{{'|'.join([*CASES, 'resume-twice'])}}}")
