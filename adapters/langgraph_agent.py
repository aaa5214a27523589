"""LangGraph / LangChain adapter (`langgraph`).

The model: the class LangChain's own registry chooses for the scenario's Claude model —
`init_chat_model("claude-sonnet-4-5")` infers the anthropic provider and builds
`langchain_anthropic.ChatAnthropic`, and create_agent's quick start passes a Claude model string. Every variant
but `openai-compatible` builds `ChatAnthropic(model=<Adapter.model_id>, base_url=<server root>, api_key=<run
key>)` (Anthropic Messages; the Anthropic client adds /v1/messages itself) with the class's own defaults:
max_retries=2, no request timeout (timeout None), streaming off, max_tokens from the model's profile (64000),
all recorded in `settings.model_client`. Its client retries a 429 (honouring `retry-after`), a 5xx and a
connection error twice, and never one answered `x-should-retry: false`; the retries happen inside one model
call and leave no message (probes/langgraph/anthropic_counts.py). The neutral `tool_choice` values go to
`bind_tools` as ChatAnthropic takes them (required -> 'any', none -> {'type': 'none'}, a tool's name as is).
Tool-call ids are the Messages API's `toolu_<scripted id>`.

The scenario tools are `StructuredTool`s with the scenario's JSON schema. Each tool gets the model's tool-call
id from the injected `ToolRuntime` and executes through the ledger; a ledger error is RAISED (`ToolFailed`), so
the framework's default tool-error path decides (the default `ToolNode` handler only catches argument-validation
errors, so the exception propagates out of the graph: failure="tool"). The native mechanism used for each
intent the scenario states is in the segment's `mechanisms` (each idiom's `mechanism_table`).

Sub-agents (`scenario.agents`): the LangChain docs' subagents pattern (multi-agent, "tool calling": the main agent
calls each child as a tool). Each child is a compiled agent of the idiom's own kind — `create_agent(llm,
<its own ledger-backed tools>, system_prompt=<its instructions>, middleware=<its own approval / deny gates>,
name=<id>)`, or for `stategraph` the same hand-built StateGraph with `SystemMessage(<its instructions>)` before the
messages at each model call — with no checkpointer of its own, behind a `@tool(<child id>, description=<its
description>)` whose body is the docs' `(await child.ainvoke({"messages": [{"role": "user", "content": query}]}))
["messages"][-1].content`. The main agent gets `system_prompt=scenario.instructions` (None, as before, when the
scenario has no agents: then nothing changes), its own tools and the children's tools. The call limit and
tool_choice are the main agent's. What the pattern passes on, measured (probes/langgraph/subagent_tool.py):
- usage: the parent's state holds the parent's AIMessages only, so the reported requests and tokens are the main
  agent's (subagent_usage: 2 of 4 requests, 2000 / 200 of 4000 / 400 tokens). The child's run inherits the
  invocation's callbacks: an extra `UsageMetadataCallbackHandler` in the config (only when the scenario has agents)
  sees the whole tree, recorded per segment in `extra["usage_callback"]`, not as the reported count.
- limits: the child's graph runs with the parent's config (a subgraph of the parent's run, through the context's
  config), but create_agent binds recursion_limit 9999 to its graph and that wins: a create_agent child has its own
  near-unbounded allowance (subagent_runaway: research runs until the scripted server's safety cap, 50 requests,
  and the cap's 400 ends the run: `capped`); the stategraph child binds nothing and inherits the parent's
  recursion_limit, a fresh budget of the same size (15 for 8 calls: 8 research requests after main's 1, then
  GraphRecursionError out of the child, the parent's tool and the parent: limit_steps with 9 requests).
  ModelCallLimitMiddleware (`model-call-limit`) is on the main agent only: the child's calls are not counted.
- approval inside a child: the child's gate (HITL middleware / `interrupt()` in its tool) interrupts the child's
  graph, the parent's `tools` task and the whole run; the parent's state lists the interrupt under its tools
  task. The child checkpoints in the parent's checkpointer under that task's namespace; `get_state(subgraphs=True)`
  does not see it (a graph invoked inside a tool is no node), so the adapter reads the child's messages with the
  checkpointer's `aget_tuple(checkpoint_ns="<node>:<task id>")` to match the HITL action to its call id. Resume:
  the parent's tool runs again and the child's `ainvoke` continues from its checkpoint (subagent_approval:
  lookup_refund once, billing 3 requests, main 2, in two processes).
- a child's tool failure (`ToolFailed` raised in its ToolNode) propagates out of the child, the parent's tool and
  the parent's graph: failure="tool".
- `stream-messages`: the "messages" handler is a callback, inherited too: the child's requests are streamed.
- token budget: unsupported as before.

Variants
- `default`: `langchain.agents.create_agent` with its defaults.
  - max model calls -> `recursion_limit` at the top level of the invocation config. The graph counts
    supersteps, not model calls, so the adapter derives the translation from the compiled graph's structure:
    p = supersteps from START up to and including the first `model` node, L = supersteps of one
    model -> ... -> tools -> ... -> model loop; N model calls (and no tool step after the N-th) fit in
    `recursion_limit = p + L*(N-1)` (2N-1 for the bare agent, 3N-2 with an after_model node such as
    HumanInTheLoopMiddleware's). The formula and the values used are recorded in `limits`. No limit in the
    scenario: the framework default (create_agent binds 9999) is left alone. The limit is a per-invocation
    config, so a resume is invoked with the same config and gets a fresh budget (recorded, not emulated).
  - token budget, cost budget, deadline -> `unsupported` (LangGraph has `step_timeout`, a per-superstep
    timeout, and the model class a per-request `timeout`, None by default; neither is a run deadline).
  - `approval: required` -> `HumanInTheLoopMiddleware(interrupt_on={tool: {"allowed_decisions":
    ["approve", "reject"], "when": <check>}})` (default batched mode: the interrupt is raised in its
    `after_model` node, before any tool of that turn runs). Persistence as the LangGraph docs show it: ONE
    on-disk `AsyncSqliteSaver` per thread, in `ctx.task_dir` (shared by the first run and every resume of
    the business task), `thread_id` = the business task's run id; the snapshot keeps only the thread id and
    the interrupts the app showed the human (ids, kinds, call ids). The `when` predicate always answers
    True (the same as no predicate); it is where the adapter observes the user's approval code and records a
    ledger `authorize` event. langchain runs that predicate again when a resume re-runs the after_model node
    (interrupt_sibling_replay: 2 authorize events) although the human is asked once: authorize events count
    approval-callback invocations, while the harness counts approval requests from each pause's pending
    calls (1). Resume: `Command(resume={interrupt_id: {"decisions": [...]}})` built from the saved
    interrupts, decisions in each interrupt's order, matched to scripted call ids through the AIMessage's
    tool calls; approve -> {"type": "approve"}, reject -> {"type": "reject"} (no message: the middleware's
    own default text, sent to the model as a ToolMessage with status "error"; the loop goes on). The Command
    goes to the live checkpointer whatever it holds: when nothing is pending any more (the same pause
    resumed a second time), the framework runs no step and returns the thread's current state; the segment
    records that (`pending_before_resume: 0`, a note), it does not raise.
  - `approval: deny`, by the scenario's `policy.deny`:
    - "stop" -> an `@after_model(can_jump_to=["end"])` hook (`DenyByPolicy`) that, when the model's turn
      calls a denied tool, records an `authorize` event, answers every tool call of that turn with an error
      ToolMessage, adds an AIMessage saying why, and returns `jump_to: "end"`. This is the early exit the
      middleware docs teach ("Agent jumps") and the exact shape of langchain's own
      `ToolCallLimitMiddleware(exit_behavior="end")` for a blocked tool call; it was picked over a tool-call
      wrapper that raises because the run ends normally, no tool of the turn runs, and the thread's history
      stays valid (every call answered) for whoever continues it. `denied=True` only from the framework's
      own record: the debug stream's task_result of the `DenyByPolicy.after_model` node carrying
      `jump_to: "end"`.
    - "continue" -> a `wrap_tool_call` middleware that records an `authorize` event and returns a
      ToolMessage with status "error" instead of running the tool (the tool-call wrapper pattern the
      middleware docs teach): the model is told and called again; no `denied` flag.
- `stategraph`: a hand-built `StateGraph(MessagesState)`: a `model` node (`ChatAnthropic.bind_tools`), a
  `ToolNode`, `tools_condition` to END, `tools` -> `model`. A tool that needs approval records its
  `authorize` event and then calls `interrupt()` inside the tool (the pattern the interrupt docs teach);
  resume answers that interrupt with {"type": "approve"|"reject"}; reject returns a cancellation text from
  the tool. On resume the whole `tools` node re-runs from its start: sibling calls of the same turn and the
  approval check run again (counted through the ledger). Deny: the tool records `authorize`, then "stop" ->
  it raises `ToolDenied`, which the default ToolNode handler lets propagate out of the graph (`denied=True`
  when `ToolDenied` is in the exception's chain); "continue" -> it returns a refusal text without running.
  Persistence and limits as in `default` (the formula is derived from this graph).
- `model-call-limit`: `default`, but max model calls -> `ModelCallLimitMiddleware(thread_limit=N)` (its default
  exit_behavior "end": the middleware jumps to the end with an AIMessage saying the limit was exceeded) and
  `recursion_limit` left at the framework default. `thread_limit`, not `run_limit`: the neutral limit is per
  business task, which is one thread here; the run count is an UntrackedValue that is not checkpointed, so
  `run_limit` starts again at every resume (measured). The adapter reports the limit as handled when the
  segment's last task was a *CallLimitMiddleware node that wrote `jump_to: end` (the framework's own output).
- `openai-compatible`: `default` (create_agent), but the scenario's Claude through an OpenAI-compatible
  endpoint, the route a user takes through a gateway: `langchain_openai.ChatOpenAI(base_url=<server>/v1,
  api_key=<run key>, model=<the same Claude id>)` (Chat Completions), with its defaults (the openai client's
  max_retries=2, which also honours `x-should-retry`; no request timeout). Tool-call ids `call_<scripted id>`;
  tool_choice values as they are. This was every idiom's route before ChatAnthropic; kept so the comparison
  keeps its findings.
- `stream-messages`: `default` (create_agent, ChatAnthropic with its defaults, the same limits, middleware,
  checkpointer, interrupts and resume) streamed the way LangGraph documents token streaming for chat UIs: the
  invocation is `graph.astream(..., stream_mode=["debug", "values", "messages"])`, read to the end (the "messages"
  items, (message chunk, metadata) pairs, are counted into the segment's `message_chunks` and otherwise ignored).
  Nothing is set on the model: "messages" mode attaches langgraph's StreamMessagesHandler, a streaming callback
  handler, to every model call, and langchain-core's `BaseChatModel._should_stream` then takes the streaming path
  (no `streaming=True` needed, the class's `streaming` field stays False in `settings.model_client`). ChatAnthropic
  then sends every request as `POST /v1/messages` with `"stream": true` (the server's log: stream=True on every
  request of the variant; without "messages" the field is absent) and reads the Messages SSE events; the chunks
  are merged into one AIMessage per response, the one the state keeps. Usage: ChatAnthropic's `stream_usage`
  (True by default, whatever the base URL) puts the message_delta event's usage on the merged AIMessage's
  `usage_metadata` and ignores message_start's; the scripted server sends the cumulative usage (input_tokens
  included) on message_delta, so reported tokens = served, exactly as not streamed. A stream whose message_delta
  carried output_tokens only would be reported with 0 input tokens (probes/langgraph/stream_messages.py
  delta-output). Counters as the default (from the state's AIMessages). Measured on the whole suite: the streamed
  and non-streamed runs differ in no cell (outcome, requests, tool runs, supersteps, reported requests and
  tokens). ChatOpenAI's stream_usage caveat (on by default only for OpenAI's own base URL) does not apply: the
  streamed idiom is the default's ChatAnthropic; `openai-compatible` is not streamed.

- `tool-strategy`: `default`, but a structured answer is asked for with `response_format=ToolStrategy(<model>)`, the
  documented tool-based strategy, with its defaults (handle_errors=True, langchain/agents/structured_output.py:235-253):
  see "Structured answers". A scenario without `output` runs exactly as `default`.
- `guarded`: `default` with the production policy as code (`loopbench.guard`, docs/guard.md) installed as create_agent
  middleware, `GuardMiddleware` (loopbench/guard/bindings/langgraph.py), last in each agent's list (innermost around
  the model and the tools) on the main agent and, with `guard.child()`, on each sub-agent. One guard per business
  task (adapters/guarded.py), kept in the task dir across pauses and resumes. The native limits (recursion_limit),
  HumanInTheLoopMiddleware, the deny hooks and the checkpointer are the default's; a resume also tells the guard the
  decisions, by the tool call id (`toolu_<id>`), so its `awrap_tool_call` admits exactly the approved call once and
  refuses a rejected call's effect through any other tool (its `denied`). The tools report a ledger error the way a
  LangChain tool does: a recoverable one as `ToolException` (answered to the model as an error ToolMessage by the
  guard), a timeout as `TimeoutError` (a write's outcome unknown), a fatal one as the default's `ToolFailed`. The
  guard's stops propagate out of the graph; the segment records `signals.guard` and maps a raised stop as the
  guard's (rule 13), not as a tool's or the model's failure.

Structured answers (scenario `output`): the schema is a pydantic model, `output_model()`: `pydantic.create_model(
<output name>, __doc__=<description>, __config__=ConfigDict(extra="forbid"))`, every field required (str, int, float,
bool; an enum a Literal), the check an `AfterValidator` on its field raising `ValueError(<message>)`. The answer is
reported as `final_output = <the model instance>.model_dump(mode="json")`; a scenario tool call count leaves out the
calls to the answer's tool. Per idiom (probes/langgraph/structured_output.py):
- create_agent idioms (`default`, `model-call-limit`, `stream-messages`, `openai-compatible`):
  `create_agent(..., response_format=<model>)`, the docs' way. A raw schema is wrapped in AutoStrategy
  (langchain/agents/factory.py:1066-1077), resolved at every model call (factory.py:1412-1422) by
  `_supports_provider_strategy` (factory.py:581-626): ChatAnthropic's profile says structured_output, and for
  ChatOpenAI (no profile for a Claude id) the model-name fallback list matches claude-sonnet-4-5 (factory.py:203), so
  both get ProviderStrategy(strict=None): ChatAnthropic sends the schema as `output_config.format` (json_schema,
  langchain_anthropic/chat_models.py:2015-2031; the scripted server counts that as a constrained answer and never
  sends the schema-breaking one), ChatOpenAI as `response_format` json_schema with strict false and its tools strict
  (langchain_openai/chat_models/base.py:2551-2556, 2605-2617; not constrained). The answer is parsed from the
  response's text; a failure raises `StructuredOutputValidationError` out of the model node, no retry
  (factory.py:1260-1272; `_handle_structured_output_error` retries only a ToolStrategy, factory.py:649-676). Measured:
  invalid_then_valid completes in 2 requests on ChatAnthropic (constrained) and fails in 2 on ChatOpenAI;
  check_rejects and never_valid fail in 2 on both: ended "raised", failure "model". The model node's writes are lost
  with the exception, but the exception carries the rejected response (`ai_message`, structured_output.py:62-76),
  so the segment's counts add it to the state's and stay known (2 responses, their usage).
- `tool-strategy`: ToolStrategy adds the schema as a tool named after it and binds tool_choice "any"
  (factory.py:1477-1483); a rejected answer is answered with a ToolMessage "Error: <error>\n Please fix your
  mistakes." (factory.py:128, 1332-1343) and the edge goes back to the model (factory.py:2038-2041). There is no
  retry budget of its own (22 requests for an answer valid at the 21st attempt, create_agent's recursion_limit
  9999). A correction costs ONE superstep (model -> model) where the call limit's translation budgets L=2 per model
  call, so 4 model calls (recursion_limit 7) let 6 requests through: never_valid ends with GraphRecursionError after
  6 requests (5 answers), invalid_then_valid and check_rejects complete in 3. Measured too: langgraph checks the
  limit before it sees that no task is left (langgraph/pregel/_loop.py:666-675), so a run whose last superstep is
  the recursion_limit-th raises GraphRecursionError even when it has ended (a valid 5th answer on the 6th request:
  raised, the answer only in the last streamed state): "N calls fit" holds for N calls run, not for a run that
  finishes on its last allowed superstep.
- `stategraph`: no create_agent. The LangGraph how-to "How to force tool-calling agent to structure output"
  (docs/docs/how-tos/react-agent-structured-output.ipynb), Option 1 "bind output as tool": `llm.bind_tools([*tools,
  <model>], tool_choice="any")`; when the turn is one call to the model's tool a `respond` node builds
  `<model>(**args)` into the state's `final_response` and answers the call ("Here is your structured response"),
  then END. (Its Option 2, a respond node calling `with_structured_output` on the last message alone, is a second
  request without the conversation, which a conversation-keyed script cannot tell from an opening request.) The
  how-to has no retry: the ValidationError propagates out of the graph (failure "model", mapped from the failed
  `respond` task); the bound tool is not strict, so all three scenarios fail after 2 requests. The respond node is
  one more superstep after the answering model call, which the call limit's formula does not budget.

The caller's cancel (scenario `cancel`), every variant: the invocation (`graph.astream`) runs in an asyncio task
beside the harness's cancel; when told, the adapter cancels that task, the way an async LangGraph caller stops a run
(langgraph/pregel/_executor.py:130-135, 202-205: the node tasks in flight, submitted `__cancel_on_exit__`, are
cancelled with it; `RunControl.request_drain`, langgraph/runtime.py:79-104, is cooperative and stops only before
the next superstep, after the tool or model call in flight: not the cancel the scenario states). A scenario with a
cancel gets the same one AsyncSqliteSaver per thread in the task dir as an approval does. The segment ends
`cancelled` (exception_type CancelledError), `extra.in_flight` naming the nodes that had started and not finished,
`extra.next` the checkpoint's next nodes; counters from the checkpoint's state: the responses finished before the
cancel, with their usage (a model request in flight produced no message, so none of its usage is reported). Measured
on every variant: the run stops within ~0.1 s of the cancel (cancel_during_tool: the 5 s get_ticket abandoned;
cancel_during_model: the 5 s request abandoned, 1 of 2 requests reported, 1000 / 100 tokens). The snapshot
(`cancelled.json`, told apart from an approval's `pause.json`) keeps the thread id. Resume (another process): the
persistence docs' continuation of an interrupted thread, `astream(None, {"configurable": {"thread_id": ...}})`
against the task's checkpointer: the superstep the cancel interrupted runs again from its start (`next`), so the
`tools` node re-runs the abandoned lookup_policy (a second execution) and post_to_portal, checkpointed in an earlier
superstep, is not repeated (cancel_then_resume: completed, post_to_portal 1, lookup_policy 2; the resume segment's
`extra.first_step_tasks` is ["tools"]; probes/langgraph/cancel_resume.py, both create_agent and StateGraph). Had the
cancel hit a model request, `next` is ["model"] and the request is sent again.

Counters per segment (not cumulative): runtime steps = the distinct supersteps that ran tasks, from the
graph's `debug` stream; model requests reported = one per model response the framework reports: the
AIMessages the chat model class produced in this segment (messages already in the checkpoint are excluded by
id; an AIMessage a middleware wrote — the deny hook's, the call limit's — carries no usage and none of the
response metadata the class sets, `model_provider` / `stop_reason` / `finish_reason`, and is not one). A
response with no content is still one (ChatAnthropic: an AIMessage with content [], its usage and stop
reason). Tokens = the sum of their `usage_metadata` (None when one lacks it; 0 when the segment produced
none, e.g. a resume that ran no step); ChatAnthropic's `input_tokens` include the cache read and cache
creation tokens (the scripted server sends none). The client's retries are not responses: a 429 then a 500
then an answer is one AIMessage for three requests (model_transient_error: 3 reported of 5). These are the
framework's own counts when the segment returned or paused: its state then holds every response. When the
graph raised while a `model` task ran (the debug stream's task_result for it carries the error, or never
came), the requests and tokens are unknown: the failed request and the client's hidden retries leave no
message (model_fatal_error: 0 AI messages for 1 request; model_outage: for 3), so they are None, never the
messages counted so far. A graph that raised outside a model call (GraphRecursionError between supersteps,
a tool's exception, a denial) keeps the counts: the streamed state holds every model response.

Measured facts to re-check on upgrade (probes/langgraph/): a resumed invocation gets recursion_limit + 2
supersteps (the loop's stop is computed from the checkpoint's step, and the interrupted step runs again);
a Command(resume=...) for an interrupt no longer pending runs nothing and returns the current state
(resume_twice_live.py); a child graph invoked inside a parent's tool checkpoints under the namespace
"<node>:<task id>" of the parent's task, which get_state(subgraphs=True) does not list (the approval test's call
id fails if that changes). Client reuse: ChatAnthropic and ChatOpenAI each cache their default async httpx client
per process (an lru_cache keyed by base URL); each model instance (one per run) wraps it in an SDK client with
the run's key, so the worker's one event loop reuses the connections for every segment, as a user's long-lived
process would. langchain-openai's cached connections are bound to the loop they were made in: another loop
starts with an empty cache (`_fresh_default_async_client`); ChatAnthropic's work across loops (loop_closed.py).
"""

