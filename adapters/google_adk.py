"""Google Agent Development Kit adapter (`google-adk`).

The model class, per variant (docs/decisions.md "Each framework's own model class"):
- default (and `error-dict`, `in-memory`): ADK's quick start — its home provider, Gemini, through ADK's own
  `google.adk.models.Gemini` over google-genai, sending the model table's Gemini model (`Adapter.model_id`:
  gemini-2.5-flash for the suite's Claude scenarios), not the scenario's Claude id. Gemini is the default because
  it is what ADK's quick start and docs build an agent with (`LlmAgent(model="gemini-...")`) and the provider ADK
  is made by. The scenario's Claude cannot simply be named there: ADK's registry (google/adk/models/__init__.py
  `_LAZY_PROVIDERS`, LLMRegistry) maps a bare `claude-*` string to `Claude` (google/adk/models/anthropic_llm.py),
  the class for Claude served from Vertex AI: it builds an `AsyncAnthropicVertex` from GOOGLE_CLOUD_PROJECT /
  GOOGLE_CLOUD_LOCATION (or a `projects/...` model path), so it needs a Google Cloud project and cannot be
  pointed at a base URL; its own error says to "pass a model instance configured for the Anthropic API rather
  than a bare model name" to call the Anthropic API directly. That is the `anthropic` variant.
  `Gemini(model=<gemini model>, base_url=<scripted server>, client_kwargs={"api_key": <run key>})` — `base_url`
  is a field of the class ("the base URL for the AI platform service endpoint") and `client_kwargs` the documented
  way to hand the `google.genai.Client` what ADK does not expose (models/google_llm.py `Gemini`,
  `Gemini.api_client`). Releases without `client_kwargs` (2.0 and the 1.x line) document a subclass overriding
  `api_client` instead; the adapter does that there, building the client as ADK does (its tracking headers and
  `retry_options`) plus the key (`_gemini`). The client speaks the Gemini API
  (`POST {base_url}/v1beta/models/{model}:generateContent`, key in `x-goog-api-key`). `retry_options` is left
  unset: ADK passes None to the client, and google-genai's `retry_args(None)` is `stop_after_attempt(1)`, so
  neither layer retries a failed model request (genai `_api_client.retry_args`); the first APIError ends the
  run (the server sees one request). Streaming stays ADK's default (`StreamingMode.NONE`: generateContent).
- `anthropic`: the scenario's Claude through ADK's own Anthropic-API class,
  `google.adk.models.anthropic_llm.AnthropicLlm(model=<scenario model>, client=anthropic.AsyncAnthropic(
  base_url=<scripted server>, api_key=<run key>))` — `client` is the class's field for "an optional
  pre-configured Anthropic client", which its `_anthropic_client` returns as it is (ADK's docs pages on Claude
  show the Java `Claude(model, anthropicClient)` and, for Python's direct Anthropic API, LiteLLM; the Python class
  and its error message are the documentation of this route). Releases before the field (1.22 to 2.0 at least;
  2.8 has it) build a bare `AsyncAnthropic()` in a cached `_anthropic_client` property: the adapter overrides that
  property with the same client (`_anthropic_llm`, as `_gemini` does for Gemini). Every release from 1.22 (the
  adapter's minimum) has AnthropicLlm; a release without it (1.4 and earlier had only `Claude`) or without the
  `anthropic` package reports this variant unavailable (`GoogleADKAnthropic.unavailable_reason`; the core consults
  the default class's only, so there its segments fail with that reason as an adapter error). The client speaks
  Anthropic Messages (`POST {base_url}/v1/messages`, non-streaming: ADK's default StreamingMode.NONE). Retries: ADK
  sets none and AnthropicLlm has no retry option; the anthropic client's own defaults decide (`max_retries=2`,
  recorded from the client: 408/409/429/5xx retried unless `x-should-retry: false`; a `retry-after` header is
  honoured, else 0.5 s then 1 s, x0.75-1 jitter). The retries happen inside one `messages.create` call, so ADK
  sees one response (one event) per successful request: a 429 then a 500 then success is 5 requests for 3
  reported responses (model_transient_error: completed); a provider down is 3 requests in about 1.5 s, then the
  client's `InternalServerError` leaves `run_async` (model_outage: failed); a 429 storm with `retry-after: 1`
  ends after 3 requests, ~2 s (probes/google_adk/anthropic_llm.py transient / outage / rate-limit; the variant
  declares `retry_window_s=2.0`). AnthropicLlm sends `tool_choice: {"type": "auto"}` whenever the agent has tools
  and ignores `llm_request.config.tool_config` (models/anthropic_llm.py `generate_content_async`): the scenario's
  tool_choice cannot be set here (`unsupported`; probes/google_adk/anthropic_llm.py tool-choice). Tool-call ids
  are `toolu_<scripted id>` (Gemini's `fc_<scripted id>`), mapped per variant (`call_id_prefix`).
- `sse`: the default (Gemini, SqliteSessionService, every control as above) streamed the way ADK documents it:
  `Runner.run_async(..., run_config=RunConfig(streaming_mode=StreamingMode.SSE, max_llm_calls=...))`, read to the
  end. The Gemini class then calls google-genai's `generate_content_stream`: every request is
  `POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse` (the server's log: stream=True on every
  request). ADK's StreamingResponseAggregator (utils/streaming_utils.py, progressive SSE streaming, on by default
  in 2.13) yields each SSE chunk as a partial event (`partial=True`, carrying that chunk's text or function call
  and its `usage_metadata` when the chunk has one), then, when the stream ends, one aggregated non-partial event
  with the whole content, the finish reason and the last usage the stream reported; only that one is appended to
  the session and acted on (tools run from it, confirmations and skip_summarization as above). Counters read the
  non-partial events, as ADK's docs read a streamed run (partial events are previews), exactly as the default:
  one per response, tokens from its usage. Measured: on the whole suite the streamed and non-streamed runs
  differ in no cell (outcome, requests, tool runs, reported requests and tokens = served). Summing every event's
  usage instead would double the tokens: the chunk that carries a response's usage (the last one, as the
  scripted server sends it) is yielded as a partial event AND its usage is repeated on the aggregated event
  (probes/google_adk/sse_usage.py: every event summed gives 40/8 tokens for 20/4 served; when every chunk
  carries usage, 60/12: once per chunk plus once on the aggregated event). The segment records
  `partial_events` and `partial_events_with_usage` in its signals' extra.
- tools: a `FunctionTool` per scenario tool (so ADK's own argument filtering, mandatory-argument check and
  confirmation gate apply) whose function takes the scenario's parameters (its signature is built from the JSON
  schema's properties) and whose `_get_declaration()` is `FunctionDeclaration(name, description,
  parameters_json_schema=<the scenario's JSON schema>)`. It executes through the ledger with the model's call
  id (`tool_context.function_call_id`). A ledger error is RAISED (`ToolFailed`), so ADK's
  default tool-error path decides: with no `on_tool_error_callback` (agent or plugin) the exception is
  re-raised out of the run (flows/llm_flows/tools/_caller.py `_execute_single_prepared_call`, step 3:
  `run_on_tool_error_callbacks` -> None -> `raise tool_error`): failure="tool" (probes/google_adk/fair.py
  tool-error); the same for a recoverable error, a timeout and a fatal error (the tool does not choose).
  Variant `error-dict`: the tool returns the function-tools guide's error dict instead
  (`{"status": "error", "error_message": ...}`, its convention for a failure the model should see); the loop
  goes on.
- max model calls -> `RunConfig(max_llm_calls=N)` passed to `Runner.run_async`. ADK increments its per-invocation
  counter right before each model call and raises `LlmCallsLimitExceededError` when it passes N
  (agents/invocation_context.py `_InvocationCostManager.increment_and_enforce_llm_calls_limit`, called from
  flows/llm_flows/core/_model_call.py `call_llm_async` after `before_model_callback`): N calls are made, the
  (N+1)-th is refused before it is sent. No limit in the scenario: RunConfig's default, 500
  (`_DEFAULT_MAX_LLM_CALLS`, or the ADK_MAX_LLM_CALLS environment variable), recorded. The counter lives in
  the invocation context: each `run_async` (a resume included) is a new invocation with a fresh budget.
  Token budget, cost budget, deadline -> unsupported (ADK has none).
- sessions belong to the variant, whatever the scenario: default, `error-dict` and `anthropic` keep every session
  in ADK's on-disk `SqliteSessionService` (google.adk.sessions.sqlite_session_service, what `adk web` uses for
  local storage; the confirmation docs list DatabaseSessionService and VertexAiSessionService as not supported
  by the feature) in `ctx.task_dir`, shared by every segment of the business task as an application's database
  is; `in-memory` keeps them in an `InMemorySessionService` (the quick-start's), one per segment like a script's.
  Either is built, and a first run's session created, as an application does before it calls `run_async`.
- `approval: required` -> tool confirmation: `FunctionTool(func, require_confirmation=<callable>)`; the callable
  records a ledger `authorize` event and answers True. ADK runs it once at the pause and three times on the
  resume that approves or rejects (`_confirmation._resolve_confirmation_targets` re-validates, then the gate
  `tools/_confirmation_utils.apply_confirmation_gate`, then `FunctionTool.run_async` checks again): 4 authorize
  events for one request (probes/google_adk/fair.py confirm; 2.8.0 runs it twice on the resume, 2.0.0 and
  1.22.0 once). ADK answers the call with a placeholder error, emits an `adk_request_confirmation` function call
  (long-running) and ends the invocation: the pause. The snapshot keeps the session ids and the pending
  confirmation requests. Resume (another process): a new message with one
  `FunctionResponse(name="adk_request_confirmation", id=<request id>, response={"confirmed": true|false})` per
  pending request, keyed by the scripted call id of its `originalFunctionCall`, to the variant's session
  service. ADK's `request_confirmation` processor re-executes a confirmed tool; a rejected one gets ADK's
  `{"error": "This tool call is rejected."}` (the model is called again). ADK drops a confirmation it already
  consumed (the same pause resumed twice) and then ends the invocation with no model call (2.13; 2.8.0 and
  earlier run the confirmed tool again: probes/google_adk/fair.py confirm). In `in-memory` the pause cannot
  survive a new process: the resume meets no session and ADK raises `SessionNotFoundError` (recorded as it is:
  failure="other"); the variant declares `pause_survives_restart=False`.
- `approval: deny`, by the scenario's intent (`policy.deny`): a `before_tool_callback` (records an `authorize`
  event) that returns `{"error": "<tool> is denied by policy"}`: ADK skips the tool and sends that dict as its
  response. "continue": nothing else (the model is called again). "stop": the callback also sets
  `tool_context.actions.skip_summarization = True` — ADK's documented "do not call the model to summarize this
  function response": the function response event is then a final response (`Event.is_final_response`) and
  the invocation ends. `denied=True` only when the segment's last event is that function response with
  skip_summarization set by the deny callback (the framework's own record of the stop).
- tool_choice (opening or later call; Gemini variants): a `before_model_callback` sets
  `llm_request.config.tool_config = ToolConfig(function_calling_config=FunctionCallingConfig(mode=ANY|NONE|AUTO,
  allowed_function_names=[...]))` for the call the turn answers, chosen from the contents about to be sent (the
  callback docs' way to modify the request before it goes out). `anthropic`: unsupported (above).

- sub-agents (`scenario.agents`): ADK's multi-agent docs' explicit invocation, "agent as a tool": each child is an
  `LlmAgent(name=<id>, model=<the parent's model object>, description=spec.description,
  instruction=spec.instructions, tools=<its own ledger-backed tools, built as above>)` wrapped in
  `AgentTool(agent=child)` (google.adk.tools.agent_tool; every other parameter at its default) among the main
  agent's tools; the main agent gets `instruction=scenario.instructions` ("" when unset, as before). AgentTool's
  declaration is the child's name with one required string `request` (the task) and the child's description.
  What AgentTool does with it, read in its `run_async` (2.13) and measured (probes/google_adk/agent_tool.py):
  the child runs in AgentTool's own `Runner` over a fresh `InMemorySessionService` (a nested invocation), with the
  parent's RunConfig; its events are not forwarded, only its last text becomes the function response. So the
  parent's events (what the segment counts) carry the main agent's responses and usage only: subagent_usage
  reports 2 requests and 2000 / 200 tokens for 4 served (4000 / 400). `max_llm_calls` reaches the child, but its
  nested invocation has its own counter: subagent_runaway lets research make 8 calls (plus main's 1: 9 served)
  before the child's `LlmCallsLimitExceededError` leaves the parent's run_async (limit_steps; runtime_steps is
  the parent's counter, 1). A child's tool error takes the tool-error path above inside the nested run: raised
  (default: the ToolFailed leaves both runs, failed) or the error dict (`error-dict`: the child answers, the
  parent goes on, incomplete). A confirmation inside the child cannot pause the run: the nested invocation ends on
  its `adk_request_confirmation`, and AgentTool, finding a long-running call unanswered, logs that it "cannot
  resume because its nested session is discarded" and returns the text "Error: agent '<id>' stopped waiting on
  unresolved long-running tool call(s) ..., which AgentTool cannot resume." as the child's result; the parent
  answers and the run returns (subagent_approval: incomplete, nothing to resume, issue_refund not run). With
  `streaming_mode=SSE` AgentTool forces the nested run to StreamingMode.NONE: the child's requests are not
  streamed. The variants inherit this, but `single-turn` and `transfer`. `settings.subagents` says what each child got.
  Variant `single-turn`: the default with the children as `LlmAgent(sub_agents=[LlmAgent(..., mode='single_turn')])`,
  which AgentTool's 2.13 docstring prefers ("Direct usage of AgentTool is discouraged") and its pause warning names
  ("Configure the agent under sub_agents (e.g. with mode='single_turn' ...) if it needs to pause and resume"). It
  stays a variant, not the default: LlmAgent has no `mode` before 2.x (the adapter runs from 1.22; the variant reports
  itself unavailable there) and the multi-agent docs' explicit invocation is AgentTool. The parent exposes each child
  as a tool named after it (`_SingleTurnAgentTool`, parameter `request`) and runs it inline with `ctx.run_node`: one
  invocation, one LLM-call counter, the child's events among the run's. Measured: reported = served (subagent_usage 4
  requests, 4000 / 400); subagent_runaway stops at 8 requests (main 1, research 7) under the task's max_llm_calls=8:
  the research's refused call comes back to main as "Error running sub-agent: Dynamic node research failed"
  (single_turn's tool catches the child's exception; the text as the probe prints it for its billing child) and main's
  next call is refused too, so ADK's counter reads 10 and `LlmCallsLimitExceededError` leaves run_async (limit_steps);
  the child's confirmation pauses the whole run on the parent's `adk_request_confirmation`, and the resume continues
  the child (subagent_approval completed: billing 3 requests over both segments, lookup_refund once); a child's raised
  tool error is caught the same way and becomes that text for main (subagent_tool_failure incomplete: main 2, billing
  1).
  Variant `transfer`: the default with the children as `sub_agents=[LlmAgent(...)]` in their default (chat) mode: ADK
  offers the parent `transfer_to_agent(agent_name)` (the server fills agent_name with the child's id), and the child
  takes over the invocation and answers the user itself: a handoff, not call and return, so the main agent is not
  called again (subagent_usage: main 1, billing 2, completed from the child's text). The child runs in the parent's
  invocation and session: reported = served, one LLM-call counter (subagent_runaway: 8 requests, main 1 and research
  7, counter 9, limit_steps), its confirmation pauses the run and the resume continues it (subagent_approval
  completed, main 1, billing 3), its raised tool error leaves the run (failed). The child gets the observing
  before_agent callback: on a resume it is the agent that starts.
Structured answers (scenario `output`), every variant: ADK's docs' `LlmAgent(output_schema=<pydantic model>,
output_key=...)` (agents/llm_agent.py:449-470). The model is built with `pydantic.create_model(<output name>,
__config__=ConfigDict(extra="forbid"), __doc__=<description>, <field>=(<type>, Field(description=...)))`, an enum
a `Literal`, and the check an `AfterValidator` on its field raising `ValueError(<message>)` (`_output_schema`);
`output_key="structured_answer"`. Which of ADK's two paths a request takes is ADK's: with tools and a model whose
`capabilities.output_schema_and_tools` is False — the Gemini API (`_capabilities.py:30-51`: True on Vertex AI only)
and AnthropicLlm (no override: BaseLlm's name-based fallback, False for a claude id) — the `output_schema` request
processor adds the `set_model_response` tool beside the agent's own (with an instruction to answer through it;
flows/llm_flows/prompt/_schema.py:48-68) and no response schema (flows/llm_flows/basic.py:137-139); without tools,
the request carries the schema as its response schema and the final text goes through `validate_schema`, which
raises (llm_agent.py:1140-1147, utils/_schema_utils.py:235-258). Every output scenario has a tool (get_ticket):
every variant answers through `set_model_response` (`settings.output.path`). Its `run_async`
(tools/set_model_response_tool.py:300-329) validates the call's args with `model_validate`: a ValidationError
(the enum, the check's ValueError) is the call's function response `{"error": "Validation Error found: ...
Recall the set_model_response function correctly, fix the errors, and call it again ..."}` and the loop goes on;
a valid one is stored on the event's actions and the flow yields a final model event whose text is the object's
JSON (flows/llm_flows/core/_function_call_postprocessor.py:115-123), which `__maybe_save_output_to_state`
validates again and writes to state_delta[output_key]. There is no retry budget of ADK's own: each correction is
one more LLM call under the invocation's max_llm_calls (probes/google_adk/output_schema.py: 12 rejected answers
then a valid one complete in 14 requests with no limit; never valid under max_llm_calls=4: 4 requests, then
LlmCallsLimitExceededError). Neither path's declaration is strict: the server serves every scripted object
(output_constrained false). Measured, every variant: output_invalid_then_valid and output_check_rejects complete
in 3 requests (2 answers); output_never_valid stops on max_llm_calls at 4 requests (limit_steps, runtime_steps 5).
final_output = the last state_delta[output_key] of the segment's events (validate_schema's `model_dump`, JSON);
final_text stays the final event's text (the object's JSON); `extra.output_rejections` counts the
set_model_response calls answered with the error; tool_calls_requested leaves set_model_response out (the answer,
not a tool call of the task). A ValidationError of the output schema out of run_async (the no-tools path) is
failure="model". Releases: 2.13's source is read here; `capabilities` is 2.x's (settings record None where the
model has none).
The caller's cancel (scenario `cancel`), every variant: `Runner.run_async(..., abort_signal=asyncio.Event())`
(runners.py:1139, 1159; what ADK's own api_server passes and sets when its client disconnects) and the event set
when the harness says cancel; the adapter then reads run_async to its end and cancels nothing itself. With an
LlmAgent root, ADK's node runner stops consuming, cancels the root task (the tool or model request in flight is
cancelled) and seals the invocation (google/adk/events/_abort_events.py): each dangling function call gets a
synthetic function response with `error_code='INVOCATION_ABORTED'` ("Invocation was aborted by client."), or one
content-less abort event when no call dangles (a model request in flight). run_async returns normally, within
~0.05 s of the abort on every variant: the segment ends `cancelled` with terminal_reason INVOCATION_ABORTED (when
sealing events came), `extra.sealed_calls` the calls sealed; counters from the events before the abort (the
request in flight produced no event: its usage is never reported). Measured: cancel_during_tool 1 request,
get_ticket abandoned; cancel_during_model 2 requests, 1 reported, 1000 / 100 tokens (probes/google_adk/abort.py).
The snapshot (`cancelled.json`, told apart from a confirmation's `pause.json`) keeps the session id. Resume (another
process): the session continued as ADK continues any conversation, another `run_async(new_message=...)` on the
same session id of the task's SqliteSessionService, the message a user's "Please continue the task."; the session
holds the history and the sealed calls, which ADK does not replay: the model's next request carries the sealed
call's abort error as its function response, and post_to_portal is not run again; whether the aborted lookup runs
again is the model's choice (the probe's model calls it again; cancel_then_resume's scripted model does: completed,
post_to_portal 1, lookup_policy 2, 4 requests over both segments). `in-memory`: the InMemorySessionService dies with
the cancelled run's process, so nothing is kept: `resume_after_cancel` is unsupported, and a scenario that needs it
is not run (its cancel is measured by the other cancel scenarios).

Variant `guarded` (issue 41): the default with loopbench.guard installed through ADK's agent callbacks
(loopbench/guard/bindings/google_adk.py `GuardCallbacks`, appended after the adapter's own: a denial answers first),
the guard's pause through ADK's tool confirmation (`tool_context.request_confirmation`, resumed as the default) and
the root agent's `timeout` set to the wall-clock left (ADK's NodeTimeoutError cuts a call in flight). Each AgentTool
child gets `guard.child()` with `can_pause=False` (its nested session cannot pause the parent). Its tools raise a
`TimeoutError` for a timeout and `RecoverableToolError` (a ToolFailed) for a recoverable error, which the guard
hands to the model; native limits as the default.

Signal mapping (no scenario knowledge): `LlmCallsLimitExceededError` -> limit="steps" (raised); the model
client's own error in the chain (`google.genai.errors.APIError`; `anthropic.APIError` in the `anthropic` variant,
which ADK 2.8+ wraps a 429 of as `_AnthropicRateLimitError`), or any exception raised inside the model client (a
body that is not JSON, a cut connection: kit.raised_in_model_client) -> failure="model"; `ToolFailed` in the chain ->
failure="tool"; other exceptions -> failure="other"; pending `adk_request_confirmation` calls at the end -> paused.
Counters per segment (ADK's counters are per invocation, not cumulative): model_requests_reported = the
model-response events of the segment (events carrying the response's `usage_metadata` or `finish_reason`: one per
model response ADK reported), tokens = the sum of their `usage_metadata` (prompt / candidates token counts; a
response whose usage lacks a count makes that total None). When the run raised in a model call, the failed
request (and any client retry) left no event: requests and tokens are unknown (None); when the run raised before
any event (e.g. `SessionNotFoundError` on an in-memory resume) ADK reported nothing: None, not 0. A run that
returned with no event (a confirmation already consumed) reported 0 responses. runtime_steps = ADK's own LLM
call counter (`InvocationContext._invocation_cost_manager._number_of_llm_calls`, private, read through the
callback context): it counts every call it let through and also the one refused by max_llm_calls (it
increments, then checks).
"""

