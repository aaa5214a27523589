"""Standalone probe (raw SDK, no loopbench code): the caller's cancel and the resume after it. Reuses fair.py's fake
Anthropic server (127.0.0.1) and options; a slow tool of its own.

    .venv/bin/python probes/claude/cancel.py CASE      (each case ~10-20 s)

tool          ClaudeSDKClient: the response consumed in a task (the SDK's examples/streaming_mode.py
              example_with_interrupt), interrupt() 0.5 s into a 5 s tool call
model         the same, interrupt() 0.5 s into the second model request, which the server answers after 5 s
close-query   query() (documented "No interrupts"): the caller leaves the iterator (aclosing) 0.5 s into the 5 s
              tool call, the only way query() offers
resume        `tool`, then the session resumed with query(prompt="Continue where we left off",
              options=ClaudeAgentOptions(resume=<id>)) (the sessions guide's resume by id): what the CLI sends the
              model for the interrupted tool call, and whether the tool runs again
resume-none   `tool`, then ClaudeSDKClient(resume=<id>) with no prompt (how a deferred call is resumed): bounded by
              PROBE_WAIT_S (default 20 s)

Measured with claude-agent-sdk 0.2.189 (CLI 2.1.332):
- tool: interrupt() returns in ~0.03 s; the tool handler gets CancelledError at once (the CLI cancels the MCP call);
  the SDK yields a UserMessage with the interrupted call's ToolResultBlock, "[Request interrupted by user for tool
  use]", then ResultMessage(error_during_execution, terminal_reason=aborted_tools, num_turns 3), usage and
  model_usage 1000 / 100 (the one finished response); the context is left ~0.1 s after the interrupt; 1 request.
- model: the same within ~0.05 s: "[Request interrupted by user]", terminal_reason=aborted_streaming; the request
  held by the server is dropped and not counted (model_usage 1000 / 100, the first response only).
- close-query: the tool handler is cancelled too, but no ResultMessage is yielded (no usage), and the CLI, before
  the SDK tears it down, hands the model an is_error result ("The tool call was interrupted before a result was
  received. It may or may not have completed...") and sends a SECOND model request nobody reads.
- resume: the transcript keeps the interrupted call as an is_error tool result ("The user doesn't want to proceed
  with this tool use... Correction to the text above: this call was stopped while running, not refused...") and
  the interrupt marker; the resume sends 1 request (history + "Continue where we left off") and does not run the
  tool again by itself (the model decides); model_usage/total_cost_usd come back cumulative (2000 / 200).
- resume-none: no request, no message, no ResultMessage within PROBE_WAIT_S: after a cancel the CLI needs a prompt.

Each prints a timeline (seconds since the case began): the interrupt sent and answered, every message the SDK
yielded, the tool's start / end / cancellation, the moment the client context (disconnect) or the iterator was left;
then the requests the server got (with each request's last message) and the tool runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fair  # noqa: E402
from claude_agent_sdk import (  # noqa: E402
    ClaudeSDKClient,
    ResultMessage,
    StreamEvent,
    create_sdk_mcp_server,
    query,
    tool,
)

TOOL_S, MODEL_S, CANCEL_AFTER_S = 5.0, 5.0, 0.5
WAIT_S = float(os.environ.get("PROBE_WAIT_S", "20"))
T0 = time.monotonic()


def at() -> str:
    return f"{time.monotonic() - T0:6.2f}"


def say(*a: Any) -> None:
    print(at(), *a, flush=True)


@tool("slow_lookup", "Look up the refund policy (slow).", {"topic": str})
async def slow_lookup(args: dict[str, Any]) -> dict[str, Any]:
    fair.ran("slow_lookup")
    say("TOOL slow_lookup started")
    STARTED.set()
    try:
        await asyncio.sleep(TOOL_S)
    except asyncio.CancelledError:
        say("TOOL slow_lookup CANCELLED")
        raise
    say("TOOL slow_lookup finished")
    return {"content": [{"type": "text", "text": "Policy POL-7: refunds within 30 days."}]}


STARTED: asyncio.Event


def tool_plan(body: dict[str, Any], n: int) -> tuple:
    done = fair.results_in(body)
    if "toolu_p1" in done:
        return ("text", f"The policy is POL-7 (tool said: {done['toolu_p1'][:60]!r}).")
    return ("calls", [("toolu_p1", "slow_lookup", {"topic": "refund"})])


def model_plan(body: dict[str, Any], n: int) -> tuple:
    done = fair.results_in(body)
    if "toolu_t1" in done:
        say(f"SERVER request {n}: holding the answer {MODEL_S} s")
        time.sleep(MODEL_S)  # the handler thread: the whole response comes late
        return ("text", "Done: POL-7.")
    return ("calls", [("toolu_t1", "get_ticket", {"ticket_id": "T-1"})])


def opts(fake: fair.Fake, config: str, **kw: Any) -> Any:
    o = fair.options(fake.url, config, **kw)
    o.mcp_servers = {"t": create_sdk_mcp_server("t", tools=[fair.get_ticket, slow_lookup])}
    o.allowed_tools = ["mcp__t__get_ticket", "mcp__t__slow_lookup"]
    o.include_partial_messages = True
    return o


def show(m: Any) -> None:
    if isinstance(m, StreamEvent):
        if m.event.get("type") == "message_start":
            say("STREAM message_start", m.event["message"]["id"])
        return
    print(at(), end=" ")
    fair.show(m)


async def interrupted(fake: fair.Fake, config: str, wait: asyncio.Event) -> str | None:
    """The SDK's interrupt idiom: consume in a task, interrupt() from the caller when `wait` is set (+0.5 s)."""
    session = None
    async with ClaudeSDKClient(opts(fake, config)) as client:
        await client.query(fair.PROMPT)

        async def consume() -> None:
            nonlocal session
            async for m in client.receive_response():
                show(m)
                if isinstance(m, ResultMessage):
                    session = m.session_id

        consumer = asyncio.create_task(consume())
        await wait.wait()
        await asyncio.sleep(CANCEL_AFTER_S)
        say("CALLER interrupt()")
        await client.interrupt()
        say("CALLER interrupt() returned")
        await consumer
        say("CALLER consumer done (ResultMessage read); leaving the client context (disconnect)")
    say("CALLER client context left")
    return session


