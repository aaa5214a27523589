"""Standalone (no loopbench code): google-adk's loop controls against a fake Gemini API server in this script.

Each case drives `LlmAgent` + `Runner` with ADK's own `Gemini(base_url=..., client_kwargs={"api_key": ...})` model
against a tiny `generateContent` server on 127.0.0.1 that always answers with a functionCall (or errors), and prints
what the server saw. Run from the repo root: .venv/bin/python probes/google_adk/fair.py CASE

- `limit`: RunConfig(max_llm_calls=3), a model that always calls `search`: 3 requests, 3 tool runs (the tool of
  the 3rd response runs), then `LlmCallsLimitExceededError` before a 4th request. A second `run_async` on the same
  session (a new invocation) makes 3 more requests: the budget is per invocation.
  Printed (google-adk 2.13.0): `run 1: LlmCallsLimitExceededError requests=3 tool_runs=3` /
  `run 2: LlmCallsLimitExceededError requests=6 tool_runs=6`
- `transient`: the first request gets 429 RESOURCE_EXHAUSTED, later ones succeed: ADK raises `_ResourceExhaustedError`
  (a google.genai ClientError) after 1 request: neither ADK nor google-genai retries by default (retry_options unset).
  Printed: `raised _ResourceExhaustedError code=429 requests=1`
- `confirm`: `FunctionTool(send, require_confirmation=predicate)` with SqliteSessionService: the run pauses on an
  `adk_request_confirmation` call after 1 request (predicate runs 1); the resume (a new Runner and service on the
  same database, as another process would) sends {"confirmed": true}: the tool runs once, 1 more request, and the
  predicate ran 2 more times (ADK checks it while resolving the confirmation and again at the gate). Resuming the
  same confirmation again: no event, no request, the tool does not run again.
  Printed (2.13.0): `pause: requests=1 predicate=1 confirmation_calls=1` / `resume: requests=2 predicate=4
  send_runs=1 events=2` / `resume again: requests=2 predicate=4 send_runs=1 events=0`.
  With google-adk 2.0.0 and 1.33.0 (a throwaway venv): `resume: requests=2 predicate=2 send_runs=1 events=2` /
  `resume again: requests=3 predicate=3 send_runs=2 events=2`: the predicate runs once per resume, and the same
  confirmation sent again runs the tool a second time (2.8.0 too, in the suite's resume_twice).
- `deny`: a before_tool_callback returning an error dict: with `tool_context.actions.skip_summarization = True`
  the invocation ends after that function response (1 request, a final event); without it the model is called
  again (the fake model calls the tool once, then answers text: 2 requests).
  Printed: `stop: requests=1 final_is_function_response=True tool_runs=0` / `continue: requests=2 tool_runs=0`
- `tool-error`: a FunctionTool that raises: no on_tool_error_callback, so the exception leaves `run_async`
  (1 request). Printed: `raised RuntimeError: backend down requests=1`
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools import FunctionTool
from google.genai import types

STATE: dict[str, Any] = {"requests": 0, "fail_first": 0, "calls_then_text": None, "tool": "search"}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        STATE["requests"] += 1
        n = STATE["requests"]
        if n <= STATE["fail_first"]:
            self._send(429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
            return
        answered = any("functionResponse" in p for c in body.get("contents", []) for p in c.get("parts", []))
        limit = STATE["calls_then_text"]
        if limit is not None and answered and n > limit:
            part: dict[str, Any] = {"text": "done"}
        else:
            part = {"functionCall": {"id": f"fc_{n}", "name": STATE["tool"], "args": {"q": str(n)}}}
        self._send(200, {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def model(base: str) -> Gemini:
    if "client_kwargs" in Gemini.model_fields:
        return Gemini(model="gemini-2.5-flash", base_url=base, client_kwargs={"api_key": "k"})
    from functools import cached_property

    from google.genai import Client

    class KeyedGemini(Gemini):  # releases before `client_kwargs`: their docstring's subclass overriding api_client
        @cached_property
        def api_client(self) -> Client:
            return Client(api_key="k", http_options=types.HttpOptions(base_url=base))

    return KeyedGemini(model="gemini-2.5-flash")


def msg(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def drive(runner: Runner, session_id: str, message: types.Content, **config: Any) -> list[Any]:
    events = []
    async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message,
                                    run_config=RunConfig(**config)):
        events.append(e)
    return events


async def case_limit(base: str) -> None:
    runs = 0

    def search(q: str) -> str:
        """Search the knowledge base."""
        nonlocal runs
        runs += 1
        return "nothing"

    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=LlmAgent(name="a", model=model(base), tools=[search]), app_name="p", session_service=service)
    for i in (1, 2):
        try:
            await drive(runner, "s", msg("search"), max_llm_calls=3)
            print(f"run {i}: returned requests={STATE['requests']} tool_runs={runs}")
        except Exception as exc:  # noqa: BLE001 - the probe prints what ADK raised
            print(f"run {i}: {type(exc).__name__} requests={STATE['requests']} tool_runs={runs}")


async def case_transient(base: str) -> None:
    STATE.update(fail_first=1, calls_then_text=1)

    def search(q: str) -> str:
        """Search the knowledge base."""
        return "nothing"

    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=LlmAgent(name="a", model=model(base), tools=[search]), app_name="p", session_service=service)
    try:
        await drive(runner, "s", msg("search"))
        print(f"returned requests={STATE['requests']}")
    except Exception as exc:  # noqa: BLE001
        print(f"raised {type(exc).__name__} code={getattr(exc, 'code', None)} requests={STATE['requests']}")


async def case_confirm(base: str) -> None:
    STATE.update(tool="send", calls_then_text=1)
    counts = {"predicate": 0, "send": 0}

    def send(q: str) -> str:
        """Send a reply."""
        counts["send"] += 1
        return "sent"

    def predicate(q: str) -> bool:
        counts["predicate"] += 1
        return True

    db = Path(tempfile.mkdtemp()) / "sessions.db"

    def runner() -> Runner:  # a fresh service on the same database each time, as a new process would build
        agent = LlmAgent(name="a", model=model(base), tools=[FunctionTool(send, require_confirmation=predicate)])
        return Runner(agent=agent, app_name="p", session_service=SqliteSessionService(str(db)))

    first = runner()
    await first.session_service.create_session(app_name="p", user_id="u", session_id="s")
    events = await drive(first, "s", msg("send it"))
    requests = [fc for e in events for fc in e.get_function_calls() if fc.name == "adk_request_confirmation"]
    print(f"pause: requests={STATE['requests']} predicate={counts['predicate']} confirmation_calls={len(requests)}")
    answer = types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        name="adk_request_confirmation", id=requests[0].id, response={"confirmed": True}))])
    for label in ("resume", "resume again"):
        events = await drive(runner(), "s", answer)
        print(f"{label}: requests={STATE['requests']} predicate={counts['predicate']} send_runs={counts['send']} "
              f"events={len(events)}")


async def case_deny(base: str) -> None:
    STATE.update(tool="delete", calls_then_text=1)
    runs = 0

    def delete(q: str) -> str:
        """Delete an account."""
        nonlocal runs
        runs += 1
        return "deleted"

    for label, stop in (("stop", True), ("continue", False)):
        STATE["requests"] = 0

        def refuse(tool: Any, args: dict[str, Any], tool_context: Any, stop: bool = stop) -> dict[str, Any]:
            if stop:
                tool_context.actions.skip_summarization = True
            return {"error": "denied by policy"}

        service = InMemorySessionService()
        await service.create_session(app_name="p", user_id="u", session_id="s")
        agent = LlmAgent(name="a", model=model(base), tools=[delete], before_tool_callback=refuse)
        events = await drive(Runner(agent=agent, app_name="p", session_service=service), "s", msg("delete"))
        last = events[-1]
        extra = f" final_is_function_response={bool(last.get_function_responses()) and last.is_final_response()}" \
            if stop else ""
        print(f"{label}: requests={STATE['requests']}{extra} tool_runs={runs}")


async def case_tool_error(base: str) -> None:
    def search(q: str) -> str:
        """Search the knowledge base."""
        raise RuntimeError("backend down")

    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=LlmAgent(name="a", model=model(base), tools=[search]), app_name="p", session_service=service)
    try:
        await drive(runner, "s", msg("search"))
        print(f"returned requests={STATE['requests']}")
    except Exception as exc:  # noqa: BLE001
        print(f"raised {type(exc).__name__}: {exc} requests={STATE['requests']}")


CASES = {"limit": case_limit, "transient": case_transient, "confirm": case_confirm, "deny": case_deny,
         "tool-error": case_tool_error}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: fair.py {{{'|'.join(CASES)}}}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(CASES[sys.argv[1]](f"http://127.0.0.1:{server.server_address[1]}"))


if __name__ == "__main__":
    main()