from __future__ import annotations

import inspect
import json
import uuid
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters import guarded
from loopbench.adapters.kit import ToolFailed, exception_chain, in_chain, pydantic_output_model, raised_in_model_client
from loopbench.guard.bindings.google_adk import LACKS as GUARD_LACKS
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Adapter, Capabilities, Intent, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX, GEMINI_ID_PREFIX, neutral_id
from loopbench.harness.models import Provider
from loopbench.harness.record import LimitTranslation, NativeSignals, PendingCall, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario
from loopbench.harness.scenario.model import MAIN_AGENT, OutputSpec

APP_NAME = "loopbench"
USER_ID = "user"
AGENT_NAME = "assistant"
SESSION_DB = "adk_sessions.db"
PAUSE_FILE = "pause.json"
CANCEL_FILE = "cancelled.json"  # a cancel snapshot (the session to continue), told apart from a pause's
ABORTED = "INVOCATION_ABORTED"  # google.adk.events._abort_events._INVOCATION_ABORTED: the sealing events' error_code
# what the caller says to continue the cancelled task in its session: a chat app's next user turn (ADK's docs
# continue a session with another run_async(new_message=...) on the same session id)
CONTINUE_MESSAGE = "Please continue the task."
CANCEL_ABORT = ("Runner.run_async(..., abort_signal=asyncio.Event()) set on the cancel (google/adk/runners.py:1139, "
                "1159; the consumer stops, the root task is cancelled, dangling calls are sealed with "
                "INVOCATION_ABORTED: google/adk/events/_abort_events.py)")
