"""Claude Agent SDK adapter (`claude-agent-sdk`): the Python SDK driving its bundled Claude Code CLI.

Translation of the neutral scenario into native controls (the `default` variant keeps every other default of
the SDK and the CLI, including the CLI's retry policy and the default permission mode;
`include_partial_messages=True` only adds stream events to what the SDK yields, see the counters below).
Streaming: the SDK has no non-streaming entry point, so it has no streaming variant to pair (the report's
streamed-vs-not table): `query()` always starts the CLI with `--input-format stream-json` and the CLI streams
every model request (`stream: true` in the server's log). Its "streaming input mode" (the prompt as an async
iterable) changes only how user messages reach the CLI: for a one-prompt task the same requests, result and
usage (probes/claude/fair.py streaming-input: 2 requests, both streamed, `usage` and `model_usage` 2000 in /
200 out either way); the CLI documents `usage` as per turn and `model_usage` as cumulative in multi-turn
streaming-input sessions, which a one-prompt task does not reach:
- connection: the CLI is a child process of the worker (started by the SDK, not in a new session, so the
  runner's kill of the worker's process group reaches it), pointed at the scripted server with
  `ANTHROPIC_BASE_URL=<server>` and `ANTHROPIC_API_KEY=<run key>` (the server routes by the `x-api-key` the CLI
  sends, also after a resume), plus `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (without it the CLI makes an
  extra session-title model request per run and DNS lookups that may stall);
- isolation: the session store is the business task's, as a Claude user keeps it: `CLAUDE_CONFIG_DIR` =
  `ctx.task_dir/config` (settings, the session transcript), shared by the first run and every resume; per
  segment inside `ctx.work_dir`: `HOME` and `XDG_*` dirs (the CLI otherwise writes MCP logs under
  `~/.cache/claude-cli-nodejs`); the cwd a new directory in the system temp dir, outside any checkout (a
  sub-agent's system prompt gets a git snapshot of a cwd inside a repository); `setting_sources=[]`,
  `strict_mcp_config=True`;
- tools: one in-process SDK MCP server (`create_sdk_mcp_server`, the model sees `mcp__loopbench__<tool>`) whose
  handlers execute through the ledger; built-in tools removed with `tools=[]`. The handler the SDK calls gets
  only the arguments; the CLI sends the tool_use id in the MCP `tools/call` request's
  `_meta["claudecode/toolUseId"]`, so the adapter wraps the server's `tools/call` request handler (public mcp
  API: `get_request_handler` / `add_request_handler`) to read it into a context variable; the scripted call id
  is that id without `toolu_` (exact, no mapping by order or arguments). Ledger errors come back to the model
  as `is_error` results (how an SDK MCP tool reports a failure);
- `approval: none` -> `allowed_tools` (in the default permission mode an MCP tool that matches no allow rule is
  denied when nobody can be asked);
- max model calls -> `max_turns`; max cost -> `max_budget_usd`; token budget and deadline -> unsupported
  (`task_budget` only tells the model its budget, it does not stop the loop);
- `approval: required` -> a PreToolUse hook answering `permissionDecision: "defer"`: the CLI ends the run with
  `terminal_reason="tool_deferred"` and `deferred_tool_use` (the pending call). The snapshot holds what the app
  keeps to answer the human: the session id and the counters at the pause; the transcript stays in the task's
  live config dir. The resume starts `ClaudeSDKClient(resume=<session id>)` with no prompt (the hooks
  reference's documented resume of a deferred call, `claude -p --resume <session id>`; recorded in the settings
  as `resume` and `resume_prompt: none`), in another process, against that same config dir: the CLI asks the
  hook again for the deferred call, which now applies the
  decision (approve -> "allow", reject -> "deny": the model gets an error result and goes on; no decision ->
  "defer" again). When the hook defers two calls of one response, the ResultMessage (the raw frame too) names
  the last one only and the resume asks about that one alone: the other call is dropped from the resumed
  conversation, never asked about nor run (probes/claude/parallel_defer.py); the adapter reports the pause the
  CLI reports. Resuming the same pause a second time, after the first resume completed, finds nothing
  deferred: the CLI makes no request, yields no message and no ResultMessage (it idles waiting for a prompt;
  probes/claude/fair.py resume-twice and probes/claude/resume_modes.py: the docs ask for a prompt to continue a
  finished session, and the scenario gives none), so that segment never returns and the runner records it,
  and the task, `hung` at its hard timeout — the framework's behaviour, not emulated either way;
- `approval: deny`, by the scenario's `policy.deny`: "continue" -> a PreToolUse hook answering
  `permissionDecision: "deny"` (the model gets an error result and the loop goes on); "stop" -> the same plus
  `"continue": false` and a `stopReason`, the hooks' documented way to stop: the CLI ends the run with
  `terminal_reason="hook_stopped"` (subtype `success`) and lists the call in `permission_denials`; that pair is
  reported as `denied`.
- sub-agents (scenarios with `agents`), the SDK's documented idiom (the Agent SDK's "Subagents in the SDK"
  guide: `ClaudeAgentOptions(agents={name: AgentDefinition(description, prompt, tools)})`, the parent reaching
  them through the CLI's built-in Agent tool, formerly Task, which it must have and be allowed): one
  AgentDefinition per child with `description`, `prompt` = the child's instructions (the CLI puts it in the
  child's system prompt after its own one-line preamble) and `tools` = its tools' MCP names; the parent gets
  `tools=["Agent"]` and "Agent" in `allowed_tools`, and `system_prompt` = the scenario's instructions (set only
  when a scenario has them, which only scenarios with agents do). The children's tools live in the same SDK MCP
  server, so the parent is offered them too (the CLI has no per-agent MCP filter for an in-process server);
  AgentDefinition.tools keeps each child to its own. A child gets nothing else: no `maxTurns`, `model`,
  `permissionMode` (the CLI's defaults: the parent's model; no turn limit of its own). The CLI 2.1 runs a
  sub-agent in the background unless the model sets `run_in_background=false` (the parent then gets "Async agent
  launched", answers, and a later notification starts another turn and a second ResultMessage): the scenarios'
  intent is call and return, so the adapter sets the CLI's documented `CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1`
  for scenarios with agents (recorded in `env`). Measured (probes/claude/subagents.py): the server sees each
  child's requests by its prompt; the main `max_turns` does not count a child's turns (subagent_runaway: the
  child ran until the server's safety cap, 49 searches, with max_turns=8); the PreToolUse hook and
  `can_use_tool` are called for a child's tool calls too (with the child's `agent_id`), but a hook's "defer"
  inside a child does not pause the run: the CLI ends the child at once ("Subagent completed but returned no
  output" is the Agent tool's result), the parent goes on and the run completes, with no `deferred_tool_use`,
  so nothing is left to resume (recorded as it happens, never faked); `can_use_tool` decides a child's call in
  process as it does the parent's. Tokens: `model_usage` (the reported tokens, as for every scenario) covers
  the whole tree, sub-agents included, and so does `total_cost_usd`; `usage` covers the main loop only
  (claim C09): both are in `extra` (`usage`, and `model_usage_tree_tokens`, the tree's sums). Model requests
  reported stay the main loop's responses (`parent_tool_use_id` None); the children's responses the SDK
  streamed (AssistantMessages with a `parent_tool_use_id`) are counted apart in `extra["child_model_responses"]`
  (a child's final answer is not streamed: it comes back as the Agent tool's result, so this is a floor).
- the caller's cancel (a scenario's `cancel`): `query()` documents "No interrupts" (query.py:28) and sends the
  caller needing them to ClaudeSDKClient, whose `interrupt()` is the SDK's cancel (client.py:308), so only such a
  scenario runs through `ClaudeSDKClient(options)`: `query(prompt)`, the response consumed by `receive_response()` in
  a task while the adapter waits for the harness's cancel beside it, then `interrupt()` and the rest of the response
  read to its ResultMessage (the SDK's examples/streaming_mode.py example_with_interrupt), then the context left
  (disconnect). Measured (probes/claude/cancel.py): during a tool the CLI cancels the SDK MCP call at once (the
  handler gets CancelledError; the ledger sees the caller abandon it), writes an is_error tool result ("...this
  call was stopped while running, not refused...") and "[Request interrupted by user for tool use]" to the
  transcript and ends with `error_during_execution`, `terminal_reason="aborted_tools"`; during a model request
  it drops the request ("[Request interrupted by user]", `aborted_streaming`); either way in ~0.1 s, with
  `model_usage` / `total_cost_usd` of the responses finished before (a request cut before its first byte is not
  counted). An interrupted turn -> `ended="cancelled"` with the subtype and terminal reason, and a snapshot
  (`kept_at: cancel`, the session id and the cumulative counters then; the transcript stays in the task's config
  dir). Leaving `query()`'s iterator instead is no cancel the SDK documents: no ResultMessage (no usage), and the
  CLI, before it is torn down, answers the cancelled tool call with an error result and sends one more model
  request (probes/claude/cancel.py close-query). The resume after a cancel: `query(prompt="Continue where we left
  off", options=ClaudeAgentOptions(resume=<session id>))` in another process (the sessions guide's resume by id,
  "recover from an interruption"); without a prompt the CLI sends nothing and idles (cancel.py resume-none).
- structured answers (a scenario's `output`): the Agent SDK's structured outputs, `ClaudeAgentOptions(
  output_format={"type": "json_schema", "schema": <scenario.output.json_schema()>})` (types.py:2850), which the
  SDK hands the CLI as `--json-schema` (_internal/transport/subprocess_cli.py:729-738); the output's check goes in
  that schema as a JSON-schema `pattern` on its field (`output_schema`), which the CLI itself enforces. The CLI
  offers the model its own StructuredOutput tool (bundled `claude` byte ~335725938, `La="StructuredOutput"`)
  with the schema as its input_schema, pattern included, validates each call's input with Ajv and answers a
  mismatch with an is_error tool result, "Output does not match required schema: /policy_id: must match pattern
  ..." (~335729150; a JSON schema carries no custom message, so the check's `message` is not what the model
  reads); the valid input is the ResultMessage's `structured_output` (types.py:1779, message_parser.py:324) ->
  `final_output`, and `result` its JSON text -> `final_text`. The tool is not sent with `strict` (only behind
  the CLI's `tengu_structured_output_strict` flag, default off, ~341737929) and the body has no
  `output_format` / `output_config`: the server sees an unconstrained output tool. Its retry cap is the CLI's:
  `MAX_STRUCTURED_OUTPUT_RETRIES ?? 5` (`var hto=5` ~357866111, used ~370595861: the StructuredOutput calls in
  the transcript reach the cap with none valid) -> ResultMessage subtype `error_max_structured_output_retries`,
  terminal_reason `structured_output_retry_exhausted`, `errors` ["Failed to provide valid structured output
  after 5 attempts — last StructuredOutput error: ..."], then the SDK raises ResultError -> `failure="model"`.
  `max_turns` counts each correction (one turn per response); measured (probes/claude/structured.py): a
  correction after an enum break and after a pattern break (3 requests, completed); a never-valid answer is
  stopped by `max_turns=4` at 4 requests (`error_max_turns`, the step limit as usual), and with no max_turns by
  the CLI's cap after 6 requests (5 answers; 3 with `MAX_STRUCTURED_OUTPUT_RETRIES=2`).
Every run of the user's approval code (each hook or can_use_tool call for a tool whose approval is not `none`)
records an `authorize` event in the ledger (approval-callback invocations, re-runs on resume included).

Variant `can-use-tool`: no hooks; approvals go through `can_use_tool` (called by the CLI for tools that match
no allow rule), an in-process callback: when the CLI calls it for a call that needs approval, it asks the
harness at that moment (`LedgerClient.decide`, recorded as an approval request): approve -> Allow; reject ->
Deny(interrupt=False) (the idiom's reject path: the model is told, the loop goes on); no decision -> this idiom
cannot hold a pause across processes, so it answers Deny(interrupt=True, "no decision available"), reports no
pending call and no pause, and records the intent as unsupported; the outcome follows the CLI's own signals
(`error_during_execution`, `terminal_reason="aborted_tools"`). A scenario with resumes is recorded unsupported
for the same reason (the decision is applied in-process, nothing is resumed). `approval: deny`: "continue" ->
Deny(interrupt=False) (the SDK's default); "stop" -> Deny(interrupt=True): `error_during_execution`,
`aborted_tools`, the call in `permission_denials`; that pair (naming a tool denied by policy) is `denied`.
The segment's `mechanisms` names the native mechanism used for each intent the scenario states.

Retries are the CLI's own (default 10, `CLAUDE_CODE_MAX_RETRIES` unset), measured with probes/claude/fair.py:
a 500 with no retry header is retried with backoff from 0.5 s doubling to a 32 s cap plus up to 25 % jitter, so
an always-500 server gets 11 requests over ~180-190 s (published model_outage: 11 requests, ~3 minutes); a `retry-after`
header sets the delay (3.0-3.6 s measured for `retry-after: 3` on a 429, a 500 and a 529); a 500 with
`x-should-retry: false` is not retried (1 request).
Each of these retries is streamed as `SystemMessage(subtype="api_retry")` (attempt, delay, status). A 400 is
different: the CLI re-sends it twice at once (3 requests) with no `api_retry` message, so those re-sends are
not reported.

Signals: `ResultMessage.subtype` (`error_max_turns` -> limit steps, `error_max_budget_usd` -> limit budget),
`terminal_reason`, `is_error`, `api_error_status`, `permission_denials`, `deferred_tool_use`, the exception the
SDK raises after an error result (`ResultError`) and a missing ResultMessage. Counters per segment, each from
what the SDK streamed:
- model requests reported = the model responses (distinct message ids of the top-level `message_start` stream
  events, which `include_partial_messages=True` streams, an observation-only option: the CLI streams no
  AssistantMessage for a response without content blocks, and answers an empty response by asking once more)
  + the failed attempts it retried (`api_retry` messages) + the failed attempt that ended the run, when the
  ResultMessage names its HTTP status (`api_error_status`); a failure the CLI reports no status for is not
  counted;
- runtime steps = `num_turns` (unit "turn"; not a request count: `error_max_turns` reports max_turns+1);
- tokens = the sum over models of `model_usage` input/output tokens (exact; `usage` misses the last call of a
  run stopped by `max_budget_usd`), cost = `total_cost_usd`. The CLI restores `model_usage` and `total_cost_usd`
  from the transcript when a session is resumed (cumulative; `usage` and `num_turns` are not): a resume
  segment reports them minus the values at the pause (saved in the snapshot); raw values are kept in `extra`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters import guarded
from loopbench.guard.bindings.claude_agent import LACKS as GUARD_LACKS
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Adapter, Capabilities, RunContext
from loopbench.harness.errors import LoopbenchError
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.model_server import call_ids
from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX
from loopbench.harness.record import (
    Intent,
    LimitTranslation,
    NativeSignals,
    PendingCall,
    ReportedCounters,
    SegmentResult,
)
from loopbench.harness.scenario import Scenario

SERVER = "loopbench"
PREFIX = f"mcp__{SERVER}__"
META_TOOL_USE_ID = "claudecode/toolUseId"
SESSION_FILE = "session.json"
# the CLI's built-in tool that runs a sub-agent (`subagent_type` names the AgentDefinition; `Task` before 2.1)
AGENT_TOOL = "Agent"
NO_BACKGROUND = "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"
PENDING_FILE = "pending.json"
STEP_UNIT = "turn (num_turns)"
# How a pause is resumed: the hooks reference's way for a deferred call (`claude -p --resume <session id>`, no
# prompt: the same PreToolUse hook fires again for the deferred call), through the SDK. A prompt would add a
# user turn and a model call after the deferred one (probes/claude/resume_modes.py prompt-prompt).
RESUME_HOW = ("ClaudeSDKClient(ClaudeAgentOptions(resume=<session id>)) and receive_response(), no prompt (the "
              "documented resume of a deferred tool call), against the task's live config dir")
# The caller's cancel. `query()` documents "No interrupts" (claude_agent_sdk/query.py:28) and points to
# ClaudeSDKClient "when you need interrupt capabilities" (query.py:36-41, client.py:40-46); its `interrupt()`
# (client.py:308-312, the control request {"subtype": "interrupt"}, _internal/query.py:847-849) ends the turn with a
# ResultMessage whose terminal_reason is aborted_streaming / aborted_tools (types.py:1789-1797), and the SDK's
# example consumes the response in a task while another sends the interrupt (examples/streaming_mode.py
# example_with_interrupt: "Interrupts require active message consumption"). Leaving or closing query()'s iterator
# instead is no documented cancel: it tears the CLI down (Query.close(), _internal/query.py:1204) and yields no
# ResultMessage, so nothing reports the usage up to the cancel, and the CLI still sends the model one more request
# before it goes (probes/claude/cancel.py close-query).
CANCEL_HOW = ("ClaudeSDKClient.query(prompt) + receive_response() in a task; ClaudeSDKClient.interrupt() when the "
              "caller cancels (client.py:308; ResultMessage.terminal_reason aborted_streaming / aborted_tools, "
              "types.py:1789-1797); query() documents 'No interrupts' (query.py:28)")
ABORTED = ("aborted_streaming", "aborted_tools")
# How a cancelled task is continued: the Agent SDK sessions guide's resume by id with a follow-up prompt (a session
# lets you "recover from an interruption"; the prompt is the guide's resume example's), in another process against
# the task's live config dir. Without a prompt the CLI has nothing to answer and idles, unlike a deferred tool call
# (probes/claude/cancel.py resume-none).
CONTINUE_PROMPT = "Continue where we left off"
CANCEL_RESUME_HOW = (f"query(prompt={CONTINUE_PROMPT!r}, options=ClaudeAgentOptions(resume=<session id>)) (the Agent "
                     "SDK sessions guide: resume by id to recover from an interruption), in another process, against "
                     "the task's live config dir")
NO_PAUSE = ("approval_pause: can_use_tool is an in-process callback; a pause cannot be saved and resumed in "
            "another process")

# the Agent SDK's options and the CLI's settings have no tool_choice: the CLI decides what it sends
NO_TOOL_CHOICE = "unsupported: ClaudeAgentOptions has no tool_choice setting; the CLI sends its own"
# an SDK MCP tool reports a failure as its result: the CLI hands the model the text as an error tool result
TOOL_ERROR = "the SDK MCP tool returns {'content': [text], 'is_error': True} (the model gets an error tool result)"

# Structured answers (a scenario's `output`): the Agent SDK's structured outputs, `output_format` (types.py:2850,
# "Matches the Messages API structure"), which the SDK hands the CLI as `--json-schema <schema>`
# (_internal/transport/subprocess_cli.py:729-738); the answer comes back in ResultMessage.structured_output
# (types.py:1779, message_parser.py:324)
STRUCTURED_OUTPUT_FORMAT = "json_schema"
STRUCTURED_HOW = ("ClaudeAgentOptions(output_format={'type': 'json_schema', 'schema': <the output's JSON schema>}) "
                  "(the CLI's --json-schema): the CLI offers the model its StructuredOutput tool, validates the "
                  "call's input against the schema itself (Ajv) and answers a mismatch with an error tool result; "
                  "the answer is ResultMessage.structured_output; the CLI's retry cap MAX_STRUCTURED_OUTPUT_RETRIES "
                  "(default 5) ends the run error_max_structured_output_retries")
CHECK_HOW = ("the check's regex as a JSON-schema `pattern` on its field in output_format's schema, enforced by the "
             "CLI's own validation of the StructuredOutput call (the model gets Ajv's 'must match pattern' error; "
             "a JSON schema carries no custom message)")
# the result subtype the CLI ends a run with when its structured-output retries are spent
STRUCTURED_RETRIES_SPENT = "error_max_structured_output_retries"


def output_schema(scenario: Scenario) -> dict[str, Any] | None:
    """The output's JSON schema with the check, if any, as a `pattern` on its field (None: no structured answer)."""
    spec = scenario.output
    if spec is None:
        return None
    schema = spec.json_schema()
    if spec.check is not None:
        field_schema = dict(schema["properties"][spec.check.field])
        field_schema["pattern"] = spec.check.pattern
        schema["properties"] = {**schema["properties"], spec.check.field: field_schema}
    return schema


