"""What the wire-protocol modules share: the parsed request, the reply to render, SSE framing."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from loopbench.harness.model_server.script import Conversation, Served

TEXT_CHUNK = 24  # characters per streamed text delta


@dataclass(frozen=True)
class Parsed:
    """A request as a protocol module reads it."""

    conversation: Conversation
    model: str | None
    stream: bool
    include_usage: bool  # OpenAI Chat: stream_options.include_usage
    messages: int
    tool_choice: str | None  # for the request log: "auto", "none", "required", "any", or a tool name


@dataclass(frozen=True)
class Reply:
    """A served turn with everything a protocol needs to render it."""

    served: Served
    model: str
    input_tokens: int
    output_tokens: int
    id: str  # a fresh hex id for this response
    # a finish/stop reason the client does not know (a scripted `unknown_finish`), sent instead of the protocol's
    # own for the answer; None: the one that fits the answer (tool calls or a final text)
    finish: str | None = None


def new_id() -> str:
    return uuid.uuid4().hex[:24]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def chunks(text: str, size: int = TEXT_CHUNK) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data if isinstance(data, str) else dumps(data)}\n\n".encode()


# each wire protocol's usage object and its token fields (Anthropic / Responses, Chat Completions, Gemini)
_USAGE_OBJECTS = ("usage", "usageMetadata")
_INPUT_FIELDS = ("input_tokens", "prompt_tokens", "promptTokenCount")
_OUTPUT_FIELDS = ("output_tokens", "completion_tokens", "candidatesTokenCount")


def delivered_usage(events: list[bytes]) -> tuple[int, int]:
    """The usage the client was told in these whole SSE events: each field's largest value (Anthropic sends the
    input tokens in `message_start`, long before the output tokens; the others send usage once, at the end)."""
    found = {"in": 0, "out": 0}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _USAGE_OBJECTS and isinstance(value, dict):
                    found["in"] = max(found["in"], *(int(value.get(f) or 0) for f in _INPUT_FIELDS))
                    found["out"] = max(found["out"], *(int(value.get(f) or 0) for f in _OUTPUT_FIELDS))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for event in events:
        for line in event.decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                walk(json.loads(line.removeprefix("data: ")))
    return found["in"], found["out"]


def text_of(content: Any) -> str:
    """The text of a message or tool-result content: a string, or a list of parts with `text`."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p.get("text", p.get("content")) if isinstance(p, dict) else p) for p in content)
    if isinstance(content, dict):
        return text_of(content.get("text", content.get("content")))
    return str(content)


def openai_error(status: int, message: str) -> dict[str, Any]:
    """The error body both OpenAI protocols use."""
    kind = {429: "rate_limit_error"}.get(status, "invalid_request_error" if status < 500 else "server_error")
    code = {401: "invalid_api_key", 404: "not_found", 429: "rate_limit_exceeded"}.get(status)
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def openai_tool_choice(choice: Any, named: str | None) -> tuple[str | None, bool]:
    """The OpenAI protocols' `tool_choice` as the script sees it: a named tool, or none|auto|required."""
    if isinstance(choice, dict) and not named:
        choice = "auto" if choice.get("type") == "allowed_tools" else choice.get("type")
    return (named or choice), bool(named)