RESUME_SESSION = ("a new run_async(new_message=<the user's 'continue'>) on the same session id in a new process "
                  "(SqliteSessionService in the task dir): the session holds the history and the sealed calls")
# google.adk.utils._function_call_names.REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
CONFIRMATION = "adk_request_confirmation"
DENY_MARK = "denied by policy"
UNSUPPORTED_NOTES = {
    "max_total_tokens": "no native token budget",
    "max_cost_usd": "no native cost budget",
    "deadline_s": "no run deadline (RunConfig has none)",
}
_MODES = {"required": "ANY", "none": "NONE", "auto": "AUTO"}
TOOL_ERROR_RAISED = ("the tool raises ToolFailed; with no on_tool_error_callback ADK re-raises it out of the run "
                     "(the run ends)")
TOOL_CHOICE_AUTO_ONLY = ("unsupported: AnthropicLlm sends tool_choice {'type': 'auto'} whenever the agent has tools "
                         "and ignores llm_request.config.tool_config (models/anthropic_llm.py generate_content_async)")
# LlmAgent.output_key: the session-state key ADK writes the validated structured answer to
OUTPUT_KEY = "structured_answer"
SET_MODEL_RESPONSE = "set_model_response"  # google.adk.tools.set_model_response_tool.SetModelResponseTool.NAME
STRUCTURED_OUTPUT = (
    "LlmAgent(output_schema=<a pydantic model: pydantic.create_model(<output name>, extra='forbid'), enum -> "
    "Literal>, output_key=...): with tools, on a model whose capabilities.output_schema_and_tools is False (the "
    "Gemini API, AnthropicLlm), ADK offers its set_model_response tool, validates the call's args with "
    "model_validate and makes the validated object the final response (flows/llm_flows/prompt/_schema.py:48-68, "
    "tools/set_model_response_tool.py:300-329, flows/llm_flows/core/_function_call_postprocessor.py:115-123); "
    "without tools, the model's response schema (llm_request.set_output_schema) and validate_schema on the final "
    "text, which raises (agents/llm_agent.py:1140-1147)")
OUTPUT_CHECK = (
    "a pydantic AfterValidator on the field raising ValueError(<message>): set_model_response answers its "
    "ValidationError to the model as {'error': 'Validation Error found: ...'} (tools/set_model_response_tool.py:"
    "319-327): no retry budget of its own, each correction one more LLM call under max_llm_calls")
TOOL_ERROR_DICT = ("the tool returns the function-tools guide's error dict {'status': 'error', 'error_message': ...} "
                   "(the model gets it; the loop goes on)")


