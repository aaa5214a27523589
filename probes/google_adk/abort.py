"""Standalone (no loopbench code): google-adk's caller abort (`Runner.run_async(..., abort_signal=asyncio.Event())`)
against a fake Gemini API server in this script, and what continuing the session afterwards sends the model.

The fake model calls `post` (fast), then `lookup` (a tool that sleeps 5 s), then answers text. Run from the repo
root: .venv/bin/python probes/google_adk/abort.py CASE

- `tool`: the abort is set 0.5 s into `lookup`. run_async ends at once (the root task is cancelled: the tool's
  coroutine gets CancelledError) and yields one more event: `lookup`'s call sealed with a synthetic function
  response, `error_code='INVOCATION_ABORTED'`. Then the session is continued the way a chat app continues one (a new
  Runner and SqliteSessionService on the same database, as another process; `run_async(new_message="Please continue
  the task.")`): the model's next request carries `lookup`'s function response as the abort error, not a result,
  and `post` is not run again; the sealed call is not replayed (whether `lookup` runs again is the model's choice:
  here it calls it again).
  Printed (google-adk 2.13.0): `abort: ended_after_s=0.0 events=[post call, post response, lookup call,
  INVOCATION_ABORTED] lookup_cancelled=True usage_events=2 requests=2` /
  `continue: lookup_response_seen={'error': 'Invocation was aborted by client.'} post_runs=1 lookup_runs=2
  requests=4 final='done'`
- `model`: the abort is set 0.5 s into a model request the server holds for 5 s: run_async ends at once, one
  content-less INVOCATION_ABORTED event; the in-flight request's usage is never reported (no event for it).
  Printed: `abort: ended_after_s=0.0 events=[post call, post response, INVOCATION_ABORTED] lookup_cancelled=False
  usage_events=1 requests=2`
loopbench's cancel_then_resume differs from `tool` only in its scripted model: the scripted server classifies
`lookup_policy`'s result by the ledger's ground truth (the abandoned call ran to its end before the resume), so it
answers as if the model had the policy, where the model was sent the abort error shown here.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

STATE: dict[str, Any] = {"requests": [], "slow_model_at": None, "post": 0, "lookup": 0, "lookup_cancelled": False}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        STATE["requests"].append(body)
        n = len(STATE["requests"])
        if STATE["slow_model_at"] == n:
            time.sleep(5)
        responses = [p["functionResponse"] for c in body.get("contents", []) for p in c.get("parts", [])
                     if "functionResponse" in p]
        names = [r["name"] for r in responses]
        last = responses[-1] if responses else None
        if not responses:
            part: dict[str, Any] = {"functionCall": {"id": f"fc_{n}", "name": "post", "args": {"body": "hi"}}}
        elif last is not None and (last["name"] == "post" or "error" in (last.get("response") or {})):
            part = {"functionCall": {"id": f"fc_{n}", "name": "lookup", "args": {"topic": "refund"}}}
        elif "lookup" in names:
            part = {"text": "done"}
        else:
            part = {"functionCall": {"id": f"fc_{n}", "name": "lookup", "args": {"topic": "refund"}}}
        self._send(200, {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except OSError:  # the client went away (the abort)
            pass

    def log_message(self, *args: Any) -> None:
        pass


async def post(body: str) -> str:
    STATE["post"] += 1
    return "posted"


async def lookup(topic: str) -> str:
    STATE["lookup"] += 1
    try:
        await asyncio.sleep(5 if STATE["lookup"] == 1 else 0)
    except asyncio.CancelledError:
        STATE["lookup_cancelled"] = True
        raise
    return "Policy POL-7"


def agent(base: str) -> LlmAgent:
    model = Gemini(model="gemini-2.5-flash", base_url=base, client_kwargs={"api_key": "k"})
    return LlmAgent(name="assistant", model=model, tools=[post, lookup])


def describe(e: Any) -> str:
    if e.error_code:
        return e.error_code
    if e.get_function_calls():
        return f"{e.get_function_calls()[0].name} call"
    if e.get_function_responses():
        return f"{e.get_function_responses()[0].name} response"
    return "text"


async def aborted_run(base: str, db: Path, after_s: float) -> None:
    service = SqliteSessionService(str(db))
    await service.create_session(app_name="app", user_id="u", session_id="s1")
    runner = Runner(agent=agent(base), app_name="app", session_service=service)
    abort = asyncio.Event()
    events: list[Any] = []

    async def consume() -> None:
        async for e in runner.run_async(user_id="u", session_id="s1", abort_signal=abort,
                                        new_message=types.Content(role="user", parts=[types.Part(text="go")])):
            events.append(e)

    task = asyncio.ensure_future(consume())
    while len(STATE["requests"]) < 2:  # the second model request (it calls lookup)
        await asyncio.sleep(0.01)
    await asyncio.sleep(after_s)
    set_at = time.monotonic()
    abort.set()
    await task
    usage = sum(1 for e in events if e.usage_metadata is not None)
    print(f"abort: ended_after_s={time.monotonic() - set_at:.1f} events=[{', '.join(describe(e) for e in events)}] "
          f"lookup_cancelled={STATE['lookup_cancelled']} usage_events={usage} requests={len(STATE['requests'])}")


async def case_tool(base: str) -> None:
    db = Path(tempfile.mkdtemp()) / "sessions.db"
    await aborted_run(base, db, 0.5)
    await asyncio.sleep(5)  # the server and the tool's 5 s are over: nothing left in flight
    service = SqliteSessionService(str(db))  # a new process's view of the same database
    runner = Runner(agent=agent(base), app_name="app", session_service=service)
    before = len(STATE["requests"])
    events = [e async for e in runner.run_async(user_id="u", session_id="s1", new_message=types.Content(
        role="user", parts=[types.Part(text="Please continue the task.")]))]
    body = STATE["requests"][before]
    seen = [p["functionResponse"]["response"] for c in body["contents"] for p in c.get("parts", [])
            if "functionResponse" in p and p["functionResponse"]["name"] == "lookup"]
    final = next((p.text for e in reversed(events) for p in (e.content.parts if e.content else []) if p.text), None)
    print(f"continue: lookup_response_seen={seen[0] if seen else None} post_runs={STATE['post']} "
          f"lookup_runs={STATE['lookup']} requests={len(STATE['requests'])} final={final!r}")


async def case_model(base: str) -> None:
    STATE["slow_model_at"] = 2
    await aborted_run(base, Path(tempfile.mkdtemp()) / "sessions.db", 0.5)


CASES = {"tool": case_tool, "model": case_model}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: abort.py {{{'|'.join(CASES)}}}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(CASES[sys.argv[1]](f"http://127.0.0.1:{server.server_address[1]}"))


if __name__ == "__main__":
    main()
