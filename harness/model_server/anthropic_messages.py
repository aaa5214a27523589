"""Anthropic Messages: `POST /v1/messages` (also `?beta=true`), plain and SSE."""

from __future__ import annotations

from typing import Any

from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX as ID_PREFIX
from loopbench.harness.model_server.script import Conversation, ToolResult
from loopbench.harness.model_server.wire import Parsed, Reply, chunks, dumps, sse, text_of

NAME = "anthropic_messages"
PATHS = ("/v1/messages",)


def parse(body: dict[str, Any], path: str = "") -> Parsed:
    """`path` (the request's) is unused: this protocol says everything in the body."""
    messages = body.get("messages") or []
    batches: list[list[str]] = []
    results: list[ToolResult] = []
    previous_role = None
    for m in messages:
        role, content = m.get("role"), m.get("content")
        blocks = content if isinstance(content, list) else []
        if role == "assistant":
            calls = [b.get("id", "") for b in blocks if b.get("type") in ("tool_use", "server_tool_use")]
            if previous_role == "assistant" and batches:  # consecutive assistant messages are one message
                batches[-1] += calls
            else:
                batches.append(calls)
        else:
            results += [
                ToolResult(b.get("tool_use_id", ""), text_of(b.get("content")))
                for b in blocks if b.get("type") == "tool_result"
            ]
        previous_role = role
    offered = [t.get("name", "") for t in body.get("tools") or []]
    choice = body.get("tool_choice") or None
    named = choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None
    label = named or ({"any": "required"}.get(choice["type"], choice["type"]) if choice else None)
    schemas = {t.get("name", ""): t.get("input_schema") or {} for t in body.get("tools") or []}
    # structured outputs: `output_format` (the beta) or `output_config.format`, a JSON schema the answer follows
    format_ = body.get("output_format") or (body.get("output_config") or {}).get("format") or {}
    strict_tools = frozenset(t.get("name", "") for t in body.get("tools") or [] if t.get("strict") is True)
    conv = Conversation(ID_PREFIX, [b for b in batches if b], results, offered, label, bool(named),
                        text_of(body.get("system")), schemas, [list(b) for b in batches],
                        format_.get("type") == "json_schema", strict_tools)
    return Parsed(
        conversation=conv,
        model=body.get("model"),
        stream=bool(body.get("stream")),
        include_usage=True,
        messages=len(messages),
        tool_choice=label,
    )


def _usage(r: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": r.input_tokens, "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
    }


def _stop(r: Reply) -> str:
    return r.finish or ("tool_use" if r.served.calls else "end_turn")


def _message(r: Reply, content: list[dict[str, Any]], stop: str | None, output_tokens: int) -> dict[str, Any]:
    return {
        "id": f"msg_{r.id}", "type": "message", "role": "assistant", "model": r.model, "content": content,
        "stop_reason": stop, "stop_sequence": None, "usage": _usage(r, output_tokens),
    }


def render(r: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": r.served.text}] if r.served.text else []
    content += [{"type": "tool_use", "id": ID_PREFIX + c.id, "name": c.tool, "input": c.args} for c in r.served.calls]
    return _message(r, content, _stop(r), r.output_tokens)


def render_stream(r: Reply, include_usage: bool = True) -> list[bytes]:
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(sse({"type": kind, **fields}, event=kind))

    emit("message_start", message=_message(r, [], None, 0))
    index = 0
    if r.served.text:
        emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for piece in chunks(r.served.text):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
        emit("content_block_stop", index=index)
        index += 1
    for c in r.served.calls:
        emit("content_block_start", index=index,
             content_block={"type": "tool_use", "id": ID_PREFIX + c.id, "name": c.tool, "input": {}})
        for piece in chunks(dumps(c.args)):
            emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
        emit("content_block_stop", index=index)
        index += 1
    emit("message_delta", delta={"stop_reason": _stop(r), "stop_sequence": None},
         usage=_usage(r, r.output_tokens))
    emit("message_stop")
    return events


ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
    408: "timeout_error", 409: "invalid_request_error", 429: "rate_limit_error",
    500: "api_error", 503: "api_error", 529: "overloaded_error",
}


def error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}