class GoogleADKAdapter(Adapter):
    id = "google-adk"
    distribution = "google-adk"
    display_name = "Google ADK"
    sdk_modules = ("google.adk", "google.genai", "anthropic")
    claim_prefix = "ADK"
    model_class: ClassVar[str | None] = "google.adk.models.Gemini"
    model_provider: ClassVar[Provider | None] = "gemini"
    # anthropic: the `anthropic` variant's client (the runner lists a framework's packages once, from this class)
    packages = ("google-genai", "anthropic")
    extra = "google-adk"
    companions = ("google-genai",)
    plain_script = "google_adk.py"
    # tried: 1.22.0 runs (and 1.33.0, 2.0.0, 2.8.0); 1.18.0 has no SqliteSessionService and its Gemini no base_url
    min_version = (1, 22)
    about = ("ADK's quick start: LlmAgent + Runner with ADK's defaults and its home provider's class, "
             "Gemini(base_url) over google-genai, sending the model table's Gemini model; max model calls -> "
             "RunConfig.max_llm_calls; sessions in SqliteSessionService (approvals -> tool confirmation)")
    tool_errors_as_dict: ClassVar[bool] = False
    # the session service outlives the segment's process (on disk): a cancelled task can be continued
    keeps_sessions: ClassVar[bool] = True
    # RunConfig.streaming_mode, by StreamingMode's member name; None: RunConfig's default (NONE), not passed
    streaming_mode: ClassVar[str | None] = None
    # the prefix the model's wire protocol puts before a scripted call id (Gemini's functionCall ids: fc_<id>)
    call_id_prefix: ClassVar[str] = GEMINI_ID_PREFIX
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls"}),
        step_unit="LLM call (InvocationContext counter, per invocation)",
        pause="snapshot",
        pause_survives_restart=True,
        deny="before_tool_callback returning an error dict (continue); plus skip_summarization=True (stop)",
        notes=("max_llm_calls is per invocation: a resume is a new invocation with a fresh budget",
               "Gemini: neither ADK nor google-genai retries a failed model request by default (retry_options "
               "unset): the first error ends the run",
               "sessions in SqliteSessionService in the task dir, whatever the scenario"),
    )
    mechanism_table: ClassVar[dict[Intent, str]] = {
        "cancel": CANCEL_ABORT,
        "resume_after_cancel": RESUME_SESSION,
        "delegate": "AgentTool(agent=LlmAgent(name=<child id>, description=..., instruction=..., tools=...)) "
                    "(explicit invocation, agent as a tool: the child runs in AgentTool's own nested Runner and "
                    "invocation with the parent's RunConfig; its text is the tool's result)",
        "deny_stop": "before_tool_callback returns {'error': ...} (the tool is skipped) and sets "
                     "tool_context.actions.skip_summarization=True (the response is final; the invocation ends)",
        "deny_continue": "before_tool_callback returns {'error': ...} (the tool is skipped, the dict is its response; "
                         "the model is called again)",
        "approval_pause": "FunctionTool(require_confirmation=callable) -> adk_request_confirmation long-running "
                          "call ends the invocation; SqliteSessionService in the task dir; resume = "
                          "a FunctionResponse(adk_request_confirmation, {'confirmed': ...}) per pending request",
        "reject": "FunctionResponse(adk_request_confirmation, {'confirmed': False}): ADK answers the call with "
                  "{'error': 'This tool call is rejected.'} and calls the model again",
        "tool_choice_first": "before_model_callback sets llm_request.config.tool_config (FunctionCallingConfig "
                             "mode ANY/NONE/AUTO, allowed_function_names) for the call the turn answers",
        "tool_choice_later": "before_model_callback sets llm_request.config.tool_config (FunctionCallingConfig "
                             "mode ANY/NONE/AUTO, allowed_function_names) for the call the turn answers",
        "tool_error_recoverable": TOOL_ERROR_RAISED,
        "tool_error_fatal": TOOL_ERROR_RAISED,
        "structured_output": STRUCTURED_OUTPUT,
        "output_check": OUTPUT_CHECK,
    }

    @classmethod
    def warm(cls) -> None:
        import google.adk.agents  # noqa: F401
        import google.adk.models  # noqa: F401
        import google.adk.runners  # noqa: F401
        import google.adk.sessions.sqlite_session_service  # noqa: F401
        import google.genai  # noqa: F401

    def _gid(self, call_id: str | None) -> str | None:
        """The scripted call id behind the model's call id."""
        return neutral_id(call_id, self.call_id_prefix)

    # ------------------------------------------------------------------ the model
    def _model(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """ADK's own Gemini class (its quick start's) sending the model table's Gemini model, and what it was set
        up with."""
        from google.adk.models import Gemini

        model = _gemini(Gemini, self.model_id(scenario), ctx.base_url, ctx.api_key)
        how = ("Gemini(client_kwargs={'api_key': ...})" if "client_kwargs" in Gemini.model_fields
               else "a Gemini subclass overriding api_client (the release has no client_kwargs)")
        return model, {"base_url": "the scripted server (Gemini.base_url)", "client": how, "retry_options": None}

    @staticmethod
    def _model_errors() -> tuple[type[BaseException], ...]:
        """The model client's own error types: one in an exception's chain means the model request failed."""
        from google.genai.errors import APIError

        return (APIError,)

    @staticmethod
    async def _close_model(model: Any) -> None:
        """Close the HTTP client the model used in this segment (google-genai's async client)."""
        api = model.__dict__.get("client") or model.api_client  # the per-loop client the model built for this run
        await api.aio.aclose()

    # ------------------------------------------------------------------ sessions
    async def prepare(self, scenario: Scenario, ctx: RunContext) -> None:
        """The variant's session service, opened as an application opens its store before it serves a run: the
        worker calls this before the segment's clock starts."""
        self._service = self._session_service(ctx)

    def _opened(self, ctx: RunContext) -> tuple[Any, str]:
        return getattr(self, "_service", None) or self._session_service(ctx)

    def _session_service(self, ctx: RunContext) -> tuple[Any, str]:
        """The variant's session store, whatever the scenario: ADK's on-disk SqliteSessionService in the task dir
        (shared by every segment of the business task, as an application's database is)."""
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        ctx.task_dir.mkdir(parents=True, exist_ok=True)
        return SqliteSessionService(str(ctx.task_dir / SESSION_DB)), "SqliteSessionService (on disk, in the task dir)"

    # ------------------------------------------------------------------ building
    def _tools(self, scenario: Scenario, ledger: LedgerClient, names: list[str]) -> list[Any]:
        from google.adk.tools import FunctionTool, ToolContext
        from google.genai import types

        as_dict = self.tool_errors_as_dict
        gid = self._gid
        tool_error = self._tool_error

        class ScenarioTool(FunctionTool):
            """A FunctionTool over one scenario tool: ADK's own argument filtering, mandatory-argument check and
            confirmation gate, with the declaration taken from the scenario's JSON schema."""

            def __init__(self, name: str) -> None:
                spec = scenario.tools[name]
                self._declared = types.FunctionDeclaration(name=name, description=spec.description,
                                                           parameters_json_schema=spec.parameters)

                async def invoke(tool_context: ToolContext, **args: Any) -> Any:
                    out = await ledger.call(name, args, gid(tool_context.function_call_id))
                    if not out.ok:
                        if as_dict:  # the function-tools guide's error convention: the model sees it
                            return {"status": "error", "error_message": out.text}
                        raise tool_error(out)  # ADK's default path: no on_tool_error_callback -> re-raised
                    return out.text

                async def needs_approval(tool_context: ToolContext, **args: Any) -> bool:
                    await ledger.authorize(name, args, gid(tool_context.function_call_id), "approval required")
                    return True

                # the scenario's parameters as the function's signature: FunctionTool passes exactly these
                required = set(spec.parameters.get("required") or [])
                params = [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=Any,
                                            default=inspect.Parameter.empty if p in required else None)
                          for p in (spec.parameters.get("properties") or {})]
                params.append(inspect.Parameter("tool_context", inspect.Parameter.KEYWORD_ONLY,
                                                annotation=ToolContext))
                invoke.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
                # resolved here: the module's lazy imports are not in its globals (ADK reads the type hints)
                invoke.__annotations__ = {p.name: p.annotation for p in params} | {"return": Any}
                needs_approval.__annotations__ = {"tool_context": ToolContext, "args": Any, "return": bool}
                invoke.__name__ = name
                invoke.__doc__ = spec.description
                super().__init__(invoke, require_confirmation=needs_approval if spec.approval == "required" else False)

            def _get_declaration(self) -> Any:
                return self._declared.model_copy(deep=True)

        return [ScenarioTool(n) for n in names]

    def _tool_error(self, out: Any) -> Exception:
        """What a tool raises for a ledger error (`out`: its ToolOutcome): `ToolFailed`, whatever its kind."""
        return ToolFailed(out.text)

    def _agent(self, scenario: Scenario, ctx: RunContext, probe: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        from google.adk.agents import LlmAgent
        from google.genai import types

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        model, settings = self._model(scenario, ctx)
        denied = {n for n, s in scenario.tools.items() if s.approval == "deny"}
        stop = scenario.policy.deny == "stop"
        rules = scenario.tool_choice_rules()

        async def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
            if tool.name not in denied:
                return None
            await ledger.authorize(tool.name, args, self._gid(tool_context.function_call_id), DENY_MARK)
            probe["deny_fired"] = probe.get("deny_fired", 0) + 1
            if stop:  # the function response is final: ADK does not call the model again
                tool_context.actions.skip_summarization = True
            return {"error": f"{tool.name} is {DENY_MARK}; it was not executed."}

        def observe(callback_context: Any) -> None:  # ADK's own LLM-call counter lives in the invocation context
            inv = getattr(callback_context, "_invocation_context", None)
            probe["cost_manager"] = getattr(inv, "_invocation_cost_manager", None)

        async def before_agent(callback_context: Any) -> None:
            observe(callback_context)
            return None

        async def before_model(callback_context: Any, llm_request: Any) -> None:
            observe(callback_context)
            if not rules:
                return None
            choice = _tool_choice_for(scenario, llm_request.contents or [], self.call_id_prefix)
            if choice is None:
                return None
            llm_request.config = llm_request.config or types.GenerateContentConfig()
            if choice in _MODES:
                fcc = types.FunctionCallingConfig(mode=_MODES[choice])
            else:  # a tool's name: ANY restricted to it
                fcc = types.FunctionCallingConfig(mode="ANY", allowed_function_names=[choice])
            llm_request.config.tool_config = types.ToolConfig(function_calling_config=fcc)
            probe.setdefault("tool_choice_sent", []).append(choice)
            return None

        kwargs: dict[str, Any] = {"before_agent_callback": before_agent, "before_model_callback": before_model}
        if denied:
            kwargs["before_tool_callback"] = before_tool
            settings["deny"] = {"tools": sorted(denied), "intent": scenario.policy.deny,
                                "how": "before_tool_callback -> error dict" + (
                                    " + skip_summarization=True" if stop else "")}
        if rules:
            settings["tool_choice"] = {r.after_call or "opening call": r.choice for r in rules}
        if scenario.output is not None:  # ADK's structured answer: output_schema + output_key
            kwargs["output_schema"] = _output_schema(scenario.output)
            kwargs["output_key"] = OUTPUT_KEY
            probe["output_name"] = scenario.output.name
        delegation = self._delegation(scenario, ledger, model, before_tool if denied else None, settings,
                                      before_agent)
        tools = [*self._tools(scenario, ledger, scenario.tools_of(MAIN_AGENT)), *delegation.pop("tools", [])]
        # the main agent's system prompt is the scenario's (the server tells agents apart by it); "" as before
        agent = LlmAgent(name=AGENT_NAME, model=model, instruction=scenario.instructions or "", tools=tools,
                         **delegation, **kwargs)
        if scenario.output is not None:
            settings["output"] = _output_settings(scenario.output, model, bool(tools))
        return agent, settings

    def _child(self, scenario: Scenario, child: str, ledger: LedgerClient, model: Any, before_tool: Any,
               **extra: Any) -> Any:
        """A child LlmAgent: its own name, description, instruction and ledger-backed tools, the parent's model
        object and deny callback; not the observing callbacks (the segment reads the run's own counter)."""
        from google.adk.agents import LlmAgent

        spec = scenario.agents[child]
        if before_tool is not None:
            extra["before_tool_callback"] = before_tool
        return LlmAgent(name=child, model=model, description=spec.description, instruction=spec.instructions,
                        tools=self._tools(scenario, ledger, scenario.tools_of(child)), **extra)

    def _delegation(self, scenario: Scenario, ledger: LedgerClient, model: Any, before_tool: Any,
                    settings: dict[str, Any], before_agent: Any) -> dict[str, Any]:
        """The main agent's keyword arguments that reach the children (none without agents). Here ADK's
        multi-agent docs' explicit invocation ("agent as a tool"): one `AgentTool(agent=<child LlmAgent>)` per
        child among the tools, AgentTool's defaults otherwise. AgentTool runs the child in its own Runner (its
        own invocation, its own LLM-call counter and events)."""
        if not scenario.agents:
            return {}
        from google.adk.tools.agent_tool import AgentTool

        tools = [AgentTool(agent=self._child(scenario, child, ledger, model, before_tool)) for child in scenario.agents]
        settings["subagents"] = {
            child: {"tool": f"AgentTool(agent=LlmAgent(name={child!r}))", "skip_summarization": False,
                    "runner": "AgentTool's own Runner over an InMemorySessionService (a nested invocation)",
                    "run_config": "the parent's RunConfig (max_llm_calls counted per nested invocation; "
                                  "streaming_mode forced to NONE)",
                    "usage": "the child's events stay in the nested run: the parent's events carry the main "
                             "agent's usage only"}
            for child in scenario.agents}
        # ADK 2.x's AgentTool docstring prefers sub_agents=[...] with mode='single_turn' (the `single-turn`
        # variant; 1.22, the minimum, has no mode); AgentTool, the multi-agent docs' explicit invocation, is in
        # every supported release: the default
        settings["delegation"] = ("AgentTool (the multi-agent docs' explicit invocation); mode='single_turn' "
                                  "sub_agents: the single-turn variant; chat-mode sub_agents (transfer_to_agent): "
                                  "the transfer variant")
        return {"tools": tools}

    def _limits(self, scenario: Scenario) -> tuple[dict[str, Any], dict[str, LimitTranslation]]:
        from google.adk.agents.run_config import RunConfig

        n = scenario.limits.max_model_calls
        limits: dict[str, LimitTranslation] = {}
        kwargs: dict[str, Any] = {}
        if n is None:
            default = RunConfig().max_llm_calls
            limits["max_model_calls"] = LimitTranslation(neutral=None, native=f"max_llm_calls default ({default})")
        else:
            kwargs["max_llm_calls"] = n
            limits["max_model_calls"] = LimitTranslation(
                neutral=n, native=f"RunConfig(max_llm_calls={n})",
                note="checked before each model call; per invocation (a resume starts again at 0)")
        # the limits it has no control for, with why (Adapter.declared() lists them as unsupported)
        for key, entry in self.unsupported_limits(scenario).items():
            limits[key] = entry.model_copy(update={"note": UNSUPPORTED_NOTES[key]})
        return kwargs, limits

    # ------------------------------------------------------------------ running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        from google.genai import types

        service, label = self._opened(ctx)
        session_id = f"s-{uuid.uuid4().hex[:12]}"
        await service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
        message = types.Content(role="user", parts=[types.Part(text=scenario.prompt)])
        return await self._drive(scenario, ctx, service, label, session_id, message, [])

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        from google.genai import types

        if (snapshot / CANCEL_FILE).exists():  # continue the cancelled task: the user's next turn in its session
            meta = json.loads((snapshot / CANCEL_FILE).read_text())
            service, label = self._opened(ctx)
            message = types.Content(role="user", parts=[types.Part(text=CONTINUE_MESSAGE)])
            notes = [f"continued session {meta['session_id']} after the cancel with a user message "
                     f"({CONTINUE_MESSAGE!r}); {meta['sealed_calls']} call(s) sealed {ABORTED} in it"]
            return await self._drive(scenario, ctx, service, label, meta["session_id"], message, notes,
                                     watch_cancel=False)
        meta = json.loads((snapshot / PAUSE_FILE).read_text())
        parts = []
        for req in meta["requests"]:
            decision = decisions.get(req["call_id"] or "")
            if decision not in ("approve", "reject"):
                raise ValueError(f"no decision for pending call {req['call_id']} ({req['tool']})")
            parts.append(types.Part(function_response=types.FunctionResponse(
                name=CONFIRMATION, id=req["request_id"], response={"confirmed": decision == "approve"})))
        service, label = self._opened(ctx)
        message = types.Content(role="user", parts=parts)
        notes = [f"resumed session {meta['session_id']} with {len(parts)} confirmation response(s)"]
        return await self._drive(scenario, ctx, service, label, meta["session_id"], message, notes)

    async def _drive(self, scenario: Scenario, ctx: RunContext, service: Any, label: str, session_id: str,
                     message: Any, notes: list[str], watch_cancel: bool = True) -> SegmentResult:
        import asyncio

        from google.adk.agents.run_config import RunConfig
        from google.adk.runners import Runner

        probe: dict[str, Any] = {}
        agent, settings = self._agent(scenario, ctx, probe)
        run_kwargs, limits = self._limits(scenario)
        settings.update(session_service=label, **run_kwargs)
        if self.streaming_mode is not None:  # the streaming variant: RunConfig(streaming_mode=StreamingMode.<mode>)
            from google.adk.agents.run_config import StreamingMode

            run_kwargs["streaming_mode"] = StreamingMode[self.streaming_mode]
            settings["streaming_mode"] = f"StreamingMode.{self.streaming_mode}"
        common: dict[str, Any] = dict(settings=settings, limits=limits, notes=notes)
        runner = Runner(agent=agent, app_name=APP_NAME, session_service=service)
        events: list[Any] = []
        # the caller's cancel (a scenario that has one; never again on the resume after it): ADK's abort signal
        abort: asyncio.Event | None = None
        extra_run: dict[str, Any] = {}
        if watch_cancel and scenario.cancel is not None:
            abort = asyncio.Event()
            extra_run["abort_signal"] = abort
            settings["abort_signal"] = "asyncio.Event(), set when the caller cancels"

        async def consume() -> None:
            async for event in runner.run_async(user_id=USER_ID, session_id=session_id, new_message=message,
                                                run_config=RunConfig(**run_kwargs), **extra_run):
                events.append(event)

        cancel_at: float | None = None
        try:
            cancel_at = await _abort_when_cancelled(asyncio.ensure_future(consume()), abort, ctx)
        except _CancelWaitFailed:
            raise
        except Exception as exc:  # the framework ended by raising: map the signal
            # a failed model request leaves no event, and a run that raised before any event reported nothing:
            # either way the counts are unknown, not 0
            known = bool(events) and not in_chain(exc, self._model_errors())
            counters = self._counters(events, probe, known=known)
            signals = self._raised(exc, probe)
            if scenario.output is not None:  # the corrections ADK asked for before it raised
                signals = signals.model_copy(update={"extra": {**signals.extra,
                                                               "output_rejections": _output_rejections(events)}})
            return SegmentResult(signals=signals, counters=counters, **common)
        finally:
            await self._close(runner, agent)
        counters = self._counters(events, probe, known=True)
        if cancel_at is not None:
            return self._cancelled(scenario, ctx, events, counters, cancel_at, session_id, common)
        pending = self._pending(events)
        extra: dict[str, Any] = {"events": len(events)}
        partial = [e for e in events if e.partial]
        if partial:  # streaming: the chunk events ADK yields before each aggregated response (never counted)
            extra["partial_events"] = len(partial)
            extra["partial_events_with_usage"] = sum(1 for e in partial if e.usage_metadata is not None)
        if probe.get("tool_choice_sent"):
            extra["tool_choice_sent"] = probe["tool_choice_sent"]
        if pending:
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            meta = {"session_id": session_id, "session_service": label, "requests": pending}
            (ctx.snapshot_dir / PAUSE_FILE).write_text(json.dumps(meta, indent=1))
            calls = [PendingCall(call_id=p["call_id"], tool=p["tool"], args=p["args"]) for p in pending]
            signals = NativeSignals(ended="paused", pending=calls,
                                    extra={**extra, "confirmation_requests": len(pending)})
            return SegmentResult(signals=signals, counters=counters, snapshot=str(ctx.snapshot_dir), **common)
        last = events[-1] if events else None
        denied = bool(probe.get("deny_fired")) and last is not None and bool(last.actions.skip_summarization) \
            and any(DENY_MARK in json.dumps(fr.response or {}) for fr in last.get_function_responses())
        if denied:
            extra["deny_event"] = "final function response (skip_summarization) from before_tool_callback"
        if not events:
            notes.append("the invocation produced no event (nothing left to do in the session)")
        final_output = _final_output(events) if scenario.output is not None else None
        if scenario.output is not None:  # the corrections ADK asked for: set_model_response calls answered an error
            extra["output_rejections"] = _output_rejections(events)
        signals = NativeSignals(ended="returned", final_text=_final_text(events), final_output=final_output,
                                denied=denied, finish_reason=_finish_reason(events), extra=extra)
        return SegmentResult(signals=signals, counters=counters, **common)

    def _cancelled(self, scenario: Scenario, ctx: RunContext, events: list[Any], counters: ReportedCounters,
                   drained_s: float, session_id: str, common: dict[str, Any]) -> SegmentResult:
        """The run after the abort signal was set and run_async ended: `cancelled`, with the events ADK yielded
        (the sealing ones carry error_code INVOCATION_ABORTED) and, where the session outlives the process,
        the session to continue."""
        sealed = [e for e in events if e.error_code == ABORTED]
        sealed_calls = [{"call_id": self._gid(fr.id), "tool": fr.name} for e in sealed
                        for fr in e.get_function_responses()]
        extra: dict[str, Any] = {"events": len(events), "abort_events": len(sealed), "sealed_calls": sealed_calls,
                                 "after_abort_s": round(drained_s, 3)}
        partial = [e for e in events if e.partial]
        if partial:
            extra["partial_events"] = len(partial)
        signals = NativeSignals(ended="cancelled", terminal_reason=ABORTED if sealed else None,
                                final_text=_final_text([e for e in events if e.error_code != ABORTED]), extra=extra)
        snapshot = None
        if self.keeps_sessions:
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            meta = {"kind": "cancel", "session_id": session_id, "sealed_calls": len(sealed_calls)}
            (ctx.snapshot_dir / CANCEL_FILE).write_text(json.dumps(meta, indent=1))
            snapshot = str(ctx.snapshot_dir)
        return SegmentResult(signals=signals, counters=counters, snapshot=snapshot,
                             **common)

    # ------------------------------------------------------------------ mapping
    def _pending(self, events: list[Any]) -> list[dict[str, Any]]:
        """The confirmation requests the segment ended on: adk_request_confirmation calls not answered later."""
        answered = {fr.id for e in events for fr in e.get_function_responses() if fr.name == CONFIRMATION}
        out = []
        for e in events:
            for fc in e.get_function_calls():
                if fc.name != CONFIRMATION or fc.id in answered:
                    continue
                original = (fc.args or {}).get("originalFunctionCall") or {}
                out.append({"request_id": fc.id, "call_id": self._gid(original.get("id")),
                            "tool": original.get("name") or "", "args": original.get("args") or {}})
        return out

    def _raised(self, exc: Exception, probe: dict[str, Any]) -> NativeSignals:
        from google.adk.agents.invocation_context import LlmCallsLimitExceededError

        base: dict[str, Any] = dict(ended="raised", exception_type=type(exc).__name__,
                                    exception_message=str(exc)[:500])
        if isinstance(exc, LlmCallsLimitExceededError):
            return NativeSignals(**base, limit="steps", limit_signal="raised")
        if in_chain(exc, ToolFailed):
            return NativeSignals(**base, failure="tool")
        if _invalid_answer(exc, probe.get("output_name")):  # validate_schema on the final text: the answer failed
            return NativeSignals(**base, failure="model")
        if in_chain(exc, self._model_errors()) or raised_in_model_client(exc):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")

    async def _close(self, runner: Any, agent: Any) -> None:
        """Release what the segment opened: the runner's toolsets/plugins and the model's HTTP client."""
        try:
            await runner.close()
        except Exception:  # noqa: BLE001 - closing must not replace the segment's outcome
            pass
        model = getattr(agent, "model", None)
        if model is None or isinstance(model, str):
            return
        try:
            await self._close_model(model)
        except Exception:  # noqa: BLE001
            pass

    @staticmethod
    def _counters(events: list[Any], probe: dict[str, Any], known: bool) -> ReportedCounters:
        responses = [e for e in events if not e.partial and e.author != "user"
                     and (e.usage_metadata is not None or e.finish_reason is not None)]
        usage = [e.usage_metadata for e in responses]
        manager = probe.get("cost_manager")
        steps = getattr(manager, "_number_of_llm_calls", None) if manager is not None else None

        def total(field: str) -> int | None:
            """A token total over the responses; unknown when any response's usage lacks the count."""
            counts = [getattr(u, field, None) if u is not None else None for u in usage]
            ints = [c for c in counts if isinstance(c, int)]
            return sum(ints) if known and len(ints) == len(counts) else None

        return ReportedCounters(
            model_requests_reported=len(responses) if known else None,
            # neither ADK's confirmation requests nor the structured answer's set_model_response: the task's calls
            tool_calls_requested=sum(len([c for c in e.get_function_calls()
                                          if c.name not in (CONFIRMATION, SET_MODEL_RESPONSE)])
                                     for e in responses) if known else None,
            runtime_steps=steps if isinstance(steps, int) else None,
            runtime_step_unit="LLM call",
            input_tokens_reported=total("prompt_token_count"),
            output_tokens_reported=total("candidates_token_count"),
            cumulative=False,
        )


class _CancelWaitFailed(RuntimeError):
    """Waiting for the harness's cancel broke: loopbench's fault, never mapped as the framework's."""


async def _abort_when_cancelled(work: Any, abort: Any, ctx: RunContext) -> float | None:
    """Await `work` (the task reading run_async); with an `abort` event, beside the harness's cancel: when the
    caller cancels first, set the event (ADK's documented abort) and wait for run_async to end on it. The seconds
    run_async took to end after the abort, or None when it ended first; its own exception propagates."""
    import asyncio
    import time

    if abort is None:
        await work
        return None
    waiter = asyncio.ensure_future(LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id).wait_cancel())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if work.done() or not waiter.done():
            await work
            return None
        if waiter.exception() is not None:
            work.cancel()
            raise _CancelWaitFailed("waiting for the harness's cancel failed") from waiter.exception()
        if not waiter.result():
            await work
            return None
        set_at = time.monotonic()
        abort.set()
        await work  # ADK ends run_async itself; nothing else is cancelled
        return time.monotonic() - set_at
    finally:
        waiter.cancel()


