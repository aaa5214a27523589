"""Standalone (no loopbench code): what the OpenAI Agents SDK's default model class, `OpenAIResponsesModel`, sends
to `POST /v1/responses` and what it counts, against a fake Responses server in this script.

  A. wire: a tool turn, then a text turn. Every request carries the whole conversation in `input` (the user
     message, the `function_call` item, its `function_call_output`); none carries `previous_response_id` or
     `conversation`, and `store`, `stream` and `parallel_tool_calls` are left to the API's defaults (omitted).
     `prompt_cache_key` is omitted here too: the SDK generates one per run only for a client whose base_url is
     https://api.openai.com (shown without any request: `_supports_default_prompt_cache_key()`).
  B. transient: the first request gets 429 (OpenAI's informational `x-ratelimit-*` headers, no retry hint), then
     500, then the two turns: 4 requests, `usage.requests` 2 (the openai client's 2 retries are inside one model
     response, which the SDK counts once).
  C. outage: 500 forever: 3 requests (the client's default max_retries=2), then `InternalServerError` out of
     `Runner.run` with no `run_data`: the SDK reports no request count at all.

Run from the repo root: .venv/bin/python probes/openai/responses_wire.py
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, FunctionTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

BODIES: list[dict[str, Any]] = []  # every request body the fake server got
FAILURES: list[int] = []  # statuses to answer before serving (popped from the front); [500] * 99: an outage


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """Turn 1 calls get_ticket, turn 2 answers with text."""
    n = len(BODIES)
    done = any(i.get("type") == "function_call_output" for i in body["input"] if isinstance(i, dict))
    output: list[dict[str, Any]] = (
        [{"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
          "content": [{"type": "output_text", "text": "Ticket T-1 read.", "annotations": []}]}] if done else
        [{"type": "function_call", "id": f"fc_{n}", "call_id": "call_ticket_1", "name": "get_ticket",
          "arguments": '{"ticket_id":"T-1"}', "status": "completed"}])
    return {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model"), "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                                   "total_tokens": 11}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        BODIES.append(body)
        if FAILURES:
            status = FAILURES.pop(0)
            out = json.dumps({"error": {"message": f"HTTP {status}", "type": "server_error", "param": None,
                                        "code": None}}).encode()
            headers = ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}
                       if status == 429 else {})
        else:
            status, out, headers = 200, json.dumps(reply(body)).encode(), {}
        self.send_response(status)
        for k, v in {"content-type": "application/json", "content-length": str(len(out)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


async def run(client: AsyncOpenAI) -> tuple[Any, Exception | None]:
    async def invoke(_ctx: Any, _args: str) -> str:
        return "Ticket T-1: a refund request"

    tool = FunctionTool(name="get_ticket", description="read a ticket", on_invoke_tool=invoke,
                        params_json_schema={"type": "object", "properties": {"ticket_id": {"type": "string"}}},
                        strict_json_schema=False)
    agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client), tools=[tool])
    try:
        return await Runner.run(agent, "Read ticket T-1"), None
    except Exception as exc:  # noqa: BLE001 (what the run raises is the finding)
        return None, exc


async def main() -> None:
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")

    result, _ = await run(client)
    print("A. wire:", json.dumps({
        "requests": len(BODIES), "usage.requests": result.context_wrapper.usage.requests,
        "body keys": [sorted(b) for b in BODIES],
        "input item types": [[i.get("type", i.get("role")) for i in b["input"]] for b in BODIES],
        "previous_response_id / conversation / store / stream sent": [
            [k for k in ("previous_response_id", "conversation", "store", "stream") if k in b] for b in BODIES],
        "prompt_cache_key sent": ["prompt_cache_key" in b for b in BODIES],
        "prompt_cache_key for an api.openai.com client": OpenAIResponsesModel(
            model="gpt-4.1", openai_client=AsyncOpenAI(api_key="k"))._supports_default_prompt_cache_key(),
    }, indent=1))

    BODIES.clear()
    FAILURES[:] = [429, 500]
    result, _ = await run(client)
    print("B. transient (429, 500, then the turns):", json.dumps({
        "requests": len(BODIES), "usage.requests": result.context_wrapper.usage.requests,
        "raw_responses": len(result.raw_responses)}))

    BODIES.clear()
    FAILURES[:] = [500] * 99
    started = time.perf_counter()
    _, exc = await run(client)
    print("C. outage (500 forever):", json.dumps({
        "requests": len(BODIES), "seconds": round(time.perf_counter() - started, 1), "raised": type(exc).__name__,
        "run_data": repr(getattr(exc, "run_data", None))}))
    server.shutdown()


asyncio.run(main())
