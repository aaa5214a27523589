"""Standalone (no loopbench code): what the raw `openai` client raises on a 200 that goes wrong on the wire, against
a fake Chat Completions server in this script.

1. a body that is not valid JSON (the answer without its closing brace): `json.JSONDecodeError` escapes
   `chat.completions.create` bare, not an `openai.APIError`, and is not retried (1 request) — a framework that
   maps only `APIError` to a model failure sees an unknown exception (the wire_malformed_body cells of
   openai-agents, langgraph and google-adk before adapters/kit.py `raised_in_model_client`);
2. a plain body cut short of its Content-Length: retried inside the client (2 requests, the answer);
3. a stream cut mid-way (chunked, no final chunk): `openai.APIConnectionError` while iterating, not retried
   (1 request).

Run: .venv/bin/python probes/openai/unwrapped_body_errors.py
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai

ANSWER = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}]}).encode()
CHUNK = b'data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,' \
        b'"delta":{"content":"do"},"finish_reason":null}]}\n\n'
mode = {"case": "", "requests": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers["content-length"]))
        mode["requests"] += 1
        first = mode["requests"] == 1
        case = mode["case"]
        self.send_response(200)
        if case == "stream-cut":
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n")  # no terminating 0-chunk
            self.wfile.flush()
            self.close_connection = True
            return
        body = ANSWER[:-1] if case == "malformed" else ANSWER  # a complete HTTP body that is not valid JSON
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if case == "cut" and first:  # half the body, then the connection closes
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")
for case in ("malformed", "cut", "stream-cut"):
    mode.update(case=case, requests=0)
    try:
        if case == "stream-cut":
            out = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True))
        else:
            out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}]
                                                 ).choices[0].message.content or ""
        result = f"returned {out!r}"
    except Exception as exc:  # noqa: BLE001 - what escapes is the finding
        result = f"raised {type(exc).__module__}.{type(exc).__name__} (an openai.APIError: " \
                 f"{isinstance(exc, openai.APIError)})"
    print(f"{case:11} requests={mode['requests']} {result}")
server.shutdown()
