"""The scripted model server: one ASGI app serving many concurrent runs, routed by per-run API key.

Every request is logged per run as a `RequestLogEntry` (the ground truth of model requests); a request the
script cannot answer gets HTTP 400 and a `Violation`; past the scenario's safety cap, HTTP 400 and the run
is marked capped. Scripted `fail_first` errors and retries are counted per (run, segment, turn, n) state: a
request for a state already served in the same segment is a client retry; a resume (a new segment, another
process) asking for the same state again is not. A scripted failure sends only the headers the scenario
declares, or what the real provider sends for that status (provider_errors.py).

A tool result's class (receipt / error / none) is ground truth when the server is given `call_status` (the
runner passes the ledger's): a call the ledger ran and that failed is an error to the scripted model whatever
words the framework wrapped around it; the markers in the text decide only for calls the ledger does not know.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from loopbench.harness.errors import BadInput, ScriptViolation, UnansweredRequest, UnknownRun
from loopbench.harness.model_server import anthropic_messages, gemini_generate, openai_chat, openai_responses
from loopbench.harness.model_server.provider_errors import default_headers, hint_s, hinted_body, hinted_headers
from loopbench.harness.model_server.script import request_agent, select, tool_results_seen
from loopbench.harness.model_server.wire import Reply, delivered_usage, new_id
from loopbench.harness.record import RequestLogEntry, Violation
from loopbench.harness.scenario import HttpFailure, Scenario, Turn, WireFault

DEFAULT_RUN = "default"  # the run that answers any key when the server was started with a scenario
HOST = "127.0.0.1"
CLIENT_GONE = 499  # logged status of a request whose client went away before the response (nginx's code)


@dataclass
class _Run:
    run_id: str
    api_key: str | None
    scenario: Scenario
    t0: float = field(default_factory=time.perf_counter)
    log: list[dict[str, Any]] = field(default_factory=list)  # RequestLogEntry fields, filled as it goes
    violations: list[Violation] = field(default_factory=list)
    segment: int = 0  # the runner starts a new segment for each resume
    state_requests: dict[tuple[int, str, int | None, int | None], int] = field(default_factory=dict)
    capped: bool = False
    auxiliary: list[dict[str, Any]] = field(default_factory=list)  # requests that are not model calls


def _failure(fail_first: list[HttpFailure], k: int) -> HttpFailure | None:
    """The scripted failure for the k-th (0-based) request of a state, or None to serve the turn."""
    for f in fail_first:
        if f.times == "forever" or k < f.times:
            return f
        k -= f.times
    return None


def _wire_fault(turn: Turn, k: int) -> WireFault | None:
    """The turn's wire fault for the k-th (0-based) request of a state: the requests right after its fail_first
    failures."""
    fault, failures = turn.wire_fault, turn.failures()
    if fault is None or failures is None or k < failures:
        return None
    return fault if fault.times == "forever" or k < failures + fault.times else None


CUT_PAUSE_S = 0.25  # between a cut answer's last bytes and the close (_CutResponse)


class _CutResponse(Response):
    """A 200 that stops mid-way: the headers and the first `sent` bytes of the body, then the app returns without
    completing it and uvicorn closes the connection (a plain body short of its Content-Length; a chunked stream
    without its last chunk): what a client meets when a proxy or the provider drops the connection."""

    def __init__(self, sent: bytes, length: int | None, media_type: str):
        super().__init__(media_type=media_type)
        self.sent, self.length = sent, length

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", self.media_type.encode())]  # type: ignore[union-attr]
        if self.length is not None:
            headers.append((b"content-length", str(self.length).encode()))
        else:
            headers.append((b"cache-control", b"no-cache"))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.sent, "more_body": True})
        # the drop comes a moment after the bytes that got through, as when a connection dies mid-answer: a
        # client reads what it received, then meets the close. Closing at once let a loaded client read both in
        # one go and a fast one one at a time, and the Claude CLI counted the cut answer in one case only.
        await asyncio.sleep(CUT_PAUSE_S)


class _QuietCut(logging.Filter):
    """uvicorn logs an error for a response the app left incomplete; here only a scripted cut does that."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


