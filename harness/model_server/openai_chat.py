"""OpenAI Chat Completions: `POST /v1/chat/completions`, plain and SSE (`stream_options.include_usage`)."""

from __future__ import annotations

import time
from typing import Any

from loopbench.harness.model_server.call_ids import OPENAI_ID_PREFIX as ID_PREFIX
from loopbench.harness.model_server.script import Conversation, ToolResult
from loopbench.harness.model_server.wire import (
    Parsed,
    Reply,
    chunks,
    dumps,
    openai_error,
    openai_tool_choice,
    sse,
    text_of,
)

NAME = "openai_chat"
PATHS = ("/v1/chat/completions",)


def parse(body: dict[str, Any], path: str = "") -> Parsed:
    """`path` (the request's) is unused: this protocol says everything in the body."""
    messages = body.get("messages") or []
    batches: list[list[str]] = []
    answers: list[list[str]] = []
    results: list[ToolResult] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            answers.append([tc.get("id", "") for tc in m.get("tool_calls") or []])
        if role == "assistant" and m.get("tool_calls"):
            batches.append([tc.get("id", "") for tc in m["tool_calls"]])
        elif role == "tool":
            results.append(ToolResult(m.get("tool_call_id", ""), text_of(m.get("content"))))
    offered = [
        (t.get("function") or t.get(t.get("type", "")) or t).get("name", "")
        for t in body.get("tools") or []
    ] + [f.get("name", "") for f in body.get("functions") or []]
    choice = body.get("tool_choice")
    named = isinstance(choice, dict) and (choice.get("function") or {}).get("name")
    choice, is_named = openai_tool_choice(choice, named or None)
    system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    schemas = {fn.get("name", ""): fn.get("parameters") or {}
               for t in body.get("tools") or [] if isinstance(fn := t.get("function") or t, dict)}
    format_ = body.get("response_format") or {}
    strict_format = format_.get("type") == "json_schema" and (format_.get("json_schema") or {}).get("strict") is True
    strict_tools = frozenset(fn.get("name", "") for t in body.get("tools") or []
                             if isinstance(fn := t.get("function") or t, dict) and fn.get("strict") is True)
    return Parsed(
        conversation=Conversation(ID_PREFIX, batches, results, offered, choice, is_named, system, schemas, answers,
                                  strict_format, strict_tools),
        model=body.get("model"),
        stream=bool(body.get("stream")),
        include_usage=bool((body.get("stream_options") or {}).get("include_usage")),
        messages=len(messages),
        tool_choice=choice,
    )


def _usage(r: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": r.input_tokens,
        "completion_tokens": r.output_tokens,
        "total_tokens": r.input_tokens + r.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _finish(r: Reply) -> str:
    return r.finish or ("tool_calls" if r.served.calls else "stop")


def _envelope(r: Reply, obj: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{r.id}", "object": obj, "created": int(time.time()), "model": r.model,
        "system_fingerprint": None, "service_tier": "default",
    }


def render(r: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant", "content": r.served.text, "refusal": None, "annotations": [],
    }
    if r.served.calls:
        message["tool_calls"] = [
            {"id": ID_PREFIX + c.id, "type": "function", "function": {"name": c.tool, "arguments": dumps(c.args)}}
            for c in r.served.calls
        ]
    return {
        **_envelope(r, "chat.completion"),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(r), "logprobs": None}],
        "usage": _usage(r),
    }


def render_stream(r: Reply, include_usage: bool) -> list[bytes]:
    env = _envelope(r, "chat.completion.chunk")
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**env, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                    **extra})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if r.served.text:
        events += [chunk({"content": part}) for part in chunks(r.served.text)]
    for i, c in enumerate(r.served.calls):
        args = dumps(c.args)
        events.append(chunk({"tool_calls": [{
            "index": i, "id": ID_PREFIX + c.id, "type": "function", "function": {"name": c.tool, "arguments": ""},
        }]}))
        events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}) for part in chunks(args)]
    events.append(chunk({}, _finish(r)))
    if include_usage:
        events.append(sse({**env, "choices": [], "usage": _usage(r)}))
    events.append(sse("[DONE]"))
    return events


def error(status: int, message: str) -> dict[str, Any]:
    return openai_error(status, message)
