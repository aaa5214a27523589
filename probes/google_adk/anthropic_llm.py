"""Standalone (no loopbench code): google-adk's AnthropicLlm over a user's anthropic client, against a fake
Anthropic Messages server in this script.

Each case drives `LlmAgent` + `Runner` with ADK's own `AnthropicLlm(model="claude-sonnet-4-5",
client=AsyncAnthropic(base_url=<server>, api_key="k"))` (releases before the `client` field: a subclass overriding
the cached `_anthropic_client` property) against a tiny `POST /v1/messages` server on 127.0.0.1, and prints what the
server saw. Run from the repo root: .venv/bin/python probes/google_adk/anthropic_llm.py CASE

- `transient`: the first request gets 429 `rate_limit_error` with `retry-after: 1` (what the provider sends), the
  second 500 `api_error` with no header, then the model calls `search` once and answers: ADK raises nothing; the
  anthropic client retried twice behind ADK (its defaults: max_retries=2): 4 requests, but 2 model-response events
  (one per response that reached ADK) — the retries are invisible to ADK.
  Printed (google-adk 2.13.0, anthropic 2.14.0): `returned requests=4 response_events=2 statuses=[429, 500, 200,
  200] from_first_request_s=2.2 waits_s=[1.04, 0.88, 0.21]` (the first wait is the retry-after, the second
  0.5 s x 2 x jitter 0.75-1; the third is the tool turn)
- `outage`: every request gets 500 with no retry hint: the client gives up after 1 + 2 requests and ADK raises
  the client's `InternalServerError` (an `anthropic.APIStatusError`) out of `run_async`.
  Printed: `raised InternalServerError requests=3 response_events=0 statuses=[500, 500, 500]
  from_first_request_s=1.4 waits_s=[0.44, 0.84]` (0.5 s then 1 s, x 0.75-1)
- `rate-limit`: every request gets 429 with `retry-after: 1`: 3 requests 1 s apart, then ADK's
  `_AnthropicRateLimitError` (2.8 and later wrap the client's RateLimitError with a docs link; 1.22 and 2.0 raise
  the client's own). Printed: `raised _AnthropicRateLimitError requests=3 response_events=0 statuses=[429, 429,
  429] from_first_request_s=2.2 waits_s=[1.02, 1.01]`
- `tool-choice`: a `before_model_callback` sets `llm_request.config.tool_config` to mode ANY restricted to
  `search` (how the Gemini class forces a tool): AnthropicLlm ignores it and sends `tool_choice: {"type":
  "auto"}`. Printed: `sent tool_choice=[{'type': 'auto'}, {'type': 'auto'}]`
- `max-retries`: what the client ADK calls is configured with (the anthropic SDK's default; ADK passes the user's
  client through and AnthropicLlm has no retry option of its own). Printed: `AsyncAnthropic max_retries=2`
The suite's runs agree (google-adk:anthropic): model_transient_error 5 requests (429, 500, 3 turns), 3 reported,
completed; model_outage 3 requests, failed. google-adk 1.22.0 and 2.0.0 (the version matrix's environments, no
`client` field: the subclass) give the same counts.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import AsyncAnthropic
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

# failures: one (status, headers) per request until they run out ("forever": the last one repeats)
STATE: dict[str, Any] = {"requests": [], "failures": [], "forever": False, "tool_choice": []}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        n = len(STATE["requests"])
        STATE["tool_choice"].append(body.get("tool_choice"))
        failures = STATE["failures"]
        if n < len(failures) or (STATE["forever"] and failures):
            status, headers = failures[min(n, len(failures) - 1)]
            STATE["requests"].append((time.perf_counter(), status))
            kind = "rate_limit_error" if status == 429 else "api_error"
            self._send(status, {"type": "error", "error": {"type": kind, "message": "scripted"}}, headers)
            return
        STATE["requests"].append((time.perf_counter(), 200))
        answered = any(b.get("type") == "tool_result" for m in body["messages"] if isinstance(m["content"], list)
                       for b in m["content"])
        if answered:
            content: list[dict[str, Any]] = [{"type": "text", "text": "done"}]
            stop = "end_turn"
        else:
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": "search", "input": {"q": "x"}}]
            stop = "tool_use"
        self._send(200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                         "content": content, "stop_reason": stop, "stop_sequence": None,
                         "usage": {"input_tokens": 10, "output_tokens": 1}})

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        out = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def model(base: str) -> AnthropicLlm:
    client = AsyncAnthropic(base_url=base, api_key="k")
    if "client" in AnthropicLlm.model_fields:
        return AnthropicLlm(model="claude-sonnet-4-5", client=client)
    from functools import cached_property

    class KeyedAnthropicLlm(AnthropicLlm):  # releases before the `client` field: their cached client property
        @cached_property
        def _anthropic_client(self) -> AsyncAnthropic:
            return client

    return KeyedAnthropicLlm(model="claude-sonnet-4-5")


def search(q: str) -> str:
    """Search the knowledge base."""
    return "nothing"


async def run(base: str, **agent_kwargs: Any) -> None:
    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    agent = LlmAgent(name="a", model=model(base), tools=[search], **agent_kwargs)
    runner = Runner(agent=agent, app_name="p", session_service=service)
    message = types.Content(role="user", parts=[types.Part(text="search")])
    events = []
    try:
        async for e in runner.run_async(user_id="u", session_id="s", new_message=message, run_config=RunConfig()):
            events.append(e)
        outcome = "returned"
    except Exception as exc:  # noqa: BLE001 - the probe prints what ADK raised
        outcome = f"raised {type(exc).__name__}"
    end = time.perf_counter()
    times = [t for t, _ in STATE["requests"]]
    waits = [round(b - a, 2) for a, b in zip(times, times[1:], strict=False)]
    responses = [e for e in events if e.usage_metadata is not None or e.finish_reason is not None]
    print(f"{outcome} requests={len(times)} response_events={len(responses)} "
          f"statuses={[s for _, s in STATE['requests']]} from_first_request_s={end - times[0]:.1f} waits_s={waits}")


async def case_transient(base: str) -> None:
    STATE["failures"] = [(429, {"retry-after": "1"}), (500, {})]
    await run(base)


async def case_outage(base: str) -> None:
    STATE.update(failures=[(500, {})], forever=True)
    await run(base)


async def case_rate_limit(base: str) -> None:
    STATE.update(failures=[(429, {"retry-after": "1"})], forever=True)
    await run(base)


async def case_tool_choice(base: str) -> None:
    def force(callback_context: Any, llm_request: Any) -> None:
        llm_request.config = llm_request.config or types.GenerateContentConfig()
        llm_request.config.tool_config = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
            mode="ANY", allowed_function_names=["search"]))

    await run(base, before_model_callback=force)
    print(f"sent tool_choice={STATE['tool_choice']}")


async def case_max_retries(base: str) -> None:
    llm = model(base)
    client = llm.__dict__.get("client") or llm._anthropic_client
    print(f"{type(client).__name__} max_retries={client.max_retries}")


CASES = {"transient": case_transient, "outage": case_outage, "rate-limit": case_rate_limit,
         "tool-choice": case_tool_choice, "max-retries": case_max_retries}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: anthropic_llm.py {{{'|'.join(CASES)}}}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(CASES[sys.argv[1]](f"http://127.0.0.1:{server.server_address[1]}"))


if __name__ == "__main__":
    main()