logging.getLogger("uvicorn.error").addFilter(_QuietCut())


def _broken(event: bytes) -> bytes:
    """An SSE event whose data is not valid JSON: its JSON without the closing character."""
    head, sep, tail = event.rstrip(b"\n").rpartition(b"data: ")
    return head + sep + tail[:-1] + b"\n\n"


# ground truth of a tool result: (run id, neutral call id) -> "receipt" | "error" | None (not known)
CallStatus = Callable[[str, str], str | None]


class ModelServer:
    """Per-run routing, turn selection and the request log. Thread-safe: runs are registered and read from
    other threads than the one serving HTTP."""

    def __init__(
        self,
        extra_routes: Sequence[BaseRoute] = (),
        default_scenario: Scenario | None = None,
        on_request: Callable[[str, RequestLogEntry], None] | None = None,
        call_status: CallStatus | None = None,
        on_served: Callable[[str, str], None] | None = None,
    ):
        self.call_status = call_status  # public: a caller may answer for tools it runs itself (the bench)
        # told (run id, turn id) as a request is matched to its turn, before any scripted delay or failure: the
        # ledger arms a scenario's `cancel` of a request in flight
        self._on_served = on_served
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._keys: dict[str, _Run] = {}
        self._default: _Run | None = _Run(DEFAULT_RUN, None, default_scenario) if default_scenario else None
        if self._default:
            self._runs[DEFAULT_RUN] = self._default
        self._on_request = on_request
        routes: list[BaseRoute] = [
            Route(path, self._endpoint(proto), methods=["POST"])
            for proto in (openai_chat, openai_responses, anthropic_messages, gemini_generate) for path in proto.PATHS
        ]
        # Anthropic's token counting (the Claude CLI asks before sending a large tool result): not a model call
        routes.append(Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]))
        # last: any other endpoint a client calls is a violation, not a silent 404
        unsupported = Route("/{path:path}", self._unsupported, methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
        self._app = Starlette(routes=[*routes, *extra_routes, unsupported])

    @property
    def app(self) -> Starlette:
        return self._app

    # ---------------------------------------------------------------- runs
    def register_run(self, run_id: str, api_key: str, scenario: Scenario) -> None:
        with self._lock:
            if run_id in self._runs:
                raise ValueError(f"run {run_id!r} is already registered")
            if api_key in self._keys:
                raise ValueError(f"API key of run {run_id!r} is already used by run {self._keys[api_key].run_id!r}")
            run = _Run(run_id, api_key, scenario)
            self._runs[run_id] = run
            self._keys[api_key] = run

    def begin_segment(self, run_id: str) -> None:
        """A resume starts: requests for states served before are no longer client retries."""
        with self._lock:
            self._run(run_id).segment += 1

    def unregister_run(self, run_id: str) -> None:
        with self._lock:
            run = self._runs.pop(run_id, None)
            if run and run.api_key is not None:
                self._keys.pop(run.api_key, None)

    def _run(self, run_id: str) -> _Run:
        try:
            return self._runs[run_id]
        except KeyError:
            raise UnknownRun(f"run {run_id!r} is not registered") from None

    def requests(self, run_id: str) -> list[RequestLogEntry]:
        with self._lock:
            rows = [dict(row) for row in self._run(run_id).log]
        return [RequestLogEntry(**row) for row in rows]

    def violations(self, run_id: str) -> list[Violation]:
        with self._lock:
            return list(self._run(run_id).violations)

    def capped(self, run_id: str) -> bool:
        with self._lock:
            return self._run(run_id).capped

    # ---------------------------------------------------------------- HTTP
    def _endpoint(self, proto: ModuleType) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return await self._handle(proto, request)

        return endpoint

    def auxiliary(self, run_id: str) -> list[dict[str, Any]]:
        """Requests of the run that were not model calls (token counting), in order."""
        with self._lock:
            return list(self._run(run_id).auxiliary)

    async def _count_tokens(self, request: Request) -> Response:
        """`POST /v1/messages/count_tokens`. The scripted server has no tokenizer: it answers a deterministic
        estimate of 1 token per 4 bytes of the request body, and records the request (not as a model call)."""
        run = self._lookup(request)  # the key first: an unknown caller's body is never read
        if run is None:
            return JSONResponse(anthropic_messages.error(401, "unknown API key"), 401)
        body = await request.body()
        estimate = -(-len(body) // 4)
        with self._lock:
            run.auxiliary.append({"path": request.url.path, "t_s": round(time.perf_counter() - run.t0, 4),
                                  "bytes": len(body), "input_tokens": estimate})
        return JSONResponse({"input_tokens": estimate})

    async def _unsupported(self, request: Request) -> Response:
        path = request.url.path
        proto = (anthropic_messages if path.startswith("/v1/messages")
                 else gemini_generate if path.startswith("/v1beta/") else openai_chat)
        reason = f"unsupported endpoint: {request.method} {request.url.path}"
        run = self._lookup(request)
        if run is not None:
            with self._lock:
                run.violations.append(Violation(seq=0, reason=reason))  # seq 0: not a model request
        return JSONResponse(proto.error(404, reason), 404, headers={"x-should-retry": "false"})

    def _status_lookup(self, run_id: str) -> Callable[[str], str | None] | None:
        lookup = self.call_status
        if lookup is None:
            return None
        return lambda call_id: lookup(run_id, call_id)

    def _lookup(self, request: Request) -> _Run | None:
        auth = request.headers.get("authorization", "")
        # Anthropic's header, a bearer token (OpenAI), Google's header or its `key` query parameter
        keys = [request.headers.get("x-api-key"), auth[7:] if auth[:7].lower() == "bearer " else None,
                request.headers.get("x-goog-api-key"), request.query_params.get("key")]
        with self._lock:
            for key in keys:
                if key and key in self._keys:
                    return self._keys[key]
        return self._default

    async def _handle(self, proto: ModuleType, request: Request) -> Response:
        started = time.perf_counter()
        run = self._lookup(request)
        if run is None:
            return JSONResponse(proto.error(401, "unknown API key: no loopbench run is registered for it"), 401)
        raw = await request.body()
        query = request.url.query
        row: dict[str, Any] = {
            "protocol": proto.NAME, "path": request.url.path + (f"?{query}" if query else ""), "stream": False,
            "model": None, "messages": 0, "tools_offered": [], "prompt_bytes": len(raw), "status": 0,
        }
        with self._lock:
            row["seq"] = len(run.log) + 1
            row["t_s"] = round(started - run.t0, 6)
            run.log.append(row)

        def finish(status: int, error: str | None = None) -> None:
            row.update(status=status, error=error, duration_ms=round((time.perf_counter() - started) * 1000, 3))
            if self._on_request:
                self._on_request(run.run_id, RequestLogEntry(**row))

        def fail(status: int, message: str, violation: bool = False, headers: dict[str, str] | None = None,
                 unanswered: bool = False) -> Response:
            """An error answer. Scripted failures pass the provider's headers; the harness's own refusals
            (violations, the cap) say `x-should-retry: false`: they are not provider behaviour to retry."""
            if violation:
                with self._lock:
                    run.violations.append(Violation(seq=row["seq"], reason=message,
                                                    kind="unanswered" if unanswered else "other"))
            finish(status, message)
            sent = {"x-should-retry": "false"} if headers is None else headers
            return JSONResponse(proto.error(status, message), status, headers=sent)

        try:
            body = json.loads(raw)
            parsed = proto.parse(body, path=request.url.path)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            return fail(400, f"cannot read the request body: {exc!r}", violation=True)
        conv = parsed.conversation
        status_of = self._status_lookup(run.run_id)
        agent = request_agent(run.scenario, conv)
        row.update(
            stream=parsed.stream, model=parsed.model, messages=parsed.messages, tools_offered=conv.tools_offered,
            tool_choice=parsed.tool_choice, tool_results=tool_results_seen(conv, status_of), agent=agent,
        )
        try:
            served = select(run.scenario, conv, status_of, agent)
        except ScriptViolation as exc:
            served, violation, unanswered = None, str(exc), isinstance(exc, UnansweredRequest)
        if served is not None:
            key = (run.segment, *served.state)
            with self._lock:
                k = run.state_requests.get(key, 0)
                run.state_requests[key] = k + 1
            row.update(served_turn=served.label, retry=k > 0)
            if self._on_served is not None:
                self._on_served(run.run_id, served.turn.id)
        if row["seq"] > run.scenario.safety_cap:  # after the bookkeeping: a capped request is logged like any
            with self._lock:
                run.capped = True
            return fail(400, f"loopbench safety cap: more than {run.scenario.safety_cap} model requests in this run")
        if served is None:
            return fail(400, f"script violation: {violation}", violation=True, unanswered=unanswered)
        turn = served.turn
        if turn.delay_s:
            await asyncio.sleep(turn.delay_s)
            if await request.is_disconnected():
                return fail(CLIENT_GONE, "client disconnected before the response")
        failure = _failure(turn.fail_first, k)
        if failure is not None:
            message = failure.message or f"scripted HTTP {failure.status} for turn {served.label}"
            body = proto.error(failure.status, message)
            if failure.retry_after_s is not None:
                headers = hinted_headers(proto.NAME, failure.status, failure.retry_after_s)
                body = hinted_body(body, failure.retry_after_s)
            else:
                headers = default_headers(proto.NAME, failure.status) if failure.headers is None else failure.headers
            row["retry_after_s"] = hint_s(headers, body)
            finish(failure.status, message)
            return JSONResponse(body, failure.status, headers=headers)

        fault = _wire_fault(turn, k)
        usage = turn.usage or run.scenario.model.usage
        reply = Reply(served, parsed.model or run.scenario.model.id, usage.input_tokens, usage.output_tokens, new_id(),
                      finish=fault.finish_reason if fault else None)
        row.update(
            calls_served=[c.id for c in served.calls if not c.output], input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, wire_fault=fault.kind if fault else None,
            output_attempt=served.output_attempt, output_constrained=served.output_constrained,
        )
        if fault is not None and fault.kind in ("cut", "malformed"):
            return self._faulty(proto, parsed.stream, parsed.include_usage, reply, fault, row, finish)
        if not parsed.stream:
            if turn.stream_delay_s:  # a plain response cannot pause half-way: the whole body waits
                await asyncio.sleep(turn.stream_delay_s)
                if await request.is_disconnected():
                    row.update(input_tokens=0, output_tokens=0, calls_served=[], output_attempt=None,
                       output_constrained=None)
                    return fail(CLIENT_GONE, "client disconnected before the response")
            finish(200)
            return JSONResponse(proto.render(reply))

        events = proto.render_stream(reply, parsed.include_usage)
        row["status"] = 200  # the headers go out now; `error` says if the stream does not complete

        async def stream() -> AsyncIterator[bytes]:
            # two writes, the scripted mid-stream delay between them: SSE parsers do not depend on how
            # events are split into writes, and one write per event costs ~0.1 ms each
            error: str | None = "client disconnected mid-stream"
            half = len(events) // 2
            try:
                yield b"".join(events[:half])
                if turn.stream_delay_s:
                    await asyncio.sleep(turn.stream_delay_s)
                yield b"".join(events[half:])
                error = None
            finally:
                finish(200, error)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})

    @staticmethod
    def _faulty(proto: ModuleType, streamed: bool, include_usage: bool, reply: Reply, fault: WireFault,
                row: dict[str, Any], finish: Callable[[int, str | None], None]) -> Response:
        """A cut or malformed 200 (WireFault). The answer never reaches the client whole, so it serves no calls;
        the log's usage is what the stream's whole events told the client (none for a plain body): before a
        cut, those before it (Anthropic's `message_start` carries the input tokens); around a broken event, all
        the others (a client that skips it reads the usage at the end)."""
        row.update(input_tokens=0, output_tokens=0, calls_served=[], output_attempt=None,
                       output_constrained=None)
        if streamed:
            events = proto.render_stream(reply, include_usage)
            half = len(events) // 2  # a stream of one event is cut or broken in that event
            if fault.kind == "cut":
                row["input_tokens"], row["output_tokens"] = delivered_usage(events[:half])
                sent = b"".join(events[:half]) + events[half][:len(events[half]) // 2]
                finish(200, f"scripted wire fault: stream cut after {half} of {len(events)} events")
                return _CutResponse(sent, None, "text/event-stream")
            row["input_tokens"], row["output_tokens"] = delivered_usage(events[:half] + events[half + 1:])
            events[half] = _broken(events[half])
            finish(200, f"scripted wire fault: event {half + 1} of {len(events)} is not valid JSON")
            return Response(b"".join(events), media_type="text/event-stream", headers={"cache-control": "no-cache"})
        body = json.dumps(proto.render(reply), separators=(",", ":"), ensure_ascii=False).encode()
        if fault.kind == "cut":
            finish(200, f"scripted wire fault: body cut after {len(body) // 2} of {len(body)} bytes")
            return _CutResponse(body[:len(body) // 2], len(body), "application/json")
        finish(200, "scripted wire fault: the body is not valid JSON")
        return Response(body[:-1], media_type="application/json")


# ---------------------------------------------------------------- running it
def bind(port: int = 0) -> socket.socket:
    """A listening-ready socket on 127.0.0.1:port (0: a free port); BadInput when the port is in use."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when proto says TCP
    # (proto 0 leaves Nagle on: ~40 ms per response on keep-alive connections)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BadInput(f"port {port} on {HOST} is already in use (choose another with --port)") from None
        raise BadInput(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    # listening now, not when uvicorn starts: a client that connects as soon as the banner names the port is
    # queued, not refused
    sock.listen(2048)
    return sock


# An idle keep-alive connection is closed by the server only long after every client's pool has let it go
# (httpx 5 s, undici 4 s, aiohttp 15 s). With uvicorn's default of 5 s, equal to httpx's, a client could send
# a request on a connection the server was closing at that moment: a ReadError in the client, a
# ClientDisconnect in the server, and a run blamed on its framework (the test_load flake under load).
KEEP_ALIVE_S = 75


def _config(app: Starlette) -> uvicorn.Config:
    # httptools and uvloop, named rather than "auto" (both are dependencies): the pure-Python h11 parser and
    # the default loop cost ~1 ms of CPU per request, which a framework under test would wait for
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2,
                          http="httptools", loop="uvloop", timeout_keep_alive=KEEP_ALIVE_S)


class _ThreadedUvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@contextmanager
def running(server: ModelServer, port: int = 0) -> Iterator[str]:
    """Serve `server` from a daemon thread of this process; yields its base URL "http://127.0.0.1:PORT"."""
    sock = bind(port)
    uv = _ThreadedUvicorn(_config(server.app))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, name="loopbench-model-server", daemon=True)
    thread.start()
    try:
        if not uv.ready.wait(10) or not uv.started:
            raise RuntimeError("the model server did not start within 10 s")
        yield f"http://{HOST}:{sock.getsockname()[1]}"
    finally:
        uv.should_exit = True
        thread.join(10)
        sock.close()


def serve_forever(port: int, scenario: Scenario | None, extra_routes: Sequence[BaseRoute] = ()) -> None:
    """`loopbench serve`: serve until interrupted. With a scenario, any API key runs its script."""
    sock = bind(port)

    def show(run_id: str, e: RequestLogEntry) -> None:
        turn = e.served_turn or "-"
        print(f"#{e.seq} {e.protocol} {e.status} turn={turn} calls={e.calls_served} {e.error or ''}",
              file=sys.stderr, flush=True)

    server = ModelServer(extra_routes, default_scenario=scenario, on_request=show)
    what = f"scenario {scenario.id} for any API key" if scenario else "registered runs only"
    base = f"http://{HOST}:{sock.getsockname()[1]}"
    print(f"loopbench model server on {base} ({what}); Ctrl-C stops it\n"
          f"  OpenAI Chat Completions and Responses: base_url {base}/v1\n"
          f"  Anthropic Messages: base_url {base}\n"
          f"  Gemini generateContent: base_url {base} (google-genai's HttpOptions)\n"
          "  a scripted call is served only for a tool the request offers", file=sys.stderr, flush=True)
    uvicorn.Server(_config(server.app)).run(sockets=[sock])