class Fields:
    """A message read by feature detection: a field this SDK release does not have (older ResultMessages lack
    terminal_reason, deferred_tool_use, api_error_status...) is None, unknown, never a guess."""

    def __init__(self, message: Any):
        self._message = message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._message, name, None)


_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("loopbench_claude_call_id", default=None)


def neutral_id(tool_use_id: str | None) -> str | None:
    return call_ids.neutral_id(tool_use_id, ANTHROPIC_ID_PREFIX)


def bare_name(tool_name: str) -> str:
    return tool_name.removeprefix(PREFIX)


@dataclass
class _Segment:
    """What one segment saw: filled by the hooks / callbacks and the message loop."""

    result: Any = None  # the last ResultMessage
    exception: BaseException | None = None
    message_ids: list[str] = field(default_factory=list)  # model responses (message_start / AssistantMessage)
    texts: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)  # can_use_tool: calls the harness had no decision for
    api_retries: int = 0  # SystemMessage(subtype="api_retry") the CLI streamed
    # of those, the retries of an answer whose message_start had come (a stream cut mid-way): that attempt is
    # already one of message_ids, so it is counted once
    retries_of_started: int = 0
    open_message: str | None = None  # the latest message_start with no message_delta (its end) yet
    child_message_ids: list[str] = field(default_factory=list)  # sub-agents' responses (parent_tool_use_id set)
    cwd: Path | None = None  # the CLI's working directory, removed when the segment ends
    interrupted: bool = False  # the caller's cancel: ClaudeSDKClient.interrupt() was sent
    interrupt_error: str | None = None  # interrupt() raised (the CLI had already ended the turn, say)
    # seconds from interrupt() to the ResultMessage, and to the client's context left (the CLI gone): how promptly
    # the framework stopped, apart from the CLI's start-up, which a loaded machine stretches
    interrupt_to_result_s: float | None = None
    interrupt_to_closed_s: float | None = None