from __future__ import annotations

import json
import weakref
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from loopbench.adapters import guarded
from loopbench.adapters.kit import (
    ToolDenied,
    ToolFailed,
    exception_chain,
    in_chain,
    pydantic_output_model,
    raised_in_model_client,
)
from loopbench.guard.bindings.lacks import LANGGRAPH as LANGGRAPH_LACKS
from loopbench.guard.hooks import Hook
from loopbench.harness.adapter import Adapter, Capabilities, Intent, RunContext
from loopbench.harness.ledger.http import LedgerClient
from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX, OPENAI_ID_PREFIX, neutral_id
from loopbench.harness.record import LimitTranslation, NativeSignals, PendingCall, ReportedCounters, SegmentResult
from loopbench.harness.scenario import Scenario
from loopbench.harness.scenario.model import MAIN_AGENT, OutputSpec

CHECKPOINT_FILE = "checkpoints.sqlite"
PAUSE_FILE = "pause.json"
CANCEL_FILE = "cancelled.json"  # a cancel snapshot (the thread to continue), told apart from a pause's
MODEL_NODE = "model"
TOOLS_NODE = "tools"
LIMIT_MIDDLEWARE_SUFFIX = "CallLimitMiddleware.before_model"
DENY_MIDDLEWARE = "DenyByPolicy"  # the deny-stop after_model hook: its node is "DenyByPolicy.after_model"
DENY_NODE = f"{DENY_MIDDLEWARE}.after_model"
# response_metadata keys a chat model class sets on its responses (never on an AIMessage a middleware writes)
RESPONSE_MARKS = ("model_provider", "finish_reason", "stop_reason")
UNSUPPORTED_NOTES = {
    "max_total_tokens": "no native token budget",
    "max_cost_usd": "no native cost budget",
    "deadline_s": "no run deadline (step_timeout is per superstep; the model client's timeout is per request)",
}


