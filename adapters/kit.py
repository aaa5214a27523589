"""Glue every adapter needs, written once: the exceptions an adapter raises into its framework's own error path,
and reading an exception's chain (the call-id prefixes are the server's: harness/model_server/call_ids.py)."""

from __future__ import annotations

from loopbench.harness.errors import LoopbenchError


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


# the provider clients a framework sends its model requests through (module-name prefixes)
MODEL_CLIENT_MODULES = ("openai.", "anthropic.", "google.genai.")


def raised_in_model_client(exc: BaseException) -> bool:
    """An exception of the chain passed through a provider client's code: the model request failed, whatever type
    the client let escape unwrapped (a body that is not JSON: a bare JSONDecodeError from openai and anthropic; a
    connection cut mid-stream: the transport's own httpx / aiohttp error). Read from the tracebacks, so a tool's
    error, which never runs inside a model client, is not taken for one."""
    for e in exception_chain(exc):
        tb = e.__traceback__
        while tb is not None:
            module = tb.tb_frame.f_globals.get("__name__", "") + "."
            if module.startswith(MODEL_CLIENT_MODULES):
                return True
            tb = tb.tb_next
    return False
