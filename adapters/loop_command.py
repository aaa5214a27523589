"""Bring your own loop: any program, in any language, run once per segment through the loop protocol.

`loopbench run --loop-cmd 'python my_loop.py' [--loop-name NAME]` registers this adapter under NAME (default
`my-loop`); the command comes to the workers in LOOPBENCH_LOOP_CMD. For each run the adapter starts the
command (split like a shell would, run without one, in loopbench's working directory) and writes one JSON job
on its stdin; the loop drives the scripted model and calls its tools through the ledger, then prints its answer
as the last line of stdout. Protocol 1 (docs/loop-protocol.md):

job: {"protocol": 1, "op": "run", "openai_base_url", "anthropic_base_url", "api_key", "model", "prompt",
      "tools": [{"name", "description", "parameters"}], "limits": {neutral limit: value or null},
      "ledger": {"url", "header", "token"}, "work_dir"}
answer: {"ended": "returned" | "raised", "final_text", "requests", "limits": {neutral limit: "how it was
      applied"}, "limit": "steps" | "budget" | "deadline", "exception_type", "exception_message", "failure",
      "finish_reason", "input_tokens", "output_tokens"} — every key but `ended` optional; missing is null.

A limit the answer does not name as applied is recorded as unsupported; a loop that exits without an answer
line is `error` with its exit code and the end of its stderr. The loop is done when it exits, even if a child it
left holds its stdout open; the worker ends such children with the segment (harness/run/reaper.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any, get_args

from loopbench.harness.adapter import TOOL_CHOICE_INTENTS, Adapter, Capabilities, RunContext
from loopbench.harness.ledger.http import TOKEN_HEADER
from loopbench.harness.record import (
    Intent,
    LimitKind,
    LimitTranslation,
    NativeSignals,
    NeutralLimit,
    ReportedCounters,
    SegmentResult,
)
from loopbench.harness.scenario import Scenario

PROTOCOL = 1
COMMAND_ENV = "LOOPBENCH_LOOP_CMD"
_ENDED = {"returned", "raised"}


class LoopProtocolError(RuntimeError):
    """The loop's answer broke the protocol (the run is `error`, with this message)."""


