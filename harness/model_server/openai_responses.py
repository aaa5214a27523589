"""OpenAI Responses: `POST /v1/responses`, plain and SSE (the full event sequence clients rely on).

The server keeps no responses, so `previous_response_id` cannot be followed; tool outputs whose
`function_call` items are not in the request then form a batch of their own where they appear (their ids
still name the scripted calls, which is all the turn choice needs).
"""

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

NAME = "openai_responses"
PATHS = ("/v1/responses",)
_ASSISTANT_SIDE = {"function_call", "reasoning", "custom_tool_call"}


def parse(body: dict[str, Any], path: str = "") -> Parsed:
    """`path` (the request's) is unused: this protocol says everything in the body."""
    raw = body.get("input")
    items: list[dict[str, Any]] = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or [])
    batches: list[list[str]] = []
    results: list[ToolResult] = []
    group: list[str] | None = None  # consecutive assistant-side items are one assistant message
    for item in items:
        kind = item.get("type", "message")
        if kind in _ASSISTANT_SIDE or (kind == "message" and item.get("role") == "assistant"):
            if group is None:
                group = []
                batches.append(group)
            if kind in ("function_call", "custom_tool_call"):
                group.append(item.get("call_id", ""))
            continue
        group = None
        if kind in ("function_call_output", "custom_tool_call_output"):
            results.append(ToolResult(item.get("call_id", ""), text_of(item.get("output"))))
    answers = [list(b) for b in batches]  # every assistant message, before orphans join and empty ones go
    called = {cid for b in batches for cid in b}
    orphans = [r.call_id for r in results if r.call_id not in called]
    if orphans:  # outputs for calls of an earlier, not resent, response (previous_response_id)
        batches.append(orphans)
    batches = [b for b in batches if b]
    offered = [t.get("name", "") for t in body.get("tools") or [] if t.get("name")]
    choice = body.get("tool_choice")
    named = isinstance(choice, dict) and choice.get("type") in ("function", "custom") and choice.get("name")
    choice, is_named = openai_tool_choice(choice, named or None)
    system = "\n".join([text_of(body.get("instructions")), *(
        text_of(i.get("content")) for i in items if i.get("role") in ("system", "developer"))])
    schemas = {t["name"]: t.get("parameters") or {} for t in body.get("tools") or [] if t.get("name")}
    format_ = (body.get("text") or {}).get("format") or {}
    strict_format = format_.get("type") == "json_schema" and format_.get("strict") is True
    strict_tools = frozenset(t["name"] for t in body.get("tools") or [] if t.get("name") and t.get("strict") is True)
    return Parsed(
        conversation=Conversation(ID_PREFIX, batches, results, offered, choice, is_named, system, schemas, answers,
                                  strict_format, strict_tools),
        model=body.get("model"),
        stream=bool(body.get("stream")),
        include_usage=True,
        messages=len(items),
        tool_choice=choice,
    )


def _usage(r: Reply) -> dict[str, Any]:
    return {
        "input_tokens": r.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": r.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": r.input_tokens + r.output_tokens,
    }


def _message(r: Reply, text: str, status: str) -> dict[str, Any]:
    return {
        "type": "message", "id": f"msg_{r.id}", "status": status, "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if text else [],
    }


def _call(c: Any, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call", "id": f"fc_{c.id}", "call_id": ID_PREFIX + c.id, "name": c.tool,
        "arguments": arguments, "status": status,
    }


def _output(r: Reply) -> list[dict[str, Any]]:
    out = [_message(r, r.served.text, "completed")] if r.served.text else []
    return out + [_call(c, dumps(c.args), "completed") for c in r.served.calls]


def _response(r: Reply, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": f"resp_{r.id}", "object": "response", "created_at": int(time.time()), "status": status,
        "model": r.model, "output": output, "usage": usage, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "temperature": 1.0, "top_p": 1.0, "max_output_tokens": None, "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None}, "text": {"format": {"type": "text"}},
        "truncation": "disabled", "store": False, "background": False, "service_tier": "default",
    }


def render(r: Reply) -> dict[str, Any]:
    # an unknown finish is the response's `status` (its terminal event stays `response.completed`)
    return _response(r, r.finish or "completed", _output(r), _usage(r))


def render_stream(r: Reply, include_usage: bool = True) -> list[bytes]:
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(sse({"type": kind, "sequence_number": len(events), **fields}, event=kind))

    emit("response.created", response=_response(r, "in_progress", [], None))
    emit("response.in_progress", response=_response(r, "in_progress", [], None))
    index = 0
    if r.served.text:
        text, item_id = r.served.text, f"msg_{r.id}"
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        emit("response.output_item.added", output_index=index, item=_message(r, "", "in_progress"))
        emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for piece in chunks(text):
            emit("response.output_text.delta", item_id=item_id, output_index=index, content_index=0,
                 delta=piece, logprobs=[])
        emit("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text,
             logprobs=[])
        emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0,
             part={**part, "text": text})
        emit("response.output_item.done", output_index=index, item=_message(r, text, "completed"))
        index += 1
    for c in r.served.calls:
        args = dumps(c.args)
        emit("response.output_item.added", output_index=index, item=_call(c, "", "in_progress"))
        for piece in chunks(args):
            emit("response.function_call_arguments.delta", item_id=f"fc_{c.id}", output_index=index, delta=piece)
        emit("response.function_call_arguments.done", item_id=f"fc_{c.id}", output_index=index, name=c.tool,
             arguments=args)
        emit("response.output_item.done", output_index=index, item=_call(c, args, "completed"))
        index += 1
    emit("response.completed", response=render(r))
    return events


def error(status: int, message: str) -> dict[str, Any]:
    return openai_error(status, message)
