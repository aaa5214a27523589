"""The extension points the policy needs from a framework, one vocabulary for every binding.

A binding installs the guard through the points its framework offers and declares the ones it lacks
(`LACKS` in its module: the point, and what the policy cannot then do there), so a guarded cell that still
deviates names the missing hook instead of leaving the reader to guess.
"""

from __future__ import annotations

from typing import Literal

Hook = Literal["before_model_call", "model_usage", "before_tool_call", "after_tool_call", "tool_result",
               "pause", "deadline", "sub_agent"]

HOOKS: dict[Hook, str] = {
    "before_model_call": "a hook before each model call that can refuse it (the call cap; the token and cost "
                         "reservation)",
    "model_usage": "each response's token usage, seen by a hook as it arrives (token and cost accounting)",
    "before_tool_call": "a hook before each tool call that can refuse it (approval bound to the call, a rejected "
                        "effect, a blind repeat of an unknown write, no model call left to read the result)",
    "after_tool_call": "a hook after each tool call that sees its result or its error (the stall check, a fatal "
                       "failure ending the task)",
    "tool_result": "a hook that changes the result the next request carries (bounded output)",
    "pause": "a hook that pauses the run for a person's decision and resumes it with that decision",
    "deadline": "a hook that can cut a call in flight when the wall-clock allowance runs out",
    "sub_agent": "the same hooks inside a sub-agent's run, its stops and pauses reaching the parent's",
}