def _gemini(gemini: Any, model: str, base_url: str, api_key: str) -> Any:
    """ADK's Gemini model pointed at `base_url` with `api_key`, the way the release documents: `client_kwargs`
    (google-adk 2.x since it has the field), else — as the class docstring of the releases before it says —
    a subclass overriding `api_client` (built as ADK builds it: its tracking headers and retry options)."""
    if "client_kwargs" in gemini.model_fields:
        return gemini(model=model, base_url=base_url, client_kwargs={"api_key": api_key})
    from functools import cached_property

    from google.genai import Client, types

    class KeyedGemini(gemini):
        @cached_property
        def api_client(self) -> Client:
            return Client(api_key=api_key, http_options=types.HttpOptions(
                base_url=base_url, headers=self._tracking_headers(), retry_options=self.retry_options))

    # `base_url` is a field from 1.2x on (before it, the client's http_options are the only place it goes)
    return KeyedGemini(model=model, **({"base_url": base_url} if "base_url" in gemini.model_fields else {}))


def _anthropic_llm(anthropic_llm: Any, model: str, base_url: str, api_key: str) -> Any:
    """ADK's AnthropicLlm over an `anthropic.AsyncAnthropic(base_url=..., api_key=...)`, the way the release takes
    one: its `client` field ("an optional pre-configured Anthropic client", which `_anthropic_client` returns as
    it is), else — in the releases before the field (1.22 to 2.0 at least), whose cached `_anthropic_client`
    property builds a bare `AsyncAnthropic()` from the environment — a subclass overriding that property, as
    `_gemini` does for Gemini. Either way the client is the user's, with the anthropic SDK's own defaults."""
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(base_url=base_url, api_key=api_key)
    if "client" in anthropic_llm.model_fields:
        return anthropic_llm(model=model, client=client)
    from functools import cached_property

    class KeyedAnthropicLlm(anthropic_llm):
        @cached_property
        def _anthropic_client(self) -> Any:
            return client

    return KeyedAnthropicLlm(model=model)