def _remove_cwd(seg: _Segment) -> None:
    if seg.cwd is not None:
        shutil.rmtree(seg.cwd, ignore_errors=True)


@dataclass(frozen=True)
class _AtPause:
    """The cumulative values the CLI restores from the transcript, as they were at the pause."""

    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class CLIKilled(LoopbenchError):
    """The CLI process died from a signal it did not send itself: the run is an `error`, with this reason."""


class ClaudeAgentAdapter(Adapter):
    id = "claude-agent-sdk"
    distribution = "claude-agent-sdk"
    display_name = "the Claude Agent SDK"
    sdk_modules = ("claude_agent_sdk", "mcp")
    model_class = "claude_agent_sdk.ClaudeSDKClient (the Claude Code CLI's own Anthropic client)"
    model_provider = "anthropic"
    # each run starts its own Claude Code CLI process, which is where the model client lives: the worker holds
    # nothing a warm-up run would warm (a first run in a worker measured as long as the others)
    warm_up_run = False
    packages = ("mcp",)
    extra = "claude"
    # held to the release's day by the version matrix: claude-agent-sdk 0.2.90 calls an mcp Server API later mcp
    # releases dropped
    companions = ("mcp",)
    plain_script = "claude_agent.py"
    min_version = (0, 2)
    about = ("the SDK's and CLI's defaults; max_turns / max_budget_usd from the scenario; approvals pause "
             "through a PreToolUse hook answering defer (resumed with resume=<session id> in another "
             "process); policy deny through a PreToolUse hook answering deny (+ continue=false to stop)")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        "cancel": CANCEL_HOW,
        "resume_after_cancel": CANCEL_RESUME_HOW,
        "delegate": "ClaudeAgentOptions(agents={id: AgentDefinition(description, prompt, tools)}) reached through "
                    "the CLI's Agent tool (subagent_type=<id>), in the foreground "
                    "(CLAUDE_CODE_DISABLE_BACKGROUND_TASKS=1); the child gets no maxTurns of its own",
        "deny_stop": "PreToolUse hook permissionDecision=deny + continue=false (terminal_reason hook_stopped)",
        "deny_continue": "PreToolUse hook permissionDecision=deny",
        "approval_pause": "PreToolUse hook permissionDecision=defer (terminal_reason tool_deferred); "
                          "resume=<session id> in another process",
        "reject": "PreToolUse hook permissionDecision=deny on resume",
        "tool_choice_first": NO_TOOL_CHOICE,
        "tool_choice_later": NO_TOOL_CHOICE,
        "tool_error_recoverable": TOOL_ERROR,
        "tool_error_fatal": TOOL_ERROR,
        "structured_output": STRUCTURED_HOW,
        "output_check": CHECK_HOW,
    }
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls", "max_cost_usd"}),
        step_unit="turn (num_turns: one per model response in a normal run; error_max_turns reports max_turns+1)",
        pause="snapshot",
        pause_survives_restart=True,  # default variant; `can-use-tool` cannot pause (see notes)
        deny="PreToolUse hook permissionDecision=deny, + continue=false to stop (can-use-tool variant: "
             "PermissionResultDeny, interrupt=True to stop)",
        # the CLI's default 10 retries back off 0.5 s doubling to a 32 s cap (+ jitter) on a 5xx without a hint:
        # ~3 minutes against an always-failing server (measured 178-190 s)
        retry_window_s=300.0,
        notes=("variant can-use-tool: an in-process callback; a call without a decision ends the run "
               "(Deny(interrupt=True)), it cannot pause and be resumed in another process",),
    )

    @classmethod
    def warm(cls) -> None:
        import claude_agent_sdk  # noqa: F401
        import mcp  # noqa: F401

    # ---------------------------------------------------------------- building the options
    def _tools_server(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, str]:
        from claude_agent_sdk import SdkMcpTool, create_sdk_mcp_server

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)

        def make(name: str) -> Any:
            spec = scenario.tools[name]

            async def handler(args: dict[str, Any]) -> dict[str, Any]:
                out = await ledger.call(name, args, _CALL_ID.get())
                self._tool_answered(_CALL_ID.get(), out)
                return {"content": [{"type": "text", "text": out.text}], "is_error": not out.ok}

            return SdkMcpTool(name=name, description=spec.description, input_schema=spec.parameters,
                              handler=handler)

        config = create_sdk_mcp_server(SERVER, tools=[make(n) for n in scenario.tools])
        server = config["instance"]
        entry = server.get_request_handler("tools/call") if hasattr(server, "get_request_handler") else None
        if entry is None:  # mcp 1.x: no per-request params reach the handler
            return config, "unknown (mcp server without get_request_handler): call ids not recorded"
        inner = entry.handler

        async def call_tool(request_ctx: Any, params: Any) -> Any:
            meta = getattr(params, "meta", None) or {}
            raw = meta.get(META_TOOL_USE_ID) if isinstance(meta, dict) else None
            token = _CALL_ID.set(neutral_id(raw) if isinstance(raw, str) else None)
            try:
                return await inner(request_ctx, params)
            finally:
                _CALL_ID.reset(token)

        server.add_request_handler("tools/call", entry.params_type, call_tool)
        return config, f"tools/call _meta[{META_TOOL_USE_ID!r}] without {ANTHROPIC_ID_PREFIX!r}"

    def _tool_answered(self, call_id: str | None, out: Any) -> None:
        """The ledger's answer to a tool call (`call_id`: the scripted id), before the CLI gets it."""

    @staticmethod
    def _limits(scenario: Scenario) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        kwargs: dict[str, Any] = {}
        limits: dict[str, LimitTranslation] = {}
        n = scenario.limits.max_model_calls
        if n is not None:
            kwargs["max_turns"] = n
            limits["max_model_calls"] = LimitTranslation(neutral=n, native=f"max_turns={n}")
        else:
            limits["max_model_calls"] = LimitTranslation(neutral=None, native="max_turns unset (SDK and CLI default)")
        cost = scenario.limits.max_cost_usd
        if cost is not None:
            kwargs["max_budget_usd"] = cost
            limits["max_cost_usd"] = LimitTranslation(neutral=cost, native=f"max_budget_usd={cost}")
        missing = ClaudeAgentAdapter.unsupported_limits(scenario)
        limits.update(missing)
        unsupported = list(missing)
        return kwargs, limits, unsupported

    @staticmethod
    def _env(ctx: RunContext) -> dict[str, str]:
        work = ctx.work_dir.resolve()
        # the session store is the task's (live across segments); everything else is the segment's own
        dirs = {"CLAUDE_CONFIG_DIR": ctx.task_dir.resolve() / "config", "HOME": work / "home",
                "XDG_CACHE_HOME": work / "home/.cache",
                "XDG_CONFIG_HOME": work / "home/.config", "XDG_DATA_HOME": work / "home/.local/share",
                "XDG_STATE_HOME": work / "home/.local/state"}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        return {
            "ANTHROPIC_BASE_URL": ctx.base_url,
            "ANTHROPIC_API_KEY": ctx.api_key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **{k: str(v) for k, v in dirs.items()},
            **ctx.extra_env,
        }

    def _options(self, scenario: Scenario, ctx: RunContext, seg: _Segment, decisions: dict[str, str],
                 resume: str | None = None) -> tuple[Any, dict[str, Any], dict[str, Any], list[str]]:
        from claude_agent_sdk import ClaudeAgentOptions

        mcp_config, call_id_source = self._tools_server(scenario, ctx)
        limit_kwargs, limits, unsupported = self._limits(scenario)
        env = self._env(ctx)
        # the CLI's cwd is a new directory in the system's temp dir, not under the results directory: when its cwd
        # is inside a git repository the CLI adds a snapshot of it (branch, status, recent commits; ~840 bytes) to
        # each sub-agent's system prompt, so the same cell's prompts depended on where the results were written
        cwd = seg.cwd = Path(tempfile.mkdtemp(prefix="loopbench-claude-cwd-"))
        allowed = [PREFIX + n for n, s in scenario.tools.items() if s.approval == "none"]
        gated = [n for n, s in scenario.tools.items() if s.approval != "none"]
        builtin: list[str] = []
        agent_kwargs: dict[str, Any] = {}
        agent_settings: dict[str, Any] = {}
        if scenario.agents:
            # the SDK's sub-agent idiom: AgentDefinitions in `agents`, reached through the CLI's built-in Agent
            # tool, which the parent must have and be allowed to use
            builtin = [AGENT_TOOL]
            allowed = [*allowed, AGENT_TOOL]
            agent_kwargs, agent_settings = self._agents(scenario)
            # the scenarios' intent is call and return: the CLI's documented switch keeps the Agent tool in the
            # foreground (2.1 runs a sub-agent in the background unless the model sets run_in_background=false)
            env[NO_BACKGROUND] = "1"
        if scenario.instructions is not None:  # the main agent's system prompt (no older scenario sets one)
            agent_kwargs["system_prompt"] = scenario.instructions
            agent_settings["system_prompt"] = "<scenario.instructions>"
        kwargs: dict[str, Any] = dict(
            tools=builtin, mcp_servers={SERVER: mcp_config}, strict_mcp_config=True, setting_sources=[],
            cwd=str(cwd), model=scenario.model.id, env=env, allowed_tools=allowed, include_partial_messages=True,
            **agent_kwargs, **limit_kwargs,
        )
        settings: dict[str, Any] = {
            "model": scenario.model.id, "tools": builtin, "mcp_servers": {SERVER: "sdk (in-process)"},
            "strict_mcp_config": True, "setting_sources": [], "permission_mode": "unset (default)",
            "allowed_tools": allowed, **agent_settings, **limit_kwargs,
            # observation only: one message_start stream event per model response, empty responses included
            "include_partial_messages": True,
            "env": sorted(k for k in env if k not in ("ANTHROPIC_API_KEY",)),
            "retries": "CLI default (CLAUDE_CODE_MAX_RETRIES unset)",
            "call_id_source": call_id_source,
        }
        if resume:
            kwargs["resume"] = resume
        if scenario.cancel is not None:
            # a caller that can cancel needs the interruptible entry point (CANCEL_HOW); every other scenario keeps
            # query(), the SDK's one-shot entry point
            settings["entry_point"] = "ClaudeSDKClient (interrupt() on the caller's cancel)"
            if scenario.cancel.resume:
                settings["resume_after_cancel"] = CANCEL_RESUME_HOW
                settings["resume_after_cancel_prompt"] = CONTINUE_PROMPT
        continues_cancel = scenario.cancel is not None and scenario.cancel.resume and not scenario.resumes
        if scenario.resumes or (resume and not continues_cancel):
            # said on the first run too: a record's settings are its first segment's, and a resume that never
            # answers (resume_twice's second) returns none of its own
            settings["resume"] = RESUME_HOW
            settings["resume_prompt"] = "none"
        spec, schema = scenario.output, output_schema(scenario)
        if spec is not None and schema is not None:
            # the SDK's structured outputs, as documented: the CLI's StructuredOutput tool, its validation and retry
            # cap are the CLI's defaults (MAX_STRUCTURED_OUTPUT_RETRIES unset)
            kwargs["output_format"] = {"type": STRUCTURED_OUTPUT_FORMAT, "schema": schema}
            settings["output"] = {
                "output_format": {"type": STRUCTURED_OUTPUT_FORMAT, "schema": f"<{spec.name} JSON schema>"},
                "check": (f"pattern {spec.check.pattern!r} on {spec.check.field} in the schema"
                          if spec.check is not None else None),
                "output_tool": "StructuredOutput (the CLI's; not strict: no constrained decoding)",
                "retries": "CLI default (MAX_STRUCTURED_OUTPUT_RETRIES unset: 5)",
            }
        approval_kwargs, cannot = self._approvals(scenario, ctx, seg, decisions, gated)
        kwargs.update(approval_kwargs)
        unsupported.extend(cannot)
        return ClaudeAgentOptions(**kwargs), settings, limits, unsupported

    @staticmethod
    def _agents(scenario: Scenario) -> tuple[dict[str, Any], dict[str, Any]]:
        """The children as the SDK documents them: one AgentDefinition each (description, prompt, its tools by
        their MCP names), nothing else set (no maxTurns, model or permissionMode: the CLI's defaults)."""
        from claude_agent_sdk import AgentDefinition

        agents = {aid: AgentDefinition(description=spec.description, prompt=spec.instructions,
                                       tools=[PREFIX + t for t in spec.tools])
                  for aid, spec in scenario.agents.items()}
        kwargs: dict[str, Any] = {"agents": agents}
        settings: dict[str, Any] = {
            "agents": {aid: {"description": "<spec.description>", "prompt": "<spec.instructions>",
                             "tools": a.tools, "maxTurns": "unset", "model": "unset (CLI default)"}
                       for aid, a in agents.items()},
        }
        return kwargs, settings

    def _approvals(self, scenario: Scenario, ctx: RunContext, seg: _Segment, decisions: dict[str, str],
                   gated: list[str]) -> tuple[dict[str, Any], list[str]]:
        """The approval idiom's options, and what it cannot carry out: a PreToolUse hook on the gated tools."""
        from claude_agent_sdk import HookMatcher

        if not gated:
            return {}, []
        matcher = "|".join(PREFIX + n for n in gated)
        hook = HookMatcher(matcher=matcher, hooks=[self._hook(scenario, ctx, decisions)])
        return {"hooks": {"PreToolUse": [hook]}}, []

    # ---------------------------------------------------------------- approval points
    @staticmethod
    def _hook(scenario: Scenario, ctx: RunContext, decisions: dict[str, str]) -> Any:
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        stop_on_deny = scenario.policy.deny == "stop"

        async def pre_tool_use(data: dict[str, Any], tool_use_id: str | None, _context: Any) -> dict[str, Any]:
            name = bare_name(str(data.get("tool_name", "")))
            spec = scenario.tools.get(name)
            if spec is None or spec.approval == "none":
                return {}
            args = data.get("tool_input") or {}
            call_id = neutral_id(tool_use_id or data.get("tool_use_id"))
            out: dict[str, Any] = {}
            if spec.approval == "deny":
                decision, reason = "deny", f"{name} is denied by policy"
                if stop_on_deny:  # the hooks' documented stop: the CLI ends the run (terminal_reason hook_stopped)
                    out.update(continue_=False, stopReason=reason)
                await ledger.authorize(name, args, call_id, "denied by policy" + (": stop" if stop_on_deny else ""))
            else:
                wanted = decisions.get(call_id or "")
                if wanted == "approve":
                    decision, reason = "allow", "approved by the reviewer"
                elif wanted == "reject":
                    decision, reason = "deny", "rejected by the reviewer"
                else:
                    decision, reason = "defer", "waiting for approval"
                await ledger.authorize(name, args, call_id, {"allow": "approved", "deny": "rejected",
                                                             "defer": "approval required: deferred"}[decision])
            out["hookSpecificOutput"] = {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                         "permissionDecisionReason": reason}
            return out

        return pre_tool_use

    @staticmethod
    def _can_use_tool(scenario: Scenario, ctx: RunContext, seg: _Segment) -> Any:
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        stop_on_deny = scenario.policy.deny == "stop"

        async def can_use_tool(tool_name: str, args: dict[str, Any], context: Any) -> Any:
            name = bare_name(tool_name)
            spec = scenario.tools.get(name)
            call_id = neutral_id(getattr(context, "tool_use_id", None))
            if spec is None:
                return PermissionResultDeny(message=f"{tool_name} is not a scenario tool")
            if spec.approval == "none":  # allowed_tools answers these before the callback; kept for safety
                return PermissionResultAllow()
            if spec.approval == "deny":
                await ledger.authorize(name, args, call_id, "denied by policy" + (": stop" if stop_on_deny else ""))
                return PermissionResultDeny(message=f"{name} is denied by policy", interrupt=stop_on_deny)
            # the human is asked now, the only moment this idiom offers (recorded as an approval request)
            wanted = await ledger.decide(name, args, call_id)
            if wanted == "approve":
                await ledger.authorize(name, args, call_id, "approved")
                return PermissionResultAllow()
            if wanted == "reject":
                await ledger.authorize(name, args, call_id, "rejected")
                return PermissionResultDeny(message="rejected by the reviewer")
            await ledger.authorize(name, args, call_id, "no decision available: interrupted")
            seg.undecided.append(call_id or name)
            return PermissionResultDeny(message="no decision available", interrupt=True)

        return can_use_tool

    # ---------------------------------------------------------------- running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        from claude_agent_sdk import query

        seg = _Segment()
        options, settings, limits, unsupported = self._options(scenario, ctx, seg, decisions={})
        try:
            if scenario.cancel is not None:
                await self._run_interruptible(scenario, ctx, seg, options)
            else:
                async with contextlib.aclosing(query(prompt=scenario.prompt, options=options)) as stream:
                    async for message in stream:
                        self._observe(seg, message)
        except Exception as exc:  # the framework ended by raising: map it below
            seg.exception = exc
        finally:
            _remove_cwd(seg)
        return self._segment(scenario, ctx, seg, settings, limits, unsupported, at_pause=None)

    async def _run_interruptible(self, scenario: Scenario, ctx: RunContext, seg: _Segment, options: Any) -> None:
        """The SDK's interrupt idiom (CANCEL_HOW): the response consumed in a task, the caller's cancel awaited
        beside it; on the cancel, `interrupt()`, then the consumer reads on to the ResultMessage the CLI ends the
        interrupted turn with (however long that takes: a CLI that never ends it is the runner's `hung`)."""
        from claude_agent_sdk import ClaudeSDKClient, ResultMessage

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        sent: float | None = None
        async with ClaudeSDKClient(options) as client:
            await client.query(scenario.prompt)

            async def consume() -> None:
                async for message in client.receive_response():
                    self._observe(seg, message)
                    if isinstance(message, ResultMessage) and sent is not None:
                        seg.interrupt_to_result_s = round(time.monotonic() - sent, 3)

            consumer = asyncio.create_task(consume())
            caller = asyncio.create_task(ledger.wait_cancel())
            try:
                await asyncio.wait({consumer, caller}, return_when=asyncio.FIRST_COMPLETED)
                if not consumer.done() and caller.result():
                    seg.interrupted, sent = True, time.monotonic()
                    try:
                        await client.interrupt()
                    except Exception as exc:  # e.g. the turn ended as the cancel came: the result below says so
                        seg.interrupt_error = f"{type(exc).__name__}: {exc}"[:300]
                await consumer
            finally:
                for task in (consumer, caller):
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await task
        if sent is not None:
            seg.interrupt_to_closed_s = round(time.monotonic() - sent, 3)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        from claude_agent_sdk import ClaudeSDKClient, query

        saved = json.loads((snapshot / SESSION_FILE).read_text())
        if not (ctx.task_dir / "config").is_dir():  # the live session store is the task's, never a copy
            raise FileNotFoundError(f"the task's Claude config dir {ctx.task_dir / 'config'} is missing")
        at_pause = _AtPause(cost_usd=saved.get("total_cost_usd"), input_tokens=saved.get("input_tokens"),
                            output_tokens=saved.get("output_tokens"))
        seg = _Segment()
        options, settings, limits, unsupported = self._options(scenario, ctx, seg, decisions,
                                                               resume=saved["session_id"])
        try:
            if saved.get("kept_at") == "cancel":
                # continuing a cancelled task: the sessions guide's resume by id with a follow-up prompt
                async with contextlib.aclosing(query(prompt=CONTINUE_PROMPT, options=options)) as stream:
                    async for message in stream:
                        self._observe(seg, message)
            else:
                async with ClaudeSDKClient(options) as client:
                    async for message in client.receive_response():
                        self._observe(seg, message)
        except Exception as exc:
            seg.exception = exc
        finally:
            _remove_cwd(seg)
        return self._segment(scenario, ctx, seg, settings, limits, unsupported, at_pause=at_pause)

    @staticmethod
    def _observe(seg: _Segment, message: Any) -> None:
        from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, SystemMessage, TextBlock

        if isinstance(message, ResultMessage):
            seg.result = Fields(message)
        elif isinstance(message, SystemMessage) and message.subtype == "api_retry":
            seg.api_retries += 1
            if seg.open_message is not None:
                seg.retries_of_started += 1
                seg.open_message = None
        elif isinstance(message, StreamEvent) and message.parent_tool_use_id is None:
            # one message_start per model response, also for a response with no content blocks
            kind = message.event.get("type")
            if kind == "message_start":
                mid = (message.event.get("message") or {}).get("id")
                seg.open_message = mid
                if mid and mid not in seg.message_ids:
                    seg.message_ids.append(mid)
            elif kind == "message_delta":
                # a whole answer's closing event (stop reason, usage); the CLI streams a message_stop of its own
                # after a cut too, so that one does not tell
                seg.open_message = None
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is not None:
            if message.error is None and message.message_id and message.message_id not in seg.child_message_ids:
                seg.child_message_ids.append(message.message_id)
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            # error=... marks the CLI's own synthetic message for a failed API call: not a response
            if message.error is None and message.message_id and message.message_id not in seg.message_ids:
                seg.message_ids.append(message.message_id)
            seg.texts += [b.text for b in message.content if isinstance(b, TextBlock)]

    # ---------------------------------------------------------------- mapping the signals
    def _segment(self, scenario: Scenario, ctx: RunContext, seg: _Segment, settings: dict[str, Any],
                 limits: dict[str, Any], unsupported: list[str], at_pause: _AtPause | None) -> SegmentResult:
        rm, exc = seg.result, seg.exception
        notes: list[str] = []
        if seg.undecided:
            notes.append(f"can_use_tool had no decision for {', '.join(seg.undecided)}: answered "
                         "Deny(interrupt=True); this idiom cannot pause")
            if NO_PAUSE not in unsupported:
                unsupported = [*unsupported, NO_PAUSE]
        # mechanisms and unsupported tool_choice: Adapter.declared()
        common: dict[str, Any] = dict(settings=settings, limits=limits, unsupported=unsupported)
        counters = self._counters(seg, at_pause)
        extra: dict[str, Any] = {"api_retry_messages": seg.api_retries, "model_responses": len(seg.message_ids),
                                 "retries_of_started_responses": seg.retries_of_started}
        base: dict[str, Any] = {"ended": "raised" if exc is not None else "returned"}
        if exc is not None:
            base.update(exception_type=type(exc).__name__, exception_message=str(exc)[:500])
        code = getattr(exc, "exit_code", None)
        if code is not None:
            extra["exit_code"] = code
        if rm is None and isinstance(code, int) and (code < 0 or code in (128 + 9, 128 + 15)):
            # the CLI was killed from outside (not by anything it did): not framework behaviour
            raise CLIKilled(f"the Claude CLI was killed (exit code {code}) before it ended the run")
        if rm is None:
            extra["result_message"] = "missing"
            if exc is None:
                base["ended"] = "raised"
                base["exception_message"] = "the CLI ended without a ResultMessage"
            return SegmentResult(signals=NativeSignals(**base, failure="other", extra=extra), counters=counters,
                                 notes=notes, **common)
        extra.update(is_error=rm.is_error, stop_reason=rm.stop_reason, api_error_status=rm.api_error_status,
                     num_turns=rm.num_turns, total_cost_usd=rm.total_cost_usd,
                     permission_denials=rm.permission_denials or [], model_usage=rm.model_usage,
                     usage={k: (rm.usage or {}).get(k) for k in ("input_tokens", "output_tokens",
                                                                 "cache_read_input_tokens",
                                                                 "cache_creation_input_tokens")},
                     duration_ms=rm.duration_ms, duration_api_ms=rm.duration_api_ms, session_id=rm.session_id)
        if seg.child_message_ids:
            # what the SDK streamed of the sub-agents (AssistantMessages with parent_tool_use_id), and the tree's
            # tokens as `model_usage` has them next to the main loop's `usage` (claim C09)
            extra["child_model_responses"] = len(seg.child_message_ids)
        if scenario.agents:
            tree_in, tree_out = self._tokens(rm)
            extra["model_usage_tree_tokens"] = {"input_tokens": tree_in, "output_tokens": tree_out}
        if rm.errors:
            extra["errors"] = rm.errors[:5]
        if at_pause is not None:
            extra["at_pause"] = {"total_cost_usd": at_pause.cost_usd, "input_tokens": at_pause.input_tokens,
                                 "output_tokens": at_pause.output_tokens}
        base.update(subtype=rm.subtype, terminal_reason=rm.terminal_reason)

        if seg.interrupted:
            extra.update(interrupt=seg.interrupt_error or "sent", interrupt_to_result_s=seg.interrupt_to_result_s,
                         interrupt_to_closed_s=seg.interrupt_to_closed_s)
        if seg.interrupted and rm.terminal_reason in ABORTED:
            # the caller's cancel, and the CLI ended the turn on it; the session transcript (CLAUDE_CONFIG_DIR, the
            # task's) is what a caller continues from: the snapshot names the session
            snapshot = self._save(ctx, rm, [], settings, kept_at="cancel")
            signals = NativeSignals(**{**base, "ended": "cancelled"}, final_text=None, extra=extra)
            return SegmentResult(signals=signals, counters=counters, snapshot=snapshot, notes=notes, **common)

        # a pause: the hook deferred a call; the CLI names it in deferred_tool_use
        deferred = rm.deferred_tool_use
        if deferred is not None or rm.terminal_reason == "tool_deferred":
            pending = [PendingCall(call_id=neutral_id(deferred.id), tool=bare_name(deferred.name),
                                   args=dict(deferred.input))] if deferred is not None else []
            extra["deferred_tool_use"] = {"id": deferred.id, "name": deferred.name} if deferred else None
            snapshot = self._save(ctx, rm, pending, settings)
            signals = NativeSignals(**{**base, "ended": "paused"}, pending=pending, extra=extra)
            return SegmentResult(signals=signals, counters=counters, snapshot=snapshot, notes=notes, **common)

        text = rm.result if not rm.is_error else None
        if text is None and not rm.is_error and seg.texts:
            text = seg.texts[-1]
        # the CLI stopped the run on a denial (hook continue=false -> hook_stopped; Deny(interrupt=True) ->
        # aborted_tools, or aborted_streaming when the CLI's abort lands while the response still streams: seen once
        # in about eight suite runs, error_during_execution with the denied call in permission_denials) and its
        # permission_denials name a tool the policy denies
        denied_by_policy = [d for d in rm.permission_denials or []
                            if isinstance(d, dict) and (spec := scenario.tools.get(bare_name(str(d.get("tool_name")))))
                            and spec.approval == "deny"]
        # the structured answer, as the CLI validated it (None when the run returned none)
        final_output = rm.structured_output if isinstance(rm.structured_output, dict) else None
        if rm.structured_output is not None:
            extra["structured_output_type"] = type(rm.structured_output).__name__
        if rm.subtype == "error_max_turns":
            signals = NativeSignals(**base, limit="steps", limit_signal="raised", extra=extra)
        elif rm.subtype == "error_max_budget_usd":
            signals = NativeSignals(**base, limit="budget", limit_signal="raised", extra=extra)
        elif rm.terminal_reason in ("hook_stopped", "aborted_tools", "aborted_streaming") and denied_by_policy:
            signals = NativeSignals(**base, denied=True, final_text=text, extra=extra)
        elif rm.subtype == STRUCTURED_RETRIES_SPENT:
            # the CLI's structured-output retries are spent: the model's answers failed its validation
            signals = NativeSignals(**base, failure="model", extra=extra)
        elif rm.is_error:
            model = rm.api_error_status is not None or rm.terminal_reason == "api_error"
            signals = NativeSignals(**base, failure="model" if model else "other", extra=extra)
        elif exc is not None:
            signals = NativeSignals(**base, failure="other", final_text=text, final_output=final_output, extra=extra)
        else:
            signals = NativeSignals(**base, final_text=text, final_output=final_output, extra=extra)
        return SegmentResult(signals=signals, counters=counters, notes=notes, **common)

    @staticmethod
    def _tokens(rm: Any) -> tuple[int | None, int | None]:
        """Input and output tokens summed over `model_usage` (exact per call; None when the CLI sent none)."""
        usage = rm.model_usage if rm is not None else None
        if not isinstance(usage, dict):
            return None, None
        return (sum(int(u.get("inputTokens") or 0) for u in usage.values()),
                sum(int(u.get("outputTokens") or 0) for u in usage.values()))

    @classmethod
    def _counters(cls, seg: _Segment, at_pause: _AtPause | None) -> ReportedCounters:
        rm = seg.result
        if rm is None:
            seen = len(seg.message_ids) + seg.api_retries - seg.retries_of_started
            return ReportedCounters(model_requests_reported=seen or None, runtime_step_unit=STEP_UNIT)
        # each response, each retried failure, and the failure that ended the run when the CLI names its status
        requests = (len(seg.message_ids) + seg.api_retries - seg.retries_of_started
                    + (1 if rm.api_error_status is not None else 0))
        tokens_in, tokens_out = cls._tokens(rm)
        cost = rm.total_cost_usd

        def since_pause(value: Any, base: Any) -> Any:
            # cumulative across a resume (restored from the transcript): this segment's growth; unknown base ->
            # unknown growth
            if value is None or at_pause is None:
                return value
            return None if base is None else round(value - base, 12)

        if at_pause is not None:
            cost = since_pause(cost, at_pause.cost_usd)
            tokens_in = since_pause(tokens_in, at_pause.input_tokens)
            tokens_out = since_pause(tokens_out, at_pause.output_tokens)
        return ReportedCounters(
            model_requests_reported=requests, runtime_steps=rm.num_turns, runtime_step_unit=STEP_UNIT,
            input_tokens_reported=tokens_in, output_tokens_reported=tokens_out, cost_usd_reported=cost,
            cumulative=False,
        )

    @classmethod
    def _save(cls, ctx: RunContext, rm: Any, pending: list[PendingCall], settings: dict[str, Any],
              kept_at: str = "pause") -> str:
        """What the app keeps to go on later: the session id (the transcript stays in the task's live config dir)
        and the cumulative counters then. `kept_at`: "pause" (a deferred call) or "cancel" (the caller's)."""
        snap = ctx.snapshot_dir
        snap.mkdir(parents=True, exist_ok=True)
        tokens_in, tokens_out = cls._tokens(rm)
        (snap / PENDING_FILE).write_text(json.dumps([p.model_dump() for p in pending]))
        (snap / SESSION_FILE).write_text(json.dumps({
            "kept_at": kept_at, "session_id": rm.session_id, "num_turns": rm.num_turns,
            # the cumulative values at the pause (raw, as the CLI reported them): a resume subtracts them
            "total_cost_usd": rm.total_cost_usd, "input_tokens": tokens_in, "output_tokens": tokens_out,
            "settings": settings,
        }, default=str))
        print(f"claude-agent-sdk: session {rm.session_id} ({kept_at}) saved to {snap}", file=sys.stderr)
        return str(snap)


