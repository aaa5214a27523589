"""The ledger's loopback HTTP face (mounted in the model server's app) and the client adapters use.

Every call needs the per-suite token in `x-loopbench-token`; without it the face answers 403. A caller that
disconnects while its call runs (cancelled, timed out, aborted) is recorded as `caller_abandoned`; the
call's effect still commits at its scripted point.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loopbench.harness.errors import UnknownRun, UnknownTool
from loopbench.harness.ledger import Ledger, ToolOutcome

TOKEN_HEADER = "x-loopbench-token"


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

    return [
        Route("/ledger/{run_id}/call", endpoint(call), methods=["POST"]),
        Route("/ledger/{run_id}/authorize", endpoint(authorize), methods=["POST"]),
        Route("/ledger/{run_id}/decide", endpoint(decide), methods=["POST"]),
    ]


class LedgerClient:
    """What an adapter (in a worker process) uses to execute scenario tools through the ledger."""

    def __init__(self, base_url: str, token: str, run_id: str):
        self._url = f"{base_url.rstrip('/')}/ledger/{run_id}"
        self._headers = {TOKEN_HEADER: token}

    async def call(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> ToolOutcome:
        async with httpx.AsyncClient(timeout=None) as client:
            r = await client.post(f"{self._url}/call", headers=self._headers,
                                  json={"tool": tool, "args": args, "call_id": call_id})
        r.raise_for_status()
        return ToolOutcome.model_validate(r.json())

    async def authorize(self, tool: str, args: dict[str, Any], call_id: str | None = None,
                        decision: str = "checked") -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{self._url}/authorize", headers=self._headers,
                                  json={"tool": tool, "args": args, "call_id": call_id, "decision": decision})
        r.raise_for_status()

    async def decide(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> str | None:
        """The harness's decision ("approve" / "reject") for a call an in-process approval idiom asks about
        now, or None when the scenario gives none (recorded as an approval request)."""
        async with httpx.AsyncClient(timeout=30) as client:
            r = await client.post(f"{self._url}/decide", headers=self._headers,
                                  json={"tool": tool, "args": args, "call_id": call_id})
        r.raise_for_status()
        return r.json()["decision"]

    def decide_sync(self, tool: str, args: dict[str, Any], call_id: str | None = None) -> str | None:
        r = httpx.post(f"{self._url}/decide", headers=self._headers, timeout=30,
                       json={"tool": tool, "args": args, "call_id": call_id})
        r.raise_for_status()
        return r.json()["decision"]

    def authorize_sync(self, tool: str, args: dict[str, Any], call_id: str | None = None,
                       decision: str = "checked") -> None:
        r = httpx.post(f"{self._url}/authorize", headers=self._headers, timeout=30,
                       json={"tool": tool, "args": args, "call_id": call_id, "decision": decision})
        r.raise_for_status()