def _tool_choice_for(scenario: Scenario, contents: list[Any], prefix: str) -> str | None:
    """The scenario's `tool_choice` for a model call about to send `contents`: the function responses after the
    last model content, and whether the conversation holds any."""
    trailing: list[str] = []
    for content in reversed(contents):
        if content.role == "model":
            break
        trailing += [neutral_id(p.function_response.id, prefix) or ""
                     for p in content.parts or [] if p.function_response]
    any_results = any(p.function_response for c in contents for p in c.parts or [])
    return scenario.tool_choice_for(trailing, any_results)


def _output_schema(spec: OutputSpec) -> type[Any]:
    """The scenario's structured answer as ADK's docs give an output_schema: a pydantic model, the check an
    AfterValidator, pydantic's own way to add a rule (adapters/kit.py `pydantic_output_model`)."""
    return pydantic_output_model(spec)


def _output_settings(spec: OutputSpec, model: Any, has_tools: bool) -> dict[str, Any]:
    """What the agent's structured answer was set up with, and which of ADK's two paths its request takes (read
    as ADK decides it: flows/llm_flows/basic.py:137-139, prompt/_schema.py:48-54)."""
    capabilities = getattr(model, "capabilities", None)  # 2.x: the model's self-report
    both = getattr(capabilities, "output_schema_and_tools", None)
    if has_tools and not both:
        path = (f"the {SET_MODEL_RESPONSE} tool ADK adds beside the agent's tools (the model cannot pair a response "
                "schema with tools): its call's args validated by model_validate, an error dict back to the model")
    else:
        path = "the response schema on the request; validate_schema on the final text (raises)"
    return {"output_schema": f"{spec.name} (pydantic.create_model, extra='forbid')", "output_key": OUTPUT_KEY,
            "check": (f"AfterValidator on {spec.check.field} raising ValueError" if spec.check else None),
            "output_schema_and_tools": both, "path": path,
            "retry_budget": "none of ADK's own: each correction is one more LLM call (max_llm_calls)"}