def loop_shape(edges: list[tuple[str, str]]) -> tuple[int, int]:
    """(p, L) from a graph's edges: supersteps from START up to and including the first model step, and
    supersteps of one model -> tools -> model loop."""

    def dist(src: str, dst: str) -> int:
        seen, todo = {src: 0}, deque([src])
        while todo:
            node = todo.popleft()
            for a, b in edges:
                if a == node and b not in seen:
                    seen[b] = seen[node] + 1
                    todo.append(b)
        if dst not in seen:
            raise ValueError(f"no path from {src} to {dst} in the graph")
        return seen[dst]

    return dist("__start__", MODEL_NODE), dist(MODEL_NODE, TOOLS_NODE) + dist(TOOLS_NODE, MODEL_NODE)


RESPOND_NODE = "respond"  # stategraph's structured answer: the docs' respond node (Option 1)
# the respond node's ToolMessage, the docs' text (react-agent-structured-output, Option 1)
RESPOND_TEXT = "Here is your structured response"


def output_model(spec: OutputSpec) -> type[Any]:
    """The scenario's structured answer as the pydantic model LangChain's docs hand create_agent
    (`response_format=Model`), the check an AfterValidator (adapters/kit.py `pydantic_output_model`)."""
    return pydantic_output_model(spec)


TOOL_CHOICE_MIDDLEWARE = ("@wrap_model_call middleware: request.override(tool_choice=...) for the call the turn "
                          "answers (chosen from the messages about to be sent)")
TOOL_CHOICE_NODE = ("the model node binds llm.bind_tools(tools, tool_choice=...) for the call the turn answers "
                    "(chosen from the messages about to be sent)")


def _tool_choice_for(scenario: Scenario, messages: list[Any], prefix: str) -> str | None:
    """The scenario's (neutral) `tool_choice` for a model call about to send `messages`: from the ToolMessages
    after the last AIMessage (their ids carry the protocol's `prefix`), and whether the conversation holds any."""
    from langchain_core.messages import ToolMessage

    trailing: list[str] = []
    for m in reversed(messages):
        if not isinstance(m, ToolMessage):
            break
        trailing.append(neutral_id(m.tool_call_id, prefix) or "")
    any_results = any(isinstance(m, ToolMessage) for m in messages)
    return scenario.tool_choice_for(trailing, any_results)


def _own_tools(scenario: Scenario, agent: str, tools: list[Any]) -> list[Any]:
    """The built tools an agent is given (every tool when the scenario has no sub-agents), in scenario order."""
    names = set(scenario.tools_of(agent))
    return [t for t in tools if t.name in names]


# the caller's cancel, the way the LangGraph docs show it for an async run: cancel the asyncio task that drives
# astream (langgraph/pregel/_executor.py:130-135, 202-205: the node tasks, submitted __cancel_on_exit__, are
# cancelled with it). RunControl.request_drain (langgraph/runtime.py:79-104) is the cooperative alternative: it
# stops only before the next superstep, after the tool or model call in flight has finished.
CANCEL_TASK = ("cancel the asyncio task driving graph.astream (the node tasks in flight are cancelled: "
               "langgraph/pregel/_executor.py:130-135, 202-205); the thread kept in one AsyncSqliteSaver in the "
               "task dir")
RESUME_AFTER_CANCEL = ("graph.astream(None, {'configurable': {'thread_id': ...}}) in a new process from the task's "
                       "AsyncSqliteSaver: the thread continues from its last checkpoint (the interrupted superstep's "
                       "nodes run again)")


class CancelWaitFailed(RuntimeError):
    """Waiting for the harness's cancel broke: loopbench's fault, never mapped as the framework's."""


async def run_until_cancelled(work: Any, ledger: LedgerClient | None) -> bool:
    """Await `work` (a task driving the framework); with a `ledger`, beside the harness's cancel: when the caller
    cancels first, cancel `work` (asyncio task cancellation) and wait for it to unwind. True when it stopped on the
    cancel; False when it ended first or caught the cancellation and finished (mapped as it ended); the work's own
    exception, if it ended by raising, propagates."""
    import asyncio

    if ledger is None:
        await work
        return False
    waiter = asyncio.ensure_future(ledger.wait_cancel())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if work.done() or not waiter.done():
            await work
            return False
        if waiter.exception() is not None:  # loopbench's wait broke, not the framework: an adapter error
            work.cancel()
            raise CancelWaitFailed("waiting for the harness's cancel failed") from waiter.exception()
        if not waiter.result():  # the run ended first (as the harness saw it)
            await work
            return False
        work.cancel()
        try:
            await work
        except asyncio.CancelledError:
            return True
        return False  # it caught the cancellation and finished: mapped as however it ended
    finally:
        waiter.cancel()


# a ledger error is raised from the tool: ToolNode's default error handling re-raises it out of the graph
TOOL_ERROR_RAISED = "the tool raises ToolFailed; ToolNode's default handle_tool_errors lets it propagate (the run ends)"


