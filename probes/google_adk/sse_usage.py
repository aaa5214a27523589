"""Standalone (no loopbench code): what ADK's `RunConfig(streaming_mode=StreamingMode.SSE)` yields, and where
the token usage is, against a fake Gemini `:streamGenerateContent?alt=sse` server in this script.

The agent (`LlmAgent` + `Runner` + ADK's own `Gemini(base_url=..., client_kwargs=...)`) has one tool; the fake model
answers the first request with a functionCall and the second with the text "all done here" in three text chunks.
Each streamed answer is SSE `data:` chunks; CASE says which chunks carry `usageMetadata` (promptTokenCount 10,
candidatesTokenCount 2 per response):
- `last` (the default): only the last chunk, with finishReason (what loopbench's scripted server sends);
- `every`: every chunk (the same totals on each: a provider that repeats its usage on the chunks of a stream).
Run from the repo root: .venv/bin/python probes/google_adk/sse_usage.py [last|every]

It prints, per event ADK yielded: partial, whether it carries usage, its function calls / text; then the token sums
a reader gets by counting the non-partial events (ADK's docs' way: partial events are previews, the aggregated
non-partial one is the response) and by counting every event.
Printed (google-adk 2.13.0), `last`: 2 requests (both stream=sse); events: partial(usage) fc, final(usage) fc,
function response, partial text, partial text, partial(usage) text, final(usage) text; non-partial sum in=20 out=4
(= served), every-event sum in=40 out=8: each response's usage is on its last partial chunk AND on the aggregated
final event, so a reader that sums every event doubles the tokens.
`every`: the same, but every partial chunk carries usage: the non-partial sum is still 20/4; every-event sum 60/12
(the usage counted once per chunk plus once for the final event).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

STATE: dict[str, Any] = {"requests": [], "usage_on": "last"}
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        STATE["requests"].append(self.path)
        answered = any("functionResponse" in p for c in body.get("contents", []) for p in c.get("parts", []))
        pieces = ([[{"text": t}] for t in ("all ", "done ", "here")] if answered
                  else [[{"functionCall": {"id": "fc_1", "name": "lookup", "args": {"q": "x"}}}]])
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for i, parts in enumerate(pieces):
            last = i == len(pieces) - 1
            chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
            if last:
                chunk["candidates"][0]["finishReason"] = "STOP"
            if last or STATE["usage_on"] == "every":
                chunk["usageMetadata"] = USAGE
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


def lookup(q: str) -> str:
    """Look something up."""
    return "found"


async def main(base: str) -> None:
    agent = LlmAgent(name="a", instruction="", tools=[lookup],
                     model=Gemini(model="gemini-2.5-flash", base_url=base, client_kwargs={"api_key": "k"}))
    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=agent, app_name="p", session_service=service)
    events = []
    async for e in runner.run_async(user_id="u", session_id="s",
                                    new_message=types.Content(role="user", parts=[types.Part(text="go")]),
                                    run_config=RunConfig(streaming_mode=StreamingMode.SSE)):
        events.append(e)
    print(f"requests={len(STATE['requests'])} paths={STATE['requests']}")
    for e in events:
        what = [f"fc {c.name}" for c in e.get_function_calls()] + [f"fr {r.name}" for r in e.get_function_responses()]
        text = "".join(p.text or "" for p in (e.content.parts if e.content and e.content.parts else []))
        print(f"  partial={bool(e.partial)!s:5} usage={e.usage_metadata is not None!s:5} {what} {text!r}")

    def sums(chosen: list[Any]) -> tuple[int, int]:
        used = [e.usage_metadata for e in chosen if e.usage_metadata is not None]
        return sum(u.prompt_token_count or 0 for u in used), sum(u.candidates_token_count or 0 for u in used)

    print("non-partial events: in={} out={}".format(*sums([e for e in events if not e.partial])))
    print("every event:        in={} out={}".format(*sums(events)))
    await runner.close()


if __name__ == "__main__":
    STATE["usage_on"] = sys.argv[1] if len(sys.argv) > 1 else "last"
    if STATE["usage_on"] not in ("last", "every"):
        sys.exit("usage: sse_usage.py [last|every]")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(main(f"http://127.0.0.1:{server.server_address[1]}"))
