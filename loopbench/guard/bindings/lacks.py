"""What each Python binding's framework lacks of the extension points the policy needs (loopbench/guard/hooks.py),
for the bindings whose module imports their SDK: here, so that an adapter can declare them (its guarded variant's
`Capabilities.guard_lacks`) without importing the SDK. Each binding re-exports its own as `LACKS`."""

from __future__ import annotations

from loopbench.guard.hooks import Hook

OPENAI_AGENTS: dict[Hook, str] = {
    "after_tool_call": "no hook sees a tool's error: on_tool_end and the tool output guardrails run only on a "
                       "returned result, and a hand-built FunctionTool's raise escapes the run as UserError "
                       "(failure_error_function, function_tool's and as_tool's, turns the error into the model's "
                       "text, RunConfig.tool_error_formatter only rewords that text): the binding wraps "
                       "FunctionTool.on_invoke_tool to see a failure, a timeout and the deadline",
    "deadline": "no hook is around a model request (on_llm_start / on_llm_end are before and after it; "
                "ModelSettings.timeout is a fixed bound per attempt, not the task's remaining time): a request in "
                "flight at the deadline is cut only by cancelling the whole Runner.run (deadline()), which then "
                "returns no RunResult: no usage, no state to resume",
}

LANGGRAPH: dict[Hook, str] = {}  # every extension point of hooks.py is there (langchain 1.x agent middleware)

PYDANTIC_AI: dict[Hook, str] = {
    "sub_agent": "a sub-agent run inside a tool (agent delegation) ends with its own DeferredToolRequests output: no "
                 "hook carries its pause up to the parent's run, which goes on without the approval",
}
