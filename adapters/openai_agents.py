"""OpenAI Agents SDK adapter (`openai-agents`).

Translation of the neutral scenario into native controls (the `default` variant keeps every other default):
- model: the quick start's route, the SDK's home provider. `Agent(model="gpt-4.1")` resolves through the SDK's
  default `OpenAIProvider` to `OpenAIResponsesModel` (the Responses API over HTTP; its websocket transport is
  opt-in); the adapter builds that class itself, `OpenAIResponsesModel(model=..., openai_client=...)`, over
  `AsyncOpenAI(base_url=<scripted server>/v1)`, one per worker (and event loop), `.with_options(api_key=<run
  key>)` per run (the SDK's documented copy, sharing the HTTP client: a user's long-lived process makes one
  client, not one TLS context per run); tracing disabled.
  It sends `model_id(scenario)`: the model table's OpenAI model, gpt-4.1 (harness/models.py). The quick start
  names no model, and the SDK's own default (`get_default_model()`, "gpt-5.6-luna" in 0.24.0, with reasoning
  settings of its own) changes between releases; a named model is priced (the cost observed) and keeps cells
  comparable across the version matrix. What the SDK sends (probes/openai/responses_wire.py): every request
  carries the whole conversation in `input` (the `function_call` items and their `function_call_output`s); no
  `previous_response_id` or `conversation` (`Runner.run`'s defaults: `auto_previous_response_id=False`, no
  conversation id), `store`, `stream` and `parallel_tool_calls` omitted (the API's defaults), no streaming
  (`Runner.run`, not `run_streamed`: the `stream` variant's). Against api.openai.com itself the runner would add a
  per-run `prompt_cache_key` (tens of bytes a request); against any other base_url, as here, it does not;
- tools: `FunctionTool`s with the scenario's JSON schema, each executing through the ledger. The SDK applies
  its default failure formatter only to `@function_tool` tools; a hand-built `FunctionTool` must handle its
  errors itself (an exception escapes the run as `UserError`). So a ledger error is answered with the SDK's
  own `default_tool_error_function` — exactly what a decorated tool gives the model by default (a fixed
  "An error occurred while running the tool. Please try again." text, which hides the error from the model;
  probes/openai/tool_error_text.py). The scripted server classes the result from the ledger's ground truth
  for that call, not from this wording;
- max model calls -> `max_turns` (unset: the SDK default); token budget, cost budget, deadline -> unsupported;
- `approval: required` -> `needs_approval` (a callable, so the approval point is recorded as an `authorize`
  event each time the SDK checks it); the pause is `result.interruptions` + `RunState` saved in the snapshot;
  resume = `RunState.from_string` + `approve`/`reject` keyed by scripted call id + `Runner.run(agent, state)`;
- `approval: deny`, by the scenario's intent (`policy.deny`), a tool input guardrail (its authorize event is
  recorded in it) answering: "stop" -> `raise_exception` (the run halts with
  `ToolInputGuardrailTripwireTriggered`); "continue" -> `reject_content(message)` (the tool does not run, the
  model gets the message as the tool's output and the loop goes on). probes/openai/deny_intents.py: 2 vs 3
  requests. The mechanism used per intent is in the segment's `mechanisms`.
- sub-agents (`scenario.agents`): the SDK's "agents as tools" idiom (its Tools page, section "Agents as tools";
  `Agent.as_tool` in agents/agent.py), call and return: each child is an `Agent(name=<id>,
  instructions=spec.instructions, model=<the parent's model object>, tools=<its own ledger-backed FunctionTools,
  built as above: needs_approval, deny guardrails>)` turned into a tool by `as_tool(tool_name=<id>,
  tool_description=spec.description)`, every other as_tool parameter left at its default; the main agent gets
  `instructions=scenario.instructions` (None when unset, as before) and its own tools plus the children's tools.
  Handoffs (transfer of the conversation, not call and return) are a different intent and not used.
  What the idiom passes on, read in as_tool's `_run_agent_impl`: the child runs its own nested `Runner.run` with
  `max_turns=DEFAULT_MAX_TURNS` (10; the parent's `max_turns` is not passed on), the parent's `run_config`, and a
  `ToolContext` holding the parent's `Usage` object, so the run's `usage` (the reported counters) includes the
  child's requests and tokens; the SDK keeps no per-agent split (no extra key). The child's failures go through
  as_tool's default `failure_error_function=default_tool_error_function`: a `MaxTurnsExceeded` inside the child
  reaches the parent as the generic "An error occurred while running the tool" text and the parent goes on
  (subagent_runaway: 12 requests, research 10 and main 2, against the task's max_turns=8; the main run took 2
  turns and returned; probes/openai/subagent_max_turns.py). The segment's `settings.subagents` says what each
  child got. Approval inside a child: the child's `needs_approval` interrupts the nested run, as_tool records its
  result by tool call, and the interruption surfaces in the parent's `result.interruptions` (tool_name and call id
  the child's); `RunState.to_string()` serializes the nested run's state with the pending agent-tool call, and on
  resume `RunState.from_string` + `approve` (routed to the nested state) + `Runner.run` continues the child where
  it paused (subagent_approval: billing 3 requests over both segments, lookup_refund run once, then main 1).
  The variants inherit this idiom unchanged. `handled-max-turns`: `error_handlers` go to the parent's run only
  (as_tool passes none to the nested run), so the child's MaxTurnsExceeded takes the default path above: the same
  cells. `stream`: the parent runs `run_streamed`, but as_tool runs the child with `Runner.run` unless its
  `on_stream` callback is given (left at its default, None): the child's requests are not streamed (`"stream"`
  absent), the parent's are; counts and tokens are the default's.
Variant `handled-max-turns` (the default's model route): `error_handlers={"max_turns": ...}` returns an answer
instead of raising; the adapter reports the limit as handled (outcome `limit_steps` plus the deviation "limit
reported as an answer").
Variant `chat-completions`: the scenario's Claude (claude-sonnet-4-5) through `OpenAIChatCompletionsModel` over
the same client pointed at an OpenAI-compatible Chat Completions endpoint: the SDK's documented way to use
another provider's model (its "Using other LLM providers" page), and this adapter's default route before the
model table. Everything else is the default's.
Variant `stream`: the SDK's streaming idiom (its "Streaming" page), `result = Runner.run_streamed(agent, input)` and
`async for event in result.stream_events()` read to the end, on the default's model route, limits, approvals, deny
guardrails and resume (`Runner.run_streamed(agent, state)` read to the end); the variant declares `stream_of:
"default"`, so the report sets its cells beside the default's. What the SDK sends: the default's requests, each with
`"stream": true` (`OpenAIResponsesModel.stream_response` -> `responses.create(stream=True)`): in the server's request
log every request of the variant streams and its body is the default's plus those 14 bytes (the same `input`, no
`stream_options`). The answer is an SSE stream; the SDK takes each response's usage from the `response.completed`
event's `response.usage` (run_internal/run_loop.py, `context_wrapper.usage.add(final_response.usage)`), so the adapter
reads `result.context_wrapper.usage` once the stream ends, and the turn counter from `result.current_turn` (public on
`RunResultStreaming`). The run's exceptions (`MaxTurnsExceeded`, `ToolInputGuardrailTripwireTriggered`, an
`APIError`) are raised out of `stream_events()` and mapped as the default's, counters from `exc.run_data` as the
default's (the SDK attaches it to its own exceptions when the stream ends; an `APIError` gets none: null). Measured on
the whole suite: every cell, count and token total the same as the default's (report "Streamed vs not": 0 of 27)
but the caller's cancels, where the stream has a cancel API of its own (below).

The caller's cancel (scenario `cancel`; adapters/caller_cancel.py waits for the harness's word beside the run):
the SDK has no cancel API for a non-streamed run, so `Runner.run` runs as an asyncio task and the caller cancels the
task (default, handled-max-turns, chat-completions); the tool in flight is cancelled with it
(run_internal/tool_execution.py `_await_invoke_task`). The run ends in `CancelledError` with no `RunResult`: no usage
(null, not 0), no `to_input_list()`, no `to_state()`, and the quick start keeps no session, so nothing is kept and
cancel_then_resume is not resumed (the runner gets no snapshot). The `stream` variant uses
`RunResultStreaming.cancel()` in its default mode, "immediate" (result.py:941; the scenario asks a prompt stop;
"after_turn" waits for the turn's tools), and reads `stream_events()` on to its end as the docstring asks; its
counters are `context_wrapper.usage` (every response that completed, the one whose tool was in flight included) and
`to_input_list()` is kept when the run has items of its own: the resume is `Runner.run_streamed(agent, kept)` with no
new message, a fresh Usage. That list drops the turn in flight, the lookup's `function_call` item included, though
its response had arrived (openai-agents-python #1895's lost history; its usage is not lost): the continued run asks
the model for that turn again and runs the lookup again, the finished post is not repeated
(probes/openai/cancel_kept.py).

Structured answers (scenario `output`), every variant: the SDK's documented idiom (its Agents page, "Output types"):
`Agent(output_type=<pydantic model>)`, the model `output_model(scenario.output)`, `pydantic.create_model(<output
name>, __doc__=<description>, __config__=ConfigDict(extra="forbid"))`, every field required (str, int, float, bool;
an enum a Literal), the check an `AfterValidator` on its field raising `ValueError(<message>)`. A plain type becomes
`AgentOutputSchema(output_type)` with its default `strict_json_schema=True` (run_internal/turn_preparation.py:124-131;
agent_output.py:85), sent as `text.format` json_schema `strict: true` named "final_output" on the Responses API
(models/openai_responses.py:2098-2112) and as `response_format` json_schema `strict: true` on Chat Completions
(models/chatcmpl_converter.py:106-120): the scripted server serves a constrained answer, so an object breaking the
schema never comes (output_invalid_then_valid completes in 2 requests), but the check is in no schema. The answer's
text is validated by `validate_json` (agent_output.py:141-186, pydantic strict mode); a failure raises
`ModelBehaviorError` out of the run (run_internal/turn_resolution.py:1223-1246): the SDK asks for no correction. Its
only hook is `error_handlers={"invalid_final_output": ...}` (run_error_handlers.py:50-55), documented as a fallback
answer that "does not retry the model call" (docs/running_agents.md, "Error handlers"); it is not a retry and is left
unset. Output guardrails run on a validated answer only. By default (`OPENAI_AGENTS_DONT_LOG_MODEL_DATA` unset =
true, _debug.py) the validation error is redacted ("Invalid JSON when parsing model output", util/_json.py:47-51,
without the check's message) and a redacted error gets no `run_data` (run.py:2420-2424; streamed:
run_internal/run_loop.py:2334-2336): the failed run's usage and turns are null (probes/openai/output_invalid.py).
Measured: check_rejects and never_valid end `raised` (failure "model") after 2 requests in every variant. The answer
is reported as `final_output = result.final_output.model_dump(mode="json")`, `final_text` the answer's JSON text (the
run's last message output). `handled-max-turns`: with an output type the variant's fixed text is no valid answer
(validate_handler_final_output would raise UserError), so its max_turns handler declines (returns None) and the SDK
raises MaxTurnsExceeded as the default does.

Model errors: the SDK's defaults leave retries to the openai client (no `ModelSettings.retry`): max_retries=2
with its own backoff (0.5 s doubling, jittered) on 429 and 5xx; OpenAI sends no retry hint (provider_errors.py)
and an `x-should-retry: false` is obeyed (model_fatal_error: 1 request). Those retries happen inside one model
call of the SDK.

Signal mapping (no scenario knowledge): `MaxTurnsExceeded` -> limit="steps" (raised);
`ToolInputGuardrailTripwireTriggered` -> denied (the only source of `denied`); an `APIError` / `ModelBehaviorError`
in the chain, or an exception raised inside the openai client (kit.raised_in_model_client: a body that is not JSON
escapes as a bare JSONDecodeError) -> failure="model"; other exceptions -> failure="other"; interruptions -> paused.
Counters: `usage` (requests, tokens) from the result, or from `exc.run_data.context_wrapper` when the run raised;
`usage.requests` is one per model response the SDK got, so the client's retries are not in it
(model_transient_error: 3 reported, 5 observed), and an `APIError` out of the run carries no `run_data`, so a failed
run's counts stay null, never an uncounted 0 (probes/openai/responses_wire.py). runtime_steps = the SDK's turn
counter (`result._current_turn`) on a return; after `MaxTurnsExceeded`, which has no counter of its own,
`len(exc.run_data.raw_responses)` (one `ModelResponse` per finished turn: the check raises before the next model
call; probes/openai/max_turns_run_data.py). After any other exception it stays null: the turn in flight is not in
`raw_responses` (a guardrail trip on turn 2 leaves 1). RunState carries usage and the turn counter across a resume,
so counters are cumulative.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from loopbench.adapters import guarded
from loopbench.adapters.caller_cancel import CallerCancel
from loopbench.adapters.kit import ToolFailed, in_chain, pydantic_output_model, raised_in_model_client
from loopbench.guard.bindings.lacks import OPENAI_AGENTS as OPENAI_AGENTS_LACKS
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Adapter, Capabilities, Intent, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.model_server.call_ids import neutral_id
from loopbench.harness.models import Provider
from loopbench.harness.record import LimitTranslation, NativeSignals, PendingCall, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario
from loopbench.harness.scenario.model import MAIN_AGENT, OutputSpec

if TYPE_CHECKING:
    from loopbench.guard.hooks import Hook

STATE_FILE = "run_state.json"
KEPT_INPUT_FILE = "kept_input.json"  # a cancelled streamed run's to_input_list(): what a resume continues from
PENDING_FILE = "pending.json"
HANDLED_ANSWER = "Stopped: the turn limit was reached."
# what a @function_tool gives the model on an exception, for a hand-built FunctionTool (module docstring)
# the check, in every variant (module docstring "Structured answers")
OUTPUT_CHECK = ("a pydantic AfterValidator on the field raising ValueError(message), not in the JSON schema; a failed "
                "validation raises ModelBehaviorError out of the run (run_internal/turn_resolution.py:1223-1246): no "
                "retry, error_handlers['invalid_final_output'] (a fallback answer, documented as no retry) left unset")
TOOL_ERROR_TEXT = ("the tool answers with the SDK's default_tool_error_function text (the model gets a generic "
                   "error; the loop goes on)")


# one AsyncOpenAI per event loop and server (its connections belong to the loop); a run gets a copy with its key
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = weakref.WeakKeyDictionary()


def _client(base_url: str, api_key: str) -> Any:
    from openai import AsyncOpenAI

    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if base_url not in per_loop:
        per_loop[base_url] = AsyncOpenAI(base_url=base_url, api_key=api_key)
    return per_loop[base_url].with_options(api_key=api_key)


def output_model(spec: OutputSpec) -> type[Any]:
    """The scenario's structured answer as the pydantic model the SDK's docs hand `Agent(output_type=...)` (its
    Agents page, "Output types"), the check an AfterValidator (adapters/kit.py `pydantic_output_model`)."""
    return pydantic_output_model(spec)


class OpenAIAgentsAdapter(Adapter):
    id = "openai-agents"
    distribution = "openai-agents"
    display_name = "the OpenAI Agents SDK"
    sdk_modules = ("agents", "openai")
    # the quick start's (its home provider's) class, sending the model table's OpenAI model (module docstring)
    model_class: ClassVar[str | None] = "agents.OpenAIResponsesModel"
    model_provider: ClassVar[Provider | None] = "openai"
    packages = ("openai",)
    extra = "openai-agents"
    # the version matrix holds the client to the release's day: openai-agents 0.17 builds usage objects an openai
    # client of 2026-11 refuses
    companions = ("openai",)
    plain_script = "openai_agents.py"
    min_version = (0, 14)  # the oldest release tried that runs the suite (reports/matrix/versions.yaml)
    about = ("the SDK's quick start: OpenAIResponsesModel (the Responses API) sending gpt-4.1, the model table's "
             "OpenAI model; the SDK's defaults; max_turns from the scenario")
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls"}),
        step_unit="turn (one model call plus the tools it triggers)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="tool input guardrail: raise_exception (stop) or reject_content (continue)",
        notes=("default, handled-max-turns and stream: OpenAIResponsesModel (the Responses API, the quick start's) "
               "sending gpt-4.1; variant chat-completions: OpenAIChatCompletionsModel sending the scenario's Claude",
               "model errors are retried by the openai client (max_retries=2) inside one model call: "
               "usage.requests counts responses, not retries"),
    )
    # intent -> the native mechanism this adapter uses for it (a segment's `mechanisms` keeps the ones in use)
    mechanism_table: ClassVar[dict[Intent, str]] = {
        "cancel": "asyncio task cancel: Runner.run(...) awaited as a task, task.cancel() when the caller cancels "
                  "(the SDK has no cancel API for a non-streamed run; an in-flight tool's invoke task is cancelled "
                  "with it: run_internal/tool_execution.py _await_invoke_task) -> CancelledError, no RunResult",
        "resume_after_cancel": "nothing to continue from: the cancelled Runner.run returns no RunResult "
                               "(no to_input_list(), no to_state()) and the quick start keeps no session; the "
                               "task is not resumed",
        "delegate": "Agent(instructions=..., tools=...).as_tool(tool_name=<child id>, tool_description=...) "
                    "(agents as tools: a nested Runner.run with as_tool's default max_turns (10) and "
                    "failure_error_function; the parent's Usage is shared)",
        "deny_stop": "tool_input_guardrail -> ToolGuardrailFunctionOutput.raise_exception() "
                     "(ToolInputGuardrailTripwireTriggered ends the run)",
        "deny_continue": "tool_input_guardrail -> ToolGuardrailFunctionOutput.reject_content(message) "
                         "(the model gets the message; the loop goes on)",
        "approval_pause": "FunctionTool(needs_approval=callable) -> result.interruptions; "
                          "RunState.to_string() saved, RunState.from_string() + approve() on resume",
        "reject": "RunState.reject(interruption) (the model gets the SDK's rejection output)",
        "tool_choice_first": "Agent(model_settings=ModelSettings(tool_choice=...)) with reset_tool_choice=True (the "
                             "default): the setting is sent until a tool has run, then the default",
        "tool_choice_later": "unsupported: ModelSettings.tool_choice holds from the first call until a tool has run "
                             "(reset_tool_choice); the SDK has no per-call setting",
        "tool_error_recoverable": TOOL_ERROR_TEXT,
        "tool_error_fatal": TOOL_ERROR_TEXT,
        "structured_output": "Agent(output_type=<pydantic model>) -> AgentOutputSchema(strict_json_schema=True) (the "
                             "default for a plain type, run_internal/turn_preparation.py:124-131): the schema sent as "
                             "the Responses API's text.format {type: json_schema, name: final_output, strict: true} "
                             "(models/openai_responses.py:2098-2112); the answer's text validated into the model "
                             "(agent_output.py:141-186): result.final_output",
        "output_check": OUTPUT_CHECK,
    }

    @classmethod
    def warm(cls) -> None:
        import agents  # noqa: F401
        import openai  # noqa: F401

    # ---- building the agent
    def _model(self, model_id: str, client: Any) -> Any:
        """The quick start's model class: the Responses API (what `Agent(model="gpt-4.1")` resolves to through the
        SDK's default OpenAIProvider), over the per-worker client."""
        from agents import OpenAIResponsesModel

        return OpenAIResponsesModel(model=model_id, openai_client=client)

    def _agent(self, scenario: Scenario, ctx: RunContext) -> Any:
        from agents import Agent, FunctionTool, set_tracing_disabled
        from agents.tool_guardrails import ToolGuardrailFunctionOutput, tool_input_guardrail
        set_tracing_disabled(True)
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        model = self._model(self.model_id(scenario), _client(f"{ctx.base_url}/v1", ctx.api_key))

        def make_tool(name: str) -> Any:
            spec = scenario.tools[name]

            async def invoke(tool_ctx: Any, raw_args: str) -> str:
                args = json.loads(raw_args or "{}")
                out = await ledger.call(name, args, neutral_id(getattr(tool_ctx, "tool_call_id", None)))
                if not out.ok:
                    return self._tool_error(tool_ctx, out)
                return out.text

            async def needs_approval(_run_ctx: Any, params: dict[str, Any], call_id: str) -> bool:
                await ledger.authorize(name, params, neutral_id(call_id), "approval required")
                return True

            guardrails = None
            if spec.approval == "deny":
                stop = scenario.policy.deny == "stop"

                @tool_input_guardrail
                async def refuse(data: Any) -> Any:
                    tool_ctx = data.context
                    args = json.loads(getattr(tool_ctx, "tool_arguments", None) or "{}")
                    await ledger.authorize(name, args, neutral_id(tool_ctx.tool_call_id), "denied by policy")
                    if stop:  # the run halts with ToolInputGuardrailTripwireTriggered
                        return ToolGuardrailFunctionOutput.raise_exception(output_info=f"{name} is denied by policy")
                    # the model is told (this text replaces the tool's output) and the loop goes on
                    return ToolGuardrailFunctionOutput.reject_content(f"{name} is denied by policy",
                                                                      output_info=f"{name} is denied by policy")

                guardrails = [refuse]
            return FunctionTool(
                name=name, description=spec.description, params_json_schema=spec.parameters,
                on_invoke_tool=invoke, strict_json_schema=False,
                needs_approval=needs_approval if spec.approval == "required" else False,
                tool_input_guardrails=guardrails,
            )

        extra: dict[str, Any] = {}
        if opening := [r.choice for r in scenario.tool_choice_rules() if r.opening]:
            from agents import ModelSettings

            extra["model_settings"] = ModelSettings(tool_choice=opening[0])
        # sub-agents: the SDK's agents-as-tools idiom (module docstring), one `Agent.as_tool` per child, named after
        # the child, with as_tool's defaults (the child's own nested Runner.run, max_turns DEFAULT_MAX_TURNS)
        children = [
            self._as_tool(self._install(Agent(name=child, instructions=spec.instructions, model=model,
                                              tools=[make_tool(n) for n in scenario.tools_of(child)]), main=False),
                          child, spec.description)
            for child, spec in scenario.agents.items()
        ]
        if scenario.output is not None:  # the structured answer: output_type, the SDK's defaults (docstring)
            extra["output_type"] = output_model(scenario.output)
        return self._install(Agent(name="assistant", instructions=scenario.instructions, model=model,
                                   tools=[*(make_tool(n) for n in scenario.tools_of(MAIN_AGENT)), *children],
                                   **extra), main=True)

    def _tool_error(self, tool_ctx: Any, out: Any) -> Any:
        """A ledger error's answer: the decorator's default failure path, for a hand-built tool."""
        from agents import default_tool_error_function

        return default_tool_error_function(tool_ctx, ToolFailed(out.text))

    def _install(self, agent: Any, main: bool) -> Any:
        """The agent as the idiom runs it (`main`: the task's agent, else a sub-agent): as built."""
        return agent

    def _as_tool(self, agent: Any, name: str, description: str) -> Any:
        """A sub-agent as the parent's tool: `as_tool` with its defaults (module docstring)."""
        return agent.as_tool(tool_name=name, tool_description=description)

    def _run_kwargs(self, scenario: Scenario, handled: list[bool]) -> tuple[dict[str, Any], dict[str, Any]]:
        from agents.run import DEFAULT_MAX_TURNS

        kwargs: dict[str, Any] = {}
        limits: dict[str, LimitTranslation] = {}
        n = scenario.limits.max_model_calls
        if n is not None:
            kwargs["max_turns"] = n
            limits["max_model_calls"] = LimitTranslation(neutral=n, native=f"max_turns={n}")
        else:
            limits["max_model_calls"] = LimitTranslation(neutral=None,
                                                         native=f"max_turns default ({DEFAULT_MAX_TURNS})")
        return kwargs, limits  # the limits it cannot express: Adapter.declared()

    # ---- running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        agent = self._agent(scenario, ctx)
        return await self._drive(scenario, ctx, agent, scenario.prompt)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        from agents import RunState

        agent = self._agent(scenario, ctx)
        if (snapshot / KEPT_INPUT_FILE).exists():  # what a cancelled run kept (not an approval pause)
            return await self._drive(scenario, ctx, agent, json.loads((snapshot / KEPT_INPUT_FILE).read_text()))
        state = await RunState.from_string(agent, (snapshot / STATE_FILE).read_text())
        self._decide(state, decisions)
        return await self._drive(scenario, ctx, agent, state)

    def _decide(self, state: Any, decisions: dict[str, str]) -> None:
        """The resume's decisions on the saved state's interruptions (`approve` / `reject`, by scripted call id)."""
        for item in state.get_interruptions():
            decision = decisions.get(neutral_id(getattr(item.raw_item, "call_id", None)) or "")
            if decision == "approve":
                state.approve(item)
            elif decision == "reject":
                state.reject(item)

    async def _execute(self, agent: Any, start: Any, kwargs: dict[str, Any], cancel: CallerCancel) -> Any:
        """The finished run (`RunResult`): `Runner.run`; raises what the run raised. Run as a task so the caller's
        cancel can cancel it (the SDK's only way for a non-streamed run): then `CancelledError`."""
        from agents import Runner

        task = asyncio.ensure_future(Runner.run(agent, start, **kwargs))
        cancel.arm(task.cancel)
        return await task

    async def _drive(self, scenario: Scenario, ctx: RunContext, agent: Any, start: Any) -> SegmentResult:
        handled: list[bool] = []
        kwargs, limits = self._run_kwargs(scenario, handled)
        settings = {k: v for k, v in kwargs.items() if k != "error_handlers"}
        if "error_handlers" in kwargs:
            settings["error_handlers"] = sorted(kwargs["error_handlers"])
        if agent.model_settings.tool_choice is not None:
            settings.update(tool_choice=agent.model_settings.tool_choice, reset_tool_choice=agent.reset_tool_choice)
        if scenario.agents:  # what each child got: as_tool's defaults, nothing of the parent's limits
            from agents.run import DEFAULT_MAX_TURNS

            settings["subagents"] = {
                child: {"tool": f"Agent.as_tool(tool_name={child!r})", "max_turns": DEFAULT_MAX_TURNS,
                        "max_turns_source": "as_tool default (agents.run.DEFAULT_MAX_TURNS), its own nested run",
                        "failure_error_function": "default_tool_error_function (as_tool default)",
                        "usage": "the parent's Usage object (shared)"}
                for child in scenario.agents
            }
        if scenario.output is not None:
            settings["output"] = self._output_settings(scenario.output, "invalid_final_output" in
                                                       kwargs.get("error_handlers", {}))
        common: dict[str, Any] = dict(settings=settings, limits=limits)
        try:
            async with CallerCancel(ctx, scenario.cancel is not None) as cancel:
                result = await self._execute(agent, start, kwargs, cancel)
        except asyncio.CancelledError as exc:
            current = asyncio.current_task()
            if not cancel.told or (current is not None and current.cancelling()):
                raise  # not the caller's cancel of the run's task (the worker's own teardown)
            # the run's task was cancelled: Runner.run returned nothing, so no usage and nothing to continue from
            signals = NativeSignals(ended="cancelled", exception_type=type(exc).__name__,
                                    exception_message=str(exc)[:500] or None)
            return SegmentResult(signals=signals, counters=ReportedCounters(runtime_step_unit="turn"), **common)
        except Exception as exc:  # the framework ended by raising: map the signal
            return SegmentResult(signals=self._raised(exc), counters=self._raised_counters(exc), **common)
        counters = self._counters(result)
        if isinstance(start, list):  # continued from a cancelled run's to_input_list(): a fresh Usage
            counters = counters.model_copy(update={"cumulative": False})
        if cancel.told and result.final_output is None and not result.interruptions:
            return self._cancelled_stream(result, counters, ctx, common)
        if result.interruptions:
            pending = [
                PendingCall(call_id=neutral_id(getattr(i.raw_item, "call_id", None)), tool=i.tool_name or "",
                            args=json.loads(getattr(i.raw_item, "arguments", None) or "{}"))
                for i in result.interruptions
            ]
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            (ctx.snapshot_dir / STATE_FILE).write_text(result.to_state().to_string())
            (ctx.snapshot_dir / PENDING_FILE).write_text(json.dumps([p.model_dump() for p in pending]))
            signals = NativeSignals(ended="paused", pending=pending, extra={"interruptions": len(pending)})
            return SegmentResult(signals=signals, counters=counters, snapshot=str(ctx.snapshot_dir), **common)
        final = result.final_output
        structured = self._structured(final)
        signals = NativeSignals(
            ended="returned",
            final_text=(final if isinstance(final, str) else self._answer_text(result) if structured is not None
                        else json.dumps(final, default=str)),
            final_output=structured,
            limit="steps" if handled else None, limit_signal="handled" if handled else None,
            extra={"error_handler_fired": "max_turns"} if handled else {},
        )
        return SegmentResult(signals=signals, counters=counters, **common)

    @staticmethod
    def _output_settings(spec: OutputSpec, handler: bool) -> dict[str, Any]:
        """What the segment records of the structured answer's settings: all the SDK's defaults."""
        return {"output_type": f"{spec.name} (pydantic model, extra='forbid')",
                "schema": "AgentOutputSchema(strict_json_schema=True) (the default for a plain type)",
                "check": f"AfterValidator on {spec.check.field}" if spec.check is not None else None,
                "retries": "none (the SDK has no output retry)",
                "invalid_final_output_handler": handler,
                "on_invalid_answer": "ModelBehaviorError raised (run_internal/turn_resolution.py:1223-1246)"}

    @staticmethod
    def _structured(final: Any) -> dict[str, Any] | None:
        """The validated structured answer as JSON (`model_dump(mode="json")`), None when the run returned text."""
        from pydantic import BaseModel

        return final.model_dump(mode="json") if isinstance(final, BaseModel) else None

    @staticmethod
    def _answer_text(result: Any) -> str | None:
        """The text the SDK validated into the structured answer: the run's last message output (the answer's JSON
        text, run_internal/turn_resolution.py `potential_final_output_text`)."""
        from agents import ItemHelpers, MessageOutputItem

        messages = [i for i in result.new_items if isinstance(i, MessageOutputItem)]
        return ItemHelpers.text_message_output(messages[-1]) if messages else None

    @staticmethod
    def _cancelled_stream(result: Any, counters: ReportedCounters, ctx: RunContext, common: dict[str, Any]
                          ) -> SegmentResult:
        """A streamed run that stopped on `RunResultStreaming.cancel()`: the usage of the responses it completed
        (the one in flight is not in it: run_internal/run_loop.py adds usage per finished response), and
        `to_input_list()` (the SDK's way to continue a conversation by hand: result.py `to_input_list`) when the
        run kept items of its own."""
        signals = NativeSignals(ended="cancelled", exception_type=None, terminal_reason="RunResultStreaming.cancel()",
                                extra={"new_items": len(result.new_items), "is_complete": result.is_complete})
        if not result.new_items:  # nothing of the run's own kept: a resume would start the task over
            return SegmentResult(signals=signals, counters=counters, **common)
        ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
        (ctx.snapshot_dir / KEPT_INPUT_FILE).write_text(json.dumps(result.to_input_list(), default=str))
        return SegmentResult(signals=signals, counters=counters, snapshot=str(ctx.snapshot_dir), **common)

    @staticmethod
    def _raised(exc: Exception) -> NativeSignals:
        from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError, ToolInputGuardrailTripwireTriggered
        from openai import APIError

        base: dict[str, Any] = dict(ended="raised", exception_type=type(exc).__name__, exception_message=str(exc)[:500])
        if isinstance(exc, MaxTurnsExceeded):
            return NativeSignals(**base, limit="steps", limit_signal="raised")
        if isinstance(exc, ToolInputGuardrailTripwireTriggered):
            return NativeSignals(**base, denied=True)
        if in_chain(exc, ToolFailed):
            return NativeSignals(**base, failure="tool")
        if in_chain(exc, (APIError, ModelBehaviorError)) or raised_in_model_client(exc):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")

    @staticmethod
    def _raised_counters(exc: Exception) -> ReportedCounters:
        """Counters from what the exception carries (`run_data`, set by the SDK on its own exceptions)."""
        from agents.exceptions import MaxTurnsExceeded

        run_data = getattr(exc, "run_data", None)
        if run_data is None:
            return ReportedCounters(runtime_step_unit="turn")
        # MaxTurnsExceeded is raised before the next model call, so every finished turn left one ModelResponse
        # in raw_responses; after any other exception the turn in flight is missing: unknown, not a guess
        turns = len(run_data.raw_responses) if isinstance(exc, MaxTurnsExceeded) else None
        return OpenAIAgentsAdapter._counters(run_data, turns)

    @staticmethod
    def _counters(result: Any, turns: int | None = None) -> ReportedCounters:
        usage = result.context_wrapper.usage
        # the turn counter: RunResult's private `_current_turn`, RunResultStreaming's public `current_turn`;
        # RunErrorDetails (an exception's run_data) has neither
        turn = getattr(result, "_current_turn", getattr(result, "current_turn", turns))
        return ReportedCounters(
            model_requests_reported=usage.requests, input_tokens_reported=usage.input_tokens,
            output_tokens_reported=usage.output_tokens, runtime_steps=turn, runtime_step_unit="turn",
            cumulative=True,  # RunState carries usage and the turn counter across a resume
        )


