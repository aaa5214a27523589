"""Glue every adapter needs, written once: the exceptions an adapter raises into its framework's own error path,
reading an exception's chain (the call-id prefixes are the server's: harness/model_server/call_ids.py), and a
structured answer's pydantic model."""

from __future__ import annotations

from typing import Any

from loopbench.harness.errors import LoopbenchError
from loopbench.harness.scenario.model import OutputSpec


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


def pydantic_output_model(spec: OutputSpec, with_check: bool = True) -> type[Any]:
    """A scenario's structured answer as the pydantic model the Python frameworks' docs hand their structured
    output (`output_type`, `response_format`, `output_schema`): `pydantic.create_model(<name>, ...)`, its docstring
    the description, every field required (str / int / float / bool; an enum a Literal), extra fields forbidden
    (a strict schema needs additionalProperties false). With `with_check`, the check is an `AfterValidator` on its
    field raising `ValueError(<message>)` when the pattern is not found: pydantic applies it when the framework
    validates the answer, and it is in no JSON schema, so no provider's strict mode enforces it. Without it, the
    adapter adds the check its framework's own way (pydantic-ai's output validator)."""
    import re
    from typing import Annotated, Literal

    from pydantic import AfterValidator, ConfigDict, Field, create_model

    kinds: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
    check = spec.check if with_check else None

    def holds(value: str) -> str:
        assert check is not None
        if re.search(check.pattern, value) is None:
            raise ValueError(check.message)
        return value

    fields: dict[str, Any] = {}
    for name, field in spec.fields.items():
        kind: Any = Literal[tuple(field.enum)] if field.enum is not None else kinds[field.type]
        if check is not None and check.field == name:
            kind = Annotated[kind, AfterValidator(holds)]
        fields[name] = (kind, Field(description=field.description))
    model: type[Any] = create_model(spec.name, __config__=ConfigDict(extra="forbid"), __doc__=spec.description,
                                    **fields)
    return model