class LoopCommandAdapter(Adapter):
    id = "my-loop"
    about = "your own loop, run as a command through the loop protocol (docs/loop-protocol.md)"
    distribution = ""
    model_class = "the loop's own client (loop protocol)"
    warm_up_run = False  # each run starts the user's command afresh: nothing in the worker to warm
    # what the loop applies natively is only known from its answer: the class declares nothing
    capabilities = Capabilities(native_limits=frozenset(), step_unit="whatever the loop reports as requests",
                                pause="none", pause_survives_restart=False, deny="none",
                                notes=("limits the loop applied are named in its answer",))

    @classmethod
    def version(cls) -> str | None:
        return f"loop protocol {PROTOCOL}"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None if os.environ.get(COMMAND_ENV) else f"no loop command ({COMMAND_ENV} is unset: see --loop-cmd)"

    @classmethod
    def package_versions(cls) -> dict[str, str]:
        return {}

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        base = ctx.base_url.rstrip("/")
        job = {
            "protocol": PROTOCOL, "op": "run", "openai_base_url": f"{base}/v1", "anthropic_base_url": base,
            "api_key": ctx.api_key, "model": scenario.model.id, "prompt": scenario.prompt,
            "tools": [{"name": n, "description": t.description, "parameters": t.parameters}
                      for n, t in scenario.tools.items()],
            "limits": scenario.limits.model_dump(),
            # each turn's tool_choice: `after` null = the opening call, else a regex of the call whose result
            # comes just before (docs/loop-protocol.md)
            "tool_choice": [{"after": r.after_regex, "choice": r.choice} for r in scenario.tool_choice_rules()],
            "ledger": {"url": f"{base}/ledger/{ctx.run_id}/call", "header": TOKEN_HEADER, "token": ctx.ledger_token},
            "work_dir": str(ctx.work_dir),  # private to this run: for the loop's own files
        }
        answer = await self._exchange(job, ctx)
        return self._segment(scenario, answer)

    async def _exchange(self, job: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        argv = shlex.split(os.environ[COMMAND_ENV])
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **ctx.extra_env})  # in loopbench's working directory: relative commands work
        out, err = await _communicate(proc, json.dumps(job).encode() + b"\n")
        (ctx.work_dir / "loop-stderr.txt").write_bytes(err)
        lines = [x for x in out.decode(errors="replace").splitlines() if x.strip()]
        if not lines:
            tail = err.decode(errors="replace").strip().splitlines()[-3:]
            raise LoopProtocolError(f"the loop exited with code {proc.returncode} and printed no answer line"
                                    + (f": {' / '.join(tail)}" if tail else ""))
        try:
            answer = json.loads(lines[-1])
        except ValueError:
            raise LoopProtocolError(f"the loop's last stdout line is not JSON: {lines[-1][:200]!r}") from None
        if not isinstance(answer, dict) or answer.get("ended") not in _ENDED:
            raise LoopProtocolError(f"the loop's answer needs \"ended\": returned|raised; got {lines[-1][:200]!r}")
        return answer

    def _segment(self, scenario: Scenario, a: dict[str, Any]) -> SegmentResult:
        applied: dict[str, Any] = a["limits"] if isinstance(a.get("limits"), dict) else {}
        limits: dict[NeutralLimit, LimitTranslation] = {}
        unsupported: list[str] = []
        for name in get_args(NeutralLimit):
            value = getattr(scenario.limits, name)
            if value is None:
                continue
            native = applied.get(name)
            limits[name] = LimitTranslation(neutral=value, native=str(native) if native else None)
            if not native:
                unsupported.append(name)
        how = a.get("tool_choice")
        table: dict[Intent, str] = {i: str(how) if isinstance(how, str) and how else
                 "unsupported: the loop's answer does not say how it applied tool_choice" for i in TOOL_CHOICE_INTENTS}
        # the loop's tools answer through the ledger as the protocol says; how the loop handles an error is its own
        table |= {i: "the loop's own handling of a tool's error answer (the protocol does not say how)"
                  for i in ("tool_error_recoverable", "tool_error_fatal")}
        mechanisms = self.mechanisms(scenario, table)
        unsupported += self.unsupported_tool_choice(mechanisms)
        limit: LimitKind | None = a["limit"] if a.get("limit") in ("steps", "budget", "deadline") else None
        signals = NativeSignals(
            ended=a["ended"], final_text=a.get("final_text"), limit=limit, limit_signal="handled" if limit else None,
            failure=a.get("failure") if a.get("failure") in ("tool", "model", "other") else None,
            exception_type=a.get("exception_type"), exception_message=a.get("exception_message"),
            finish_reason=a.get("finish_reason"))
        counters = ReportedCounters(model_requests_reported=_count(a.get("requests")),
                                    input_tokens_reported=_count(a.get("input_tokens")),
                                    output_tokens_reported=_count(a.get("output_tokens")))
        return SegmentResult(signals=signals, counters=counters, limits=limits, unsupported=unsupported,
                             mechanisms=mechanisms, settings={"loop_command": os.environ.get(COMMAND_ENV, "")})

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        raise NotImplementedError("loop protocol 1 has no pauses: a loop never returns a snapshot")


EXIT_GRACE_S = 0.5  # once the loop has exited, how long its stdout and stderr may stay open
_POLL_S = 0.1  # how often to look whether it has, while they are open


async def _communicate(proc: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """`proc.communicate(data)`, but done once the loop has exited: a child it left running (in a session of its
    own, say) may hold its stdout and stderr open, and communicate() would wait for their EOF, and the run with
    it, until the hard timeout. Whatever the loop wrote is read by then; the worker ends that child after the
    segment (harness/run/reaper.py). The loop's exit is seen from its return code: in Python 3.11, `wait()` too
    waits for the pipes."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()

    async def pump(stream: asyncio.StreamReader, buf: bytearray) -> None:
        while chunk := await stream.read(1 << 16):
            buf += chunk

    pumps = {asyncio.ensure_future(pump(proc.stdout, out)), asyncio.ensure_future(pump(proc.stderr, err))}
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):  # it exited without reading its job: its answer says so
        pass
    proc.stdin.close()
    exited_at: float | None = None
    try:
        while pumps:
            done, pumps = await asyncio.wait(pumps, timeout=_POLL_S)  # both at EOF: at once, as communicate()
            for task in done:
                task.result()
            if pumps and proc.returncode is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at >= EXIT_GRACE_S:
                    break
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
    if not pumps:
        await proc.wait()
    return bytes(out), bytes(err)


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
