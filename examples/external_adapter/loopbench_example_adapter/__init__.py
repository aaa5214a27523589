"""A complete external loopbench adapter: a plain OpenAI Chat Completions loop written by hand (model call,
tool calls through loopbench's ledger, repeat until the model answers in text or the step limit is reached).

It shows the whole contract (docs/adapters.md): declare what the loop can do natively, run it, and map what
it returned into NativeSignals and ReportedCounters. It never looks at the scenario's `expect`.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from loopbench.harness.adapter import Adapter, Capabilities, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.record import LimitTranslation, NativeSignals, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario


class ExampleLoopAdapter(Adapter):
    id = "example-loop"
    about = "a hand-written chat loop: stops on a text answer or after max_model_calls requests"
    distribution = "loopbench-example-adapter"  # its version is the "framework version" in every record
    capabilities = Capabilities(native_limits=frozenset({"max_model_calls"}), step_unit="model request",
                                pause="none", pause_survives_restart=False, deny="none")

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        limit = scenario.limits.max_model_calls
        tools = [{"type": "function", "function": {"name": n, "description": t.description,
                                                   "parameters": t.parameters}} for n, t in scenario.tools.items()]
        messages: list[dict] = [{"role": "user", "content": scenario.prompt}]
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        requests = 0
        async with httpx.AsyncClient(base_url=f"{ctx.base_url}/v1", timeout=120,
                                     headers={"Authorization": f"Bearer {ctx.api_key}"}) as client:
            while limit is None or requests < limit:
                r = await client.post("/chat/completions", json={"model": scenario.model.id, "messages": messages,
                                                                 "tools": tools})
                requests += 1
                if r.status_code != 200:
                    return self._result(NativeSignals(ended="raised", failure="model", exception_type="HTTPError",
                                                      exception_message=r.text[:200]), requests, scenario)
                message = r.json()["choices"][0]["message"]
                messages.append(message)
                if not message.get("tool_calls"):
                    return self._result(NativeSignals(ended="returned", final_text=message.get("content"),
                                                      finish_reason="stop"), requests, scenario)
                for call in message["tool_calls"]:
                    args = json.loads(call["function"]["arguments"] or "{}")
                    done = await ledger.call(call["function"]["name"], args, call["id"].removeprefix("call_"))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": done.text})
        return self._result(NativeSignals(ended="returned", limit="steps", limit_signal="handled",
                                          terminal_reason=f"stopped after {requests} requests"), requests, scenario)

    def _result(self, signals: NativeSignals, requests: int, scenario: Scenario) -> SegmentResult:
        # a token, cost or deadline limit it cannot express is recorded as unsupported by the base
        # (Adapter.declared(), after every segment), never emulated
        limits = {}
        if scenario.limits.max_model_calls is not None:
            limits["max_model_calls"] = LimitTranslation(neutral=scenario.limits.max_model_calls,
                                                         native=f"while requests < {scenario.limits.max_model_calls}")
        return SegmentResult(signals=signals, counters=ReportedCounters(model_requests_reported=requests),
                             limits=limits)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        raise NotImplementedError("this loop never pauses (capabilities.pause is none)")