class LangGraphAdapter(Adapter):
    id = "langgraph"
    distribution = "langgraph"
    display_name = "LangGraph"
    sdk_modules = ("langgraph", "langchain", "langchain_core", "langchain_anthropic", "langchain_openai")
    # the class LangChain's registry picks for a Claude model: init_chat_model("claude-sonnet-4-5") -> anthropic
    model_class = "langchain_anthropic.ChatAnthropic"
    model_provider = "anthropic"
    call_id_prefix: ClassVar[str] = ANTHROPIC_ID_PREFIX  # tool_use ids as the Messages API sends them
    packages = ("langchain", "langchain-core", "langchain-anthropic", "anthropic", "langchain-openai", "openai",
                "langgraph-checkpoint-sqlite", "aiosqlite")
    extra = "langgraph"
    # held to the release's day by the version matrix: langchain 1.5 needs a newer langgraph than 1.2.3
    companions = ("langchain", "langchain-core", "langchain-anthropic", "langchain-openai",
                  "langgraph-checkpoint-sqlite")
    plain_script = "langgraph_agent.py"
    # tried: 1.1.5 runs; 1.0.10 and 1.0.6 fail beside their companions (langgraph.runtime.ExecutionInfo, aiosqlite)
    min_version = (1, 1)
    about = ("langchain.agents.create_agent with its defaults and ChatAnthropic (the class init_chat_model picks "
             "for Claude); max model calls -> recursion_limit; approvals -> HumanInTheLoopMiddleware + "
             "AsyncSqliteSaver")
    in_tool_gates: ClassVar[bool] = False  # approvals and denials inside the tool (interrupt() / a refusal)
    # the graph's stream modes the adapter reads: debug (supersteps, tasks) and values (the state); the
    # `stream-messages` variant adds "messages" (token streaming), whose chunks it reads to the end and ignores
    stream_modes: ClassVar[tuple[str, ...]] = ("debug", "values")
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls"}),
        step_unit="superstep",
        pause="snapshot",
        pause_survives_restart=True,
        deny="stop: an after_model hook jumping to the end (stategraph: the tool raises); continue: a "
             "wrap_tool_call middleware returning an error ToolMessage (stategraph: the tool returns a refusal)",
        notes=("recursion_limit counts supersteps; the limit is per invocation, so a resume gets a fresh budget",
               "a failed model request is retried by the model class's client, twice by default (ChatAnthropic: a "
               "429 after its retry-after, a 5xx; never one marked x-should-retry: false), inside one model call: "
               "the retries leave no message, so reported model requests count responses, not retries"),
    )
    # intent -> native mechanism, per idiom (a segment's `mechanisms` keeps the ones the scenario uses)
    mechanism_table: ClassVar[dict[Intent, str]] = {
        "cancel": CANCEL_TASK,
        "resume_after_cancel": RESUME_AFTER_CANCEL,
        "delegate": "a @tool named after the child invoking its create_agent(system_prompt=..., tools=...) graph "
                    "(the docs' subagents / tool-calling pattern; the child a subgraph of the parent's run)",
        "deny_stop": f"@after_model(can_jump_to=['end']) hook {DENY_MIDDLEWARE}: an error ToolMessage for "
                     "each call of the turn, an AIMessage, jump_to 'end' (the shape of "
                     "ToolCallLimitMiddleware(exit_behavior='end')); denied = that node's jump in the debug stream",
        "deny_continue": "wrap_tool_call middleware returning a ToolMessage(status='error') instead of running "
                         "the tool (the model is told; the loop goes on)",
        "approval_pause": "HumanInTheLoopMiddleware(interrupt_on={tool: {allowed_decisions, when}}) + one "
                          "AsyncSqliteSaver per thread in the task dir; resume Command(resume={interrupt_id: "
                          "{'decisions': [...]}})",
        "reject": "HITL decision {'type': 'reject'} (the middleware's default text to the model as an error "
                  "ToolMessage; the loop goes on)",
        "tool_choice_first": TOOL_CHOICE_MIDDLEWARE,
        "tool_choice_later": TOOL_CHOICE_MIDDLEWARE,
        "tool_error_recoverable": TOOL_ERROR_RAISED,
        "tool_error_fatal": TOOL_ERROR_RAISED,
        "structured_output": "create_agent(response_format=<pydantic model>) (a raw schema: AutoStrategy), which picks "
                             "ProviderStrategy for ChatAnthropic (its profile's structured_output): the schema as "
                             "output_config.format (json_schema), the answer parsed from the response's text; "
                             "state['structured_response']",
        "output_check": "a pydantic AfterValidator on the field raising ValueError(message); ProviderStrategy raises "
                        "StructuredOutputValidationError on a failed answer (no retry)",
    }
    # what a rejected structured answer does in this idiom (for the segment's settings["output"])
    output_strategy: ClassVar[str] = "AutoStrategy (the default for a raw schema)"

    @classmethod
    def warm(cls) -> None:
        """Import the SDK and build a throwaway agent (no request is made), so no run pays first-use costs."""
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware, ModelCallLimitMiddleware
        from langchain_anthropic import ChatAnthropic
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: F401
        from langgraph.prebuilt import ToolNode  # noqa: F401

        # the worker warms the registered class once for every idiom: both model classes the idioms drive
        for llm in (ChatAnthropic(base_url="http://127.0.0.1:9", api_key="warm", model="claude-sonnet-4-5"),
                    ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="warm", model="warm")):
            create_agent(llm, [], middleware=[HumanInTheLoopMiddleware(interrupt_on={}),
                                              ModelCallLimitMiddleware(run_limit=1)]).get_graph()

    # ------------------------------------------------------------------ building
    def _needs_checkpointer(self, scenario: Scenario) -> bool:
        """A checkpointer where the app continues a thread later: an approval pause, or a run its caller may
        cancel (the docs' way to continue an interrupted run is the thread's last checkpoint)."""
        return scenario.cancel is not None or any(spec.approval == "required" for spec in scenario.tools.values())

    def _tools(self, scenario: Scenario, ledger: LedgerClient) -> list[Any]:
        from langchain_core.tools import StructuredTool
        from langgraph.prebuilt import ToolRuntime
        from langgraph.types import interrupt

        in_tool_gates = self.in_tool_gates
        deny_stops = scenario.policy.deny == "stop"
        prefix = self.call_id_prefix

        def make(name: str) -> Any:
            spec = scenario.tools[name]

            async def invoke(runtime: Any, **args: Any) -> str:
                raw_id = runtime.tool_call_id
                cid = neutral_id(raw_id, prefix)
                if in_tool_gates and spec.approval == "required":
                    await ledger.authorize(name, args, cid, "approval required")
                    answer = interrupt({"type": "tool_approval", "tool_call_id": raw_id, "name": name, "args": args})
                    if not (isinstance(answer, dict) and answer.get("type") == "approve"):
                        return f"The user rejected the {name} call; it was not executed."
                elif in_tool_gates and spec.approval == "deny":
                    await ledger.authorize(name, args, cid, "denied by policy")
                    if deny_stops:  # the user's tool ends the run: ToolNode lets the exception through
                        raise ToolDenied(f"{name} is denied by policy")
                    return f"{name} is denied by policy; it was not executed."
                out = await ledger.call(name, args, cid)
                if not out.ok:
                    raise self._tool_error(out)
                return out.text

            # resolved here: the module's lazy imports are not in its globals
            invoke.__annotations__ = {"runtime": ToolRuntime, "args": Any, "return": str}
            return StructuredTool(name=name, description=spec.description, args_schema=spec.parameters,
                                  coroutine=invoke)

        return [make(n) for n in scenario.tools]

    def _tool_error(self, out: Any) -> Exception:
        """What a tool raises for a ledger error (any kind): `ToolFailed`, which ToolNode's default handler lets
        propagate out of the graph."""
        return ToolFailed(out.text)

    def _middleware(self, scenario: Scenario, ledger: LedgerClient, agent: str = MAIN_AGENT
                    ) -> tuple[list[Any], dict[str, Any]]:
        """The middleware of one agent's create_agent: the call limit and tool_choice are the main agent's (the
        task's); approval and deny gates cover the agent's own tools (all of them without sub-agents)."""
        from langchain.agents.middleware import (
            HumanInTheLoopMiddleware,
            after_model,
            wrap_tool_call,
        )
        from langchain_core.messages import AIMessage, ToolMessage

        prefix = self.call_id_prefix
        main = agent == MAIN_AGENT
        own = set(scenario.tools_of(agent))
        middleware, settings = self._call_limit_middleware(scenario.limits.max_model_calls if main else None)
        if main and scenario.tool_choice_rules():
            from langchain.agents.middleware import wrap_model_call

            native_choice = self._native_tool_choice

            @wrap_model_call
            async def scenario_tool_choice(request: Any, handler: Any) -> Any:
                choice = _tool_choice_for(scenario, request.messages, prefix)
                return await handler(request.override(tool_choice=native_choice(choice)) if choice else request)

            middleware.append(scenario_tool_choice)
            settings["tool_choice"] = {r.after_call or "opening call": r.choice for r in scenario.tool_choice_rules()}
        gated = [name for name, spec in scenario.tools.items() if spec.approval == "required" and name in own]
        if gated:

            def make_check(name: str) -> Any:
                def check(request: Any) -> bool:  # the approval check: recorded, then always "interrupt"
                    call = request.tool_call
                    ledger.authorize_sync(name, call.get("args") or {}, neutral_id(call.get("id"), prefix),
                                          "approval required")
                    return True

                return check

            interrupt_on = {name: {"allowed_decisions": ["approve", "reject"], "when": make_check(name)}
                            for name in gated}
            middleware.append(HumanInTheLoopMiddleware(interrupt_on=interrupt_on))
            settings["HumanInTheLoopMiddleware"] = {
                "interrupt_on": gated, "allowed_decisions": ["approve", "reject"],
                "interrupt_mode": "batched (default)", "approval_check": "InterruptOnConfig.when (records authorize)",
            }
        denied = {name for name, spec in scenario.tools.items() if spec.approval == "deny" and name in own}
        if denied and scenario.policy.deny == "stop":

            # last in the list: after_model hooks run last-to-first, so the denial is checked before any other
            @after_model(can_jump_to=["end"], name=DENY_MIDDLEWARE)
            async def deny_and_stop(state: Any, runtime: Any) -> dict[str, Any] | None:
                last = state["messages"][-1] if state.get("messages") else None
                calls = list(getattr(last, "tool_calls", None) or [])
                refused = [c for c in calls if c["name"] in denied]
                if not refused:
                    return None
                for c in refused:
                    await ledger.authorize(c["name"], c.get("args") or {}, neutral_id(c.get("id"), prefix),
                                           "denied by policy")
                # as ToolCallLimitMiddleware(exit_behavior="end"): answer every call of the turn, then end
                answers = [ToolMessage(content=(f"{c['name']} is denied by policy; it was not executed."
                                                if c["name"] in denied else
                                                "Not executed: the run was stopped on a denied call of this turn."),
                                       name=c["name"], tool_call_id=c["id"], status="error") for c in calls]
                names = ", ".join(sorted({c["name"] for c in refused}))
                return {"messages": [*answers, AIMessage(f"Stopped: {names} is denied by policy.")],
                        "jump_to": "end"}

            middleware.append(deny_and_stop)
            settings["deny"] = {"tools": sorted(denied), "intent": "stop",
                                "how": f"@after_model hook {DENY_MIDDLEWARE} -> jump_to 'end'"}
        elif denied:

            @wrap_tool_call
            async def deny_by_policy(request: Any, handler: Any) -> Any:
                call = request.tool_call
                if call["name"] not in denied:
                    return await handler(request)
                await ledger.authorize(call["name"], call.get("args") or {}, neutral_id(call.get("id"), prefix),
                                       "denied by policy")
                return ToolMessage(content=f"{call['name']} is denied by policy; it was not executed.",
                                   name=call["name"], tool_call_id=call["id"], status="error")

            middleware.append(deny_by_policy)
            settings["deny"] = {"tools": sorted(denied), "intent": "continue",
                                "how": "wrap_tool_call middleware -> error ToolMessage"}
        return middleware, settings

    def _llm(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """The chat model this idiom drives, with the class's own defaults, and what those defaults are (read
        from the instance, for the record): ChatAnthropic, the class init_chat_model picks for a Claude model. The
        Anthropic client adds /v1/messages to the base URL itself."""
        from langchain_anthropic import ChatAnthropic

        llm = ChatAnthropic(model=self.model_id(scenario), base_url=ctx.base_url, api_key=ctx.api_key)
        return llm, {"protocol": "Anthropic Messages", "max_retries": llm.max_retries,
                     "timeout": llm.default_request_timeout, "streaming": llm.streaming, "max_tokens": llm.max_tokens}

    @staticmethod
    def _native_tool_choice(choice: str) -> Any:
        """The scenario's neutral `tool_choice` as ChatAnthropic.bind_tools takes it: 'any' forces a tool call,
        a tool's name forces that tool, and 'none' (which bind_tools would read as a tool's name) as a dict."""
        return {"required": "any", "none": {"type": "none"}}.get(choice, choice)

    def _graph(self, scenario: Scenario, ctx: RunContext, checkpointer: Any) -> tuple[Any, dict[str, Any]]:
        _fresh_default_async_client()
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
        llm, client = self._llm(scenario, ctx)
        tools = self._tools(scenario, ledger)
        settings: dict[str, Any] = {
            "model_client": client,
            "checkpointer": "AsyncSqliteSaver (on disk, one per thread, in the task dir)" if checkpointer else None,
            "stream_mode": list(self.stream_modes),
        }
        graph = self._build(scenario, llm, tools, ledger, checkpointer, settings)
        return graph, settings

    def _build(self, scenario: Scenario, llm: Any, tools: list[Any], ledger: LedgerClient, checkpointer: Any,
               settings: dict[str, Any]) -> Any:
        """The compiled graph of this idiom (recording what it used in `settings`): create_agent."""
        from langchain.agents import create_agent

        middleware, mw_settings = self._middleware(scenario, ledger)
        own = _own_tools(scenario, MAIN_AGENT, tools)
        children = self._delegations(scenario, llm, tools, ledger, settings)
        # system_prompt None without sub-agents (no scenario of those sets instructions): the graph as before
        response_format = self._response_format(scenario, llm, [*own, *children], settings)
        graph = create_agent(llm, [*own, *children], system_prompt=scenario.instructions, middleware=middleware,
                             checkpointer=checkpointer, response_format=response_format)
        settings.update(graph="langchain.agents.create_agent", middleware=[type(m).__name__ for m in middleware],
                        **mw_settings)
        return graph

    def _response_format(self, scenario: Scenario, llm: Any, tools: list[Any], settings: dict[str, Any]) -> Any:
        """create_agent's `response_format` (None without a structured answer: create_agent's default): the pydantic
        model itself, which create_agent wraps in AutoStrategy (langchain/agents/factory.py:1066-1077) and resolves
        at each model call (factory.py:1412-1422) through `_supports_provider_strategy` (factory.py:581-626)."""
        if scenario.output is None:
            return None
        model = output_model(scenario.output)
        settings["output"] = {"response_format": f"{scenario.output.name} (pydantic model, extra='forbid')",
                              "strategy": self.output_strategy, **self._strategy_record(llm, tools),
                              "check": (f"AfterValidator on {scenario.output.check.field}"
                                        if scenario.output.check else None)}
        return self._wrap_schema(model)

    @staticmethod
    def _wrap_schema(model: type[Any]) -> Any:
        """The default idiom passes the schema as is (AutoStrategy)."""
        return model

    @staticmethod
    def _strategy_record(llm: Any, tools: list[Any]) -> dict[str, Any]:
        """What AutoStrategy resolves to for this model class, read with langchain's own (private) test, for the
        record: ProviderStrategy (strict None: no `strict` on the format; no retry) or ToolStrategy (its defaults)."""
        try:
            from langchain.agents.factory import _supports_provider_strategy
        except ImportError:
            return {"resolves_to": "unknown (langchain's _supports_provider_strategy not found)"}
        if _supports_provider_strategy(llm, tools=tools):
            return {"resolves_to": "ProviderStrategy(strict=None)", "on_invalid_answer":
                    "StructuredOutputValidationError raised (factory.py:1260-1272): no retry"}
        return {"resolves_to": "ToolStrategy(handle_errors=True)", "on_invalid_answer":
                "an error ToolMessage and the model called again (factory.py:1332-1343)"}

    # ------------------------------------------------------------------ sub-agents
    def _child_graph(self, scenario: Scenario, child: str, llm: Any, tools: list[Any], ledger: LedgerClient
                     ) -> tuple[Any, dict[str, Any]]:
        """A child agent as this idiom builds one (create_agent with its own prompt, tools and gates; no
        checkpointer: invoked inside the parent's run it is a subgraph and uses the parent's), and its settings."""
        from langchain.agents import create_agent

        middleware, mw_settings = self._middleware(scenario, ledger, child)
        graph = create_agent(llm, tools, system_prompt=scenario.agents[child].instructions, middleware=middleware,
                             name=child)
        bound = (getattr(graph, "config", None) or {}).get("recursion_limit")
        return graph, {"graph": "langchain.agents.create_agent(system_prompt=<its instructions>, name=<id>)",
                       "middleware": [type(m).__name__ for m in middleware], **mw_settings,
                       "recursion_limit": bound,
                       "recursion_limit_source": "bound by create_agent; it wins over the parent's inherited config "
                                                 "(probes/langgraph/subagent_tool.py)"}

    def _delegations(self, scenario: Scenario, llm: Any, tools: list[Any], ledger: LedgerClient,
                     settings: dict[str, Any]) -> list[Any]:
        """One tool per child, the LangChain docs' subagents pattern (multi-agent, "tool calling"): a `@tool`
        named after the child, with its description, whose body invokes the child's compiled agent on the
        parent's query and returns the content of the child's last message. Nothing without sub-agents."""
        from langchain_core.tools import tool

        out: list[Any] = []
        for child, spec in scenario.agents.items():
            graph, child_settings = self._child_graph(scenario, child, llm, _own_tools(scenario, child, tools), ledger)

            def make(graph: Any) -> Any:
                async def call_child(query: str) -> Any:
                    result = await graph.ainvoke({"messages": [{"role": "user", "content": query}]})
                    return result["messages"][-1].content

                return call_child

            out.append(tool(child, description=spec.description)(make(graph)))
            settings.setdefault("subagents", {})[child] = {
                "tool": f"@tool({child!r}) invoking the child's compiled graph (ainvoke, no config of its own)",
                "checkpointer": "none of its own (a subgraph of the parent's run: the parent's)", **child_settings}
        return out

    def _call_limit_middleware(self, n: int | None) -> tuple[list[Any], dict[str, Any]]:
        """Middleware that limits model calls, and its settings: none (the limit is the recursion_limit)."""
        return [], {}

    def _calls_translation(self, n: int, default: str, graph: Any) -> tuple[dict[str, Any], LimitTranslation]:
        """(invocation config, limit translation) of "n model calls": a recursion_limit derived from the graph."""
        edges = [(e.source, e.target) for e in graph.get_graph().edges]
        p, loop = loop_shape(edges)
        k = p + loop * (n - 1)
        return {"recursion_limit": k}, LimitTranslation(
            neutral=n, native=f"recursion_limit={k}",
            formula=f"recursion_limit = p + L*(N-1) = {p} + {loop}*({n}-1) = {k}: p={p} superstep(s) up to "
                    f"the first model step, L={loop} supersteps per model->tools loop",
        )

    def _limits(self, scenario: Scenario, graph: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(invocation config extras, limits record, unsupported)."""
        try:  # where langgraph keeps its default (private: only for the record)
            from langgraph._internal._config import DEFAULT_RECURSION_LIMIT as lg_default
        except ImportError:
            lg_default = "langgraph's"

        n = scenario.limits.max_model_calls
        bound = (getattr(graph, "config", None) or {}).get("recursion_limit")
        default = (f"recursion_limit default ({bound}, bound by create_agent)" if bound is not None
                   else f"recursion_limit default ({lg_default})")
        config: dict[str, Any] = {}
        limits: dict[str, LimitTranslation] = {}
        if n is None:
            limits["max_model_calls"] = LimitTranslation(neutral=None, native=default)
        else:
            extra, limits["max_model_calls"] = self._calls_translation(n, default, graph)
            config.update(extra)
        # the limits it has no control for, with why (Adapter.declared() lists them as unsupported)
        for key, entry in self.unsupported_limits(scenario).items():
            limits[key] = entry.model_copy(update={"note": UNSUPPORTED_NOTES[key]})
        return config, limits

    # ------------------------------------------------------------------ running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        from langchain_core.messages import HumanMessage

        result, _ = await self._segment(scenario, ctx, ctx.run_id, {"messages": [HumanMessage(scenario.prompt)]})
        return result

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        from langgraph.types import Command

        if (snapshot / CANCEL_FILE).exists():
            return await self._resume_cancelled(scenario, snapshot, ctx)
        meta = json.loads((snapshot / PAUSE_FILE).read_text())
        if not (ctx.task_dir / meta["checkpoint"]).exists():  # the live store is the task's, never a copy
            raise FileNotFoundError(f"the task's checkpointer {ctx.task_dir / meta['checkpoint']} is missing")
        # answer the interrupts the app showed the human at the pause, whatever the live thread holds now
        answers: dict[str, Any] = {}
        for intr in meta["interrupts"]:
            missing = [c for c in intr["calls"] if c is None or c not in decisions]
            if missing or intr["kind"] == "unknown":
                raise ValueError(f"no decision for pending call(s) {missing or intr['kind']} of interrupt {intr['id']}")
            chosen = [{"type": decisions[c]} for c in intr["calls"]]
            answers[intr["id"]] = {"decisions": chosen} if intr["kind"] == "hitl" else chosen[0]
        result, pending_before = await self._segment(scenario, ctx, meta["thread_id"], Command(resume=answers))
        notes = list(result.notes)
        if "recursion_limit" in result.settings:
            notes.append(f"resumed with the same config: a fresh recursion_limit={result.settings['recursion_limit']} "
                         "(the limit is per invocation, not saved in the checkpoint)")
        if pending_before == 0:
            notes.append("nothing was pending in the task's checkpointer: the Command(resume=...) ran "
                         f"{result.signals.extra.get('supersteps')} superstep(s) and the graph returned the "
                         "thread's current state")
        extra = {**result.signals.extra, "pending_before_resume": pending_before}
        return result.model_copy(update={"notes": notes, "signals": result.signals.model_copy(update={"extra": extra})})

    async def _resume_cancelled(self, scenario: Scenario, snapshot: Path, ctx: RunContext) -> SegmentResult:
        """Continue a cancelled thread the way the persistence docs continue an interrupted one: invoke the graph
        with `None` as input and the same thread id, from the task's checkpointer (a new process). The graph
        runs the nodes of the superstep the cancel interrupted again (`next` in the last checkpoint)."""
        meta = json.loads((snapshot / CANCEL_FILE).read_text())
        if not (ctx.task_dir / meta["checkpoint"]).exists():
            raise FileNotFoundError(f"the task's checkpointer {ctx.task_dir / meta['checkpoint']} is missing")
        result, _ = await self._segment(scenario, ctx, meta["thread_id"], None, watch_cancel=False)
        first = result.signals.extra.get("first_step_tasks")
        notes = [*result.notes, f"continued thread {meta['thread_id']} with astream(None, config) from its last "
                 f"checkpoint (next: {meta.get('next')}); the first superstep ran {first}"]
        return result.model_copy(update={"notes": notes})

    async def _segment(self, scenario: Scenario, ctx: RunContext, thread_id: str, graph_input: Any,
                       watch_cancel: bool = True) -> tuple[SegmentResult, int | None]:
        """One invocation; with approvals or a cancel, against the task's one checkpointer. (result, interrupts
        pending in the checkpoint before the invocation, or None without a checkpointer). `watch_cancel`: beside
        the harness's cancel when the scenario has one (a resume after the cancel is never cancelled again)."""
        ledger = (LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)
                  if watch_cancel and scenario.cancel is not None else None)
        if not self._needs_checkpointer(scenario):
            result, _, before = await self._drive(scenario, ctx, None, thread_id, graph_input, ledger)
            return result, before
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        ctx.task_dir.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(ctx.task_dir / CHECKPOINT_FILE)) as saver:
            result, groups, before = await self._drive(scenario, ctx, saver, thread_id, graph_input, ledger)
        if result.signals.ended == "cancelled":  # what a caller continues from: the thread in the checkpointer
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            meta = {"kind": "cancel", "thread_id": thread_id, "checkpoint": CHECKPOINT_FILE,
                    "next": result.signals.extra.get("next"), "in_flight": result.signals.extra.get("in_flight")}
            (ctx.snapshot_dir / CANCEL_FILE).write_text(json.dumps(meta, indent=1))
            return result.model_copy(update={"snapshot": str(ctx.snapshot_dir)}), before
        if result.signals.ended == "paused":  # the snapshot: what the app keeps to answer the human's decision
            ctx.snapshot_dir.mkdir(parents=True, exist_ok=True)
            meta = {"thread_id": thread_id, "checkpoint": CHECKPOINT_FILE,  # a file of ctx.task_dir
                    "interrupts": [{"id": iid, "kind": kind, "calls": [c.call_id for c in calls]}
                                   for iid, kind, calls in groups],
                    "pending": [p.model_dump() for p in result.signals.pending]}
            (ctx.snapshot_dir / PAUSE_FILE).write_text(json.dumps(meta, indent=1))
            result = result.model_copy(update={"snapshot": str(ctx.snapshot_dir)})
        return result, before

    async def _drive(self, scenario: Scenario, ctx: RunContext, saver: Any, thread_id: str, graph_input: Any,
                     cancel_ledger: LedgerClient | None = None
                     ) -> tuple[SegmentResult, list[tuple[str, str, list[PendingCall]]], int | None]:
        """(result, pending interrupt groups after the invocation, interrupts pending before it). With a
        `cancel_ledger`, the invocation runs beside the harness's cancel and is cancelled when told."""
        import asyncio

        graph, settings = self._graph(scenario, ctx, saver)
        extra_config, limits = self._limits(scenario, graph)
        config: dict[str, Any] = {**extra_config}
        if saver is not None:
            config["configurable"] = {"thread_id": thread_id}
            settings["thread_id"] = "the business task's run id"
        tree_usage: Any = None
        if scenario.agents:  # what the model calls of the whole tree used, beside the reported (main) count
            from langchain_core.callbacks import UsageMetadataCallbackHandler

            tree_usage = UsageMetadataCallbackHandler()
            config["callbacks"] = [tree_usage]
        settings.update({k: v for k, v in extra_config.items()})
        common: dict[str, Any] = dict(settings=settings, limits=limits)

        prior_ids: set[str] = set()
        before: int | None = None
        if saver is not None:
            state = await graph.aget_state(config)
            prior_ids = {m.id for m in (state.values or {}).get("messages", []) if getattr(m, "id", None)}
            before = len(getattr(state, "interrupts", ()) or ())

        steps: set[int] = set()
        answer_tool = scenario.output.name if scenario.output is not None else None  # a structured answer's tool
        last_task: dict[str, Any] | None = None
        model_tasks: dict[str, bool] = {}  # task id -> finished without error
        running: dict[str, str] = {}  # task id -> node name: started, no result yet (in flight at a cancel)
        first_step: list[str] = []  # the nodes of the invocation's first superstep (what a continued thread re-ran)
        deny_jump = False
        failed_nodes: list[str] = []  # the nodes whose task ended with an error, in order
        values: dict[str, Any] = {}
        message_chunks = 0  # the "messages" mode's (message chunk, metadata) items, when the idiom streams them

        async def consume() -> None:
            nonlocal last_task, deny_jump, values, message_chunks
            async for mode, chunk in graph.astream(graph_input, config, stream_mode=list(self.stream_modes)):
                if mode == "values" and isinstance(chunk, dict):
                    values = chunk
                elif mode == "messages":
                    message_chunks += 1
                elif mode == "debug" and isinstance(chunk, dict):
                    payload = chunk.get("payload") or {}
                    if chunk.get("type") == "task":
                        if not steps or chunk["step"] == min(steps):
                            first_step.append(str(payload.get("name")))
                        steps.add(chunk["step"])
                        running[payload.get("id", "")] = str(payload.get("name"))
                        if payload.get("name") == MODEL_NODE:
                            model_tasks[payload.get("id", "")] = False
                    elif chunk.get("type") == "task_result":
                        running.pop(payload.get("id", ""), None)
                        last_task = payload
                        if payload.get("name") == MODEL_NODE:
                            model_tasks[payload.get("id", "")] = payload.get("error") is None
                        if payload.get("error") is not None:
                            failed_nodes.append(str(payload.get("name")))
                        result = payload.get("result")
                        if payload.get("name") == DENY_NODE and isinstance(result, dict) \
                                and result.get("jump_to") == "end":
                            deny_jump = True

        try:
            cancelled = await run_until_cancelled(asyncio.ensure_future(consume()), cancel_ledger)
        except CancelWaitFailed:
            raise
        except Exception as exc:  # the framework ended by raising: map the signal
            rejected = _rejected_answer(exc)
            if rejected is not None:  # the model call's response, which its structured answer check rejected
                kept = values.get("messages", [])
                if all(getattr(m, "id", None) != rejected.id for m in kept):
                    values = {**values, "messages": [*kept, rejected]}
            counters = self._counters(values, prior_ids, steps, answer_tool)
            failed_models = sum(1 for ok in model_tasks.values() if not ok) - self._unsent_model_calls(exc)
            if failed_models > (1 if rejected is not None else 0):  # raised in a model call: what it sent is unknown
                counters = counters.model_copy(update={"model_requests_reported": None, "input_tokens_reported": None,
                                                       "output_tokens_reported": None})
            signals = self._raised(exc, len(steps), answer_rejected=rejected is not None
                                   or (bool(failed_nodes) and failed_nodes[-1] == RESPOND_NODE))
            signals.extra.update(_tree_usage(tree_usage))
            return SegmentResult(signals=signals, counters=counters, **common), [], before
        resumed = {"first_step_tasks": first_step} if graph_input is None else {}

        if cancelled:  # the caller's cancel stopped the run: what the thread kept, and what was in flight
            extra: dict[str, Any] = {"supersteps": len(steps), "in_flight": sorted(set(running.values())),
                                     **self._streamed(message_chunks), **_tree_usage(tree_usage), **resumed}
            if saver is not None:
                kept = await graph.aget_state(config)
                values = kept.values or values
                extra["next"] = list(kept.next)
            # the responses the state holds (their usage); a model request in flight produced none
            counters = self._counters(values, prior_ids, steps, answer_tool)
            signals = NativeSignals(ended="cancelled", exception_type="CancelledError", extra=extra)
            return SegmentResult(signals=signals, counters=counters, **common), [], before

        if saver is not None:
            final = await graph.aget_state(config)
            values = final.values or values
            pending_groups = self._pending(final, await _child_messages(saver, thread_id, final))
            if pending_groups:
                pending = [c for _, _, calls in pending_groups for c in calls]
                signals = NativeSignals(
                    ended="paused", pending=pending,
                    extra={"interrupts": len(pending_groups), "supersteps": len(steps),
                           "interrupt_kinds": sorted({k for _, k, _ in pending_groups}),
                           **self._streamed(message_chunks), **_tree_usage(tree_usage)},
                )
                counters = self._counters(values, prior_ids, steps, answer_tool)
                return SegmentResult(signals=signals, counters=counters, **common), pending_groups, before

        counters = self._counters(values, prior_ids, steps, answer_tool)
        handled = (last_task is not None and str(last_task.get("name", "")).endswith(LIMIT_MIDDLEWARE_SUFFIX)
                   and isinstance(last_task.get("result"), dict) and last_task["result"].get("jump_to") == "end")
        extra = {"supersteps": len(steps), **self._streamed(message_chunks), **_tree_usage(tree_usage), **resumed}
        if handled:
            extra["limit_node"] = last_task["name"] if last_task else None
        if deny_jump:
            extra["deny_node"] = DENY_NODE
        messages = values.get("messages", [])
        final_text = _text(messages[-1]) if messages else None
        signals = NativeSignals(ended="returned", final_text=final_text, final_output=_final_output(values),
                                limit="steps" if handled else None,
                                limit_signal="handled" if handled else None, denied=deny_jump,
                                finish_reason=_finish_reason(messages), extra=extra)
        return SegmentResult(signals=signals, counters=counters, **common), [], before

    # ------------------------------------------------------------------ mapping
    def _unsent_model_calls(self, exc: BaseException) -> int:
        """Failed model tasks of a raised graph that sent no request (their counts are known): none here."""
        return 0

    def _streamed(self, message_chunks: int) -> dict[str, Any]:
        """What the "messages" stream mode delivered, for the record (only when the idiom reads it)."""
        return {"message_chunks": message_chunks} if "messages" in self.stream_modes else {}

    @classmethod
    def _pending(cls, state: Any, child_messages: dict[str, list[Any]] | None = None
                 ) -> list[tuple[str, str, list[PendingCall]]]:
        """Pending interrupts of a checkpoint: (interrupt id, kind, calls with scripted ids). An interrupt raised
        inside a child agent (a graph run by a parent's tool) matches its calls in the child's own messages."""
        from langchain_core.messages import AIMessage

        def last_ai_of(messages: list[Any]) -> Any:
            return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)

        parent_ai = last_ai_of((state.values or {}).get("messages", []))
        # the interrupt's own task: the parent's node, or a parent's tool that ran a child graph
        task_of = {i.id: t.id for t in getattr(state, "tasks", ()) or () for i in t.interrupts}
        out: list[tuple[str, str, list[PendingCall]]] = []
        for intr in getattr(state, "interrupts", ()) or ():
            value = intr.value
            child = (child_messages or {}).get(task_of.get(intr.id, ""))
            last_ai = last_ai_of(child) if child else parent_ai
            if isinstance(value, dict) and "action_requests" in value:  # HumanInTheLoopMiddleware, batched
                available = list(last_ai.tool_calls) if last_ai else []
                calls = []
                for action in value["action_requests"]:
                    match = next((tc for tc in available
                                  if tc["name"] == action["name"] and tc["args"] == action["args"]), None)
                    if match is not None:
                        available.remove(match)
                    calls.append(PendingCall(call_id=neutral_id(match["id"], cls.call_id_prefix) if match else None,
                                             tool=action["name"], args=action["args"]))
                out.append((intr.id, "hitl", calls))
            elif isinstance(value, dict) and "tool_call_id" in value:  # interrupt() inside a tool
                out.append((intr.id, "tool", [PendingCall(call_id=neutral_id(value["tool_call_id"], cls.call_id_prefix),
                                                          tool=value.get("name", ""), args=value.get("args", {}))]))
            else:
                out.append((intr.id, "unknown", []))
        return out

    @staticmethod
    def _raised(exc: Exception, supersteps: int, answer_rejected: bool = False) -> NativeSignals:
        """The signals of a graph that raised. `answer_rejected`: the structured answer failed its validation (a
        StructuredOutputError carrying the response, or the stategraph respond node's ValidationError): the model's
        answer failed, failure="model"."""
        from langgraph.errors import GraphRecursionError

        base: dict[str, Any] = dict(ended="raised", exception_type=type(exc).__name__, exception_message=str(exc)[:500],
                    extra={"supersteps": supersteps})
        if answer_rejected and not isinstance(exc, GraphRecursionError):
            return NativeSignals(**base, failure="model")
        if isinstance(exc, GraphRecursionError):
            return NativeSignals(**base, limit="steps", limit_signal="raised")
        if type(exc).__name__ == "ModelCallLimitExceededError":
            return NativeSignals(**base, limit="steps", limit_signal="raised")
        if in_chain(exc, ToolDenied):  # the graph ended on the user's denial (stategraph, deny "stop")
            return NativeSignals(**base, denied=True)
        if in_chain(exc, ToolFailed):
            return NativeSignals(**base, failure="tool")
        if any(in_chain(exc, kind) for kind in _model_error_types()) or raised_in_model_client(exc):
            return NativeSignals(**base, failure="model")
        return NativeSignals(**base, failure="other")

    @staticmethod
    def _counters(values: dict[str, Any], prior_ids: set[str], steps: set[int], answer_tool: str | None = None
                  ) -> ReportedCounters:
        """The segment's counts from the state's messages. `answer_tool`: the structured answer's tool (ToolStrategy's,
        the stategraph's bound model), whose calls are the answer, not tool calls requested."""
        from langchain_core.messages import AIMessage

        # a model response, not an AIMessage a middleware wrote (the deny hook's, the call limit's): the chat
        # model class marks its responses' metadata (provider, stop/finish reason) and usage
        produced = [m for m in values.get("messages", [])
                    if isinstance(m, AIMessage) and m.id not in prior_ids
                    and (m.usage_metadata is not None or any(m.response_metadata.get(k) for k in RESPONSE_MARKS))]
        usage = [m.usage_metadata for m in produced]
        # known only when every response carried usage (no response in this segment: a real 0)
        known = all(u is not None for u in usage)
        return ReportedCounters(
            model_requests_reported=len(produced),
            tool_calls_requested=sum(1 for m in produced for c in m.tool_calls if c.get("name") != answer_tool),
            runtime_steps=len(steps), runtime_step_unit="superstep",
            input_tokens_reported=sum(u.get("input_tokens", 0) for u in usage if u) if known else None,
            output_tokens_reported=sum(u.get("output_tokens", 0) for u in usage if u) if known else None,
            cumulative=False,
        )


