"""The ledger's loopback HTTP face (mounted in the model server's app) and the client adapters use.

Every call needs the per-suite token in `x-loopbench-token`; without it the face answers 403. A caller that
disconnects while its call runs (cancelled, timed out, aborted) is recorded as `caller_abandoned`; the
call's effect still commits at its scripted point.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loopbench.harness.errors import UnknownRun, UnknownTool
from loopbench.harness.ledger.store import Ledger, ToolOutcome
from loopbench.harness.own_work import OWN_WORK

if TYPE_CHECKING:
    # the clients are imported when a tool is first called, not when an adapter module is: `loopbench list` reads
    # the adapters' class facts and never calls a tool (aiohttp and httpx are ~0.4 s of imports)
    import aiohttp
    import httpx

TOKEN_HEADER = "x-loopbench-token"
CANCEL_POLL_S = 0.01  # how often a held cancel request looks whether the cancel fell due: well under any after_s


def ledger_routes(ledger: Ledger, token: str) -> list[Route]:
    background: set[asyncio.Task[Any]] = set()  # calls whose caller left: keep them alive until they commit

    def refused(request: Request) -> JSONResponse | None:
        given = request.headers.get(TOKEN_HEADER, "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse({"error": "missing or wrong ledger token"}, status_code=403)
        return None

    async def body_of(request: Request) -> tuple[dict[str, Any] | None, JSONResponse | None]:
        try:
            body = await request.json()
        except ValueError:
            return None, JSONResponse({"error": "body is not JSON"}, status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("tool"), str):
            return None, JSONResponse({"error": "body needs a `tool` string"}, status_code=400)
        if not isinstance(body.get("args", {}), dict):
            return None, JSONResponse({"error": "`args` must be an object"}, status_code=400)
        return body, None

    Handler = Callable[[Request, str, dict[str, Any]], Awaitable[JSONResponse]]

    def endpoint(handler: Handler) -> Callable[[Request], Awaitable[JSONResponse]]:
        """Token check, body check, and the ledger's unknown-run / unknown-tool answers, around one handler."""

        async def answer(request: Request) -> JSONResponse:
            if (denied := refused(request)) is not None:
                return denied
            body, bad = await body_of(request)
            if bad is not None:
                return bad
            assert body is not None
            run_id = request.path_params["run_id"]
            try:
                return await handler(request, run_id, body)
            except UnknownRun:
                return JSONResponse({"error": f"unknown run {run_id}"}, status_code=404)
            except UnknownTool:
                return JSONResponse({"error": f"unknown tool {body['tool']}"}, status_code=404)

        return answer

    async def call(request: Request, run_id: str, body: dict[str, Any]) -> JSONResponse:
        entry, step = ledger.begin(run_id, body["tool"], body.get("args", {}), body.get("call_id"))
        if not (step.delay_s or step.timeout):  # nothing scripted to wait for: it commits now, nobody can leave
            return JSONResponse((await ledger.settle(run_id, entry, step)).model_dump())

        async def disconnected() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass

        work = asyncio.ensure_future(ledger.settle(run_id, entry, step))
        watch = asyncio.ensure_future(disconnected())
        done, _ = await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        if work not in done:
            ledger.mark_abandoned(run_id, entry.id)
            background.add(work)
            work.add_done_callback(background.discard)
            return JSONResponse({"error": "caller abandoned"}, status_code=499)
        watch.cancel()
        return JSONResponse(work.result().model_dump())

    async def authorize(_request: Request, run_id: str, body: dict[str, Any]) -> JSONResponse:
        entry = ledger.authorize(run_id, body["tool"], body.get("args", {}), body.get("call_id"),
                                 body.get("decision", "checked"))
        return JSONResponse({"entry_id": entry.id})

    async def decide(_request: Request, run_id: str, body: dict[str, Any]) -> JSONResponse:
        decision = ledger.decide(run_id, body["tool"], body.get("args", {}), body.get("call_id"))
        return JSONResponse({"decision": decision})

    async def cancel(request: Request) -> JSONResponse:
        """Held open until the caller cancels the run (the scenario's `cancel` falls due): the adapter waits here
        and then cancels the way its framework documents. Answers `{"cancel": false}` when the run ends first."""
        if (denied := refused(request)) is not None:
            return denied
        run_id = request.path_params["run_id"]
        ticks = 0
        while True:
            try:
                sent = ledger.take_cancel(run_id)
            except UnknownRun:
                return JSONResponse({"cancel": False})
            if sent is not None:
                return JSONResponse({"cancel": True, "at_s": sent})
            ticks += 1
            if ticks % 25 == 0 and await request.is_disconnected():
                return JSONResponse({"cancel": False})
            await asyncio.sleep(CANCEL_POLL_S)

    return [
        Route("/ledger/{run_id}/cancel", cancel, methods=["POST"]),
        Route("/ledger/{run_id}/call", endpoint(call), methods=["POST"]),
        Route("/ledger/{run_id}/authorize", endpoint(authorize), methods=["POST"]),
        Route("/ledger/{run_id}/decide", endpoint(decide), methods=["POST"]),
    ]


