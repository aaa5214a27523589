"""Claude Agent SDK adapter (`claude-agent-sdk`): the Python SDK driving its bundled Claude Code CLI.

Translation of the neutral scenario into native controls (the `default` variant keeps every other default of
the SDK and the CLI, including the CLI's retry policy and the default permission mode):
- connection: the CLI is a child process of the worker (started by the SDK, not in a new session, so the
  runner's kill of the worker's process group reaches it), pointed at the scripted server with
  `ANTHROPIC_BASE_URL=<server>` and `ANTHROPIC_API_KEY=<run key>` (the server routes by the `x-api-key` the CLI
  sends, also after a resume), plus `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (without it the CLI makes an
  extra session-title model request per run and DNS lookups that may stall);
- isolation per segment, all inside `ctx.work_dir`: `CLAUDE_CONFIG_DIR=config/` (settings, the session
  transcript), `cwd=cwd/`, `HOME` and `XDG_*` dirs (the CLI otherwise writes MCP logs under
  `~/.cache/claude-cli-nodejs`), `setting_sources=[]`, `strict_mcp_config=True`;
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
  `terminal_reason="tool_deferred"` and `deferred_tool_use`. The snapshot holds the session id and a copy of
  the config dir with the transcript; the resume copies it into the new segment's config dir and starts
  `ClaudeSDKClient(resume=<session id>)` with no prompt, in another process: the CLI asks the hook again for
  the deferred call, which now applies the decision (approve -> "allow", reject -> "deny"; no decision ->
  "defer" again);
- `approval: deny` -> a PreToolUse hook answering `permissionDecision: "deny"` (the model gets an error result
  and the loop goes on; the run is not stopped by the framework, so it is not reported as `denied`).
Every approval check (each hook or can_use_tool call for a tool whose approval is not `none`) records an
`authorize` event in the ledger.

Variant `can-use-tool`: no hooks; approvals go through `can_use_tool` (called by the CLI for tools that match
no allow rule), answered in-process from the scenario's decisions (all `resumes[*].decisions`, keyed by
scripted call id): approve -> Allow; reject -> Deny(interrupt=False) (the model is told, the loop goes on); no
decision -> Deny(interrupt=True), which ends the run (`terminal_reason="aborted_tools"`) and is reported as a
pause with the pending call — a pause that does not survive the process; `approval: deny` ->
Deny(interrupt=True) (the framework stops the run: reported as `denied`). Such a pause saves no snapshot (there
is nothing to resume from: the CLI ended the run), so the runner makes no resume, and the note says "pause does
not survive a restart".

Retries are the CLI's own (default 10, `CLAUDE_CODE_MAX_RETRIES` unset): it honours retry headers only for
429/529 and backs off exponentially (0.5 s doubling, capped at 32 s, with jitter) on 5xx, so an always-500
server takes ~3 minutes; every retry is streamed as `SystemMessage(subtype="api_retry")`, counted in `extra`.

Signals: `ResultMessage.subtype` (`error_max_turns` -> limit steps, `error_max_budget_usd` -> limit budget),
`terminal_reason`, `is_error`, `api_error_status`, `permission_denials`, `deferred_tool_use`, the exception the
SDK raises after an error result (`ResultError`) and a missing ResultMessage. Counters per segment:
`num_turns` (runtime steps, unit "turn"), `usage` input/output tokens, `total_cost_usd`; requests reported =
distinct API message ids among the top-level assistant messages the SDK yielded (the CLI reports no request
count of its own). The CLI restores `total_cost_usd` and `model_usage` from the transcript when a session is
resumed (they are cumulative, `usage` and `num_turns` are not): the resume segment reports its cost as
`total_cost_usd` minus the value at the pause (saved in the snapshot); raw values are kept in `extra`.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.adapter import Adapter, Capabilities, RunContext
from harness.ledger_http import LedgerClient
from harness.record import NativeSignals, PendingCall, ReportedCounters, SegmentResult
from harness.scenario import Scenario

SERVER = "loopbench"
PREFIX = f"mcp__{SERVER}__"
ID_PREFIX = "toolu_"
META_TOOL_USE_ID = "claudecode/toolUseId"
SESSION_FILE = "session.json"
PENDING_FILE = "pending.json"
NOT_RESUMABLE = "pause does not survive a restart"
STEP_UNIT = "turn (num_turns)"

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("loopbench_claude_call_id", default=None)


def neutral_id(tool_use_id: str | None) -> str | None:
    return tool_use_id.removeprefix(ID_PREFIX) if tool_use_id else tool_use_id


def bare_name(tool_name: str) -> str:
    return tool_name.removeprefix(PREFIX)


@dataclass
class _Segment:
    """What one segment saw: filled by the hooks / callbacks and the message loop."""

    result: Any = None  # the last ResultMessage
    exception: BaseException | None = None
    message_ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    pending: list[PendingCall] = field(default_factory=list)  # can_use_tool: calls left without a decision
    policy_denied: list[str] = field(default_factory=list)  # can_use_tool: calls denied by policy (interrupt)
    api_retries: int = 0  # SystemMessage(subtype="api_retry") the CLI streamed


class CLIKilled(RuntimeError):
    """The CLI process died from a signal it did not send itself: the run is an `error`, with this reason."""


class ClaudeAgentAdapter(Adapter):
    id = "claude-agent-sdk"
    distribution = "claude-agent-sdk"
    packages = ("mcp",)
    min_version = (0, 2)
    variants = {
        "default": "the SDK's and CLI's defaults; max_turns / max_budget_usd from the scenario; approvals pause "
                   "through a PreToolUse hook answering defer (resumed with resume=<session id> in another "
                   "process); policy deny through a PreToolUse hook answering deny",
        "can-use-tool": "approvals answered in-process by can_use_tool from the scenario's decisions; no decision "
                        "-> Deny(interrupt=True), a pause that does not survive the process; policy deny -> "
                        "Deny(interrupt=True)",
    }
    capabilities = Capabilities(
        native_limits=frozenset({"max_model_calls", "max_cost_usd"}),
        step_unit="turn (num_turns: one per model response in a normal run; error_max_turns reports max_turns+1)",
        pause="snapshot",
        pause_survives_restart=True,  # default variant; `can-use-tool` pauses only in-process (see notes)
        deny="PreToolUse hook permissionDecision=deny (can-use-tool variant: Deny(interrupt=True))",
        # the CLI's default 10 retries back off 0.5 s doubling to 32 s on a 5xx whatever the retry headers say:
        # ~3 minutes against an always-failing server (measured 178-188 s)
        retry_window_s=300.0,
        notes=("variant can-use-tool: a call without a decision ends the run; the pause does not survive a restart",),
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
        return config, f"tools/call _meta[{META_TOOL_USE_ID!r}] without {ID_PREFIX!r}"

    @staticmethod
    def _limits(scenario: Scenario) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        kwargs: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        n = scenario.limits.max_model_calls
        if n is not None:
            kwargs["max_turns"] = n
            limits["max_model_calls"] = {"neutral": n, "native": f"max_turns={n}"}
        else:
            limits["max_model_calls"] = {"neutral": None, "native": "max_turns unset (SDK and CLI default)"}
        cost = scenario.limits.max_cost_usd
        if cost is not None:
            kwargs["max_budget_usd"] = cost
            limits["max_cost_usd"] = {"neutral": cost, "native": f"max_budget_usd={cost}"}
        missing = ClaudeAgentAdapter.unsupported_limits(scenario)
        limits.update(missing)
        unsupported = list(missing)
        return kwargs, limits, unsupported

    @staticmethod
    def _env(ctx: RunContext) -> dict[str, str]:
        work = ctx.work_dir.resolve()
        dirs = {"CLAUDE_CONFIG_DIR": work / "config", "HOME": work / "home", "XDG_CACHE_HOME": work / "home/.cache",
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
        from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

        mcp_config, call_id_source = self._tools_server(scenario, ctx)
        limit_kwargs, limits, unsupported = self._limits(scenario)
        env = self._env(ctx)
        cwd = ctx.work_dir.resolve() / "cwd"
        cwd.mkdir(parents=True, exist_ok=True)
        allowed = [PREFIX + n for n, s in scenario.tools.items() if s.approval == "none"]
        gated = [n for n, s in scenario.tools.items() if s.approval != "none"]
        kwargs: dict[str, Any] = dict(
            tools=[], mcp_servers={SERVER: mcp_config}, strict_mcp_config=True, setting_sources=[], cwd=str(cwd),
            model=scenario.model.id, env=env, allowed_tools=allowed, **limit_kwargs,
        )
        settings: dict[str, Any] = {
            "model": scenario.model.id, "tools": [], "mcp_servers": {SERVER: "sdk (in-process)"},
            "strict_mcp_config": True, "setting_sources": [], "permission_mode": "unset (default)",
            "allowed_tools": allowed, **limit_kwargs,
            "env": sorted(k for k in env if k not in ("ANTHROPIC_API_KEY",)),
            "retries": "CLI default (CLAUDE_CODE_MAX_RETRIES unset)",
            "call_id_source": call_id_source,
        }
        if resume:
            kwargs["resume"] = resume
            settings["resume"] = "resume=<session id>, ClaudeSDKClient without a prompt"
        if self.variant == "can-use-tool":
            kwargs["can_use_tool"] = self._can_use_tool(scenario, ctx, seg, decisions)
            settings.update(approval="can_use_tool (in-process decisions; none -> Deny(interrupt=True))",
                            deny="can_use_tool Deny(interrupt=True)", reject="can_use_tool Deny(interrupt=False)")
        else:
            if gated:
                matcher = "|".join(PREFIX + n for n in gated)
                kwargs["hooks"] = {"PreToolUse": [HookMatcher(matcher=matcher,
                                                              hooks=[self._hook(scenario, ctx, decisions)])]}
            settings.update(approval="PreToolUse hook permissionDecision=defer; resume applies allow/deny",
                            deny="PreToolUse hook permissionDecision=deny", reject="PreToolUse hook deny on resume")
        return ClaudeAgentOptions(**kwargs), settings, limits, unsupported

    # ---------------------------------------------------------------- approval points
    @staticmethod
    def _hook(scenario: Scenario, ctx: RunContext, decisions: dict[str, str]) -> Any:
        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)

        async def pre_tool_use(data: dict[str, Any], tool_use_id: str | None, _context: Any) -> dict[str, Any]:
            name = bare_name(str(data.get("tool_name", "")))
            spec = scenario.tools.get(name)
            if spec is None or spec.approval == "none":
                return {}
            args = data.get("tool_input") or {}
            call_id = neutral_id(tool_use_id or data.get("tool_use_id"))
            if spec.approval == "deny":
                decision, reason = "deny", f"{name} is denied by policy"
                await ledger.authorize(name, args, call_id, "denied by policy")
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
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                           "permissionDecisionReason": reason}}

        return pre_tool_use

    @staticmethod
    def _can_use_tool(scenario: Scenario, ctx: RunContext, seg: _Segment, decisions: dict[str, str]) -> Any:
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        ledger = LedgerClient(ctx.base_url, ctx.ledger_token, ctx.run_id)

        async def can_use_tool(tool_name: str, args: dict[str, Any], context: Any) -> Any:
            name = bare_name(tool_name)
            spec = scenario.tools.get(name)
            call_id = neutral_id(getattr(context, "tool_use_id", None))
            if spec is None:
                return PermissionResultDeny(message=f"{tool_name} is not a scenario tool")
            if spec.approval == "deny":
                await ledger.authorize(name, args, call_id, "denied by policy")
                seg.policy_denied.append(call_id or name)
                return PermissionResultDeny(message=f"{name} is denied by policy", interrupt=True)
            wanted = decisions.get(call_id or "")
            if spec.approval == "none" or wanted == "approve":
                await ledger.authorize(name, args, call_id, "approved")
                return PermissionResultAllow()
            if wanted == "reject":
                await ledger.authorize(name, args, call_id, "rejected")
                return PermissionResultDeny(message="rejected by the reviewer")
            await ledger.authorize(name, args, call_id, "approval required: no decision, interrupted")
            seg.pending.append(PendingCall(call_id=call_id, tool=name, args=dict(args)))
            return PermissionResultDeny(message="waiting for approval", interrupt=True)

        return can_use_tool

    # ---------------------------------------------------------------- running
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        from claude_agent_sdk import query

        decisions: dict[str, str] = {}
        if self.variant == "can-use-tool":
            for r in scenario.resumes:
                for call_id, d in r.decisions.items():
                    decisions.setdefault(call_id, d)
        seg = _Segment()
        options, settings, limits, unsupported = self._options(scenario, ctx, seg, decisions)
        try:
            async with contextlib.aclosing(query(prompt=scenario.prompt, options=options)) as stream:
                async for message in stream:
                    self._observe(seg, message)
        except Exception as exc:  # the framework ended by raising: map it below
            seg.exception = exc
        return self._segment(ctx, seg, settings, limits, unsupported, cost_base=None)

    async def resume(self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
                     ) -> SegmentResult:
        from claude_agent_sdk import ClaudeSDKClient

        saved = json.loads((snapshot / SESSION_FILE).read_text())
        config = ctx.work_dir.resolve() / "config"
        if config.exists():
            shutil.rmtree(config)
        shutil.copytree(snapshot / "config", config)
        seg = _Segment()
        options, settings, limits, unsupported = self._options(scenario, ctx, seg, decisions,
                                                               resume=saved["session_id"])
        try:
            async with ClaudeSDKClient(options) as client:
                async for message in client.receive_response():
                    self._observe(seg, message)
        except Exception as exc:
            seg.exception = exc
        return self._segment(ctx, seg, settings, limits, unsupported, cost_base=saved.get("total_cost_usd"))

    @staticmethod
    def _observe(seg: _Segment, message: Any) -> None:
        from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, TextBlock

        if isinstance(message, ResultMessage):
            seg.result = message
        elif isinstance(message, SystemMessage) and message.subtype == "api_retry":
            seg.api_retries += 1
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            if message.error is None and message.message_id and message.message_id not in seg.message_ids:
                seg.message_ids.append(message.message_id)
            seg.texts += [b.text for b in message.content if isinstance(b, TextBlock)]

    # ---------------------------------------------------------------- mapping the signals
    def _segment(self, ctx: RunContext, seg: _Segment, settings: dict[str, Any], limits: dict[str, Any],
                 unsupported: list[str], cost_base: float | None) -> SegmentResult:
        rm, exc = seg.result, seg.exception
        common: dict[str, Any] = dict(settings=settings, limits=limits, unsupported=unsupported)
        counters = self._counters(seg, cost_base)
        extra: dict[str, Any] = {"api_retry_messages": seg.api_retries}
        base: dict[str, Any] = {"ended": "raised" if exc is not None else "returned"}
        if exc is not None:
            base.update(exception_type=type(exc).__name__, exception_message=str(exc)[:500])
            if getattr(exc, "exit_code", None) is not None:
                extra["exit_code"] = exc.exit_code
        code = getattr(exc, "exit_code", None)
        if rm is None and isinstance(code, int) and (code < 0 or code in (128 + 9, 128 + 15)):
            # the CLI was killed from outside (not by anything it did): not framework behaviour
            raise CLIKilled(f"the Claude CLI was killed (exit code {code}) before it ended the run")
        if rm is None:
            extra["result_message"] = "missing"
            if exc is None:
                base["ended"] = "raised"
                base["exception_message"] = "the CLI ended without a ResultMessage"
            return SegmentResult(signals=NativeSignals(**base, failure="other", extra=extra), counters=counters,
                                 **common)
        extra.update(is_error=rm.is_error, stop_reason=rm.stop_reason, api_error_status=rm.api_error_status,
                     num_turns=rm.num_turns, total_cost_usd=rm.total_cost_usd,
                     permission_denials=rm.permission_denials or [], model_usage=rm.model_usage,
                     usage={k: (rm.usage or {}).get(k) for k in ("input_tokens", "output_tokens",
                                                                 "cache_read_input_tokens",
                                                                 "cache_creation_input_tokens")},
                     duration_ms=rm.duration_ms, duration_api_ms=rm.duration_api_ms, session_id=rm.session_id)
        if rm.errors:
            extra["errors"] = rm.errors[:5]
        if cost_base is not None:
            extra["total_cost_usd_at_pause"] = cost_base
        base.update(subtype=rm.subtype, terminal_reason=rm.terminal_reason)
        notes: list[str] = []

        # a pause: the hook deferred a call (default), or can_use_tool interrupted a call without a decision
        deferred = rm.deferred_tool_use
        if deferred is not None or rm.terminal_reason == "tool_deferred":
            pending = [PendingCall(call_id=neutral_id(deferred.id), tool=bare_name(deferred.name),
                                   args=dict(deferred.input))] if deferred is not None else []
            extra["deferred_tool_use"] = {"id": deferred.id, "name": deferred.name} if deferred else None
            snapshot = self._save(ctx, rm, pending, settings)
            signals = NativeSignals(**{**base, "ended": "paused"}, pending=pending, extra=extra)
            return SegmentResult(signals=signals, counters=counters, snapshot=snapshot, **common)
        if seg.pending and not seg.policy_denied:
            notes.append(f"{NOT_RESUMABLE}: can_use_tool answered Deny(interrupt=True) for a call without a "
                         "decision; the CLI ended the run")
            signals = NativeSignals(**{**base, "ended": "paused"}, pending=seg.pending, extra=extra)
            return SegmentResult(signals=signals, counters=counters, snapshot=None, notes=notes, **common)

        text = rm.result if not rm.is_error else None
        if text is None and not rm.is_error and seg.texts:
            text = seg.texts[-1]
        if rm.subtype == "error_max_turns":
            signals = NativeSignals(**base, limit="steps", limit_signal="raised", extra=extra)
        elif rm.subtype == "error_max_budget_usd":
            signals = NativeSignals(**base, limit="budget", limit_signal="raised", extra=extra)
        elif seg.policy_denied:
            signals = NativeSignals(**base, denied=True, final_text=text, extra=extra)
        elif rm.is_error:
            model = rm.api_error_status is not None or rm.terminal_reason == "api_error"
            signals = NativeSignals(**base, failure="model" if model else "other", extra=extra)
        elif exc is not None:
            signals = NativeSignals(**base, failure="other", final_text=text, extra=extra)
        else:
            signals = NativeSignals(**base, final_text=text, extra=extra)
        return SegmentResult(signals=signals, counters=counters, notes=notes, **common)

    @staticmethod
    def _counters(seg: _Segment, cost_base: float | None) -> ReportedCounters:
        rm = seg.result
        if rm is None:
            return ReportedCounters(model_requests_reported=len(seg.message_ids) if seg.message_ids else None,
                                    runtime_step_unit=STEP_UNIT)
        usage = rm.usage or {}
        cost = rm.total_cost_usd
        if cost is not None and cost_base is not None:
            cost = round(cost - cost_base, 12)
        return ReportedCounters(
            model_requests_reported=len(seg.message_ids), runtime_steps=rm.num_turns, runtime_step_unit=STEP_UNIT,
            input_tokens_reported=usage.get("input_tokens"), output_tokens_reported=usage.get("output_tokens"),
            cost_usd_reported=cost, cumulative=False,
        )

    @staticmethod
    def _save(ctx: RunContext, rm: Any, pending: list[PendingCall], settings: dict[str, Any]) -> str:
        snap = ctx.snapshot_dir
        snap.mkdir(parents=True, exist_ok=True)
        (snap / PENDING_FILE).write_text(json.dumps([p.model_dump() for p in pending]))
        (snap / SESSION_FILE).write_text(json.dumps({
            "session_id": rm.session_id, "total_cost_usd": rm.total_cost_usd, "num_turns": rm.num_turns,
            "settings": settings,
        }, default=str))
        config = ctx.work_dir.resolve() / "config"
        shutil.copytree(config, snap / "config", dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.lock"))
        print(f"claude-agent-sdk: paused session {rm.session_id} saved to {snap}", file=sys.stderr)
        return str(snap)