_cache_loop: list[Any] = []  # the event loop langchain-openai's cached client was filled in


def _fresh_default_async_client() -> None:
    """ChatAnthropic and ChatOpenAI each cache their default async httpx client process-wide (an lru_cache keyed
    by base URL; each model instance wraps it in an SDK client of its own, with the run's key). A warm worker
    runs every segment in one event loop, so the cache serves them all, as it would in a user's long-lived
    process (a new client per run would pay a TLS context each time: loopbench's cost). ChatOpenAI's cached
    connections belong to the loop that made them: when the running loop is another one (a caller with its own
    loop per run) they fail ("Event loop is closed"), so its cache starts empty then, as a fresh process would.
    ChatAnthropic's works across loops (probes/langgraph/loop_closed.py) and is left alone."""
    import asyncio

    loop = asyncio.get_running_loop()
    if _cache_loop and _cache_loop[0]() is loop:
        return
    try:
        from langchain_openai.chat_models import _client_utils
    except ImportError:
        return
    cached = getattr(_client_utils, "_cached_async_httpx_client", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()
    _cache_loop[:] = [weakref.ref(loop)]


def _rejected_answer(exc: BaseException) -> Any:
    """The response whose structured answer failed validation, when the graph raised for it: langchain's
    StructuredOutputError (StructuredOutputValidationError, MultipleStructuredOutputsError) carries it as
    `ai_message` (langchain/agents/structured_output.py:37-76); None otherwise."""
    try:
        from langchain.agents.structured_output import StructuredOutputError
    except ImportError:
        return None
    for e in exception_chain(exc):
        if isinstance(e, StructuredOutputError):
            return getattr(e, "ai_message", None)
    return None


def _final_output(values: dict[str, Any]) -> dict[str, Any] | None:
    """The structured answer the run returned, as JSON: create_agent's state["structured_response"], or the
    stategraph's state["final_response"] (the docs' respond node); None when there is none."""
    answer = values.get("structured_response")
    if answer is None:
        answer = values.get("final_response")
    if answer is None:
        return None
    dumped = answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer
    return dumped if isinstance(dumped, dict) else None


def _model_error_types() -> tuple[type[BaseException], ...]:
    """What a failed model call raises: langchain-core's ModelError (both model classes re-raise most SDK errors
    as one) and the SDKs' own APIError (the rest), whichever are installed."""
    import importlib

    found: list[type[BaseException]] = []
    for module, name in (("langchain_core.exceptions", "ModelError"), ("anthropic", "APIError"),
                         ("openai", "APIError")):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


async def _child_messages(saver: Any, thread_id: str, state: Any) -> dict[str, list[Any]]:
    """task id -> the messages of the child graph a paused task was running. A graph invoked inside a parent's
    tool is a subgraph the parent's get_state(subgraphs=True) cannot see (it is not a node), but it checkpoints
    in the parent's checkpointer under the task's namespace ("<node>:<task id>"), read here by aget_tuple."""
    out: dict[str, list[Any]] = {}
    for task in getattr(state, "tasks", ()) or ():
        if not task.interrupts:
            continue
        saved = await saver.aget_tuple({"configurable": {"thread_id": thread_id,
                                                         "checkpoint_ns": f"{task.name}:{task.id}"}})
        messages = (saved.checkpoint.get("channel_values") or {}).get("messages") if saved else None
        if messages:
            out[task.id] = list(messages)
    return out


def _tree_usage(handler: Any) -> dict[str, Any]:
    """What an extra UsageMetadataCallbackHandler in the invocation config saw (every model call of the run,
    children included: callbacks are inherited), summed over models; nothing when there was none."""
    if handler is None:
        return {}
    usage = list(handler.usage_metadata.values())
    return {"usage_callback": {"calls_seen_by": "UsageMetadataCallbackHandler (langchain_core)",
                               "input_tokens": sum(u.get("input_tokens", 0) for u in usage),
                               "output_tokens": sum(u.get("output_tokens", 0) for u in usage)}}


def _text(message: Any) -> str | None:
    from langchain_core.messages import AIMessage

    if not isinstance(message, AIMessage):
        return None
    text = message.text
    return str(text) if text is not None else None


def _finish_reason(messages: list[Any]) -> str | None:
    from langchain_core.messages import AIMessage

    for m in reversed(messages):  # ChatOpenAI says finish_reason, ChatAnthropic the API's stop_reason
        reason = isinstance(m, AIMessage) and (m.response_metadata.get("finish_reason")
                                               or m.response_metadata.get("stop_reason"))
        if reason:
            return str(reason)
    return None


class LangGraphStateGraph(LangGraphAdapter):
    variant = "stategraph"
    about = "hand-built StateGraph (model node + ToolNode + tools_condition) with interrupt() inside the gated tool"
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **LangGraphAdapter.mechanism_table,
        "delegate": "a @tool named after the child invoking its hand-built StateGraph (SystemMessage(instructions), "
                    "its own tools; the docs' subagents / tool-calling pattern; the child a subgraph of the "
                    "parent's run)",
        "deny_stop": "the tool raises ToolDenied; the default ToolNode handler lets it propagate out of the graph",
        "deny_continue": "the tool returns a refusal text without running",
        "approval_pause": "interrupt() inside the gated tool (ToolNode) + one AsyncSqliteSaver per thread in "
                          "the task dir; resume Command(resume={interrupt_id: {'type': 'approve'|'reject'}})",
        "reject": "the interrupt is answered {'type': 'reject'}; the tool returns a cancellation text",
        "tool_choice_first": TOOL_CHOICE_NODE,
        "tool_choice_later": TOOL_CHOICE_NODE,
        "structured_output": "the LangGraph how-to's 'bind output as tool' (react-agent-structured-output, Option 1): "
                             "llm.bind_tools([*tools, <pydantic model>], tool_choice='any'); the one call to it "
                             "routes to a respond node that builds Model(**args) into state['final_response']",
        "output_check": "a pydantic AfterValidator on the field raising ValueError(message); the respond node's "
                        "ValidationError propagates out of the graph (no retry)",
    }
    in_tool_gates = True

    def _build(self, scenario: Scenario, llm: Any, tools: list[Any], ledger: LedgerClient, checkpointer: Any,
               settings: dict[str, Any]) -> Any:
        own = _own_tools(scenario, MAIN_AGENT, tools)
        children = self._delegations(scenario, llm, tools, ledger, settings)
        graph = self._state_graph(scenario, llm, [*own, *children], scenario.instructions, True, checkpointer)
        settings["graph"] = "StateGraph(MessagesState): model -> tools_condition -> ToolNode -> model"
        if scenario.tool_choice_rules():
            settings["tool_choice"] = {r.after_call or "opening call": r.choice for r in scenario.tool_choice_rules()}
        if self._needs_checkpointer(scenario):
            settings["approval"] = "interrupt() inside the gated tool, after an authorize event"
        if any(spec.approval == "deny" for spec in scenario.tools.values()):
            settings["deny"] = ("the tool raises ToolDenied" if scenario.policy.deny == "stop"
                                else "the tool returns a refusal text without running")
        if scenario.output is not None:
            settings["graph"] = (f"StateGraph(MessagesState + final_response): model (bind_tools([..., "
                                 f"{scenario.output.name}], tool_choice='any')) -> ToolNode | respond -> END")
            settings["output"] = {"response_format": f"{scenario.output.name} (pydantic model, extra='forbid') bound "
                                                     "as a tool (bind_tools, strict not set)",
                                  "strategy": "the how-to's Option 1: bind output as tool, a respond node",
                                  "tool_choice": "any (the how-to's)",
                                  "on_invalid_answer": "ValidationError out of the respond node: no retry",
                                  "check": (f"AfterValidator on {scenario.output.check.field}"
                                            if scenario.output.check else None)}
        return graph

    def _state_graph(self, scenario: Scenario, llm: Any, tools: list[Any], system_prompt: str | None, main: bool,
                     checkpointer: Any) -> Any:
        """model node -> tools_condition -> ToolNode -> model. The system prompt, when there is one, is put before
        the state's messages at each model call (not stored in the state); tool_choice is the main agent's."""
        from langchain_core.messages import SystemMessage
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        prefix = self.call_id_prefix
        system = [SystemMessage(system_prompt)] if system_prompt else []
        output = scenario.output if main else None
        if output is not None:
            return self._output_graph(scenario, output, llm, tools, system, checkpointer)
        bound = llm.bind_tools(tools)

        async def call_model(state: MessagesState) -> dict[str, Any]:
            choice = _tool_choice_for(scenario, state["messages"], prefix) if main else None
            model = llm.bind_tools(tools, tool_choice=self._native_tool_choice(choice)) if choice else bound
            return {"messages": [await model.ainvoke([*system, *state["messages"]])]}

        builder = StateGraph(MessagesState)
        builder.add_node(MODEL_NODE, call_model)
        builder.add_node(TOOLS_NODE, ToolNode(tools))
        builder.add_edge(START, MODEL_NODE)
        builder.add_conditional_edges(MODEL_NODE, tools_condition, {"tools": TOOLS_NODE, END: END})
        builder.add_edge(TOOLS_NODE, MODEL_NODE)
        return builder.compile(checkpointer=checkpointer)

    def _output_graph(self, scenario: Scenario, output: OutputSpec, llm: Any, tools: list[Any], system: list[Any],
                      checkpointer: Any) -> Any:
        """The main graph when the task ends with a structured answer: the LangGraph how-to "How to force
        tool-calling agent to structure output" (docs/docs/how-tos/react-agent-structured-output.ipynb), Option 1,
        "bind output as tool": the pydantic model is bound as one more tool with tool_choice="any"; when the
        model's turn is the one call to it, a `respond` node builds the answer, `Model(**tool_call["args"])`, into
        the state's `final_response` and answers the call with a ToolMessage, then END. A ValidationError there
        (schema or check) propagates out of the graph: the how-to has no retry. Other tool calls -> ToolNode ->
        model; a turn without calls ends the run (tools_condition's END)."""
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode

        model_cls = output_model(output)
        prefix = self.call_id_prefix
        bound = llm.bind_tools([*tools, model_cls], tool_choice="any")

        class OutputState(MessagesState):  # the how-to's AgentState: the messages and the structured answer
            final_response: Any

        async def call_model(state: dict[str, Any]) -> dict[str, Any]:
            choice = _tool_choice_for(scenario, state["messages"], prefix)
            model = (llm.bind_tools([*tools, model_cls], tool_choice=self._native_tool_choice(choice)) if choice
                     else bound)
            return {"messages": [await model.ainvoke([*system, *state["messages"]])]}

        def respond(state: dict[str, Any]) -> dict[str, Any]:
            call = state["messages"][-1].tool_calls[0]
            answer = model_cls(**call["args"])
            return {"final_response": answer,
                    "messages": [{"type": "tool", "content": RESPOND_TEXT, "tool_call_id": call["id"]}]}

        def should_continue(state: dict[str, Any]) -> str:
            calls = list(getattr(state["messages"][-1], "tool_calls", None) or [])
            if len(calls) == 1 and calls[0]["name"] == output.name:
                return RESPOND_NODE
            return TOOLS_NODE if calls else END

        builder = StateGraph(OutputState)
        builder.add_node(MODEL_NODE, call_model)
        builder.add_node(TOOLS_NODE, ToolNode(tools))
        builder.add_node(RESPOND_NODE, respond)
        builder.add_edge(START, MODEL_NODE)
        builder.add_conditional_edges(MODEL_NODE, should_continue,
                                      {TOOLS_NODE: TOOLS_NODE, RESPOND_NODE: RESPOND_NODE, END: END})
        builder.add_edge(TOOLS_NODE, MODEL_NODE)
        builder.add_edge(RESPOND_NODE, END)
        return builder.compile(checkpointer=checkpointer)

    def _child_graph(self, scenario: Scenario, child: str, llm: Any, tools: list[Any], ledger: LedgerClient
                     ) -> tuple[Any, dict[str, Any]]:
        graph = self._state_graph(scenario, llm, tools, scenario.agents[child].instructions, False, None)
        return graph, {"graph": "StateGraph(MessagesState) as the parent's, SystemMessage(<its instructions>) "
                                "before the messages at each model call",
                       "recursion_limit": None,
                       "recursion_limit_source": "none bound: inherited from the parent's invocation config, a fresh "
                                                 "budget of the same size (probes/langgraph/subagent_tool.py)"}


