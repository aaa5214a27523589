"""The guard over HTTP, for a loop that does not run in Python (a Node framework's hooks): one `Guard` served on
127.0.0.1, each hook one POST, so the policy stays written once.

`POST /guard/<op>` with a `GuardCall` (JSON), answered with a `GuardAnswer`; the `x-guard-token` header must carry
the service's token. The ops are the `Guard` methods a binding calls (`before_model_call`, `after_model_call`,
`model_call_failed`, `before_tool_call`, `after_tool_call`, `tool_failed`, `tool_timed_out`, `decide`,
`remaining`, `start_clock`: the segment's wall-clock starts now, answered with the time left, and `cancel`: the
caller's abort signal fired, answered with the `cancelled` stop); a reservation is
named by the `held` id its `before_*` answered. `agent` names a sub-agent: its guard is the main guard's
`child()`, made on first use. A refusal is an answer, not an HTTP error: `stop` (the task's exit: end the run),
`pause` (the call needs approval for exactly these arguments), `refused` (this call is not run; tell the model) or
`recorded` (this call already ran: its result).
"""

from __future__ import annotations

import itertools
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from loopbench.guard.budget import GuardStop, Reservation
from loopbench.guard.calls import AwaitingApproval, UnknownOutcome
from loopbench.guard.policy import Estimate, Guard

Op = Literal["before_model_call", "after_model_call", "model_call_failed", "before_tool_call", "after_tool_call",
             "tool_failed", "tool_timed_out", "decide", "remaining", "start_clock", "cancel"]


class GuardCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: str = "main"
    held: str | None = None
    tool: str | None = None
    args: dict[str, Any] = {}
    call_id: str | None = None
    key: str | None = None
    result: Any = None
    input_tokens: int = 0
    output_tokens: int = 0
    estimate_tokens: int = 0
    fatal: bool = False
    message: str = ""
    decision: Literal["approve", "reject"] | None = None


class Stop(BaseModel):
    exit: str
    measure: str | None = None
    reason: str


class GuardAnswer(BaseModel):
    ok: bool = True
    held: str | None = None
    result: Any = None  # after_tool_call: the result to hand the model (bounded)
    recorded: Any = None  # before_tool_call: this call id already ran; its result
    refused: str | None = None  # before_tool_call: not run (a blind repeat of a write of unknown outcome)
    pause: str | None = None  # before_tool_call: needs approval for exactly this call (its identity)
    stop: Stop | None = None
    remaining_s: float | None = None


class GuardService:
    """The ops over one task's guard (and its sub-agents' children)."""

    def __init__(self, guard: Guard, token: str | None = None):
        self.guard = guard
        self.token = token or secrets.token_urlsafe(16)
        self.guards: dict[str, Guard] = {"main": guard}
        self.held: dict[str, Reservation] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _guard(self, agent: str) -> Guard:
        with self._lock:
            if agent not in self.guards:
                self.guards[agent] = self.guard.child()
            return self.guards[agent]

    def _hold(self, r: Reservation) -> str:
        with self._lock:
            ref = f"h{next(self._ids)}"
            self.held[ref] = r
            return ref

    def _take(self, ref: str | None) -> Reservation:
        with self._lock:
            if ref is None or ref not in self.held:
                raise ValueError(f"held: no open reservation {ref!r}")
            return self.held.pop(ref)

    def call(self, op: Op, c: GuardCall) -> GuardAnswer:
        g = self._guard(c.agent)
        try:
            return self._call(op, c, g)
        except AwaitingApproval as pause:
            return GuardAnswer(ok=False, pause=pause.identity)
        except UnknownOutcome as refused:
            return GuardAnswer(ok=False, refused=refused.reason)
        except GuardStop as stop:
            return GuardAnswer(ok=False, stop=Stop(exit=stop.exit, measure=getattr(stop, "measure", None),
                                                   reason=stop.reason))

    def _call(self, op: Op, c: GuardCall, g: Guard) -> GuardAnswer:
        tool, args = c.tool or "", c.args
        if op == "before_model_call":
            return GuardAnswer(held=self._hold(g.before_model_call(Estimate(input_tokens=c.estimate_tokens))))
        if op == "after_model_call":
            g.after_model_call(self._take(c.held), input_tokens=c.input_tokens, output_tokens=c.output_tokens)
        elif op == "model_call_failed":
            g.model_call_failed(self._take(c.held))
        elif op == "before_tool_call":
            recorded = g.recorded(tool, c.call_id)
            if recorded is not None:
                return GuardAnswer(recorded=recorded)
            return GuardAnswer(held=self._hold(g.before_tool_call(tool, args, key=c.key)))
        elif op == "after_tool_call":
            return GuardAnswer(result=g.after_tool_call(self._take(c.held), tool, args, c.result, call_id=c.call_id))
        elif op == "tool_failed":
            g.tool_failed(self._take(c.held), tool, fatal=c.fatal, message=c.message)
        elif op == "tool_timed_out":
            g.tool_timed_out(self._take(c.held), tool, args, c.key)
        elif op == "start_clock":
            g.start_clock()
        elif op == "cancel":
            raise g.cancel(c.message or "the caller cancelled the task")
        elif op == "decide":
            if c.decision is None:
                raise ValueError("decide: decision is required")
            g.decide(tool, args, c.decision, call_id=c.call_id)
            g.resume()  # a person answered: the pause is not the task's exit
        return GuardAnswer(remaining_s=g.remaining_s())

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def handle(request: Request) -> JSONResponse:
            if request.headers.get("x-guard-token") != self.token:
                return JSONResponse({"error": "x-guard-token: missing or wrong"}, status_code=403)
            op = request.path_params["op"]
            if op not in Op.__args__:  # type: ignore[attr-defined]
                return JSONResponse({"error": f"op: unknown {op!r}"}, status_code=404)
            try:
                body = GuardCall.model_validate_json(await request.body())
                answer = self.call(op, body)
            except (ValidationError, ValueError) as exc:
                return JSONResponse({"error": str(exc)[:500]}, status_code=400)
            return JSONResponse(answer.model_dump(mode="json", exclude_none=True))

        return Starlette(routes=[Route("/guard/{op}", handle, methods=["POST"])])


@contextmanager
def serving(service: GuardService) -> Iterator[str]:
    """Serve `service` on 127.0.0.1 from a daemon thread; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(service.app(), log_level="warning", access_log=False, lifespan="off",
                                          timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="loopbench-guard", daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started:
                break
            threading.Event().wait(0.01)
        else:
            raise RuntimeError("the guard service did not start within 10 s")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