class OpenAIAgentsHandledMaxTurns(OpenAIAgentsAdapter):
    variant = "handled-max-turns"
    about = ('error_handlers={"max_turns": ...} returns an answer instead of raising; otherwise the default '
             '(OpenAIResponsesModel, gpt-4.1)')

    def _run_kwargs(self, scenario: Scenario, handled: list[bool]) -> tuple[dict[str, Any], dict[str, Any]]:
        from agents import RunErrorHandlerResult

        kwargs, limits = super()._run_kwargs(scenario, handled)

        def on_max_turns(_data: Any) -> Any:
            if scenario.output is not None:
                # the fixed text is no answer of the structured output type (validate_handler_final_output would
                # raise UserError: run_internal/error_handlers.py:170-205), and the variant makes no answer up: it
                # declines (None), so the SDK raises MaxTurnsExceeded as the default does
                return None
            handled.append(True)
            return RunErrorHandlerResult(final_output=HANDLED_ANSWER)

        kwargs["error_handlers"] = {"max_turns": on_max_turns}
        return kwargs, limits


class OpenAIAgentsChatCompletions(OpenAIAgentsAdapter):
    variant = "chat-completions"
    about = ("the scenario's Claude over an OpenAI-compatible Chat Completions endpoint: OpenAIChatCompletionsModel "
             "(the SDK's documented route to another provider's model); otherwise the default")
    model_class = "agents.OpenAIChatCompletionsModel"
    model_provider = "anthropic"
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **OpenAIAgentsAdapter.mechanism_table,
        "structured_output": "Agent(output_type=<pydantic model>) -> AgentOutputSchema(strict_json_schema=True) (the "
                             "default for a plain type): the schema sent as Chat Completions' response_format "
                             "{type: json_schema, json_schema: {name: final_output, strict: true}} "
                             "(models/chatcmpl_converter.py:106-120); the answer's text validated into the model "
                             "(agent_output.py:141-186): result.final_output",
    }

    def _model(self, model_id: str, client: Any) -> Any:
        from agents import OpenAIChatCompletionsModel

        return OpenAIChatCompletionsModel(model=model_id, openai_client=client)