class LedgerClient:
    """What an adapter (in a worker process) uses to execute scenario tools through the ledger.

    One HTTP session per event loop (and one client for synchronous callers) serves every run of the worker
    process: a client per call would pay a TLS context per tool call. The async session is aiohttp's: on this
    loopback call httpx measured 1.3 ms of client CPU per call, aiohttp 0.4 ms — loopbench's cost, on every
    tool call of every framework. The CPU of each call is loopbench's own work (`own_work`), kept apart from
    the framework's. A cancelled call closes its connection, so the ledger sees the caller leave."""

    def __init__(self, base_url: str, token: str, run_id: str):
        self._url = f"{base_url.rstrip('/')}/ledger/{run_id}"
        self._headers = {TOKEN_HEADER: token}

    async def _post(self, op: str, body: dict[str, Any], timeout: float | None) -> Any:
        with OWN_WORK.measured():
            import aiohttp

            session = await _async_session()
            async with session.post(f"{self._url}/{op}", headers=self._headers, json=body,
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as r:
                r.raise_for_status()
                return await r.json()

    def _post_sync(self, op: str, body: dict[str, Any], timeout: float | None) -> Any:
        with OWN_WORK.measured():
            r = _sync_client().post(f"{self._url}/{op}", headers=self._headers, json=body, timeout=timeout)
            r.raise_for_status()
            return r.json()

    async def call(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> ToolOutcome:
        body = await self._post("call", {"tool": tool, "args": args, "call_id": call_id}, None)
        return ToolOutcome.model_validate(body)

    async def authorize(self, tool: str, args: dict[str, Any], call_id: str | None = None,
                        decision: str = "checked") -> None:
        await self._post("authorize", {"tool": tool, "args": args, "call_id": call_id, "decision": decision}, 30)

    async def decide(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> str | None:
        """The harness's decision ("approve" / "reject") for a call an in-process approval idiom asks about
        now, or None when the scenario gives none (recorded as an approval request)."""
        body = await self._post("decide", {"tool": tool, "args": args, "call_id": call_id}, 30)
        return body["decision"]

    def decide_sync(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> str | None:
        return self._post_sync("decide", {"tool": tool, "args": args, "call_id": call_id}, 30)["decision"]

    def authorize_sync(self, tool: str, args: dict[str, Any], call_id: str | None = None,
                       decision: str = "checked") -> None:
        self._post_sync("authorize", {"tool": tool, "args": args, "call_id": call_id, "decision": decision}, 30)

    async def wait_cancel(self) -> bool:
        """Wait until the caller cancels the run (the scenario's `cancel` falls due): True then; False when the run
        ended first. An adapter runs this beside its framework's run and, when it returns True, cancels the run
        the way the framework documents (cancelling this wait closes its request)."""
        return bool((await self._post("cancel", {}, None))["cancel"])

    @property
    def cancel_url(self) -> str:
        """The URL a driver in another process holds open to learn the cancel (POST, with `headers`)."""
        return f"{self._url}/cancel"

    @property
    def headers(self) -> dict[str, str]:
        return dict(self._headers)


# loopback only: no proxy from the environment (aiohttp reads none by default), and a session kept per event loop
# (its connections belong to it)
_async_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, Any]] = (
    weakref.WeakKeyDictionary())


async def _closed_with_the_loop(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    # an async generator the loop tracks: asyncio.run / Runner.close finalize it (shutdown_asyncgens), which
    # closes the session before its loop goes — no "Unclosed client session" from a loop that ended
    try:
        yield
    finally:
        await session.close()


async def _async_session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    kept = _async_sessions.get(loop)
    if kept is None or kept[0].closed:
        import aiohttp

        session = aiohttp.ClientSession()
        keeper = _closed_with_the_loop(session)
        await keeper.__anext__()
        _async_sessions[loop] = kept = (session, keeper)
    return kept[0]


@functools.cache
def _sync_client() -> httpx.Client:
    import httpx

    return httpx.Client(trust_env=False)
