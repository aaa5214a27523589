"""Pydantic AI adapter (`pydantic-ai`, distribution `pydantic-ai-slim`).

Translation of the neutral scenario into native controls (the `default` variant keeps every other default):
- model: the scenario's model is a Claude model (`claude-sonnet-4-5`), and pydantic-ai's docs connect Claude with
  `AnthropicModel` + `AnthropicProvider` (models/anthropic.md), so the default does too (class facts `model_class`
  `pydantic_ai.models.anthropic.AnthropicModel`, `model_provider` anthropic; the base writes `settings.model_class` and
  `settings.model` into every record): `AnthropicModel(self.model_id(scenario),
  provider=AnthropicProvider(anthropic_client=...))`, one `AsyncAnthropic(base_url=<scripted server>)` (the
  client adds /v1/messages; pydantic-ai sends `client.beta.messages.create`) per worker event loop,
  `.with_options(api_key=<run key>)` per run (the provider's documented `anthropic_client=` argument;
  `AnthropicProvider(api_key=, base_url=)` would build a new HTTP client per run: providers/anthropic.py
  `AnthropicProvider.__init__`). `agent.run`'s requests reach the server as streams
  (`stream: true`): with no `max_tokens` set, pydantic-ai sends the model's maximum output, above the SDK's
  non-streaming ceiling, and streams behind the scenes (models/anthropic `_default_max_tokens`, `_messages_create`). The
  pairing matters beyond the wire: the provider's name ('anthropic') is what genai-prices prices the model under, so it
  decides whether `cost_limit` can be enforced (below). The `anthropic` client's own retries are left at its default
  (max_retries=2, honouring `retry-after`; it retries 408/409/429/5xx unless the response says `x-should-retry: false`):
  pydantic-ai forwards `ModelSettings['max_retries']` only when set (models/_sdk_retries.py `with_max_retries`, used by
  models/anthropic `_messages_create`). The `openai-chat` variant keeps the OpenAI-compatible idiom instead
  (`OpenAIChatModel` + `OpenAIProvider(openai_client=AsyncOpenAI(base_url=<server>/v1))`; `model_class`
  `pydantic_ai.models.openai.OpenAIChatModel`, `model_provider` anthropic: it deliberately sends the scenario's Claude
  id through the OpenAI provider), the way a user reaches Claude through an OpenAI-compatible endpoint; tool-call
  ids are `toolu_<id>` on Messages and `call_<id>` on Chat Completions, mapped per variant (pending calls, ledger
  calls and authorize events, deferred tool results, tool_choice);
- tools: `Tool.from_schema(function, name, description, json_schema, takes_ctx=True)` per scenario tool, each
  executing through the ledger with `RunContext.tool_call_id`. A failed call follows the docs' rule of thumb
  (tools-advanced.md "Tool Execution, Retries, and Failures", the docs the locked release's own retry error links
  to): `ModelRetry` "when the model should try the tool call again" — a recoverable error or a timeout (the docs
  treat a tool timeout as "a retryable failure": pydantic-ai's own `Tool(timeout=)` answers one with a retry prompt)
  — and `ToolFailed` "when the call is done and the result is a failure" — a fatal error ("the upstream service
  returned a definitive error"). The choice is the tool's own: it reads the error kind its service answered (the
  ledger's `error_kind`), never the scenario. `ModelRetry` counts against the tool's retry budget (default 1,
  `Tool(max_retries)` / `Agent(retries)`): the tool's second consecutive failure ends the run with
  `UnexpectedModelBehavior("Tool ... exceeded max retries count of 1")` raised from the `ModelRetry`
  (tool_manager.py `_check_max_retries`) -> failure="tool". `ToolFailed` consumes no budget; the model sees the
  failure (a ToolReturnPart with outcome='failed': `is_error` on Messages) and the loop goes on. The docs' third
  path, "Any other exception propagates out of the agent run and is not sent back to the model", is the
  `raise-fatal` variant's for a fatal error (the run ends on it: failure="tool", the tool's own exception in the
  chain), and everyone's for the stop-on-deny intent below. probes/pydantic_ai/fair.py `tool-errors` shows both
  pairings on the suite's three tool-failure cells: only tool_fatal_error changes (ToolFailed: the model retries
  and answers without the policy, 4 requests, lookup_policy 2; raised: the run ends, 2 requests, lookup_policy 1);
- limits: `UsageLimits` (usage.py): max model calls -> `request_limit` (checked at the start of each step,
  before the request: `check_before_request`, `usage.requests >= request_limit`); unset: the default
  `UsageLimits().request_limit` (50) is recorded as the native translation. Token budget ->
  `total_tokens_limit` (checked after each response, `check_tokens`, and before each request on the total so
  far): the response that crosses it is already paid for. Cost budget -> `cost_limit` (USD, a Decimal): the cost
  is genai-prices' price of the model under the provider's name (`RunUsage.cost`, checked after each response
  like the tokens). Under `AnthropicProvider` ('anthropic') `claude-sonnet-4-5` is priced and the limit raises
  after the response that crosses it; under `OpenAIProvider` ('openai', the `openai-chat` variant) genai-prices
  has no price for it, `RunUsage.cost` stays None and pydantic-ai warns (`CostNotFoundWarning`,
  usage.py `UsageLimits._warn_if_cost_unavailable`) instead of enforcing: the warning is recorded in the
  segment's notes. Deadline -> `agent.run(timeout=deadline_s)`: the run is cancelled and raises `RunTimedOut`
  (a `RunCancelled` carrying the run's usage and messages; its counts below). `UsageLimitExceeded` ->
  limit="steps" when its message names `request_limit`, "budget" when it names a token or cost limit,
  limit_signal="raised"; `RunTimedOut` -> limit="deadline";
- `approval: required` -> `requires_approval=True` on the tool (the docs' idiom for a tool that always needs
  approval; deferred-tools.md) and `output_type=[str, DeferredToolRequests]`: the run ends with a
  `DeferredToolRequests` output; its `approvals` are the pending calls. No user approval code runs (the flag is
  static), so no `authorize` event is recorded for it. The pause is the message history,
  `ModelMessagesTypeAdapter.dump_json(result.all_messages())`, in the snapshot dir; resume (a new process) =
  `agent.run(message_history=..., deferred_tool_results=DeferredToolResults(approvals={call id: True | False}))`
  keyed by the call ids saved at the pause (approve -> True; reject -> False, which pydantic-ai turns into its
  default `ToolDenied()`: "The tool call was denied." to the model, the loop goes on). `message_history` carries
  the messages only: the resumed run starts a fresh `RunUsage`, so `request_limit` counts from 0 again
  (conversation.py `Conversation` docstring says so); the `conversation` variant carries the usage;
- `approval: deny`, by the scenario's intent (`policy.deny`): "continue" -> the denied tool is
  `requires_approval=True` and a `HandleDeferredToolCalls(handler)` capability answers its calls inline with
  `ToolDenied(message)` (the docs' own example: "the handler denies this call, so the model sees the denial
  message instead"): the tool never runs, the loop goes on; the handler records the `authorize` event. "stop" ->
  the tool records `authorize` and raises (kit's `ToolDenied`), an ordinary exception, which "propagates out of
  the agent run and is not sent back to the model" (tools-advanced.md); `denied=True` only when that exception
  is in the raised chain. (`RunContext.cancel()` also stops a run from a tool, but its `RunCancelled` carries no
  reason of the tool's, so a denial could not be told from any other cancellation.)
- `tool_choice` -> a capability whose `get_model_settings()` returns a callable (`RunContext` -> `ModelSettings`),
  the docs' per-step idiom ("Dynamic tool choice via capabilities"): the choice for the request about to be sent,
  from the tool results after its last response; a static `tool_choice='required'` is refused by `agent.run`.

- sub-agents (`scenario.agents`) -> the docs' "agent delegation" (multi-agent-applications.md: "agents using another
  agent via tools"; "You'll generally want to pass `ctx.usage` to the `usage` keyword argument of the delegate agent
  run so usage within that run counts towards the total usage of the parent agent run"): per child, an
  `Agent(model, name=<id>, instructions=spec.instructions, tools=<its tools, built as the main agent's>)` on the
  same model object, and a parent tool named after the child (one string parameter, `task`; the child's
  `description` as the tool's) whose body is the docs' `result = await child.run(task, usage=ctx.usage); return
  result.output`. The main agent gets `instructions=scenario.instructions` when set and its own tools
  (`Scenario.tools_of("main")`); a scenario without agents builds exactly the agent it did before. What the child
  got (in the segment's `settings.delegate`): the parent's `RunUsage` object (`usage=ctx.usage`; agent/__init__.py
  `usage = usage or RunUsage()`: the same object, so every child request and token lands in the parent's
  `result.usage`, which is what the counters report: there is no separate child usage to show), no `usage_limits`
  (the docs pass none), so the child's run checks `UsageLimits()`'s defaults (`request_limit` 50) against the SHARED
  usage (`usage_limits = usage_limits or UsageLimits()`), and no `timeout` (a run started inside a run inherits the
  parent's deadline: _cancel.py `inherited_run_deadline`). The parent's own `UsageLimits` are checked only at the
  parent's steps, and the parent takes no step while its tool runs the child. Measured (probes/pydantic_ai/
  delegation.py reproduces each with pydantic-ai's own FunctionModel): subagent_runaway's `request_limit=8` does not
  stop the child: the child's default 50 does, on the shared count (1 main + 49 child requests; its
  `UsageLimitExceeded` escapes the tool and the parent's run: limit_steps, 50 observed); subagent_token_budget's
  `total_tokens_limit=4000` lets the child finish its 4 requests (5,500 tokens) and raises before the parent's next
  request (`total_tokens=5500`). Approval inside a child: the child's tool is `requires_approval=True` and the child
  `output_type=[str, DeferredToolRequests]`, exactly as for the main agent's tools; the child's run then ENDS with
  a `DeferredToolRequests` output, which the docs' delegation returns as the tool's result (`result.output`,
  serialized to the parent's model as JSON): the parent cannot pause on it, the approval is never asked, the
  parent's run goes on and returns (subagent_approval: incomplete, issue_refund never runs, no resume). The
  adapter does not invent a bridge (a tool could raise `ApprovalRequired` itself; no doc shows it for delegation):
  `extra["child_deferred_outputs"]` names the child's deferred calls. A child's fatal tool error is the child's
  `ToolFailed` (the child's model sees it and answers): the parent gets the child's answer, the run completes
  (subagent_tool_failure: incomplete). The `delegate-no-usage` variant drops `usage=ctx.usage` (below);
Variants (`iter`, `conversation` and `raise-fatal` keep the default's AnthropicModel): `iter` drives the same agent
with `async with agent.iter(...) as run: async for node in run` (the graph-node idiom the docs show for step-by-step
control); `run.usage` is there even after a raise, so it reports counters where `agent.run`'s exceptions carry none
(`UsageLimitExceeded` has no usage: usage.py / exceptions.py). `conversation` pauses with the run's `Conversation`
(`result.conversation`, serialized with `ConversationTypeAdapter`) and resumes with `agent.run(conversation=...,
deferred_tool_results=conversation.deferred_tool_requests.build_results(...))`: the conversation carries its
`RunUsage`, so the request limit counts the whole business task and the counters are cumulative. `raise-fatal` is the
default with a fatal tool error raised as an ordinary exception (see tools, above): only that intent's mechanism
changes. `openai-chat` is the default with `OpenAIChatModel` + `OpenAIProvider` (see model, above): only the model
class and the call-id prefix change.
`stream-events` is the docs' event-streaming idiom, `async with agent.run_stream_events(...) as events: async for
event in events` read to the end; its last event, `AgentRunResultEvent`, carries the run result (`.result`); the
default's model route and everything else (`stream_of: "default"`: the report sets its cells beside the default's).
Not `run_stream`: it stops at the first output and does not run the tool calls after it (agent/abstract.py
`run_stream`), so it is not the same loop. `run_stream_events` is `agent.run` with an `event_stream_handler`
(agent/abstract.py), so the wire is the default's, `stream: true` on every request (agent.run already streams inside
AnthropicModel; same bodies, byte for byte). Two measured differences, both pydantic-ai's own: (1) the handle's
`usage` is readable after the run raised (like `iter`'s `run.usage`), so a limit, a denial or exhausted tool retries
report counts where `agent.run`'s exceptions carry none; (2) each model request is read through `AgentStream`, which
checks the token limit after every stream event (result.py `AgentStream.__aiter__`), not after the whole response:
token_budget trips at the 3rd response's `message_start` (`total_tokens=31000` in the message, where agent.run says
31500), before the `message_delta` carrying its output tokens is read, so the reported output tokens are 1,000 where
the server served 1,500 (probes/pydantic_ai/stream_token_limit.py). A model failure's counts stay null as the
default's.

`delegate-no-usage` is the default with the child run as `await child.run(task)`, without `usage=ctx.usage`, as users
who forget it do (the docs say "generally"): the child's run starts a `RunUsage` of its own (and its own default
`request_limit` 50), so the parent's `result.usage` and its `UsageLimits` see none of the child's requests or tokens
(subagent_usage reports 2,000 of the 4,000 input tokens served; subagent_token_budget completes at 6,600 tokens
against a 4,000 budget; subagent_runaway runs the child to loopbench's 50-request safety cap, one request before the
child's own limit would raise: probes/pydantic_ai/delegation.py shows 1 + 50 without the cap). The child runs' own
`result.usage`, summed over those that returned, is in `extra["usage_children"]` (a child run that raised takes its
usage with it).

The caller's cancel (scenario `cancel`; adapters/caller_cancel.py waits for the harness's word beside the run), the
documented first-party cancel (INPUT-AND-HISTORY.md "to cancel a whole run"; run.py `AgentRun.cancel`): the agent.run
idioms pass `cancellation_token=CancellationToken()` and call `token.cancel()`; `iter` calls `run.cancel()` on its
handle, `stream-events` `events.cancel()` on its. The in-flight model request is torn down and in-flight tool tasks
are cancelled and drained (the ledger sees the caller go), and the run raises `RunCancelled` -> ended="cancelled",
counters from `RunCancelled.usage` (the responses committed before the cancel). `RunCancelled.all_messages()` is kept
in the snapshot with a `cancelled.json` marker (usage, conversation id): the resume is `agent.run(message_history=...)`
with no new prompt (exceptions.py `RunCancelled`), and pydantic-ai closes a call that never returned with its
synthesized return ("The tool call was interrupted before a result was produced.", outcome 'interrupted'); the
`conversation` variant resumes with `conversation=Conversation(messages, usage, conversation_id)`, so its usage
carries over as at a pause. An external `Task.cancel()` would raise `CancelledError` instead: not the documented way.

Structured answers (scenario `output`), every variant: the docs' idiom (docs/output.md, "Output data" and "Output
validator functions"): `Agent(output_type=<pydantic model>)`, the model `output_model(scenario.output)`,
`pydantic.create_model(<output name>, __doc__=<description>, __config__=ConfigDict(extra="forbid"))`, every field
required (str, int, float, bool; an enum a Literal); with a tool that needs approval, `output_type=[<model>,
DeferredToolRequests]` (as `[str, DeferredToolRequests]` without an output). A plain model type is an 'auto' output
(_output.py:745-752) that the model class resolves to its profile's `default_structured_output_mode`, 'tool'
(models/__init__.py:1644-1660, profiles/__init__.py:545; AnthropicModel's override changes it only under extended
thinking, models/anthropic/__init__.py:1479-1494): the ToolOutput named `final_result` (_output.py:75, 1659), offered
beside the scenario's tools with tool_choice any (no text answer is allowed). Whether that tool is strict is the model
class's: AnthropicModel's schema transformer leaves strict unset unless the user sets it
(providers/anthropic.py:293-301; sent only when true, models/anthropic/__init__.py:3979-3980), so the scripted server
serves every object (output_constrained false); OpenAIChatModel's transformer finds the schema strict-compatible and
sets strict (models/__init__.py:3951-3972, profiles/openai.py:673-675, models/openai/_chat_model.py:1288-1289): the
`openai-chat` answers are constrained and the schema-breaking object never comes. The check is the docs' output
validator, `agent.output_validator(fn)` (the decorator), raising `ModelRetry(<message>)` when the pattern is not found
in its field (agent/__init__.py:2935-2970, the decorator's own example), run on final_result's validated answer
(tool_manager.py:1249-1250). A schema failure (a ValidationError of the call's args) and the validator's ModelRetry are
both answered with a retry prompt and both count against final_result's `max_retries`, which the Agent sets from its
output budget (agent/__init__.py:834-835): `retries` is left unset, so 1 ("Defaults to 1 for both"; on the tool path
"the default per-tool max_retries for each output tool": agent/__init__.py:487-493, 717-725). The answer after that
budget raises `UnexpectedModelBehavior("Exceeded maximum output retries (1)")` (tool_manager.py:519-533
`_check_max_retries`, wrapped by _tool_execution.py:630-658) -> failure="model" (`extra.output_retries_exhausted`),
ahead of the tool-retry mapping, whose exception has a ModelRetry in its chain too; every response had arrived, so the
counts are what the idiom reads (agent.run's exception carries none: null; iter's `run.usage`, stream-events' handle).
Each correction is one more model request in `RunUsage.requests`, under `request_limit` (a UsageLimitExceeded is the
step limit, as everywhere). Measured, every variant: output_check_rejects completes in 3 requests (2 answers);
output_invalid_then_valid in 3 on AnthropicModel and in 2 on `openai-chat` (strict: the broken object passed over);
output_never_valid fails after 3 requests (2 answers), before its request_limit=4 (probes/pydantic_ai/output_retries.py:
with `retries={'output': 5}` request_limit=4 stops it instead). final_output = `result.output.model_dump(mode="json")`;
final_text = the output call's arguments as the model sent them (JSON text, in the run's last response).

Signal mapping (no scenario knowledge): a `DeferredToolRequests` output -> paused; `RunCancelled` (not
`RunTimedOut`) -> cancelled; `UsageLimitExceeded` -> limit
(raised); `RunTimedOut` -> limit="deadline" (raised); kit's `ToolDenied` in the chain -> denied;
`UnexpectedModelBehavior` "Exceeded maximum output retries" (the structured answer's budget spent) -> failure="model";
`UnexpectedModelBehavior` raised from a `ModelRetry` (a tool's retries exhausted) or the tool's own exception (kit's
`ToolFailed`, raise-fatal) in the chain -> failure="tool"; `ModelAPIError`
(`ModelHTTPError`, e.g. `ModelServerError` for a 5xx, with the status code: models/anthropic/_errors.py `map_api_errors`
wraps the anthropic `APIStatusError` the client raises after its own retries) or an anthropic / openai `APIError` in the
chain -> failure="model"; anything else -> failure="other". Counters: `result.usage` (requests, input/output tokens,
cost when priced) on a return or a pause; `RunCancelled.usage` after a cancellation or timeout (null when the exception
carries no run state: no messages); null after any other exception of `agent.run` (the iter variant reads
`run.usage`, the stream-events variant the handle's `events.usage`). runtime_steps = `RunUsage.requests` ("model
responses committed to the run's history, one per step of the agent loop": what request_limit bounds; the provider
client's hidden retries are not in it), unit "request".
At a deadline the count is pydantic-ai's own, never the adapter's: `RunUsage.requests` increments when a response is
committed (after the whole streamed response arrived, before its tools run), never when a request is sent, so a
request the timeout cuts in flight is in no count (probes/pydantic_ai/fair.py `deadline`): deadline_slow_model reports
1 where the server saw 2; a run cut during its first request would report 0 responses where the server saw 1 request
(pydantic-ai's true count of responses, not a made-up one; the shared contract test reads it as one). Output
validation retries count against the run: each correction is a request in `RunUsage.requests` (Structured answers).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import warnings
import weakref
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters import guarded
from loopbench.adapters.caller_cancel import CallerCancel
from loopbench.adapters.kit import ToolDenied, in_chain, pydantic_output_model
from loopbench.adapters.kit import ToolFailed as RaisedToolError
from loopbench.guard.bindings.lacks import PYDANTIC_AI as PYDANTIC_AI_LACKS
from loopbench.harness.adapter import Adapter, Capabilities, Intent, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX, OPENAI_ID_PREFIX, neutral_id
from loopbench.harness.record import (
    LimitKind,
    LimitTranslation,
    NativeSignals,
    PendingCall,
    ReportedCounters,
    SegmentResult,
)
from loopbench.harness.scenario import Scenario
from loopbench.harness.scenario.model import MAIN_AGENT, OutputSpec

HISTORY_FILE = "messages.json"
CONVERSATION_FILE = "conversation.json"
PENDING_FILE = "pending.json"
CANCELLED_FILE = "cancelled.json"  # marks a snapshot as what a cancelled run kept (not an approval pause)
STEP_UNIT = "request"
NATIVE_LIMITS = {"max_model_calls": "request_limit", "max_total_tokens": "total_tokens_limit",
                 "max_cost_usd": "cost_limit"}


# one SDK client per event loop, SDK and server (its connections belong to the loop); a run gets a copy with its key
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], Any]] = weakref.WeakKeyDictionary()


def _client(sdk: str, base_url: str, api_key: str) -> Any:
    """`sdk`: "anthropic" (AsyncAnthropic, base_url without /v1) or "openai" (AsyncOpenAI, base_url with /v1)."""
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if (sdk, base_url) not in per_loop:
        if sdk == "anthropic":
            from anthropic import AsyncAnthropic

            per_loop[(sdk, base_url)] = AsyncAnthropic(base_url=base_url, api_key=api_key)
        else:
            from openai import AsyncOpenAI

            per_loop[(sdk, base_url)] = AsyncOpenAI(base_url=base_url, api_key=api_key)
    return per_loop[(sdk, base_url)].with_options(api_key=api_key)


def _usage(holder: Any) -> Any:
    """A run's `RunUsage`: a property since 2.0 (a method in 1.x)."""
    usage = holder.usage
    return usage() if inspect.ismethod(usage) else usage