class OpenAIAgentsStream(OpenAIAgentsAdapter):
    variant = "stream"
    about = ("Runner.run_streamed(...) with result.stream_events() read to the end (the SDK's streaming idiom); "
             "otherwise the default (OpenAIResponsesModel, gpt-4.1)")
    capabilities = OpenAIAgentsAdapter.capabilities.model_copy(update={"stream_of": "default"})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **OpenAIAgentsAdapter.mechanism_table,
        "deny_stop": "tool_input_guardrail -> ToolGuardrailFunctionOutput.raise_exception() "
                     "(ToolInputGuardrailTripwireTriggered is raised out of stream_events)",
        "approval_pause": "FunctionTool(needs_approval=callable) -> result.interruptions once stream_events() ends; "
                          "RunState.to_string() saved, RunState.from_string() + approve() and "
                          "Runner.run_streamed(agent, state) read to the end on resume",
        "cancel": "RunResultStreaming.cancel() (mode 'immediate', the default: result.py:941 'Stop immediately, "
                  "cancel all tasks'), stream_events() read on to its end as its docstring asks",
        "resume_after_cancel": "Runner.run_streamed(agent, result.to_input_list()) read to the end, no new message "
                               "(result.py to_input_list: the SDK's way to continue a conversation by hand); the "
                               "cancelled run's usage is not carried",
    }

    async def _execute(self, agent: Any, start: Any, kwargs: dict[str, Any], cancel: CallerCancel) -> Any:
        """`Runner.run_streamed` read to the end: the run's exceptions are raised out of `stream_events()`;
        the finished `RunResultStreaming` holds the usage, the turn counter and the interruptions. The caller's
        cancel is `result.cancel()` in its default mode, "immediate" (result.py `RunResultStreaming.cancel`: "Stop
        immediately, cancel all tasks"; the scenario's intent is a prompt stop), and stream_events() is read on to
        its end as the docstring asks ("continue consuming stream_events()")."""
        from agents import Runner

        result = Runner.run_streamed(agent, start, **kwargs)
        cancel.arm(result.cancel)
        async for _event in result.stream_events():
            pass
        return result