def requests(fake: fair.Fake, bodies: list[dict[str, Any]]) -> None:
    print("requests:", fake.n)
    for row, body in zip(fake.log, bodies, strict=False):
        last = body["messages"][-1]
        c = last.get("content")
        blocks = [c[:80]] if isinstance(c, str) else [
            {k: (v if k != "content" else (v if isinstance(v, str) else " ".join(x.get("text", "") for x in v))[:90])
             for k, v in b.items() if k in ("type", "tool_use_id", "is_error", "content", "text")}
            for b in c or [] if not (b.get("type") == "text" and "system-reminder" in b.get("text", ""))]
        print("   ", row, "| last message:", last["role"], json.dumps(blocks)[:400])
        for m in body["messages"]:  # every tool result the request carries, as the CLI wrote it
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    text = c if isinstance(c, str) else " ".join(x.get("text", "") for x in c or [])
                    print("        tool_result", b.get("tool_use_id"), "is_error" if b.get("is_error") else "ok",
                          repr(text[:300]))
                elif b.get("type") == "text" and "interrupted" in b.get("text", ""):
                    print("        text", m["role"], repr(b["text"][:120]))
    print("tool runs:", fair.runs())


def recording(plan: Any) -> tuple[Any, list[dict[str, Any]]]:
    bodies: list[dict[str, Any]] = []

    def wrapped(body: dict[str, Any], n: int) -> tuple:
        bodies.append(body)
        return plan(body, n)

    return wrapped, bodies


async def case_tool() -> tuple[fair.Fake, str, str | None, list[dict[str, Any]]]:
    plan, bodies = recording(tool_plan)
    fake = fair.Fake(plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    session = await interrupted(fake, config, STARTED)
    await asyncio.sleep(TOOL_S)  # past the tool's scripted end: did it finish anyway?
    requests(fake, bodies)
    return fake, config, session, bodies


async def case_model() -> None:
    plan, bodies = recording(model_plan)
    fake = fair.Fake(plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    second = asyncio.Event()

    async def when_second() -> None:  # the second request arrives once get_ticket has run
        while fake.n < 2:
            await asyncio.sleep(0.01)
        second.set()

    watcher = asyncio.create_task(when_second())
    await interrupted(fake, config, second)
    watcher.cancel()
    requests(fake, bodies)


async def case_close_query() -> None:
    plan, bodies = recording(tool_plan)
    fake = fair.Fake(plan)
    config = tempfile.mkdtemp(prefix="claude-probe-") + "/config"
    got_result = False

    async def consume() -> None:
        nonlocal got_result
        async with contextlib.aclosing(query(prompt=fair.PROMPT, options=opts(fake, config))) as stream:
            async for m in stream:
                show(m)
                got_result = got_result or isinstance(m, ResultMessage)

    consumer = asyncio.create_task(consume())
    await STARTED.wait()
    await asyncio.sleep(CANCEL_AFTER_S)
    say("CALLER cancels the task iterating query()")
    consumer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consumer
    say(f"CALLER iterator left; a ResultMessage was yielded: {got_result}")
    await asyncio.sleep(TOOL_S)
    requests(fake, bodies)


async def case_resume(prompt: str | None) -> None:
    fake, config, session, bodies = await case_tool()
    n0 = fake.n
    print(f"--- resume session {session} ({'prompt ' + repr(prompt) if prompt else 'no prompt'}), a new CLI process")
    o = opts(fake, config, resume=session)
    try:
        async with asyncio.timeout(WAIT_S):
            if prompt is not None:
                async with contextlib.aclosing(query(prompt=prompt, options=o)) as stream:
                    async for m in stream:
                        show(m)
            else:
                async with ClaudeSDKClient(o) as client:
                    async for m in client.receive_response():
                        show(m)
    except TimeoutError:
        say(f"RESUME: no ResultMessage within {WAIT_S} s")
    print(f"requests in the resume: {fake.n - n0}")
    requests(fake, bodies)


CASES = {"tool": case_tool, "model": case_model, "close-query": case_close_query,
         "resume": lambda: case_resume("Continue where we left off"), "resume-none": lambda: case_resume(None)}


async def main(case: str) -> None:
    global STARTED
    STARTED = asyncio.Event()
    await CASES[case]()


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in CASES:
        sys.exit(f"usage: cancel.py {{{'|'.join(CASES)}}}")
    asyncio.run(main(name))