def _args(part: Any) -> dict[str, Any]:
    try:
        return dict(part.args_as_dict())
    except Exception:  # unparsable arguments: what the model sent, as text
        return {"_raw": str(part.args)}


def _tool_choice(scenario: Scenario, messages: list[Any], prefix: str) -> str | None:
    """The scenario's `tool_choice` for the request about to send `messages`: the tool results after the last
    response, and whether the conversation holds any."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolReturnPart

    trailing: list[str] = []
    for m in reversed(messages):
        if isinstance(m, ModelResponse):
            break
        if isinstance(m, ModelRequest):
            trailing += [neutral_id(p.tool_call_id, prefix) or "" for p in m.parts if isinstance(p, ToolReturnPart)]
    any_results = any(isinstance(p, ToolReturnPart) for m in messages if isinstance(m, ModelRequest)
                      for p in m.parts)
    return scenario.tool_choice_for(trailing, any_results)


TOOL_CHOICE = ("a capability whose get_model_settings() returns a callable (RunContext -> ModelSettings("
               "tool_choice=...)) for the request about to be sent, from ctx.messages (the docs' per-step idiom)")


# the output tool pydantic-ai names a single ToolOutput (_output.py:75 DEFAULT_OUTPUT_TOOL_NAME)
OUTPUT_TOOL = "final_result"
STRUCTURED_OUTPUT = (
    "Agent(output_type=<pydantic model>) ([<model>, DeferredToolRequests] when a tool needs approval): a plain model "
    "type is an 'auto' output (_output.py:745-752) that the model class resolves to its profile's "
    "default_structured_output_mode 'tool' (models/__init__.py:1644-1660, profiles/__init__.py:545): the output tool "
    "final_result (_output.py:75, 1659) offered beside the agent's tools, tool_choice any; AnthropicModel sends it "
    "without strict (strict only when set: providers/anthropic.py:293-301, models/anthropic/__init__.py:3979-3980); "
    "its args validated into the model, a ValidationError answered with a retry prompt; result.output. Output "
    "retries: the Agent's default retries (1: agent/__init__.py:487-493, 717-725) as final_result's max_retries "
    "(agent/__init__.py:834-835)")
STRUCTURED_OUTPUT_OPENAI = (
    "Agent(output_type=<pydantic model>) ([<model>, DeferredToolRequests] when a tool needs approval): the output "
    "tool final_result (as the default's); OpenAIChatModel's profile transformer finds the schema strict-compatible "
    "and sends the tool with strict: true (models/__init__.py:3951-3972, profiles/openai.py:673-675, "
    "models/openai/_chat_model.py:1288-1289); its args validated into the model, a ValidationError answered with a "
    "retry prompt; result.output. Output retries: the Agent's default retries (1: agent/__init__.py:487-493) as "
    "final_result's max_retries (agent/__init__.py:834-835)")
OUTPUT_CHECK = ("@agent.output_validator raising ModelRetry(message) when the pattern is not found (the decorator's "
                "own example, agent/__init__.py:2935-2970), run on the validated answer of final_result "
                "(tool_manager.py:1249-1250): the model gets a retry prompt with the message; it shares "
                "final_result's retry budget (1): the second rejected answer raises UnexpectedModelBehavior("
                "'Exceeded maximum output retries (1)') (tool_manager.py:519-533, _tool_execution.py:653-658)")


def output_model(spec: OutputSpec) -> type[Any]:
    """The scenario's structured answer as the pydantic model pydantic-ai's docs hand `Agent(output_type=...)`
    (docs/output.md, "Output data"), without the check: that is the agent's `@agent.output_validator`
    (`_check_validator`; adapters/kit.py `pydantic_output_model`)."""
    return pydantic_output_model(spec, with_check=False)


def _check_validator(spec: OutputSpec) -> Any:
    """The output's check as the docs' output validator: a function of the output that raises
    `ModelRetry(<message>)` when the pattern is not found in its field (agent/__init__.py `output_validator`'s
    example); any other output (a DeferredToolRequests, at a pause) passes as it is."""
    import re

    from pydantic import BaseModel
    from pydantic_ai import ModelRetry

    check = spec.check
    assert check is not None

    def holds(output: Any) -> Any:
        if isinstance(output, BaseModel) and re.search(check.pattern, str(getattr(output, check.field))) is None:
            raise ModelRetry(check.message)
        return output

    return holds


def _output_exhausted(exc: BaseException) -> bool:
    """pydantic-ai's own words for an answer whose output retries are spent: 'Exceeded maximum output retries (N)'
    (_tool_execution.py:637, 657; _agent_graph.py:866), 'Exceeded maximum retries (N) for output validation' in
    earlier releases."""
    text = str(exc)
    return text.startswith("Exceeded maximum output retries") or "for output validation" in text


TOOL_ERROR_RETRY = ("the tool raises ModelRetry(text), for a recoverable error and for a timeout (tools-advanced.md: "
                    "a timed-out tool 'is treated as a retryable failure'): the model gets a retry prompt; the tool's "
                    "retry budget (default 1) counts it, and its second consecutive failure ends the run "
                    "(UnexpectedModelBehavior)")


class PydanticAIAdapter(Adapter):
    id = "pydantic-ai"
    distribution = "pydantic-ai-slim"
    display_name = "pydantic-ai"
    sdk_modules = ("pydantic_ai", "anthropic", "openai")
    claim_prefix = "PA"
    model_class = "pydantic_ai.models.anthropic.AnthropicModel"
    model_provider = "anthropic"
    packages = ("anthropic", "openai", "genai-prices")
    extra = "pydantic-ai"
    companions = ("anthropic", "openai")  # the version matrix holds the provider SDKs to the release's day
    plain_script = "pydantic_ai_agent.py"  # not pydantic_ai.py: it would shadow the package
    # tried: 2.58.0 runs the whole suite (the same cells as 2.68.0); 2.57.0 has no run timeout (RunTimedOut), 2.45.0
    # neither that nor pydantic_ai.conversation (2.55); the 1.x line has no ToolFailed (2.16)
    min_version = (2, 58)
    about = ("AnthropicModel + AnthropicProvider (the scenario's Claude model); agent.run with UsageLimits from the "
             "scenario; approvals as deferred tools resumed from the message history; a tool's recoverable error or "
             "timeout raises ModelRetry, a fatal one ToolFailed (the docs' rule of thumb)")
    id_prefix: ClassVar[str] = ANTHROPIC_ID_PREFIX  # the protocol's tool-call ids: <prefix><scripted id>
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls", "max_total_tokens", "max_cost_usd", "deadline_s"}),
        step_unit="model request (RunUsage.requests: one response committed per step of the agent loop)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="stop: the tool raises an ordinary exception (it escapes the run); continue: requires_approval + a "
             "HandleDeferredToolCalls handler answering ToolDenied(message)",
        notes=("cost_limit is enforced only when genai-prices has a price for the model under the provider (the "
               "openai-chat variant: claude-sonnet-4-5 under 'openai' has none)",
               "RunUsage.requests counts responses committed, not requests sent: a request the run timeout cuts in "
               "flight is in no count (deadline_slow_model: 1 reported, 2 seen by the server)",
               "a tool's fatal error is ToolFailed (the model sees it, the loop goes on); the raise-fatal variant "
               "raises it as an ordinary exception instead, which ends the run"),
    )
    mechanism_table: ClassVar[dict[Intent, str]] = {
        "cancel": "agent.run(cancellation_token=CancellationToken()) and token.cancel() (_cancel.py "
                  "CancellationToken; run.py AgentRun.cancel: in-flight model request torn down, in-flight tool "
                  "tasks cancelled and drained) -> RunCancelled(messages, usage) (exceptions.py)",
        "resume_after_cancel": "agent.run(message_history=RunCancelled.all_messages()) with no new prompt "
                               "(exceptions.py RunCancelled: 'pass it as message_history to a new run (with a new "
                               "user prompt or not)'; calls that never returned get synthesized 'interrupted' "
                               "returns); a fresh RunUsage",
        "delegate": "agent delegation (multi-agent-applications.md): the parent's tool named after the child "
                    "(task: str) runs `await child.run(task, usage=ctx.usage)` on a child Agent(model, "
                    "instructions=..., tools=...) and returns result.output; the child's usage is added to the "
                    "parent's RunUsage, no usage_limits passed to the child",
        "deny_stop": "the tool records the check and raises an ordinary exception, which propagates out of the "
                     "agent run (tools-advanced.md: 'Any other exception propagates out of the agent run')",
        "deny_continue": "Tool(requires_approval=True) + capabilities=[HandleDeferredToolCalls(handler)] answering "
                         "ToolDenied(message): the tool never runs, the model gets the message, the loop goes on",
        "approval_pause": "Tool(requires_approval=True), output_type=[str, DeferredToolRequests]; the message history "
                          "(ModelMessagesTypeAdapter) saved; resume agent.run(message_history=..., "
                          "deferred_tool_results=DeferredToolResults(approvals={id: True}))",
        "reject": "DeferredToolResults(approvals={id: False}) (pydantic-ai's default ToolDenied: 'The tool call was "
                  "denied.' to the model; the loop goes on)",
        "tool_choice_first": TOOL_CHOICE,
        "tool_choice_later": TOOL_CHOICE,
        "tool_error_recoverable": TOOL_ERROR_RETRY,
        "tool_error_fatal": "the tool raises ToolFailed(text) (tools-advanced.md: 'when the call is done and the "
                            "result is a failure'): the model gets a failed tool result and the loop goes on; no "
                            "retry budget used",
        "structured_output": STRUCTURED_OUTPUT,
        "output_check": OUTPUT_CHECK,
    }

    @classmethod
    def warm(cls) -> None:
        import pydantic_ai  # noqa: F401
        from pydantic_ai.models.anthropic import AnthropicModel  # noqa: F401
        from pydantic_ai.models.openai import OpenAIChatModel  # noqa: F401

    def _cid(self, raw: str | None) -> str | None:
        return neutral_id(raw, self.id_prefix)

    # ---------------------------------------------------------------- building the agent
    def _tools(self, scenario: Scenario, ledger: LedgerClient, names: list[str]) -> list[Any]:
        """The tools `names` (one agent's: `Scenario.tools_of`), each executing through the ledger."""
        from pydantic_ai import Tool

        deny_stops = scenario.policy.deny == "stop"

        def make(name: str) -> Any:
            spec = scenario.tools[name]

            async def invoke(ctx: Any, **args: Any) -> str:
                cid = self._cid(ctx.tool_call_id)
                if spec.approval == "deny" and deny_stops:  # continue: the handler answers, this never runs
                    await ledger.authorize(name, args, cid, "denied by policy")
                    raise ToolDenied(f"{name} is denied by policy")
                out = await ledger.call(name, args, cid)
                if out.ok:
                    return out.text
                if out.error_kind == "fatal":
                    raise self._fatal(out.text)
                raise self._retry(out)  # recoverable or timed out: try again (the tool's retry budget)

            tool = Tool.from_schema(invoke, name=name, description=spec.description, json_schema=spec.parameters,
                                    takes_ctx=True)
            if spec.approval == "required" or (spec.approval == "deny" and not deny_stops):
                tool.requires_approval = True
            return tool

        return [make(n) for n in names]

    def _retry(self, out: Any) -> Exception:
        """What the tool raises for a recoverable error or a timeout: `ModelRetry` (the model tries again)."""
        from pydantic_ai import ModelRetry

        return ModelRetry(out.text)

    def _fatal(self, text: str) -> Exception:
        """What the tool raises for an error its service answered as fatal: pydantic-ai's `ToolFailed` (the call is
        done and failed: the model sees it, no retry budget used)."""
        from pydantic_ai import ToolFailed

        return ToolFailed(text)

    def _capabilities(self, scenario: Scenario, ledger: LedgerClient, settings: dict[str, Any], names: list[str],
                      main: bool = True) -> list[Any]:
        """The capabilities of the agent given `names`: the deny handler for its denied tools; the main agent's
        `tool_choice` (a child's turn asks none)."""
        caps: list[Any] = []
        denied = {n for n in names if scenario.tools[n].approval == "deny"}
        if denied and scenario.policy.deny == "continue":
            from pydantic_ai import ToolDenied as NativeDenied
            from pydantic_ai.capabilities import HandleDeferredToolCalls

            async def deny_inline(_ctx: Any, requests: Any) -> Any:
                answers: dict[str, Any] = {}
                for call in requests.approvals:
                    if call.tool_name in denied:
                        await ledger.authorize(call.tool_name, _args(call), self._cid(call.tool_call_id),
                                               "denied by policy")
                        answers[call.tool_call_id] = NativeDenied(f"{call.tool_name} is denied by policy")
                # the other approvals (a tool that needs a human) are left to bubble up as the run's output
                return requests.build_results(approvals=answers) if answers else None

            caps.append(HandleDeferredToolCalls(handler=deny_inline))
            settings["deny"] = {"tools": sorted(denied), "intent": "continue",
                                "how": "requires_approval + HandleDeferredToolCalls -> ToolDenied(message)"}
        elif denied:
            settings["deny"] = {"tools": sorted(denied), "intent": "stop", "how": "the tool raises (escapes the run)"}
        if main and scenario.tool_choice_rules():
            from pydantic_ai.capabilities import AbstractCapability

            prefix = self.id_prefix

            class ScenarioToolChoice(AbstractCapability[Any]):
                def get_model_settings(self) -> Any:
                    def per_step(ctx: Any) -> Any:
                        choice = _tool_choice(scenario, list(ctx.messages), prefix)
                        if choice is None:
                            return {}
                        native = choice if choice in ("auto", "none", "required") else [choice]
                        return {"tool_choice": native}

                    return per_step

            caps.append(ScenarioToolChoice())
            settings["tool_choice"] = {r.after_call or "opening call": r.choice for r in scenario.tool_choice_rules()}
        return caps

    def _model(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """(pydantic-ai model, its settings record): the docs' model class for a Claude model."""
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        provider = AnthropicProvider(anthropic_client=_client("anthropic", ctx.base_url, ctx.api_key))
        # the record's model_class and model are the base's (Adapter.segment): the class facts and model_id
        return AnthropicModel(self.model_id(scenario), provider=provider), {
            "provider": "AnthropicProvider(anthropic_client=AsyncAnthropic(base_url=...))"}

    def _agent(self, scenario: Scenario, ctx: RunContext, tree: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(main agent, settings record). `tree`: the segment's `extra`, where a delegation records what the
        framework exposes of its child's run."""
        from pydantic_ai import Agent

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        model, settings = self._model(scenario, ctx)
        kwargs = self._agent_kwargs(scenario, ledger, settings, MAIN_AGENT)
        tools = self._tools(scenario, ledger, scenario.tools_of(MAIN_AGENT))
        if scenario.agents:
            delegate: dict[str, Any] = {}
            for child_id in scenario.children_of(MAIN_AGENT):
                spec = scenario.agents[child_id]
                record: dict[str, Any] = {"tool": child_id, "instructions": "the child's own (AgentSpec.instructions)",
                                          "model": "the main agent's model object",
                                          "run": self.child_run, **self.child_limits}
                child = Agent(model, name=child_id, instructions=spec.instructions,
                              tools=self._tools(scenario, ledger, scenario.tools_of(child_id)),
                              **self._agent_kwargs(scenario, ledger, record, child_id))
                tools.append(self._delegation(child_id, spec.description, child, tree))
                delegate[child_id] = record
            settings["delegate"] = delegate
        if scenario.instructions is not None:
            kwargs["instructions"] = scenario.instructions
        agent = Agent(model, tools=tools, **kwargs)
        if scenario.output is not None:  # the check as the docs' output validator; every retry default left as is
            if scenario.output.check is not None:
                agent.output_validator(_check_validator(scenario.output))
            settings["output"] = self._output_settings(scenario.output, agent)
        return agent, settings

    @staticmethod
    def _output_settings(spec: OutputSpec, agent: Any) -> dict[str, Any]:
        """What the segment records of the structured answer's settings: pydantic-ai's defaults but for the type
        and the validator. `output_retries` is the budget the agent resolved (agent/__init__.py:823-826, private:
        null where a release keeps it elsewhere)."""
        retries = getattr(agent, "_max_output_retries", None)
        return {"output_type": f"{spec.name} (pydantic model, extra='forbid')",
                "mode": f"auto, resolved to the profile's default 'tool': the output tool {OUTPUT_TOOL}",
                "check": (f"@agent.output_validator on {spec.check.field} raising ModelRetry(message)"
                          if spec.check is not None else None),
                "retries": "not set: the Agent's default (1 for tools and output, agent/__init__.py:487-493)",
                "output_retries": retries if isinstance(retries, int) else None,
                "on_exhausted": "UnexpectedModelBehavior('Exceeded maximum output retries (N)') raised "
                                "(_tool_execution.py:653-658)"}

    def _agent_kwargs(self, scenario: Scenario, ledger: LedgerClient, settings: dict[str, Any], who: str
                      ) -> dict[str, Any]:
        """The Agent arguments of one agent's tools: the deferred output an approval needs, the capabilities."""
        from pydantic_ai import DeferredToolRequests

        names = scenario.tools_of(who)
        kwargs: dict[str, Any] = {}
        output = scenario.output if who == MAIN_AGENT else None  # a structured answer is the main agent's
        answer: Any = output_model(output) if output is not None else str
        shown = output.name if output is not None else "str"
        if any(scenario.tools[n].approval == "required" for n in names):
            kwargs["output_type"] = [answer, DeferredToolRequests]
            settings["output_type"] = f"[{shown}, DeferredToolRequests]"
        elif output is not None:
            kwargs["output_type"] = answer
            settings["output_type"] = shown
        caps = self._capabilities(scenario, ledger, settings, names, main=who == MAIN_AGENT)
        if caps:
            kwargs["capabilities"] = caps
        return kwargs

    # what the child's run gets: the docs' delegation passes `usage=ctx.usage` and nothing else
    child_run: ClassVar[str] = "await child.run(task, usage=ctx.usage); the tool returns result.output"
    child_limits: ClassVar[dict[str, str]] = {
        "usage": "the parent's RunUsage (ctx.usage): the child's requests and tokens are added to the parent's",
        "usage_limits": "none passed: the child's run checks UsageLimits() defaults (request_limit 50) against the "
                        "shared RunUsage; the parent's UsageLimits are checked only at the parent's own steps",
        "timeout": "none passed: a run started inside a run inherits the parent's deadline (inherited_run_deadline)",
    }

    async def _run_child(self, child: Any, task: str, ctx: Any) -> Any:
        """The docs' agent delegation (multi-agent-applications.md): the child's usage counts toward the parent's."""
        return await child.run(task, usage=ctx.usage)

    def _delegation(self, child_id: str, description: str, child: Any, tree: dict[str, Any]) -> Any:
        """The parent's tool named after the child, with one string parameter (the docs' `async def
        joke_factory(ctx: RunContext[None], count: int)`, here `task: str`): it runs the child, returns its output."""
        from pydantic_ai import Tool

        async def delegate(ctx: Any, task: str) -> Any:
            result = await self._run_child(child, task, ctx)
            self._child_done(child_id, result, tree)
            return result.output

        schema = {"type": "object", "properties": {"task": {"type": "string", "description": "The task to hand over."}},
                  "required": ["task"], "additionalProperties": False}
        return Tool.from_schema(delegate, name=child_id, description=description, json_schema=schema, takes_ctx=True)

    def _child_done(self, child_id: str, result: Any, tree: dict[str, Any]) -> None:
        """After a child's run returned: its output's kind (a DeferredToolRequests output is a pause the parent
        never sees as one)."""
        from pydantic_ai import DeferredToolRequests

        if isinstance(result.output, DeferredToolRequests):
            tree.setdefault("child_deferred_outputs", []).append(
                {"agent": child_id, "approvals": [p.tool_name for p in result.output.approvals],
                 "calls": [p.tool_name for p in result.output.calls]})

    def _limits(self, scenario: Scenario) -> tuple[dict[str, Any], dict[str, LimitTranslation]]:
        """(run kwargs, limits record, unsupported)."""
        from pydantic_ai.usage import UsageLimits

        default = UsageLimits().request_limit
        lim = scenario.limits
        native: dict[str, Any] = {}
        limits: dict[str, LimitTranslation] = {}
        if lim.max_model_calls is not None:
            native["request_limit"] = lim.max_model_calls
            limits["max_model_calls"] = LimitTranslation(
                neutral=lim.max_model_calls, native=f"request_limit={lim.max_model_calls}",
                note="checked at the start of each step, before its request (usage.requests >= request_limit)")
        else:
            limits["max_model_calls"] = LimitTranslation(neutral=None, native=f"request_limit default ({default})")
        if lim.max_total_tokens is not None:
            native["total_tokens_limit"] = lim.max_total_tokens
            limits["max_total_tokens"] = LimitTranslation(
                neutral=lim.max_total_tokens, native=f"total_tokens_limit={lim.max_total_tokens}",
                note="checked after each response (and before each request on the total so far)")
        if lim.max_cost_usd is not None:
            native["cost_limit"] = Decimal(str(lim.max_cost_usd))
            limits["max_cost_usd"] = LimitTranslation(
                neutral=lim.max_cost_usd, native=f"cost_limit={lim.max_cost_usd}",
                note="RunUsage.cost (genai-prices' price of the model under the provider's name), checked after each "
                     "response and before each request; no price: not enforced (CostNotFoundWarning)")
        kwargs: dict[str, Any] = {"usage_limits": UsageLimits(**native)}
        if lim.deadline_s is not None:
            kwargs["timeout"] = lim.deadline_s
            limits["deadline_s"] = LimitTranslation(neutral=lim.deadline_s, native=f"timeout={lim.deadline_s}",
                                                    note="the run is cancelled and raises RunTimedOut")
        return kwargs, limits  # the limits it cannot express: Adapter.declared()

    # ---------------------------------------------------------------- running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        tree: dict[str, Any] = {}
        agent, settings = self._agent(scenario, ctx, tree)
        return await self._drive(scenario, ctx, agent, settings, {"user_prompt": scenario.prompt}, tree)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        tree: dict[str, Any] = {"resumed_from": snapshot.name}
        agent, settings = self._agent(scenario, ctx, tree)
        if (snapshot / CANCELLED_FILE).exists():  # what a cancelled run kept (not an approval pause)
            start = self._resume_after_cancel(snapshot)
        else:
            pending = json.loads((snapshot / PENDING_FILE).read_text())
            start = self._resume_input(snapshot, {p["raw_id"]: decisions.get(p["call_id"] or "") for p in pending})
        return await self._drive(scenario, ctx, agent, settings, start, tree)

    def _save_cancelled(self, exc: Any, snapshot: Path) -> None:
        """What a cancelled run kept: `RunCancelled.all_messages()` ("a complete snapshot that can be passed to a
        new run as `message_history` to resume": run.py `AgentRun.cancel`), and its usage and conversation id (the
        conversation variant carries them)."""
        from pydantic import TypeAdapter
        from pydantic_ai.usage import RunUsage

        (snapshot / HISTORY_FILE).write_bytes(exc.all_messages_json())
        (snapshot / CANCELLED_FILE).write_text(json.dumps({
            "exception_type": type(exc).__name__, "conversation_id": exc.conversation_id,
            "usage": TypeAdapter(RunUsage).dump_python(exc.usage, mode="json")}))

    def _resume_after_cancel(self, snapshot: Path) -> dict[str, Any]:
        """The docs' resume after a cancel (exceptions.py `RunCancelled`: "pass it as `message_history` to a new
        run (with a new user prompt or not)"): the kept history and no new prompt; calls that never returned are
        closed with synthesized `outcome='interrupted'` returns before the history is sent."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        return {"message_history": ModelMessagesTypeAdapter.validate_json((snapshot / HISTORY_FILE).read_bytes())}

    def _arm_cancel(self, kwargs: dict[str, Any], cancel: CallerCancel) -> None:
        """`cancellation_token=CancellationToken()`, fired with `token.cancel()` when the caller cancels
        (_cancel.py `CancellationToken`; agent/__init__.py `run(cancellation_token=)`)."""
        from pydantic_ai import CancellationToken

        token = CancellationToken()
        kwargs["cancellation_token"] = token
        cancel.arm(token.cancel)

    def _resume_input(self, snapshot: Path, decisions: dict[str, str | None]) -> dict[str, Any]:
        """The run arguments that continue the pause: the saved history and the human's decisions."""
        from pydantic_ai import DeferredToolResults
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        history = ModelMessagesTypeAdapter.validate_json((snapshot / HISTORY_FILE).read_bytes())
        approvals = {raw: d == "approve" for raw, d in decisions.items() if d in ("approve", "reject")}
        return {"message_history": history, "deferred_tool_results": DeferredToolResults(approvals=approvals)}

    def _save_pause(self, result: Any, snapshot: Path) -> None:
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        (snapshot / HISTORY_FILE).write_bytes(ModelMessagesTypeAdapter.dump_json(result.all_messages()))

    cumulative: ClassVar[bool] = False  # a resume starts a fresh RunUsage (message_history carries no usage)

    async def _execute(self, agent: Any, start: dict[str, Any], kwargs: dict[str, Any], box: list[Any],
                       cancel: CallerCancel) -> tuple[Any, Any]:
        """(result, usage after the run) — `agent.run`; raises what the run raised (`box` gets the run's usage
        where the idiom can still read it after a raise; `cancel` is armed by `_arm_cancel`, or here by an idiom
        whose handle cancels the run)."""
        result = await agent.run(**start, **kwargs)
        return result, _usage(result)

    async def _drive(self, scenario: Scenario, ctx: RunContext, agent: Any, settings: dict[str, Any],
                     start: dict[str, Any], extra: dict[str, Any]) -> SegmentResult:
        from pydantic_ai import DeferredToolRequests

        kwargs, limits = self._limits(scenario)
        settings = {**settings, "usage_limits": {k: (float(v) if isinstance(v, Decimal) else v)
                                                 for k, v in vars(kwargs["usage_limits"]).items()
                                                 if v is not None and not isinstance(v, bool)}}
        if "timeout" in kwargs:
            settings["timeout"] = kwargs["timeout"]
        common: dict[str, Any] = dict(settings=settings, limits=limits)
        usage_box: list[Any] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                async with CallerCancel(ctx, scenario.cancel is not None) as cancel:
                    if scenario.cancel is not None:
                        self._arm_cancel(kwargs, cancel)
                    result, usage = await self._execute(agent, start, kwargs, usage_box, cancel)
            except Exception as exc:  # the framework ended by raising: map the signal
                notes = _warning_notes(caught)
                usage = usage_box[0] if usage_box else _usage_carried(exc)
                signals, counters = self._raised(exc, extra), self._counters(usage)
                if signals.ended == "cancelled" and _usage_carried(exc) is not None:  # keep what the run kept
                    ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
                    self._save_cancelled(exc, ctx.snapshot_dir)
                    return SegmentResult(signals=signals, counters=counters, notes=notes,
                                         snapshot=str(ctx.snapshot_dir), **common)
                if signals.failure == "model" and not signals.extra.get("output_retries_exhausted"):
                    # raised in a model call: the failed request and the client's
                    # retries are in no RunUsage (it counts committed responses): unknown, not the count so far
                    counters = counters.model_copy(update={"model_requests_reported": None, "runtime_steps": None,
                                                           "input_tokens_reported": None,
                                                           "output_tokens_reported": None, "cost_usd_reported": None})
                return SegmentResult(signals=signals, counters=counters, notes=notes, **common)
        notes = _warning_notes(caught)
        counters = self._counters(usage)
        output = result.output
        if isinstance(output, DeferredToolRequests):
            pending = [PendingCall(call_id=self._cid(p.tool_call_id), tool=p.tool_name, args=_args(p))
                       for p in output.approvals]
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            self._save_pause(result, ctx.snapshot_dir)
            saved = [{**p.model_dump(), "raw_id": raw.tool_call_id}  # the id the resume answers by
                     for p, raw in zip(pending, output.approvals, strict=True)]
            (ctx.snapshot_dir / PENDING_FILE).write_text(json.dumps(saved))
            signals = NativeSignals(ended="paused", pending=pending,
                                    extra={**extra, "deferred_approvals": len(output.approvals),
                                           "deferred_calls": len(output.calls)})
            return SegmentResult(signals=signals, counters=counters, snapshot=str(ctx.snapshot_dir),
                                 notes=notes, **common)
        structured = _structured(output)
        final = (output if isinstance(output, str) else _answer_text(result) if structured is not None
                 else json.dumps(output, default=str))
        finish = getattr(result.response, "finish_reason", None)
        signals = NativeSignals(ended="returned", final_text=final, final_output=structured, finish_reason=finish,
                                extra={**extra, "tool_calls_succeeded": getattr(usage, "tool_calls", None)})
        return SegmentResult(signals=signals, counters=counters, notes=notes, **common)

    # ---------------------------------------------------------------- mapping
    @staticmethod
    def _raised(exc: Exception, extra: dict[str, Any]) -> NativeSignals:
        from pydantic_ai.exceptions import (
            ModelAPIError,
            ModelRetry,
            RunCancelled,
            RunTimedOut,
            UnexpectedModelBehavior,
            UsageLimitExceeded,
        )

        base: dict[str, Any] = dict(ended="raised", exception_type=type(exc).__name__,
                                    exception_message=str(exc)[:500], extra=dict(extra))
        if isinstance(exc, UsageLimitExceeded):
            # which limit: the framework names it in its message (`request_limit`, `total_tokens_limit`, ...)
            kind: LimitKind = "steps" if "request_limit" in str(exc) or "tool_calls_limit" in str(exc) else "budget"
            return NativeSignals(**base, limit=kind, limit_signal="raised")
        if isinstance(exc, RunTimedOut):
            return NativeSignals(**base, limit="deadline", limit_signal="raised")
        if isinstance(exc, RunCancelled):  # the application's own cancel (only the caller's cancel fires one)
            return NativeSignals(**{**base, "ended": "cancelled"})
        if in_chain(exc, ToolDenied):
            return NativeSignals(**base, denied=True)
        if in_chain(exc, RaisedToolError):  # the tool's own error, raised out of the run (raise-fatal)
            return NativeSignals(**base, failure="tool")
        if isinstance(exc, UnexpectedModelBehavior) and _output_exhausted(exc):
            # the model's answers kept failing validation (schema or output validator) past the output retries:
            # the model failed the task's answer; every response was received, so the counts stand
            base["extra"]["output_retries_exhausted"] = True
            return NativeSignals(**base, failure="model")
        if isinstance(exc, UnexpectedModelBehavior) and in_chain(exc, ModelRetry):
            base["extra"]["tool_retries_exhausted"] = True
            return NativeSignals(**base, failure="tool")
        if in_chain(exc, (ModelAPIError, *_sdk_errors())):
            status = next((getattr(e, "status_code", None) for e in _chain(exc) if getattr(e, "status_code", None)),
                          None)
            if status is not None:
                base["extra"]["status_code"] = status
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")

    def _counters(self, usage: Any) -> ReportedCounters:
        if usage is None:  # the exception carries no usage: unknown, not zero
            return ReportedCounters(runtime_step_unit=STEP_UNIT, cumulative=self.cumulative)
        cost = getattr(usage, "cost", None)
        return ReportedCounters(
            model_requests_reported=usage.requests, input_tokens_reported=usage.input_tokens,
            output_tokens_reported=usage.output_tokens, runtime_steps=usage.requests, runtime_step_unit=STEP_UNIT,
            cost_usd_reported=float(cost) if cost is not None else None, cumulative=self.cumulative,
        )


def _structured(output: Any) -> dict[str, Any] | None:
    """The validated structured answer as JSON (`model_dump(mode="json")`), None when the run returned text."""
    from pydantic import BaseModel

    return output.model_dump(mode="json") if isinstance(output, BaseModel) else None


def _answer_text(result: Any) -> str | None:
    """The structured answer as the model sent it: the arguments (JSON text) of the output tool's call in the run's
    last response, None where that response holds none."""
    from pydantic_ai.messages import ToolCallPart

    calls = [p for p in getattr(result.response, "parts", ()) if isinstance(p, ToolCallPart)
             and p.tool_name == OUTPUT_TOOL]
    return calls[-1].args_as_json_str() if calls else None


def _usage_carried(exc: Exception) -> Any:
    """The `RunUsage` an exception of `agent.run` carries, or None where it carries none. Only `RunCancelled` (and
    its `RunTimedOut`) carries one: the run's own usage at the cut (`run_cancelled_snapshot`), which counts the
    responses committed so far, not a request in flight (probes/pydantic_ai/fair.py `deadline`). One built without
    the run's state (no messages: pydantic-ai then fills in an empty `RunUsage()`) reports nothing: None, not 0."""
    from pydantic_ai.exceptions import RunCancelled

    if not isinstance(exc, RunCancelled) or not exc.all_messages():
        return None
    return exc.usage


def _sdk_errors() -> tuple[type[BaseException], ...]:
    """The provider SDKs' own API errors (pydantic-ai wraps them in `ModelAPIError`; these catch one it did not)."""
    errors: list[type[BaseException]] = []
    try:
        from anthropic import APIError as AnthropicAPIError

        errors.append(AnthropicAPIError)
    except ImportError:
        pass
    try:
        from openai import APIError as OpenAIAPIError

        errors.append(OpenAIAPIError)
    except ImportError:
        pass
    return tuple(errors)


def _chain(exc: BaseException) -> list[BaseException]:
    from loopbench.adapters.kit import exception_chain

    return exception_chain(exc)


def _warning_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    """The framework's own warnings during the segment (e.g. a cost_limit it cannot enforce), once each."""
    seen: list[str] = []
    for w in caught:
        if w.category.__module__.startswith("pydantic_ai"):
            text = f"{w.category.__name__}: {str(w.message)[:300]}"
            if text not in seen:
                seen.append(text)
    return seen


class PydanticAIIter(PydanticAIAdapter):
    variant = "iter"
    about = "async with agent.iter(...) as run: async for node in run (the graph-node idiom); same translation"
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "cancel": "run.cancel() on the agent.iter() handle (run.py AgentRun.cancel: in-flight model request torn "
                  "down, in-flight tool tasks cancelled and drained) -> RunCancelled(messages, usage) at the "
                  "context's exit",
    }

    def _arm_cancel(self, kwargs: dict[str, Any], cancel: CallerCancel) -> None:
        """The handle cancels the run (armed in `_execute`): no token."""

    async def _execute(self, agent: Any, start: dict[str, Any], kwargs: dict[str, Any], box: list[Any],
                       cancel: CallerCancel) -> tuple[Any, Any]:
        async with agent.iter(**start, **kwargs) as run:
            box.append(_usage(run))  # the run's live RunUsage: still readable after a raise
            cancel.arm(run.cancel)  # the iter handle's own cancel (run.py `AgentRun.cancel`)
            async for _node in run:
                pass
        assert run.result is not None
        return run.result, _usage(run)


class PydanticAIConversation(PydanticAIAdapter):
    variant = "conversation"
    about = ("agent.run; the pause is the run's Conversation (ConversationTypeAdapter), resumed with "
             "conversation=..., so the usage and its limits carry over")
    cumulative = True
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "approval_pause": "Tool(requires_approval=True), output_type=[str, DeferredToolRequests]; result.conversation "
                          "(ConversationTypeAdapter) saved; resume agent.run(conversation=..., deferred_tool_results="
                          "conversation.deferred_tool_requests.build_results(approvals=...))",
        "resume_after_cancel": "agent.run(conversation=Conversation(messages=RunCancelled.all_messages(), "
                               "usage=RunCancelled.usage, conversation_id=RunCancelled.conversation_id)) with no new "
                               "prompt: the cancelled run's usage carries over (conversation.py Conversation: "
                               "message_history alone drops the running usage)",
    }

    def _resume_after_cancel(self, snapshot: Path) -> dict[str, Any]:
        """The conversation whole: the kept messages with the cancelled run's usage and conversation id, so the
        usage and its limits count the whole task as this variant's pause does."""
        from pydantic import TypeAdapter
        from pydantic_ai.conversation import Conversation
        from pydantic_ai.messages import ModelMessagesTypeAdapter
        from pydantic_ai.usage import RunUsage

        kept = json.loads((snapshot / CANCELLED_FILE).read_text())
        messages = ModelMessagesTypeAdapter.validate_json((snapshot / HISTORY_FILE).read_bytes())
        conversation = Conversation(messages=messages, usage=TypeAdapter(RunUsage).validate_python(kept["usage"]))
        if kept["conversation_id"]:
            conversation.conversation_id = kept["conversation_id"]
        return {"conversation": conversation}

    def _save_pause(self, result: Any, snapshot: Path) -> None:
        from pydantic_ai.conversation import ConversationTypeAdapter

        (snapshot / CONVERSATION_FILE).write_bytes(ConversationTypeAdapter.dump_json(result.conversation))

    def _resume_input(self, snapshot: Path, decisions: dict[str, str | None]) -> dict[str, Any]:
        from pydantic_ai.conversation import ConversationTypeAdapter

        conversation = ConversationTypeAdapter.validate_json((snapshot / CONVERSATION_FILE).read_bytes())
        approvals = {raw: d == "approve" for raw, d in decisions.items() if d in ("approve", "reject")}
        requests = conversation.deferred_tool_requests
        results = requests.build_results(approvals=approvals) if requests is not None else None
        return {"conversation": conversation, "deferred_tool_results": results}


class PydanticAIOpenAIChat(PydanticAIAdapter):
    variant = "openai-chat"
    model_class = "pydantic_ai.models.openai.OpenAIChatModel"
    # deliberately the scenario's Claude id through the OpenAI provider (an OpenAI-compatible endpoint serving
    # Claude): the model it sends is the anthropic provider's, so genai-prices has no price for it under 'openai'
    model_provider = "anthropic"
    about = ("OpenAIChatModel + OpenAIProvider: the scenario's Claude model through an OpenAI-compatible endpoint; a "
             "model genai-prices cannot price under that provider gets no cost limit")
    id_prefix: ClassVar[str] = OPENAI_ID_PREFIX
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "structured_output": STRUCTURED_OUTPUT_OPENAI,
    }

    def _model(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(openai_client=_client("openai", f"{ctx.base_url}/v1", ctx.api_key))
        return OpenAIChatModel(self.model_id(scenario), provider=provider), {
            "provider": "OpenAIProvider(openai_client=AsyncOpenAI(base_url=...))"}


class PydanticAIRaiseFatal(PydanticAIAdapter):
    variant = "raise-fatal"
    about = ("agent.run as the default, but a tool's fatal error is raised as an ordinary exception, which propagates "
             "out of the run and ends it (the docs' third path); recoverable errors and timeouts stay ModelRetry")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "tool_error_fatal": "the tool raises an ordinary exception (loopbench's ToolFailed, not pydantic-ai's), which "
                            "propagates out of the agent run and ends it (tools-advanced.md: 'Any other exception "
                            "propagates out of the agent run and is not sent back to the model')",
    }

    def _fatal(self, text: str) -> Exception:
        return RaisedToolError(text)