def _final_output(events: list[Any]) -> dict[str, Any] | None:
    """The validated structured answer ADK stored under output_key (the state_delta of the final response event,
    agents/llm_agent.py:1147: validate_schema's model_dump), as JSON; None when the segment stored none."""
    for e in reversed(events):
        value = (e.actions.state_delta or {}).get(OUTPUT_KEY) if e.actions is not None else None
        if isinstance(value, dict):
            return json.loads(json.dumps(value, default=str))
    return None


def _output_rejections(events: list[Any]) -> int:
    """set_model_response calls answered with ADK's validation error dict (the model was asked again)."""
    return sum(1 for e in events for fr in e.get_function_responses()
               if fr.name == SET_MODEL_RESPONSE and "error" in (fr.response or {}))


def _invalid_answer(exc: BaseException, output_name: str | None) -> bool:
    """A pydantic ValidationError of the output schema in the chain: ADK's validate_schema rejected the answer."""
    if output_name is None:
        return False
    from pydantic import ValidationError

    return any(isinstance(e, ValidationError) and e.title == output_name for e in exception_chain(exc))


def _final_text(events: list[Any]) -> str | None:
    for e in reversed(events):
        if e.content and e.content.parts and e.author != "user":
            text = "".join(p.text for p in e.content.parts if p.text and not p.thought)
            if text:
                return text
    return None


def _finish_reason(events: list[Any]) -> str | None:
    for e in reversed(events):
        if e.finish_reason is not None:
            return str(getattr(e.finish_reason, "value", e.finish_reason))
    return None


class GoogleADKErrorDict(GoogleADKAdapter):
    variant = "error-dict"
    about = ("the default with tools that return the function-tools guide's error dict ({'status': 'error', "
             "'error_message': ...}) instead of raising")
    tool_errors_as_dict = True
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **GoogleADKAdapter.mechanism_table,
        "tool_error_recoverable": TOOL_ERROR_DICT,
        "tool_error_fatal": TOOL_ERROR_DICT,
    }


class GoogleADKInMemory(GoogleADKAdapter):
    variant = "in-memory"
    about = ("the default with InMemorySessionService (the quick-start's), one per segment, whatever the scenario: "
             "a pause does not survive a new process")
    capabilities = GoogleADKAdapter.capabilities.model_copy(update={
        "pause_survives_restart": False,
        "notes": (*GoogleADKAdapter.capabilities.notes[:2],
                  "sessions in an InMemorySessionService per segment: a resume in another process finds none "
                  "(SessionNotFoundError)")})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **GoogleADKAdapter.mechanism_table,
        "approval_pause": "FunctionTool(require_confirmation=callable) -> adk_request_confirmation long-running "
                          "call ends the invocation; InMemorySessionService; resume = a "
                          "FunctionResponse(adk_request_confirmation, {'confirmed': ...}) to that service",
        # the scenario is not run (REQUIRED_INTENTS): its cancel is measured by the other cancel scenarios
        "resume_after_cancel": "unsupported: the InMemorySessionService lives in the cancelled run's process; a "
                               "caller in a new process has no session to continue",
    }
    keeps_sessions = False

    def _session_service(self, ctx: RunContext) -> tuple[Any, str]:
        from google.adk.sessions import InMemorySessionService

        return InMemorySessionService(), "InMemorySessionService (this process only)"


class GoogleADKAnthropic(GoogleADKAdapter):
    variant = "anthropic"
    about = ("the scenario's Claude through ADK's own Anthropic-API class: AnthropicLlm(client=anthropic."
             "AsyncAnthropic(base_url, api_key)), the anthropic client's default retries; otherwise as the default")
    model_class = "google.adk.models.anthropic_llm.AnthropicLlm"
    model_provider = "anthropic"
    call_id_prefix = ANTHROPIC_ID_PREFIX
    capabilities = GoogleADKAdapter.capabilities.model_copy(update={
        # the anthropic client's defaults: 2 retries, each after a 429's retry-after (the provider sends 1 s) or
        # 0.5 s then 1 s (x0.75-1 jitter): at most 2 s of waiting before the client gives up (probes/google_adk/
        # anthropic_llm.py: an outage 3 requests, waits 0.4 + 1.0 s; 429 then 500 retried after 1.0 + 0.9 s;
        # a 429 storm 3 requests, waits 1.0 + 1.0 s)
        "retry_window_s": 2.0,
        "notes": ("max_llm_calls is per invocation: a resume is a new invocation with a fresh budget",
                  "ADK sets no retry on AnthropicLlm and passes the user's client through: the anthropic client's "
                  "defaults decide (max_retries=2 on 408/409/429/5xx, honouring retry-after; the retries are "
                  "invisible to ADK: one event per response)",
                  "sessions in SqliteSessionService in the task dir, whatever the scenario",
                  "AnthropicLlm sends tool_choice auto whenever the agent has tools and ignores "
                  "llm_request.config.tool_config: a scenario's tool_choice cannot be set")})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **GoogleADKAdapter.mechanism_table,
        "tool_choice_first": TOOL_CHOICE_AUTO_ONLY,
        "tool_choice_later": TOOL_CHOICE_AUTO_ONLY,
    }

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """The release must have AnthropicLlm and the anthropic client (google-adk's `extensions`; our extra
        installs it). Only this variant's: the default and the other variants run without them."""
        reason = super().unavailable_reason()
        if reason is not None:
            return reason
        try:
            from google.adk.models.anthropic_llm import AnthropicLlm  # noqa: F401
        except ImportError as exc:
            return f"google-adk {cls.version()}: no google.adk.models.anthropic_llm.AnthropicLlm here ({exc})"
        return None

    @classmethod
    def warm(cls) -> None:
        super().warm()
        import anthropic  # noqa: F401
        import google.adk.models.anthropic_llm  # noqa: F401

    def _model(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """ADK's AnthropicLlm sending the scenario's Claude model over the user's anthropic client."""
        reason = self.unavailable_reason()
        if reason is not None:  # a release without the class: the variant cannot run (not the framework's fault)
            raise RuntimeError(f"the anthropic variant is unavailable: {reason}")
        from google.adk.models.anthropic_llm import AnthropicLlm

        model = _anthropic_llm(AnthropicLlm, self.model_id(scenario), ctx.base_url, ctx.api_key)
        client = model.__dict__.get("client") or model._anthropic_client
        how = ("AnthropicLlm(client=AsyncAnthropic(base_url, api_key))" if "client" in AnthropicLlm.model_fields
               else "an AnthropicLlm subclass overriding _anthropic_client (the release has no client field)")
        return model, {"base_url": "the scripted server (AsyncAnthropic(base_url=...))", "client": how,
                       "max_retries": client.max_retries}

    @staticmethod
    def _model_errors() -> tuple[type[BaseException], ...]:
        from anthropic import APIError

        return (APIError,)

    @staticmethod
    async def _close_model(model: Any) -> None:
        client = model.__dict__.get("client") or model.__dict__.get("_anthropic_client")
        if client is not None:
            await client.close()


class GoogleADKSSE(GoogleADKAdapter):
    variant = "sse"
    about = ("the default streamed: Runner.run_async(run_config=RunConfig(streaming_mode=StreamingMode.SSE)) read "
             "to the end (:streamGenerateContent?alt=sse); counts from the non-partial events")
    streaming_mode = "SSE"
    capabilities = GoogleADKAdapter.capabilities.model_copy(update={"stream_of": "default"})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **GoogleADKAdapter.mechanism_table,
        "approval_pause": "FunctionTool(require_confirmation=callable) -> adk_request_confirmation long-running "
                          "call ends the invocation (StreamingMode.SSE: the call arrives in the aggregated "
                          "non-partial event); SqliteSessionService in the task dir; resume = a "
                          "FunctionResponse(adk_request_confirmation, {'confirmed': ...}) per pending request",
    }