class LangGraphModelCallLimit(LangGraphAdapter):
    variant = "model-call-limit"
    about = "create_agent with ModelCallLimitMiddleware(thread_limit=N) instead of recursion_limit"

    def _call_limit_middleware(self, n: int | None) -> tuple[list[Any], dict[str, Any]]:
        from langchain.agents.middleware import ModelCallLimitMiddleware

        if n is None:
            return [], {}
        return [ModelCallLimitMiddleware(thread_limit=n)], {
            "ModelCallLimitMiddleware": {"thread_limit": n, "exit_behavior": "end (default)"}}

    def _calls_translation(self, n: int, default: str, graph: Any) -> tuple[dict[str, Any], LimitTranslation]:
        return {}, LimitTranslation(neutral=n, native=f"ModelCallLimitMiddleware(thread_limit={n})",
                    note=f"recursion_limit: {default}")


class LangGraphOpenAICompatible(LangGraphAdapter):
    variant = "openai-compatible"
    about = ("create_agent as the default, with the scenario's Claude through an OpenAI-compatible endpoint: "
             "langchain_openai.ChatOpenAI(base_url=...) (Chat Completions)")
    model_class = "langchain_openai.ChatOpenAI"
    model_provider = "anthropic"  # it still sends the scenario's Claude model, over the OpenAI protocol
    call_id_prefix = OPENAI_ID_PREFIX
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **LangGraphAdapter.mechanism_table,
        "structured_output": "create_agent(response_format=<pydantic model>) (AutoStrategy), which picks "
                             "ProviderStrategy for ChatOpenAI by the model name (no profile for a Claude id: "
                             "langchain's fallback list, factory.py:203): response_format json_schema with strict "
                             "false (langchain_openai bind_tools), the tools strict; the answer parsed from the text",
        "output_check": LangGraphAdapter.mechanism_table["output_check"],
    }

    def _llm(self, scenario: Scenario, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """ChatOpenAI pointed at an OpenAI-compatible endpoint (the openai client adds only the path after /v1)."""
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(base_url=f"{ctx.base_url}/v1", api_key=ctx.api_key, model=self.model_id(scenario))
        # max_retries None on the class: the openai client's own default applies (read from the client it built)
        return llm, {"protocol": "OpenAI Chat Completions", "max_retries": llm.root_async_client.max_retries,
                     "timeout": llm.request_timeout, "streaming": llm.streaming, "max_tokens": llm.max_tokens}

    @staticmethod
    def _native_tool_choice(choice: str) -> Any:
        """ChatOpenAI.bind_tools takes the neutral values as they are ('required', 'none', 'auto', a name)."""
        return choice


class LangGraphStreamMessages(LangGraphAdapter):
    variant = "stream-messages"
    about = ("the default streamed: graph.astream(stream_mode=['debug', 'values', 'messages']) read to the end "
             "(ChatAnthropic streams its requests, the Messages API's SSE); counts from the state's AIMessages")
    stream_modes = ("debug", "values", "messages")
    capabilities = LangGraphAdapter.capabilities.model_copy(update={"stream_of": "default"})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **LangGraphAdapter.mechanism_table,
        "approval_pause": "HumanInTheLoopMiddleware(interrupt_on={tool: {allowed_decisions, when}}) + one "
                          "AsyncSqliteSaver per thread in the task dir, the graph streamed with stream_mode "
                          "['debug', 'values', 'messages']; resume Command(resume={interrupt_id: "
                          "{'decisions': [...]}}) streamed the same way",
    }


