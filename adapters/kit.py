"""Glue every adapter needs, written once: call-id prefixes, the exceptions an adapter raises into its
framework's own error path, and reading an exception's chain."""

from __future__ import annotations

from loopbench.harness.errors import LoopbenchError

OPENAI_ID_PREFIX = "call_"  # OpenAI Chat Completions / Responses tool-call ids: call_<scripted id>
ANTHROPIC_ID_PREFIX = "toolu_"  # Anthropic Messages tool_use ids: toolu_<scripted id>
GEMINI_ID_PREFIX = "fc_"  # Gemini generateContent functionCall ids: fc_<scripted id>


def neutral_id(call_id: str | None, prefix: str = OPENAI_ID_PREFIX) -> str | None:
    """The scripted call id behind a protocol's tool-call id (the server sends `<prefix><scripted id>`)."""
    return call_id.removeprefix(prefix) if call_id else call_id


class ToolFailed(LoopbenchError):
    """A scripted tool error, raised from the tool so the framework's own tool-error path decides."""


class ToolDenied(LoopbenchError):
    """A policy denial raised from the tool, where that is the framework's way to end the run on it."""


def exception_chain(exc: BaseException, limit: int = 10) -> list[BaseException]:
    """`exc` and what caused it (`__cause__`, else `__context__`), outermost first: frameworks wrap errors."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < limit:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def in_chain(exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> bool:
    return any(isinstance(e, kinds) for e in exception_chain(exc))