class PydanticAIStreamEvents(PydanticAIAdapter):
    variant = "stream-events"
    about = ("async with agent.run_stream_events(...) as events: async for ev in events, read to the end (its last "
             "event, AgentRunResultEvent, carries the run result); otherwise the default (AnthropicModel)")
    capabilities = PydanticAIAdapter.capabilities.model_copy(update={"stream_of": "default"})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "approval_pause": "Tool(requires_approval=True), output_type=[str, DeferredToolRequests]: the "
                          "AgentRunResultEvent's result is the DeferredToolRequests; the message history "
                          "(ModelMessagesTypeAdapter) saved; resume agent.run_stream_events(message_history=..., "
                          "deferred_tool_results=DeferredToolResults(approvals={id: True})) read to the end",
        "cancel": "events.cancel() on the agent.run_stream_events() handle (agent/abstract.py AgentRunEvents.cancel: "
                  "'Request cancellation of the whole run') -> RunCancelled(messages, usage) out of the iteration",
        "resume_after_cancel": "agent.run_stream_events(message_history=RunCancelled.all_messages()) with no new "
                               "prompt, read to the end (exceptions.py RunCancelled: 'pass it as message_history to "
                               "a new run')",
    }

    def _arm_cancel(self, kwargs: dict[str, Any], cancel: CallerCancel) -> None:
        """The handle cancels the run (armed in `_execute`): no token."""

    async def _execute(self, agent: Any, start: dict[str, Any], kwargs: dict[str, Any], box: list[Any],
                       cancel: CallerCancel) -> tuple[Any, Any]:
        from pydantic_ai import AgentRunResultEvent
        from pydantic_ai.exceptions import UserError

        result = None
        async with agent.run_stream_events(**start, **kwargs) as events:
            cancel.arm(events.cancel)  # the handle's own cancel (agent/abstract.py `AgentRunEvents.cancel`)
            try:
                async for event in events:
                    if isinstance(event, AgentRunResultEvent):
                        result = event.result
            except Exception:
                try:  # the handle's live RunUsage: still readable after a raise, once the run has started
                    box.append(events.usage)
                except UserError:
                    pass
                raise
        assert result is not None  # the stream ends with AgentRunResultEvent unless the run raised
        return result, _usage(result)