class LangGraphToolStrategy(LangGraphAdapter):
    variant = "tool-strategy"
    about = ("the default with response_format=ToolStrategy(<pydantic model>) (its default handle_errors=True): the "
             "structured answer as a tool call, a rejected one sent back as an error ToolMessage for a correction")
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **LangGraphAdapter.mechanism_table,
        "structured_output": "create_agent(response_format=ToolStrategy(<pydantic model>)): the schema as one more "
                             "tool named after it, bound with tool_choice 'any' (factory.py:1478); the answer is that "
                             "tool call's args, state['structured_response']",
        "output_check": "a pydantic AfterValidator on the field raising ValueError(message); ToolStrategy's default "
                        "handle_errors=True answers the call with 'Error: <error>\n Please fix your mistakes.' and "
                        "the model is called again (factory.py:1332-1343, 649-676): no retry cap of its own",
    }
    output_strategy = "ToolStrategy (handle_errors=True, its default)"

    @staticmethod
    def _wrap_schema(model: type[Any]) -> Any:
        from langchain.agents.structured_output import ToolStrategy

        return ToolStrategy(model)

    @staticmethod
    def _strategy_record(llm: Any, tools: list[Any]) -> dict[str, Any]:
        return {"resolves_to": "ToolStrategy(handle_errors=True) (explicit)", "tool_choice": "any",
                "on_invalid_answer": "an error ToolMessage and the model called again (factory.py:1332-1343), "
                                     "bounded only by the step limit"}