SINGLE_TURN_DELEGATE = ("LlmAgent(sub_agents=[LlmAgent(name=<child id>, mode='single_turn', description=..., "
                        "instruction=..., tools=...)]) (ADK wraps each as a tool run inline in the parent's "
                        "invocation and session: one LLM-call counter, the child's events in the run's)")


class GoogleADKSingleTurn(GoogleADKAdapter):
    variant = "single-turn"
    about = ("the default with sub-agents as sub_agents=[LlmAgent(mode='single_turn')], which AgentTool's 2.x "
             "docstring prefers to AgentTool: the child runs inline in the parent's invocation")
    mechanism_table: ClassVar[dict[Intent, str]] = {**GoogleADKAdapter.mechanism_table,
                                                    "delegate": SINGLE_TURN_DELEGATE}

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """LlmAgent's `mode` (chat / single_turn / task) is 2.x's; 1.22, the adapter's minimum, has none."""
        reason = super().unavailable_reason()
        if reason is not None:
            return reason
        from google.adk.agents import LlmAgent

        if "mode" not in LlmAgent.model_fields:
            return f"google-adk {cls.version()}: LlmAgent has no `mode` (single_turn sub-agents are 2.x's)"
        return None

    def _delegation(self, scenario: Scenario, ledger: LedgerClient, model: Any, before_tool: Any,
                    settings: dict[str, Any], before_agent: Any) -> dict[str, Any]:
        """ADK's sub_agents with `mode='single_turn'`: the parent's LlmAgent exposes each as a tool named after
        it (`_SingleTurnAgentTool`, parameter `request`) and runs it with `ctx.run_node` inside its own invocation
        (llm_agent.py, tools/agent_tool.py)."""
        if not scenario.agents:
            return {}
        reason = self.unavailable_reason()
        if reason is not None:  # a release without `mode`: the variant cannot run (not the framework's fault)
            raise RuntimeError(f"the single-turn variant is unavailable: {reason}")
        children = [self._child(scenario, child, ledger, model, before_tool, mode="single_turn")
                    for child in scenario.agents]
        settings["subagents"] = {
            child: {"sub_agent": f"LlmAgent(name={child!r}, mode='single_turn')",
                    "runner": "the parent's invocation (ctx.run_node in a sub-branch of the parent's session)",
                    "run_config": "the parent's RunConfig and LLM-call counter",
                    "usage": "the child's events are the run's events"}
            for child in scenario.agents}
        settings["delegation"] = "sub_agents with mode='single_turn' (AgentTool's 2.x docstring's preference)"
        return {"sub_agents": children}


class GoogleADKTransfer(GoogleADKAdapter):
    variant = "transfer"
    about = ("the default with sub-agents as sub_agents=[LlmAgent] in chat mode, reached by ADK's LLM-driven "
             "transfer_to_agent: a handoff (the child answers the user)")
    mechanism_table: ClassVar[dict[Intent, str]] = {**GoogleADKAdapter.mechanism_table,
                                                    "delegate": "LlmAgent(sub_agents=[LlmAgent(...)]) -> "
                                                                "transfer_to_agent(agent_name=<child id>)"}

    def _delegation(self, scenario: Scenario, ledger: LedgerClient, model: Any, before_tool: Any,
                    settings: dict[str, Any], before_agent: Any) -> dict[str, Any]:
        """ADK's sub_agents in their default (chat) mode: ADK offers the parent `transfer_to_agent(agent_name)`
        and, once called, the child takes over the invocation and answers the user itself (a handoff: the parent
        is not called again). The child gets the observing before_agent callback: it runs in the parent's
        invocation, and on a resume it is the agent that starts (the run's counter is read from it)."""
        if not scenario.agents:
            return {}
        children = [self._child(scenario, child, ledger, model, before_tool, before_agent_callback=before_agent)
                    for child in scenario.agents]
        settings["subagents"] = {
            child: {"sub_agent": f"LlmAgent(name={child!r}) (chat mode)",
                    "reached_by": "transfer_to_agent(agent_name=...) offered by ADK to the parent",
                    "runner": "the parent's invocation and session; the child answers the user",
                    "run_config": "the parent's RunConfig and LLM-call counter"}
            for child in scenario.agents}
        settings["delegation"] = "sub_agents in chat mode: the LLM-driven transfer_to_agent handoff"
        return {"sub_agents": children}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class RecoverableToolError(ToolFailed):
    """The guarded variant's tool error the service answered as recoverable: the guard hands it to the model."""


class GoogleADKGuarded(GoogleADKAdapter):
    variant = "guarded"
    about = ("the default with loopbench.guard installed through ADK's agent callbacks (before/after/on-error for "
             "model and tools), tool confirmation and the agent's timeout, on the main agent and each AgentTool "
             "child (guard.child()); native limits as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = dict(GUARD_LACKS)
    capabilities = GoogleADKAdapter.capabilities.model_copy(update={"guard_of": "default",
                                                                    "guard_lacks": dict(GUARD_LACKS)})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **GoogleADKAdapter.mechanism_table,
        "approval_pause": "the guard's before_tool_callback, for a call it holds no approval for (bound to the exact "
                          "arguments): tool_context.request_confirmation + skip_summarization -> "
                          "adk_request_confirmation ends the invocation; SqliteSessionService in the task dir; resume "
                          "as the default, the decision given to the guard for exactly that call",
        "tool_error_recoverable": "the tool raises; the guard's on_tool_error_callback answers the model with an "
                                  "error dict (ADK's recovery response)",
        "tool_error_fatal": "the tool raises; the guard's on_tool_error_callback raises its ToolFailed out of the run",
    }

    def _callbacks(self, guard: Any, can_pause: bool) -> Any:
        from loopbench.guard.bindings.google_adk import GuardCallbacks

        return GuardCallbacks(guard, recoverable=lambda exc: isinstance(exc, RecoverableToolError),
                              can_pause=can_pause)

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        return await super().run(scenario, ctx)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        if (snapshot / PAUSE_FILE).exists():  # the pending calls, each with the function call id the guard sees
            guarded.decide(self._guard, json.loads((snapshot / PAUSE_FILE).read_text())["requests"], decisions)
        return await super().resume(scenario, snapshot, decisions, ctx)

    def _tool_error(self, out: Any) -> Exception:
        """A timeout is the tool's client timing out (`TimeoutError`: the guard marks a write's outcome unknown);
        a recoverable error is told apart from a fatal one, so the guard can hand it to the model."""
        if out.error_kind == "timeout":
            return TimeoutError(out.text)
        if out.error_kind == "recoverable":
            return RecoverableToolError(out.text)
        return super()._tool_error(out)

    def _agent(self, scenario: Scenario, ctx: RunContext, probe: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        agent, settings = super()._agent(scenario, ctx, probe)
        self._installed = self._callbacks(self._guard, can_pause=True)
        self._installed.install(agent)
        settings["guard"] = {"callbacks": "GuardCallbacks(guard).install(agent): appended after the agent's own",
                             "timeout_s": _rounded(getattr(agent, "timeout", None))}
        return agent, settings

    def _child(self, scenario: Scenario, child: str, ledger: LedgerClient, model: Any, before_tool: Any,
               **extra: Any) -> Any:
        """An AgentTool child with the guard's child: its nested run cannot pause the parent (can_pause=False)."""
        agent = super()._child(scenario, child, ledger, model, before_tool, **extra)
        self._callbacks(self._guard.child(), can_pause=False).install(agent, deadline=False)
        return agent

    def _pending(self, events: list[Any]) -> list[dict[str, Any]]:
        """As the default, each with `raw_id`: the function call id the guard's callback sees on the resume."""
        raw = {fc.id: ((fc.args or {}).get("originalFunctionCall") or {}).get("id")
               for e in events for fc in e.get_function_calls() if fc.name == CONFIRMATION}
        return [{**p, "raw_id": raw.get(p["request_id"])} for p in super()._pending(events)]

    def _raised(self, exc: Exception, probe: dict[str, Any]) -> NativeSignals:
        installed = getattr(self, "_installed", None)
        if installed is not None:
            installed.stop_in(exc)  # a deadline cut in flight: recorded as the guard's stop
        return super()._raised(exc, probe)

    async def _drive(self, scenario: Scenario, ctx: RunContext, service: Any, label: str, session_id: str,
                     message: Any, notes: list[str], watch_cancel: bool = True) -> SegmentResult:
        result = await super()._drive(scenario, ctx, service, label, session_id, message, notes, watch_cancel)
        guarded.save(self._guard, ctx)
        return result.model_copy(update={"signals": result.signals.model_copy(
            update={"guard": guarded.signal(self._guard)})})


# the framework's other idioms, in the order runs and reports show them
GoogleADKAdapter.variant_classes = (GoogleADKErrorDict, GoogleADKInMemory, GoogleADKAnthropic, GoogleADKSSE,
                                    GoogleADKSingleTurn, GoogleADKTransfer, GoogleADKGuarded)