class PydanticAIDelegateNoUsage(PydanticAIAdapter):
    variant = "delegate-no-usage"
    about = ("the default, with the sub-agent run without usage=ctx.usage, as users who forget it do: the child's "
             "requests and tokens are in no count of the parent's run and under none of its limits")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "delegate": "agent delegation without the docs' usage=ctx.usage: the parent's tool named after the child "
                    "(task: str) runs `await child.run(task)` on a child Agent(model, instructions=..., tools=...) and "
                    "returns result.output; the child's run keeps a RunUsage of its own",
    }
    child_run = "await child.run(task); the tool returns result.output"
    child_limits = {
        "usage": "none passed: the child's run starts a RunUsage of its own, which the parent's does not include",
        "usage_limits": "none passed: the child's run checks UsageLimits() defaults (request_limit 50) against its "
                        "own RunUsage",
        "timeout": "none passed: a run started inside a run inherits the parent's deadline (inherited_run_deadline)",
    }

    async def _run_child(self, child: Any, task: str, ctx: Any) -> Any:
        return await child.run(task)

    def _child_done(self, child_id: str, result: Any, tree: dict[str, Any]) -> None:
        """The child's own `result.usage` (not in the parent's): summed over the child runs that returned, as
        `usage_children` (a child run that raised takes its usage with it)."""
        super()._child_done(child_id, result, tree)
        usage = _usage(result)
        total = tree.setdefault("usage_children", {"requests": 0, "input_tokens": 0, "output_tokens": 0})
        for key in total:
            total[key] += getattr(usage, key) or 0