class LangGraphGuarded(LangGraphAdapter):
    variant = "guarded"
    about = ("the default with loopbench.guard installed as create_agent middleware (GuardMiddleware: "
             "awrap_model_call, awrap_tool_call, interrupt() for a call it holds no approval for) on the main agent "
             "and each sub-agent; native limits, HumanInTheLoopMiddleware and the deny hooks as the default")
    guard_lacks: ClassVar[dict[Hook, str]] = dict(LANGGRAPH_LACKS)
    capabilities = LangGraphAdapter.capabilities.model_copy(
        update={"guard_of": "default", "guard_lacks": dict(LANGGRAPH_LACKS)})
    mechanism_table: ClassVar[dict[Intent, str]] = {
        **LangGraphAdapter.mechanism_table,
        "approval_pause": "HumanInTheLoopMiddleware(interrupt_on={tool: {allowed_decisions, when}}) + one "
                          "AsyncSqliteSaver per thread in the task dir, as the default; the resume's decisions are "
                          "also told to the guard (guard.decide, bound to the exact call), whose awrap_tool_call "
                          "admits the approved call once",
        "reject": "HITL decision {'type': 'reject'} as the default, told to the guard too: the rejected call's "
                  "effect is refused by any tool afterwards (the guard's `denied`, raised out of the graph)",
        "tool_error_recoverable": "the tool raises ToolException; the guard's awrap_tool_call answers it as an error "
                                  "ToolMessage (the model retries; the stall check bounds identical retries)",
        "tool_error_fatal": "the tool raises ToolFailed; the guard's awrap_tool_call raises its `failed` stop, which "
                            "ToolNode's default handler lets propagate out of the graph",
    }

    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        return self._guarded(await super().run(scenario, ctx), ctx)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        self._guard = guarded.task_guard(scenario, ctx)
        if (snapshot / PAUSE_FILE).exists():  # the calls the human decided, by the tool call id the binding sees
            pending = json.loads((snapshot / PAUSE_FILE).read_text()).get("pending", [])
            guarded.decide(self._guard, [{**p, "raw_id": f"{self.call_id_prefix}{p['call_id']}" if p.get("call_id")
                                          else None} for p in pending], decisions)
        return self._guarded(await super().resume(scenario, snapshot, decisions, ctx), ctx)

    def _guarded(self, result: SegmentResult, ctx: RunContext) -> SegmentResult:
        guarded.save(self._guard, ctx)
        return result.model_copy(update={"signals": result.signals.model_copy(
            update={"guard": guarded.signal(self._guard)})})

    def _tool_error(self, out: Any) -> Exception:
        """A ledger error as a LangChain tool reports it: a recoverable one as `ToolException` (LangChain's
        recoverable tool error), a timeout as the client's `TimeoutError` (the guard marks a write's outcome
        unknown), a fatal one as the default's `ToolFailed`."""
        from langchain_core.tools import ToolException

        if out.error_kind == "recoverable":
            return ToolException(out.text)
        if out.error_kind == "timeout":
            return TimeoutError(out.text)
        return super()._tool_error(out)

    def _middleware(self, scenario: Scenario, ledger: LedgerClient, agent: str = MAIN_AGENT
                    ) -> tuple[list[Any], dict[str, Any]]:
        """The default's middleware, then the guard's (last: innermost around the model and the tools, after the
        deny gate and HITL have answered a call); a sub-agent's guard is the task guard's child."""
        from loopbench.guard.bindings.langgraph import GuardMiddleware

        middleware, settings = super()._middleware(scenario, ledger, agent)
        main = agent == MAIN_AGENT
        middleware.append(GuardMiddleware(self._guard if main else self._guard.child()))
        settings["guard"] = "GuardMiddleware(guard)" if main else "GuardMiddleware(guard.child())"
        return middleware, settings

    def _unsent_model_calls(self, exc: BaseException) -> int:
        """The guard's refusal of a model call raised out of the model node: no request was sent."""
        from loopbench.guard.bindings.langgraph import refused_before_request

        stop = guarded.guard_stop_in(exc)
        return 1 if stop is not None and refused_before_request(stop) else 0

    @staticmethod
    def _raised(exc: Exception, supersteps: int, answer_rejected: bool = False) -> NativeSignals:
        """A guard's stop raised out of the graph (maybe wrapped) is the guard's exit (`signals.guard`, rule 13),
        not a tool's or the model's failure; anything else as the default maps it."""
        stop = guarded.guard_stop_in(exc)
        if stop is None:
            return LangGraphAdapter._raised(exc, supersteps, answer_rejected)
        return NativeSignals(ended="raised", exception_type=type(exc).__name__, exception_message=str(exc)[:500],
                             extra={"supersteps": supersteps, "guard_stop": type(stop).__name__})


# the framework's other idioms, in the order runs and reports show them
LangGraphAdapter.variant_classes = (LangGraphStateGraph, LangGraphModelCallLimit, LangGraphOpenAICompatible,
                                    LangGraphStreamMessages, LangGraphToolStrategy, LangGraphGuarded)