class ClaudeCanUseTool(ClaudeAgentAdapter):
    variant = "can-use-tool"
    about = ("approvals through can_use_tool, decided in-process by the harness when the CLI asks (no pause: a "
             "call without a decision -> Deny(interrupt=True)); policy deny -> Deny(interrupt=True) to stop, "
             "Deny(interrupt=False) to continue")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **ClaudeAgentAdapter.mechanism_table,
        "deny_stop": "can_use_tool PermissionResultDeny(interrupt=True) (terminal_reason aborted_tools)",
        "deny_continue": "can_use_tool PermissionResultDeny(interrupt=False)",
        "approval_pause": "unsupported: can_use_tool asks the harness in-process; no decision -> "
                          "PermissionResultDeny(interrupt=True), no pause",
        "reject": "can_use_tool PermissionResultDeny(interrupt=False)",
    }

    def _approvals(self, scenario: Scenario, ctx: RunContext, seg: _Segment, decisions: dict[str, str],
                   gated: list[str]) -> tuple[dict[str, Any], list[str]]:
        # a decision is applied in-process: nothing is ever saved and resumed
        return {"can_use_tool": self._can_use_tool(scenario, ctx, seg)}, [NO_PAUSE] if scenario.resumes else []


class ClaudeAgentGuarded(ClaudeAgentAdapter):
    variant = "guarded"
    about = ("the default with loopbench.guard installed as CLI hooks (GuardHooks: UserPromptSubmit, SubagentStart "
             "and PostToolBatch reserve the next model call, PreToolUse / PostToolUse / PostToolUseFailure guard the "
             "tools, defer for a call it holds no approval for, continue=false to stop); native limits and the deny "
             "hook as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = dict(GUARD_LACKS)
    capabilities = ClaudeAgentAdapter.capabilities.model_copy(
        update={"guard_of": "default", "guard_lacks": dict(guard_lacks)})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **ClaudeAgentAdapter.mechanism_table,
        "approval_pause": "the guard's PreToolUse hook answers permissionDecision=defer for a call it holds no "
                          "approval for (bound to the exact arguments); resume=<session id> in another process, the "
                          "decisions told to the guard (guard.decide) and to its hook by tool_use_id",
        "reject": "the guard's PreToolUse hook answers permissionDecision=deny on resume; the rejected effect is "
                  "refused from then on (deny + continue=false)",
    }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        self._raw_decisions: dict[str, str] = {}
        return self._guarded(await super().run(scenario, ctx), ctx)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        pending = json.loads((snapshot / PENDING_FILE).read_text()) if (snapshot / PENDING_FILE).exists() else []
        guarded.decide(self._guard, pending, decisions)
        # the hook sees the CLI's tool_use_id: the decisions by it
        self._raw_decisions = {p["raw_id"]: d for p in pending if p.get("raw_id")
                               and (d := decisions.get(p.get("call_id") or "")) in ("approve", "reject")}
        return self._guarded(await super().resume(scenario, snapshot, decisions, ctx), ctx)

    def _guarded(self, result: SegmentResult, ctx: RunContext) -> SegmentResult:
        guarded.save(self._guard, ctx)
        return result.model_copy(update={"signals": result.signals.model_copy(
            update={"guard": guarded.signal(self._guard)})})

    def _tool_answered(self, call_id: str | None, out: Any) -> None:
        if call_id is not None and not out.ok:  # what the error was, for the guard's PostToolUseFailure hook
            self._errors[call_id] = out.error_kind

    def _approvals(self, scenario: Scenario, ctx: RunContext, seg: _Segment, decisions: dict[str, str],
                   gated: list[str]) -> tuple[dict[str, Any], list[str]]:
        """The default's deny hook on the tools the policy denies, and the guard's hooks on every other tool (the
        scenario's and the CLI's Agent tool): the guard holds the approvals."""
        from claude_agent_sdk import HookMatcher

        from loopbench.guard.bindings.claude_agent import GuardHooks

        self._errors: dict[str, str | None] = {}
        errors = self._errors

        def failure(tool: str, tool_use_id: str, error: str) -> Any:
            kind = errors.pop(neutral_id(tool_use_id) or "", None)
            return "fatal" if kind == "fatal" else "timeout" if kind == "timeout" else "retry"

        denied = [PREFIX + n for n, s in scenario.tools.items() if s.approval == "deny"]
        watched = [PREFIX + n for n, s in scenario.tools.items() if s.approval != "deny"]
        if scenario.agents:
            watched.append(AGENT_TOOL)
        self._hooks = GuardHooks(self._guard, matcher="|".join(watched), failure=failure,
                                 decisions=self._raw_decisions)  # type: ignore[arg-type]
        hooks = self._hooks.hooks()
        if denied:
            deny = HookMatcher(matcher="|".join(denied), hooks=[self._hook(scenario, ctx, decisions)])
            hooks["PreToolUse"] = [deny, *hooks["PreToolUse"]]
        return {"hooks": hooks}, []

    def _observe(self, seg: _Segment, message: Any) -> None:  # type: ignore[override]
        super()._observe(seg, message)
        self._hooks.on_message(message)  # at the ResultMessage: raises the guard's stop if it ended the run

    @classmethod
    def _save(cls, ctx: RunContext, rm: Any, pending: list[PendingCall], settings: dict[str, Any],
              kept_at: str = "pause") -> str:
        """The default's snapshot, with the deferred call's tool_use_id beside its scripted id (the resume tells
        the guard's hook its decision by it)."""
        snap = super()._save(ctx, rm, pending, settings, kept_at)
        deferred = rm.deferred_tool_use
        if deferred is not None:
            saved = [{**p.model_dump(), "raw_id": deferred.id} for p in pending]
            (Path(snap) / PENDING_FILE).write_text(json.dumps(saved))
        return snap


# the framework's other idioms, in the order runs and reports show them
ClaudeAgentAdapter.variant_classes = (ClaudeCanUseTool, ClaudeAgentGuarded)
