"""The tool-call ids the scripted server sends, in one place: each wire protocol's id is a fixed prefix and the
scripted call's id (`call_c1` for the scripted call `c1`), so the id a framework hands back names the scripted
call. The protocol modules send them; adapters and the ideal run read them back (`neutral_id`)."""

from __future__ import annotations

OPENAI_ID_PREFIX = "call_"  # OpenAI Chat Completions tool_calls[].id and Responses function_call.call_id
ANTHROPIC_ID_PREFIX = "toolu_"  # Anthropic Messages tool_use.id
GEMINI_ID_PREFIX = "fc_"  # Gemini generateContent functionCall.id


def neutral_id(call_id: str | None, prefix: str = OPENAI_ID_PREFIX) -> str | None:
    """The scripted call id behind a protocol's tool-call id."""
    return call_id.removeprefix(prefix) if call_id else call_id
