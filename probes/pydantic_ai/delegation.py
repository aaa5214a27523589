"""Standalone (no loopbench code): pydantic-ai's documented agent delegation (multi-agent-applications.md: a
parent tool runs `await child.run(task, usage=ctx.usage)` and returns `result.output`) against the parent's
`UsageLimits`, and a child whose tool needs approval. The model is pydantic-ai's own `FunctionModel`, one object
for both agents, answering by the request's instructions (which agent asks), 1,000 input and 100 output tokens a
response, as the scripted server does.

  runaway  the parent has `request_limit=8`; the child searches forever. With `usage=ctx.usage` the child's run is
           checked against its own `UsageLimits()` default (request_limit 50) on the SHARED `RunUsage`: the
           parent's 8 is checked only at the parent's own steps, and the parent gets no next step while its tool
           runs, so the tree stops at 50 requests (1 parent + 49 child), with the child's `UsageLimitExceeded`
           escaping the parent's run. Without `usage=` the child counts from 0 on its own: 51 (1 + 50).
  budget   the parent has `total_tokens_limit=4000`; the child answers after 3 lookups (4 responses). The child's
           run has no token limit, so it finishes (5 responses, 5,500 tokens); the parent raises before its next
           request (`total_tokens=5500`). Without `usage=` the parent's usage holds its own 1,100 tokens only and
           the run completes (6 responses served, 2 reported).
  approval the child's tool has `requires_approval=True` and the child `output_type=[str, DeferredToolRequests]`
           (the docs' deferred-tools idiom). The child's run ends with a `DeferredToolRequests` output; the
           parent's tool returns it as an ordinary tool result (serialized to the model), and the parent's run
           goes on and returns: no pause reaches the caller; the approval is never asked.

Output printed on 2026-12-04 (pydantic-ai-slim 2.68.0):
  runaway  usage=ctx.usage: UsageLimitExceeded 'request_limit of 50' served parent=1 child=49
  runaway  no usage:        UsageLimitExceeded 'request_limit of 50' served parent=1 child=50
  budget   usage=ctx.usage: UsageLimitExceeded 'total_tokens_limit of 4000 (total_tokens=5500)' served parent=1 child=4
  budget   no usage:        returned; reported requests=2 tokens=2200 served parent=2 child=4
  approval usage=ctx.usage: returned 'str'; child outputs [('DeferredToolRequests', ['issue_refund'])]; \
the parent's model got: ['{"calls":[],"approvals":[{"tool_name":"issue_refund","args":{"order":"1042"},"tool_call_id']
  approval no usage:        (the same)
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext, Tool
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

PARENT, CHILD = "You are the support lead.", "You are the specialist."
SERVED: dict[str, int] = {"parent": 0, "child": 0}
SEEN: list[str] = []  # the tool results the parent's model got


def _results(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def model_for(child_script: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        who = "child" if isinstance(first, ModelRequest) and first.instructions == CHILD else "parent"
        SERVED[who] += 1
        done = _results(messages)
        if who == "parent":
            if not done:
                part: Any = ToolCallPart("specialist", {"task": "do it"}, tool_call_id="ask_1")
            else:
                SEEN.append(done[-1].model_response_str()[:90])
                part = TextPart("done")
        elif child_script == "runaway":
            part = ToolCallPart("search_kb", {"query": f"q{len(done)}"}, tool_call_id=f"kb_{len(done)}")
        elif child_script == "budget":
            part = (ToolCallPart("lookup", {"order": str(len(done))}, tool_call_id=f"l_{len(done)}")
                    if len(done) < 3 else TextPart("RF-88"))
        else:  # approval: look up, then issue (needs approval)
            part = (ToolCallPart("lookup", {"order": "1042"}, tool_call_id="l_1") if not done
                    else ToolCallPart("issue_refund", {"order": "1042"}, tool_call_id="i_1") if len(done) == 1
                    else TextPart("issued"))
        return ModelResponse(parts=[part], usage=RequestUsage(input_tokens=1000, output_tokens=100))

    return FunctionModel(respond)


async def case(script: str, share: bool, limits: UsageLimits) -> str:
    SERVED.update(parent=0, child=0)
    SEEN.clear()
    model = model_for(script)

    async def search_kb(query: str) -> str:
        return "nothing"

    async def lookup(order: str) -> str:
        return "RF-88"

    async def issue_refund(order: str) -> str:
        return "RF-90"

    child_tools: list[Any] = [Tool(search_kb), Tool(lookup)]
    kwargs: dict[str, Any] = {}
    if script == "approval":
        child_tools.append(Tool(issue_refund, requires_approval=True))
        kwargs["output_type"] = [str, DeferredToolRequests]
    child = Agent(model, name="specialist", instructions=CHILD, tools=child_tools, **kwargs)
    child_outputs: list[Any] = []

    async def specialist(ctx: RunContext[None], task: str) -> Any:
        result = await (child.run(task, usage=ctx.usage) if share else child.run(task))
        child_outputs.append(result.output)
        return result.output

    parent = Agent(model, instructions=PARENT, tools=[Tool(specialist, takes_ctx=True)])
    try:
        result = await parent.run("go", usage_limits=limits)
    except UsageLimitExceeded as exc:
        msg = str(exc).split(". Consider")[0].replace("The next request would exceed the ", "")
        return f"UsageLimitExceeded '{msg}' served parent={SERVED['parent']} child={SERVED['child']}"
    out = f"returned; reported requests={result.usage.requests} tokens={result.usage.total_tokens} " \
          f"served parent={SERVED['parent']} child={SERVED['child']}"
    if script == "approval":
        kinds = [(type(o).__name__, [p.tool_name for p in getattr(o, "approvals", [])]) for o in child_outputs]
        out = f"returned {type(result.output).__name__!r}; child outputs {kinds}; the parent's model got: {SEEN}"
    return out


async def main(which: list[str]) -> None:
    cases = {"runaway": UsageLimits(request_limit=8), "budget": UsageLimits(total_tokens_limit=4000),
             "approval": UsageLimits(request_limit=8)}
    for script in which or list(cases):
        for share in (True, False):
            label = "usage=ctx.usage:" if share else "no usage:       "
            print(f"  {script:8} {label} {await case(script, share, cases[script])}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
