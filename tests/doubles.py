"""Test-double adapters, first-class implementations of the contract, for runner fault tests."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx

from loopbench.harness.adapter import Adapter, Capabilities, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.record import LimitTranslation, NativeSignals, PendingCall, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario

CAPS = Capabilities(native_limits=frozenset({"max_model_calls"}), step_unit="request", pause="none", pause_survives_restart=False,
                    deny="none")


class _Double(Adapter):
    distribution = "httpx"
    about = "test double"
    capabilities = CAPS
    warm_up_run = False  # no SDK to warm; a double that hangs or crashes does so in the run it is tested in

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        raise NotImplementedError


class OneCallDouble(_Double):
    """One chat request to the scripted server, the first scripted tool through the ledger, then stop."""

    id = "double-onecall"

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        async with httpx.AsyncClient() as client:
            r = await client.post(f"{ctx.base_url}/v1/chat/completions", headers={"Authorization": f"Bearer {ctx.api_key}"},
                                  json={"model": scenario.model.id, "messages": [{"role": "user", "content": scenario.prompt}],
                                        "tools": [{"type": "function", "function": {"name": n, "parameters": t.parameters}}
                                                  for n, t in scenario.tools.items()]})
        if r.status_code != 200:  # its one request failed (the hostile wire's 429): the model failed, a signal
            return SegmentResult(signals=NativeSignals(ended="raised", failure="model", exception_type="HTTPStatusError",
                                                       exception_message=f"HTTP {r.status_code}"),
                                 counters=ReportedCounters(model_requests_reported=1))
        tool = next(iter(scenario.tools))
        await LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id).call(tool, {}, None)
        signals = NativeSignals(ended="returned", final_text="no",
                                extra={"paths_absolute": ctx.work_dir.is_absolute() and ctx.snapshot_dir.is_absolute()})
        # one request whatever the limit: within any max_model_calls (the base records the limits it cannot
        # express, and its tool_choice intents, as unsupported)
        limits = {} if (n := scenario.limits.max_model_calls) is None else {
            "max_model_calls": LimitTranslation(neutral=n, native="one request, then stop")}
        return SegmentResult(signals=signals, counters=ReportedCounters(model_requests_reported=1), limits=limits)


class PauseDouble(_Double):
    """Pauses on its first run with a marker file in the task's shared dir; a resume reports whether it sees it."""

    id = "double-pause"

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        (ctx.task_dir / "store").write_text(str(os.getpid()))
        (ctx.snapshot_dir / "state").write_text("paused")
        pending = [PendingCall(call_id="send_1", tool="send_reply")]
        return SegmentResult(signals=NativeSignals(ended="paused", pending=pending), snapshot=str(ctx.snapshot_dir))

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        store = ctx.task_dir / "store"
        seen = {"store_from_pid": store.read_text() if store.exists() else None, "my_pid": str(os.getpid()),
                "snapshot": (snapshot / "state").read_text()}
        return SegmentResult(signals=NativeSignals(ended="returned", final_text="done", extra=seen))


class CancelDouble(_Double):
    """Runs the scenario's tools in order through the ledger, each beside the harness's cancel: when told to cancel
    it abandons the call in flight and keeps the names of the finished ones; a resume runs the rest."""

    id = "double-cancel"
    mechanism_table = {"cancel": "abandon the call in flight", "resume_after_cancel": "run the tools not finished"}

    async def _tools(self, names: list[str], ctx: RunContext) -> tuple[list[str], bool]:
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        cancel = asyncio.ensure_future(ledger.wait_cancel())
        done: list[str] = []
        try:
            for name in names:
                call = asyncio.ensure_future(ledger.call(name, {"customer": "ana", "topic": "refund"}))
                await asyncio.wait({call, cancel}, return_when=asyncio.FIRST_COMPLETED)
                if not call.done() and cancel.done() and cancel.result():
                    call.cancel()
                    return done, True
                await call
                done.append(name)
            return done, False
        finally:
            cancel.cancel()

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        done, cancelled = await self._tools(list(scenario.tools), ctx)
        if not cancelled:
            return SegmentResult(signals=NativeSignals(ended="returned", final_text="POL-7"))
        (ctx.snapshot_dir / "done").write_text("\n".join(done))
        return SegmentResult(signals=NativeSignals(ended="cancelled", exception_type="CancelledError"),
                             snapshot=str(ctx.snapshot_dir))

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        done = (snapshot / "done").read_text().split()
        await self._tools([t for t in scenario.tools if t not in done], ctx)
        return SegmentResult(signals=NativeSignals(ended="returned", final_text="POL-7"))


class CrashDouble(_Double):
    id = "double-crash"

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        raise RuntimeError("adapter bug on purpose")


class HangDouble(_Double):
    id = "double-hang"

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


class DieDouble(_Double):
    id = "double-die"

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        os._exit(3)


DOUBLES = {cls.id: f"tests.doubles:{cls.__name__}" for cls in (OneCallDouble, PauseDouble, CancelDouble, CrashDouble, HangDouble, DieDouble)}
