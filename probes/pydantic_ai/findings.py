"""Standalone (no loopbench code): Pydantic AI 2.68's behaviours behind the pydantic-ai cells, each against a
tiny fake server in this script (127.0.0.1) speaking OpenAI Chat Completions, through `OpenAIChatModel` +
`OpenAIProvider(openai_client=AsyncOpenAI(base_url=...))`, and (the cost case) Anthropic Messages, through
`AnthropicModel` + `AnthropicProvider(anthropic_client=AsyncAnthropic(base_url=...))`.

Cases (`.venv/bin/python probes/pydantic_ai/findings.py [CASE ...]`, default: all):
  cost          `UsageLimits(cost_limit=0.05)` with 5,000 + 400 tokens a response ($0.021 at Anthropic prices):
                the provider decides the price lookup. `claude-sonnet-4-5` through `AnthropicModel` +
                `AnthropicProvider` (provider "anthropic") is priced: the limit raises `UsageLimitExceeded`
                after the 3rd response ($0.063: checked after each response, the crossing one already paid for);
                the same model behind `OpenAIProvider` has no price under provider "openai", so `usage.cost`
                stays None, a `CostNotFoundWarning` is emitted and the run completes (4 requests, $0.084 spent);
                `gpt-4o` behind `OpenAIProvider` ($0.0165 a response) raises after the 4th response.
                (The Anthropic call sets max_tokens=1024 so the fake server answers plain JSON: with no
                max_tokens pydantic-ai would stream behind the scenes; the pricing does not depend on it.)
  retry-budget  a tool that raises `ModelRetry` twice: the default per-tool retry budget (1) ends the run on the
                second failure with `UnexpectedModelBehavior` raised from the `ModelRetry` (2 requests, 2 tool
                runs); `ToolFailed` instead goes on (the model sees the failure, no budget used).
  request-limit `request_limit=3` against a model that calls a tool forever: 3 requests, and the 3rd response's
                tool call still runs (3 tool runs) before `UsageLimitExceeded` (checked at the start of the next
                step); the exception carries no usage (`agent.run`), `agent.iter`'s `run.usage` has it.
  resume        `requires_approval=True` pauses with `DeferredToolRequests`; a resume from the message history
                (`ModelMessagesTypeAdapter`) starts a fresh `RunUsage` (requests from 0, so a fresh
                request_limit); resuming the same history twice runs the approved tool twice; a resume from the
                `Conversation` (`ConversationTypeAdapter`) carries the usage (requests continue from 2).

Output printed on 2026-12-03 (pydantic-ai-slim 2.68.0, openai 3.57.0, anthropic 2.14.0, genai-prices 0.2.3):
  cost claude-sonnet-4-5 AnthropicProvider: UsageLimitExceeded after 3 requests, usage.cost=0.063
  cost claude-sonnet-4-5 OpenAIProvider: completed requests=4 usage.cost=None warnings=['CostNotFoundWarning']
  cost gpt-4o OpenAIProvider: UsageLimitExceeded after 4 requests, usage.cost=0.0660
  retry-budget ModelRetry: UnexpectedModelBehavior requests=2 tool_runs=2 cause=ModelRetry
  retry-budget ToolFailed: completed requests=4 tool_runs=3
  request-limit run: UsageLimitExceeded requests=3 tool_runs=3 exc has usage: False
  request-limit iter: UsageLimitExceeded requests=3 tool_runs=3 run.usage.requests=3
  resume pause: DeferredToolRequests ['call_send_1'] usage.requests=2
  resume message_history #1: 'sent' usage.requests=1 send runs=1
  resume message_history #2: 'sent' usage.requests=1 send runs=2
  resume conversation: 'sent' usage.requests=3 send runs=3
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import warnings
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelRetry, Tool, ToolFailed, UsageLimits
from pydantic_ai.conversation import ConversationTypeAdapter
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

REQUESTS: list[list[dict[str, Any]]] = []
SCRIPT: list[Callable[[list[dict[str, Any]]], dict[str, Any]]] = []  # the current case's answer
USAGE = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}


def call(name: str, args: dict[str, Any], cid: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


def anthropic_answer(body: dict[str, Any]) -> bytes:
    """Anthropic Messages (the cost case only): a `lookup` tool_use until 3 tool results came back, then text."""
    results = sum(1 for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
                  for b in m["content"] if b.get("type") == "tool_result")
    content = ([{"type": "tool_use", "id": f"toolu_{results}", "name": "lookup", "input": {"q": "x"}}]
               if results < 3 else [{"type": "text", "text": "done"}])
    return json.dumps({"id": f"msg_{len(REQUESTS)}", "type": "message", "role": "assistant", "model": body["model"],
                       "content": content, "stop_reason": "tool_use" if results < 3 else "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": USAGE["prompt_tokens"],
                                                        "output_tokens": USAGE["completion_tokens"]}}).encode()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        REQUESTS.append(body["messages"])
        if self.path.startswith("/v1/messages"):
            self.answer(anthropic_answer(body))
            return
        msg = SCRIPT[0](body["messages"])
        self.answer(json.dumps({"id": f"r{len(REQUESTS)}", "object": "chat.completion", "created": 0,
                                "model": body["model"],
                                "choices": [{"index": 0, "message": msg,
                                             "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                                "usage": USAGE}).encode())

    def answer(self, out: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def model(port: int, name: str = "claude-sonnet-4-5") -> OpenAIChatModel:
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))


def anthropic_model(port: int, name: str = "claude-sonnet-4-5") -> AnthropicModel:
    client = AsyncAnthropic(base_url=f"http://127.0.0.1:{port}", api_key="k")  # the client adds /v1/messages
    return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client))


def tools_in(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


async def case_cost(port: int) -> None:
    global USAGE
    USAGE = {"prompt_tokens": 5000, "completion_tokens": 400, "total_tokens": 5400}
    SCRIPT[:] = [lambda m: call("lookup", {"q": "x"}, f"call_{len(tools_in(m))}") if len(tools_in(m)) < 3
                 else {"role": "assistant", "content": "done"}]
    cases: list[tuple[str, Model]] = [("claude-sonnet-4-5 AnthropicProvider", anthropic_model(port)),
                                      ("claude-sonnet-4-5 OpenAIProvider", model(port)),
                                      ("gpt-4o OpenAIProvider", model(port, "gpt-4o"))]
    for name, llm in cases:
        REQUESTS.clear()
        agent = Agent(llm, tools=[Tool(lambda q: "ok", name="lookup", takes_ctx=False)])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = await agent.run("go", usage_limits=UsageLimits(cost_limit=0.05),
                                         model_settings={"max_tokens": 1024})
                print(f"cost {name}: completed requests={len(REQUESTS)} usage.cost={result.usage.cost} "
                      f"warnings={sorted({w.category.__name__ for w in caught})}")
            except UsageLimitExceeded as exc:
                cost = re.search(r"usage\.cost`=Decimal\('([\d.]+)'\)", str(exc))
                print(f"cost {name}: UsageLimitExceeded after {len(REQUESTS)} requests, "
                      f"usage.cost={cost and cost.group(1)}")
    USAGE = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}


async def case_retry_budget(port: int) -> None:
    SCRIPT[:] = [lambda m: call("lookup", {"q": "x"}, f"call_{len(tools_in(m))}") if len(tools_in(m)) < 3
                 else {"role": "assistant", "content": "done"}]
    def failing_twice(kind: type[Exception], runs: list[int]) -> Callable[[str], str]:
        def lookup(q: str) -> str:
            runs[0] += 1
            if runs[0] <= 2:
                raise kind("service unavailable")
            return "found"

        return lookup

    for kind in (ModelRetry, ToolFailed):
        REQUESTS.clear()
        runs = [0]
        lookup = failing_twice(kind, runs)
        agent = Agent(model(port), tools=[Tool(lookup, name="lookup", takes_ctx=False)])
        try:
            await agent.run("go")
            print(f"retry-budget {kind.__name__}: completed requests={len(REQUESTS)} tool_runs={runs[0]}")
        except UnexpectedModelBehavior as exc:
            print(f"retry-budget {kind.__name__}: UnexpectedModelBehavior requests={len(REQUESTS)} "
                  f"tool_runs={runs[0]} cause={type(exc.__cause__).__name__}")


async def case_request_limit(port: int) -> None:
    SCRIPT[:] = [lambda m: call("search", {"q": str(len(m))}, f"call_{len(tools_in(m))}")]
    for idiom in ("run", "iter"):
        REQUESTS.clear()
        runs = [0]

        def search(q: str) -> str:
            runs[0] += 1  # noqa: B023 (runs is this iteration's: the agent is used within it)
            return "nothing"

        agent = Agent(model(port), tools=[Tool(search, name="search", takes_ctx=False)])
        limits = UsageLimits(request_limit=3)
        try:
            if idiom == "run":
                await agent.run("go", usage_limits=limits)
            else:
                async with agent.iter("go", usage_limits=limits) as run:
                    try:
                        async for _ in run:
                            pass
                    finally:
                        usage = run.usage
        except UsageLimitExceeded as exc:
            tail = (f"exc has usage: {hasattr(exc, 'usage')}" if idiom == "run"
                    else f"run.usage.requests={usage.requests}")
            print(f"request-limit {idiom}: UsageLimitExceeded requests={len(REQUESTS)} tool_runs={runs[0]} {tail}")


async def case_resume(port: int) -> None:
    def answer(m: list[dict[str, Any]]) -> dict[str, Any]:
        results = tools_in(m)
        if not results:
            return call("read", {"q": "t"}, "call_read_1")
        if len(results) == 1:
            return call("send", {"to": "ana"}, "call_send_1")
        return {"role": "assistant", "content": "sent"}

    SCRIPT[:] = [answer]
    sends = [0]

    def send(to: str) -> str:
        sends[0] += 1
        return f"sent to {to}"

    agent = Agent(model(port), output_type=[str, DeferredToolRequests],
                  tools=[Tool(lambda q: "ticket", name="read", takes_ctx=False),
                         Tool(send, name="send", takes_ctx=False, requires_approval=True)])
    paused = await agent.run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    ids = [c.tool_call_id for c in paused.output.approvals]
    print(f"resume pause: DeferredToolRequests {ids} usage.requests={paused.usage.requests}")
    saved = ModelMessagesTypeAdapter.dump_json(paused.all_messages())
    for i in (1, 2):  # the same saved history, resumed twice
        history = ModelMessagesTypeAdapter.validate_json(saved)
        done = await agent.run(message_history=history,
                               deferred_tool_results=DeferredToolResults(approvals={ids[0]: True}))
        print(f"resume message_history #{i}: {done.output!r} usage.requests={done.usage.requests} send runs={sends[0]}")
    conversation = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(paused.conversation))
    assert conversation.deferred_tool_requests is not None
    done = await agent.run(conversation=conversation,
                           deferred_tool_results=conversation.deferred_tool_requests.build_results(approve_all=True))
    print(f"resume conversation: {done.output!r} usage.requests={done.usage.requests} send runs={sends[0]}")


CASES = {"cost": case_cost, "retry-budget": case_retry_budget, "request-limit": case_request_limit,
         "resume": case_resume}


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    SCRIPT.append(lambda m: {"role": "assistant", "content": "?"})
    for name in sys.argv[1:] or list(CASES):
        asyncio.run(CASES[name](server.server_address[1]))
    server.shutdown()


if __name__ == "__main__":
    main()
