"""What every `guarded` variant shares (docs/guard.md): the task's guard (`loopbench.guard`), built from what a
deployment knows of its own task and nothing of the scenario's expectation — the limits it sets, its tools'
declarations (approval, kind, effect, polling bound, idempotency argument) and its model's price — kept in the
task's own store across a pause and every resume, and read back as the segment's `GuardSignal`.

A guarded variant is its framework's default idiom with the guard installed through the framework's documented
extension points (loopbench/guard/bindings/); the framework's native limits stay as the default sets them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopbench.guard import Allowance, Guard, GuardStop, ToolRules
from loopbench.guard.calls import Decision
from loopbench.harness.adapter import RunContext
from loopbench.harness.judge.prices import cost_usd
from loopbench.harness.markers import without_markers
from loopbench.harness.record import GuardSignal
from loopbench.harness.scenario import Scenario

GUARD_FILE = "guard.json"  # in the task's store (RunContext.task_dir): one allowance for the whole task
STALL_REPEATS = 3  # the same call with the same answer this many times in a row is a stall
MAX_RESULT_CHARS = 8_000  # a longer tool answer reaches the model as its head and a reference


def allowance_of(scenario: Scenario) -> Allowance:
    lim = scenario.limits
    return Allowance(model_calls=lim.max_model_calls, tokens=lim.max_total_tokens, cost_usd=lim.max_cost_usd,
                     wall_s=lim.deadline_s)


def rules_of(scenario: Scenario) -> ToolRules:
    tools = scenario.tools
    return ToolRules(needs_approval={n for n, t in tools.items() if t.approval == "required"},
                     effects={n: t.effect for n, t in tools.items() if t.effect is not None},
                     polling={n: t.polling for n, t in tools.items() if t.polling is not None},
                     writes={n for n, t in tools.items() if t.kind == "write"})


def task_guard(scenario: Scenario, ctx: RunContext) -> Guard:
    """The task's guard: a new one for its first segment, the saved one for a resume (its used amounts, time,
    decisions and the writes it ran), on the scenario model's price."""
    model = scenario.model.id

    def price(input_tokens: int, output_tokens: int) -> float:
        return cost_usd(model, input_tokens, output_tokens) or 0.0

    def same_answer(result: Any) -> Any:  # the ledger's receipt ids differ on every call: not information
        return without_markers(result) if isinstance(result, str) else result

    options: dict[str, Any] = dict(stall_repeats=STALL_REPEATS, max_result_chars=MAX_RESULT_CHARS, price=price,
                                   result_key=same_answer)
    saved = ctx.task_dir / GUARD_FILE
    if ctx.task_dir != Path() and saved.exists():
        guard = Guard.restore(allowance_of(scenario), json.loads(saved.read_text()), rules_of(scenario), **options)
    else:
        guard = Guard(allowance_of(scenario), rules_of(scenario), **options)
    return guard


def save(guard: Guard, ctx: RunContext) -> None:
    if ctx.task_dir != Path():
        ctx.task_dir.mkdir(parents=True, exist_ok=True)
        (ctx.task_dir / GUARD_FILE).write_text(json.dumps(guard.snapshot()))


def decide(guard: Guard, pending: list[dict[str, Any]], decisions: dict[str, str]) -> None:
    """The resume's decisions, told to the guard for exactly the pending calls they answer (`pending`: the
    pause's calls as the adapter saved them, each with `call_id`, `tool` and `args`, and the framework's own id as
    `raw_id` where it has one: the id its binding sees when the approved call runs)."""
    for call in pending:
        said = decisions.get(call.get("call_id") or "")
        decision: Decision | None = "approve" if said == "approve" else "reject" if said == "reject" else None
        if decision is not None:
            guard.decide(call["tool"], call.get("args") or {}, decision,
                         call_id=call.get("raw_id") or call.get("call_id"))
    guard.resume()


def signal(guard: Guard) -> GuardSignal | None:
    """The guard's exit for the record (None: it never stopped the task, and nothing said it completed)."""
    if guard.exit is None:
        return None
    return GuardSignal(exit=guard.exit, measure=guard.stop_measure, reason=guard.exit_reason)


def guard_stop_in(exc: BaseException) -> GuardStop | None:
    from loopbench.adapters.kit import exception_chain

    return next((e for e in exception_chain(exc) if isinstance(e, GuardStop)), None)
