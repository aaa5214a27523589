"""Standalone (no loopbench code): pydantic-ai's tool-error pairings and its request count at a run deadline, against
a fake Anthropic Messages (and OpenAI Chat Completions) server in this script (127.0.0.1).

The model is driven as the loopbench adapter's default idiom drives it: `AnthropicModel` +
`AnthropicProvider(anthropic_client=AsyncAnthropic(base_url=...))`, `agent.run` with no `max_tokens`, so pydantic-ai
streams behind the scenes (the server answers `stream: true` with SSE, `stream: false` with JSON). Like loopbench's
scripted server, a response's delay is spent before its headers go out (`mid-stream` sends half the events first).

Cases (`.venv/bin/python probes/pydantic_ai/fair.py [CASE ...]`, default: all):
  tool-errors  the three tool-failure cells of the suite, each in two pairings of a tool's error to pydantic-ai's
               documented paths (tools-advanced.md "Tool Execution, Retries, and Failures"): `docs` = ModelRetry for a
               recoverable error or a timeout, ToolFailed for a fatal one (the rule of thumb); `raise-fatal` = the
               same, but the fatal error raised as an ordinary exception ("Any other exception propagates out of the
               agent run and is not sent back to the model"). The fake model's script is the suite's:
               fatal       get_ticket, lookup_policy (fails: permission denied), lookup_policy again on an error
                           result, then a text answer without the policy;
               transient   get_ticket, lookup_policy until a result (the first two fail, recoverable), then text;
               timeout     send_reply (it "times out" after committing: the reply went out), send_reply again on an
                           error result, then text.
  deadline     what `RunUsage.requests` says when `agent.run(timeout=...)` cuts the run (RunTimedOut.usage; and
               `agent.iter`'s `run.usage`), next to the requests the server saw, and when it increments (the
               tool of the first response reads `ctx.usage.requests`):
               slow-model  every response takes 2 s, timeout=3.5 (the suite's deadline_slow_model): the 2nd request
                           is in flight when the deadline passes;
               first-cut   every response takes 2 s, timeout=1.5: the 1st request is in flight;
               mid-stream  the first half of the 1st response's SSE events at once, the rest 2 s later, timeout=1.5;
               slow-tool   responses at once, get_ticket takes 5 s, timeout=2 (the suite's deadline_slow_tool);
               openai-chat slow-model through `OpenAIChatModel` + `OpenAIProvider` (the adapter's openai-chat idiom).

What it shows: `RunUsage.requests` counts model responses committed to the run's history (agent/_agent_graph.py
`_append_response`: "a step counts once, when its response is committed"), never a request sent: the tool of the
first response already reads 1, and a request in flight when the deadline passes is in no count, whether it was cut
before its headers or after half its stream (agent.run's model request streams inside the model class, so no
partial response is committed). So at the cut the usage is one less than the requests the server saw whenever a
request was in flight (slow-model: 1 of 2), and 0 when the first one was (first-cut, mid-stream: 0 of 1).

Output printed on 2026-12-03 (pydantic-ai-slim 2.68.0, anthropic 2.14.0, openai 3.57.0):
  tool-errors docs        fatal:     completed 'no policy' requests=4 lookup_policy=2 is_error=[True, True]
  tool-errors docs        transient: UnexpectedModelBehavior (cause ModelRetry) requests=3 lookup_policy=2
  tool-errors docs        timeout:   completed 'sent' requests=3 send_reply=2 sent=2
  tool-errors raise-fatal fatal:     PolicyServiceError (propagated) requests=2 lookup_policy=1
  tool-errors raise-fatal transient: UnexpectedModelBehavior (cause ModelRetry) requests=3 lookup_policy=2
  tool-errors raise-fatal timeout:   completed 'sent' requests=3 send_reply=2 sent=2
  deadline slow-model  run:  RunTimedOut at 3.51 s server saw 2, usage.requests=1 (tool saw 1), responses kept=1
  deadline slow-model  iter: RunTimedOut at 3.52 s server saw 2, usage.requests=1 (tool saw 1), responses kept=1
  deadline first-cut   run:  RunTimedOut at 1.51 s server saw 1, usage.requests=0 (tool saw -), responses kept=0
  deadline first-cut   iter: RunTimedOut at 1.51 s server saw 1, usage.requests=0 (tool saw -), responses kept=0
  deadline mid-stream  run:  RunTimedOut at 1.51 s server saw 1, usage.requests=0 (tool saw -), responses kept=0
  deadline mid-stream  iter: RunTimedOut at 1.51 s server saw 1, usage.requests=0 (tool saw -), responses kept=0
  deadline slow-tool   run:  RunTimedOut at 2.00 s server saw 1, usage.requests=1 (tool saw 1), responses kept=1
  deadline slow-tool   iter: RunTimedOut at 2.01 s server saw 1, usage.requests=1 (tool saw 1), responses kept=1
  deadline openai-chat run:  RunTimedOut at 3.51 s server saw 2, usage.requests=1 (tool saw 1), responses kept=1
  deadline openai-chat iter: RunTimedOut at 3.50 s server saw 2, usage.requests=1 (tool saw 1), responses kept=1
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent, ModelRetry, RunContext, Tool, ToolFailed
from pydantic_ai.exceptions import RunTimedOut, UnexpectedModelBehavior
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

# a turn: ("call", tool name, call id) or ("text", answer); the script picks it from the tool results so far
Turn = tuple[str, ...]
STATE: dict[str, Any] = {"requests": [], "script": None, "delay_s": 0.0, "mid_delay_s": 0.0, "errors": []}


def results_of(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(call id without its prefix, is_error) of every tool result in the conversation, in order."""
    out: list[tuple[str, bool]] = []
    for m in body["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):  # Anthropic
            out += [(b["tool_use_id"].removeprefix("toolu_"), bool(b.get("is_error")))
                    for b in m["content"] if b.get("type") == "tool_result"]
        if m["role"] == "tool":  # OpenAI Chat: an error has no flag of its own; pydantic-ai frames it
            text = m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            out.append((m["tool_call_id"].removeprefix("call_"), "error" in text.lower() or "fix" in text.lower()))
    return out


def anthropic_events(turn: Turn, model: str) -> list[bytes]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = {"type": "message_start", "message": {"id": f"msg_{len(STATE['requests'])}", "type": "message",
                                                  "role": "assistant", "model": model, "content": [],
                                                  "stop_reason": None, "stop_sequence": None, "usage": usage}}
    if turn[0] == "call":
        block = {"type": "tool_use", "id": f"toolu_{turn[2]}", "name": turn[1], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"q": "x"})}
    else:
        block, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": turn[1]}
    stop = "tool_use" if turn[0] == "call" else "end_turn"
    events: list[dict[str, Any]] = [
        start, {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta}, {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"}]
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def openai_body(turn: Turn, model: str) -> bytes:
    msg: dict[str, Any] = {"role": "assistant", "content": turn[1]}
    if turn[0] == "call":
        msg = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{turn[2]}", "type": "function", "function": {"name": turn[1], "arguments": '{"q": "x"}'}}]}
    return json.dumps({"id": "r", "object": "chat.completion", "created": 0, "model": model,
                       "choices": [{"index": 0, "message": msg,
                                    "finish_reason": "tool_calls" if turn[0] == "call" else "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        STATE["requests"].append(time.perf_counter())
        results = results_of(body)
        STATE["errors"] = [e for _, e in results]
        turn: Turn = STATE["script"](results)
        time.sleep(STATE["delay_s"])  # like the scripted server's delay_s: before the headers
        try:
            if self.path.startswith("/v1/chat/completions"):
                self.send(openai_body(turn, body["model"]), "application/json")
            elif body.get("stream"):
                events = anthropic_events(turn, body["model"])
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                half = len(events) // 2
                self.wfile.write(b"".join(events[:half]))
                self.wfile.flush()
                time.sleep(STATE["mid_delay_s"])
                self.wfile.write(b"".join(events[half:]))
                self.close_connection = True
            else:
                raise SystemExit("the adapter's idiom streams: a plain request is not expected here")
        except (BrokenPipeError, ConnectionResetError):  # the client left (the run was cut)
            self.close_connection = True

    def send(self, out: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def anthropic_model(port: int) -> Model:
    client = AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="k")  # the client adds /v1/messages
    return AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=client))


def openai_model(port: int) -> Model:
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    return OpenAIChatModel("claude-sonnet-4-5", provider=OpenAIProvider(openai_client=client))


# ---------------------------------------------------------------- tool errors
class PolicyServiceError(Exception):
    """A fatal answer of the policy service, raised as an ordinary exception (the raise-fatal pairing)."""


def script_fatal(results: list[tuple[str, bool]]) -> Turn:
    ids = [cid for cid, _ in results]
    if not ids:
        return ("call", "get_ticket", "ticket_1")
    if ids[-1] == "ticket_1":
        return ("call", "lookup_policy", "policy_1")
    if ids[-1] == "policy_1" and results[-1][1]:
        return ("call", "lookup_policy", "policy_2")
    return ("text", "no policy")


def script_transient(results: list[tuple[str, bool]]) -> Turn:
    if not results:
        return ("call", "get_ticket", "ticket_1")
    if results[-1][0] == "ticket_1" or results[-1][1]:
        return ("call", "lookup_policy", f"policy_{len(results)}")
    return ("text", "POL-7")


def script_timeout(results: list[tuple[str, bool]]) -> Turn:
    if not results:
        return ("call", "send_reply", "send_1")
    if results[-1] == ("send_1", True):
        return ("call", "send_reply", "send_2")
    return ("text", "sent")


async def case_tool_errors(port: int) -> None:
    for pairing in ("docs", "raise-fatal"):
        for cell, script, failures in (("fatal", script_fatal, ["fatal"] * 9),
                                       ("transient", script_transient, ["recoverable", "recoverable"]),
                                       ("timeout", script_timeout, ["timeout"])):
            runs: dict[str, int] = {"get_ticket": 0, "lookup_policy": 0, "send_reply": 0}
            sent = [0]
            left = list(failures)

            def make(name: str) -> Tool[None]:
                async def tool(q: str) -> str:
                    runs[name] += 1  # noqa: B023 (this cell's counters: the agent runs within the iteration)
                    if name == "get_ticket":
                        return "Ticket T-1"
                    if name == "send_reply":
                        await asyncio.sleep(0.2)
                        sent[0] += 1  # noqa: B023 (committed, then the caller is told it timed out)
                    kind = left.pop(0) if left else None  # noqa: B023
                    if kind is None:
                        return "done" if name == "send_reply" else "Policy POL-7"
                    if kind == "fatal":
                        if pairing == "raise-fatal":  # noqa: B023
                            raise PolicyServiceError("permission denied")
                        raise ToolFailed("permission denied")
                    raise ModelRetry("timed out" if kind == "timeout" else "policy service unavailable")

                return Tool(tool, name=name, takes_ctx=False)

            STATE.update(requests=[], script=script, delay_s=0.0, mid_delay_s=0.0)
            agent = Agent(anthropic_model(port), tools=[make(n) for n in runs])
            try:
                result = await agent.run("go")
                tools = tool_summary(cell, runs)
                extra = f" sent={sent[0]}" if cell == "timeout" else f" is_error={STATE['errors'][1:]}"
                print(f"tool-errors {pairing:11} {cell + ':':10} completed {result.output!r} "
                      f"requests={len(STATE['requests'])} {tools}{extra if cell != 'transient' else ''}")
            except Exception as exc:  # noqa: BLE001 (the probe reports whatever ended the run)
                tools = tool_summary(cell, runs)
                cause = f" (cause {type(exc.__cause__).__name__})" if isinstance(exc, UnexpectedModelBehavior) else ""
                how = " (propagated)" if isinstance(exc, PolicyServiceError) else cause
                print(f"tool-errors {pairing:11} {cell + ':':10} {type(exc).__name__}{how} "
                      f"requests={len(STATE['requests'])} {tools}")


def tool_summary(cell: str, runs: dict[str, int]) -> str:
    return f"send_reply={runs['send_reply']}" if cell == "timeout" else f"lookup_policy={runs['lookup_policy']}"


# ---------------------------------------------------------------- deadline counts
def script_deadline(results: list[tuple[str, bool]]) -> Turn:
    if not results:
        return ("call", "get_ticket", "ticket_1")
    if results[-1][0] == "ticket_1":
        return ("call", "lookup_policy", "policy_1")
    return ("text", "POL-7")


async def case_deadline(port: int) -> None:
    cases: list[tuple[str, Callable[[int], Model], float, float, float, float]] = [
        # name, model, response delay, mid-stream delay, tool delay, timeout
        ("slow-model", anthropic_model, 2.0, 0.0, 0.0, 3.5),
        ("first-cut", anthropic_model, 2.0, 0.0, 0.0, 1.5),
        ("mid-stream", anthropic_model, 0.0, 2.0, 0.0, 1.5),
        ("slow-tool", anthropic_model, 0.0, 0.0, 5.0, 2.0),
        ("openai-chat", openai_model, 2.0, 0.0, 0.0, 3.5),
    ]
    for name, make_model, delay, mid, tool_delay, timeout in cases:
        for idiom in ("run", "iter"):
            seen: list[int] = []

            async def get_ticket(ctx: RunContext[None], q: str) -> str:
                seen.append(ctx.usage.requests)  # noqa: B023 (this case's list)
                await asyncio.sleep(tool_delay)  # noqa: B023
                return "Ticket T-1"

            STATE.update(requests=[], script=script_deadline, delay_s=delay, mid_delay_s=mid)
            agent = Agent(make_model(port), tools=[Tool(get_ticket, name="get_ticket"),
                                                   Tool(lambda q: "Policy POL-7", name="lookup_policy",
                                                        takes_ctx=False)])
            t0 = time.perf_counter()
            usage: Any = None
            try:
                if idiom == "run":
                    await agent.run("go", timeout=timeout)
                else:
                    async with agent.iter("go", timeout=timeout) as run:
                        usage = run.usage
                        async for _ in run:
                            pass
                print(f"deadline {name}: completed (not expected)")
            except RunTimedOut as exc:
                usage = usage if idiom == "iter" else exc.usage
                responses = sum(isinstance(m, ModelResponse) for m in exc.all_messages())
                await asyncio.sleep(0.1)  # let the server's thread note a late request, if any
                print(f"deadline {name:11} {idiom + ':':5} RunTimedOut at {time.perf_counter() - t0 - 0.1:.2f} s "
                      f"server saw {len(STATE['requests'])}, usage.requests={usage.requests} "
                      f"(tool saw {seen[0] if seen else '-'}), responses kept={responses}")


CASES = {"tool-errors": case_tool_errors, "deadline": case_deadline}


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in sys.argv[1:] or list(CASES):
        asyncio.run(CASES[name](server.server_address[1]))
    server.shutdown()


if __name__ == "__main__":
    main()