class PydanticAIGuarded(PydanticAIAdapter):
    variant = "guarded"
    capabilities = PydanticAIAdapter.capabilities.model_copy(
        update={"guard_of": "default", "guard_lacks": dict(PYDANTIC_AI_LACKS)})
    about = ("the default with loopbench.guard installed as a capability (GuardCapability: wrap_model_request, "
             "wrap_tool_execute, ApprovalRequired) on the main agent and each sub-agent; native limits as the default")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **PydanticAIAdapter.mechanism_table,
        "approval_pause": "the guard's wrap_tool_execute raises ApprovalRequired for a call it holds no approval for "
                          "(bound to the exact arguments); output_type=[str, DeferredToolRequests]; resume as the "
                          "default, the decisions also told to the guard (guard.decide)",
    }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        return await super().run(scenario, ctx)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        if (snapshot / PENDING_FILE).exists():
            guarded.decide(self._guard, json.loads((snapshot / PENDING_FILE).read_text()), decisions)
        return await super().resume(scenario, snapshot, decisions, ctx)

    def _retry(self, out: Any) -> Exception:
        """A timeout is the tool's client timing out (`TimeoutError`): the guard marks a write's outcome unknown
        and hands the model a ModelRetry, as the default does."""
        return TimeoutError(out.text) if out.error_kind == "timeout" else super()._retry(out)

    def _capabilities(self, scenario: Scenario, ledger: LedgerClient, settings: dict[str, Any], names: list[str],
                      main: bool = True) -> list[Any]:
        from loopbench.guard.bindings.pydantic_ai import GuardCapability

        caps = super()._capabilities(scenario, ledger, settings, names, main)
        settings["guard"] = "GuardCapability(guard)" if main else "GuardCapability(guard.child())"
        return [*caps, GuardCapability(self._guard if main else self._guard.child())]

    async def _drive(self, scenario: Scenario, ctx: RunContext, agent: Any, settings: dict[str, Any],
                     start: dict[str, Any], extra: dict[str, Any]) -> SegmentResult:
        result = await super()._drive(scenario, ctx, agent, settings, start, extra)
        guarded.save(self._guard, ctx)
        return result.model_copy(update={"signals": result.signals.model_copy(
            update={"guard": guarded.signal(self._guard)})})


# the framework's other idioms, in the order runs and reports show them
PydanticAIAdapter.variant_classes = (PydanticAIIter, PydanticAIConversation, PydanticAIOpenAIChat, PydanticAIRaiseFatal,
                                     PydanticAIStreamEvents, PydanticAIDelegateNoUsage, PydanticAIGuarded)
