"""The pydantic-ai binding's clock (loopbench/guard/bindings/pydantic_ai.py): a segment's wall-clock starts at the
main agent's run start, where pydantic-ai's own run timeout starts, and a sub-agent's run does not restart it.
Imports pydantic-ai: a process-tier test; pydantic-ai's own FunctionModel stands in for a provider."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

from loopbench.guard import Allowance, Budget, Guard
from loopbench.guard.bindings.pydantic_ai import GuardCapability


def test_the_segment_clock_starts_at_the_main_run_not_before_it_nor_at_a_sub_agent_s():
    now = [100.0]
    allowance = Allowance(wall_s=5)
    guard = Guard(allowance, budget=Budget(allowance, clock=lambda: now[0]))
    assert guard.budget is not None

    def answer(messages, info):  # each request takes one second of the task's time
        now[0] += 1
        return ModelResponse(parts=[TextPart("done")])

    main = Agent(FunctionModel(answer), capabilities=[GuardCapability(guard)])
    child = Agent(FunctionModel(answer), capabilities=[GuardCapability(guard.child())])
    now[0] += 30  # the process building its agents before the run: no hook could check or cut it
    main.run_sync("go")
    assert guard.budget.elapsed_s() == 1
    child.run_sync("go")  # a sub-agent's run sits inside the parent's segment: its clock goes on
    assert guard.budget.elapsed_s() == 2
