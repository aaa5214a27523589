"""6. The guard's own cost per call (loopbench.guard): what one guarded model call (reserve + settle) and one
guarded tool call (approval, unknown-write and budget checks, reserve, settle, the stall check, the output bound)
cost in the process, and the same over the guard's HTTP service (what a Node framework's hooks pay). Medians and
p99 over many calls, in microseconds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import httpx

from loopbench.guard import Allowance, Guard, ToolRules
from loopbench.guard.service import GuardService, serving


def _us(samples: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=100)
    return {"p50_us": round(cuts[49], 2), "p99_us": round(cuts[98], 2)}


def _timed(fn: Callable[[int], None], n: int) -> list[float]:
    for i in range(min(200, n)):  # warm-up
        fn(i)
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1e6)
    return out


def _guard() -> Guard:
    # the caps are far away: every call is checked in full and none is refused
    return Guard(Allowance(model_calls=10**9, tool_calls=10**9, tokens=10**15, cost_usd=10**9, wall_s=10**6),
                 ToolRules(needs_approval={"send_reply"}, writes={"send_reply"}), max_result_chars=8_000,
                 price=lambda i, o: i * 3e-6 + o * 15e-6)


def guard_numbers(in_process: int = 20_000, over_http: int = 1_000) -> dict[str, dict[str, float]]:
    g = _guard()

    def model_call(i: int) -> None:
        g.after_model_call(g.before_model_call(), input_tokens=1000 + i % 7, output_tokens=100)

    def tool_call(i: int) -> None:
        args = {"query": f"refund article {i}"}
        g.after_tool_call(g.before_tool_call("search_kb", args), "search_kb", args, f"No article matches {i}.")

    numbers = {"model_call_in_process": _us(_timed(model_call, in_process)),
               "tool_call_in_process": _us(_timed(tool_call, in_process))}
    service = GuardService(_guard())
    with serving(service) as base, httpx.Client(base_url=base, headers={"x-guard-token": service.token},
                                                trust_env=False) as c:
        def http_model_call(i: int) -> None:
            held = c.post("/guard/before_model_call", json={}).json()["held"]
            c.post("/guard/after_model_call", json={"held": held, "input_tokens": 1000, "output_tokens": 100})

        def http_tool_call(i: int) -> None:
            args = {"query": f"refund article {i}"}
            held = c.post("/guard/before_tool_call", json={"tool": "search_kb", "args": args}).json()["held"]
            c.post("/guard/after_tool_call", json={"held": held, "tool": "search_kb", "args": args,
                                                    "result": f"No article matches {i}."})

        numbers["model_call_over_http"] = _us(_timed(http_model_call, over_http))
        numbers["tool_call_over_http"] = _us(_timed(http_tool_call, over_http))
    return numbers
