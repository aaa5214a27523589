"""The caller's cancel, written once for the in-process adapters: wait beside the framework's run for the harness to
say "cancel now" (`LedgerClient.wait_cancel`, held open by the ledger) and then call what the framework documents
for a caller's cancel (a token's `cancel()`, a handle's `cancel()`, `Task.cancel()`): the adapter hands that in with
`arm`, as soon as the run has the handle. No scenario knowledge: the harness decides when."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType

from loopbench.harness.adapter import RunContext
from loopbench.harness.ledger.http import LedgerClient


class CallerCancel:
    """`async with CallerCancel(ctx, enabled) as cancel: cancel.arm(token.cancel); ...` — `told` says whether the
    harness told the caller to cancel during the block (then every armed callable was called, once)."""

    def __init__(self, ctx: RunContext, enabled: bool) -> None:
        self._ctx = ctx
        self._enabled = enabled
        self._targets: list[Callable[[], object]] = []
        self._task: asyncio.Task[None] | None = None
        self.told = False

    def arm(self, target: Callable[[], object]) -> None:
        """What cancels the run the framework's way; called at once when the cancel already came."""
        self._targets.append(target)
        if self.told:
            target()

    async def _wait(self) -> None:
        ledger = LedgerClient(self._ctx.base_url, self._ctx.ledger_token, self._ctx.run_id)
        if await ledger.wait_cancel():
            self.told = True
            for target in self._targets:
                target()

    async def __aenter__(self) -> CallerCancel:
        if self._enabled:
            self._task = asyncio.ensure_future(self._wait())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()  # the run ended first: closing the held request tells the ledger
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