class OpenAIAgentsGuarded(OpenAIAgentsAdapter):
    variant = "guarded"
    about = ("the default with loopbench.guard installed (AgentGuard: agent hooks on_llm_start / on_llm_end, the "
             "tools' input and output guardrails, needs_approval, a wrapped on_invoke_tool, "
             "RunConfig.tool_error_formatter; sub-agents as_tool(failure_error_function=None) with the child guard) "
             "and the run bounded by the guard's deadline; native limits as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = dict(OPENAI_AGENTS_LACKS)
    capabilities = OpenAIAgentsAdapter.capabilities.model_copy(
        update={"guard_of": "default", "guard_lacks": dict(OPENAI_AGENTS_LACKS)})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **OpenAIAgentsAdapter.mechanism_table,
        "approval_pause": "FunctionTool(needs_approval=callable), the guard's wrapper around it -> "
                          "result.interruptions; RunState.to_string() saved, RunState.from_string() + approve() on "
                          "resume, the decisions also told to the guard (guard.decide, bound to the exact call), whose "
                          "tool input guardrail admits the approved call once",
        "reject": "RunState.reject(interruption) as the default, told to the guard too (guard.decide and "
                  "RunConfig.tool_error_formatter): the rejected call's effect is refused by any tool afterwards "
                  "(the guard's `denied`, raised out of the run)",
        "tool_error_recoverable": TOOL_ERROR_TEXT + "; a timeout raises TimeoutError: the guard marks a write's "
                                  "outcome unknown and tells the model",
        "tool_error_fatal": "the tool raises (the SDK's 'the run fails'); the guard's wrapped on_invoke_tool raises "
                            "its `failed` stop out of the run (UserError, the stop its cause)",
        "delegate": "Agent(instructions=..., tools=..., hooks=<the child guard's>).as_tool(tool_name=<child id>, "
                    "tool_description=..., failure_error_function=None) (agents as tools: the child's stops and "
                    "errors reach the parent's run; as_tool's default max_turns (10); the parent's Usage is shared)",
    }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        self._start_guard(scenario, ctx)
        return await super().run(scenario, ctx)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        self._start_guard(scenario, ctx)
        return await super().resume(scenario, snapshot, decisions, ctx)

    def _start_guard(self, scenario: Scenario, ctx: RunContext) -> None:
        from loopbench.guard.bindings.openai_agents import AgentGuard

        self._guard = guarded.task_guard(scenario, ctx)
        self._binding = AgentGuard(self._guard)

    def _decide(self, state: Any, decisions: dict[str, str]) -> None:
        """The decisions told to the guard first, for exactly the pending calls (by the SDK's call id, the one its
        guardrail sees when the approved call runs), then to the SDK as the default does."""
        pending = [{"call_id": neutral_id(raw), "raw_id": raw, "tool": item.tool_name or "",
                    "args": json.loads(getattr(item.raw_item, "arguments", None) or "{}")}
                   for item in state.get_interruptions()
                   for raw in [getattr(item.raw_item, "call_id", None)]]
        guarded.decide(self._guard, pending, decisions)
        super()._decide(state, decisions)

    def _tool_error(self, tool_ctx: Any, out: Any) -> Any:
        """A fatal ledger error raises (the SDK's documented 'an exception causes the run to fail'), a timeout
        raises the client's TimeoutError: the guard's wrapped invocation sees both; a recoverable one is answered as
        the default does."""
        if out.error_kind == "fatal":
            raise ToolFailed(out.text)
        if out.error_kind == "timeout":
            raise TimeoutError(out.text)
        return super()._tool_error(tool_ctx, out)

    def _install(self, agent: Any, main: bool) -> Any:
        return (self._binding if main else self._binding.child()).install(agent)

    def _as_tool(self, agent: Any, name: str, description: str) -> Any:
        return agent.as_tool(tool_name=name, tool_description=description, failure_error_function=None)

    async def _execute(self, agent: Any, start: Any, kwargs: dict[str, Any], cancel: CallerCancel) -> Any:
        async with self._binding.deadline():
            return await super()._execute(agent, start, {**kwargs, "run_config": self._binding.run_config()}, cancel)

    async def _drive(self, scenario: Scenario, ctx: RunContext, agent: Any, start: Any) -> SegmentResult:
        result = await super()._drive(scenario, ctx, agent, start)
        guarded.save(self._guard, ctx)
        settings = {**result.settings, "guard": "AgentGuard(guard).install(agent); sub-agents AgentGuard.child(); "
                                                "run_config=AgentGuard.run_config(); Runner.run inside deadline()"}
        for child in settings.get("subagents", {}).values():
            child["failure_error_function"] = "None (the child's stops and errors reach the parent's run)"
        return result.model_copy(update={"settings": settings, "signals": result.signals.model_copy(
            update={"guard": guarded.signal(self._guard)})})

    @staticmethod
    def _raised(exc: Exception) -> NativeSignals:
        """The guard's stop raised out of the run (bare from a hook, or the cause of the SDK's UserError) is the
        guard's exit (`signals.guard`, rule 13), not a tool's or the model's failure; anything else as the default
        maps it."""
        stop = guarded.guard_stop_in(exc)
        if stop is None:
            return OpenAIAgentsAdapter._raised(exc)
        return NativeSignals(ended="raised", exception_type=type(exc).__name__, exception_message=str(exc)[:500],
                             extra={"guard_stop": type(stop).__name__})


# the framework's other idioms, in the order runs and reports show them
OpenAIAgentsAdapter.variant_classes = (OpenAIAgentsHandledMaxTurns, OpenAIAgentsChatCompletions, OpenAIAgentsStream,
                                       OpenAIAgentsGuarded)
