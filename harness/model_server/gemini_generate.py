"""Gemini API: `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`.

The shapes follow the Gemini API reference (`models.generateContent`, `GenerateContentResponse`, `FunctionCall`,
`UsageMetadata`) as the official `google-genai` client sends and reads them (camelCase on the wire; snake_case
accepted too). Unlike the other protocols, the model and whether the answer streams are in the path, not the
body.

- A served call is a `functionCall` part with `id` = `fc_<scripted id>`: `FunctionCall.id` is the API's own
  field ("if populated, the client is to return the response with the matching id"), and it is how a tool
  result is matched to its call here (a `functionResponse` carries the `id` back); a response without one is
  paired by name, in order, with the calls of the model answer before it.
- `usageMetadata` (promptTokenCount, candidatesTokenCount, totalTokenCount) is on the plain response and on the
  last chunk of a stream, with `finishReason` (`STOP`).
- Errors are Google's `{"error": {"code", "message", "status"}}` with the `google.rpc.Code` name for the HTTP
  status; a 429 carries the `RetryInfo` detail the API sends with RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

from typing import Any

from loopbench.harness.model_server.call_ids import GEMINI_ID_PREFIX as ID_PREFIX
from loopbench.harness.model_server.script import Conversation, ToolResult
from loopbench.harness.model_server.wire import Parsed, Reply, chunks, dumps, sse, text_of

NAME = "gemini_generate"
STREAM_ACTION = "streamGenerateContent"
PATHS = ("/v1beta/models/{model}:generateContent", f"/v1beta/models/{{model}}:{STREAM_ACTION}")


def _get(d: dict[str, Any], camel: str) -> Any:
    """A field by its wire (camelCase) name or its snake_case spelling."""
    if camel in d:
        return d[camel]
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return d.get(snake)


def model_and_action(path: str) -> tuple[str, str]:
    """`/v1beta/models/gemini-x:streamGenerateContent` -> ("gemini-x", "streamGenerateContent")."""
    tail = path.rsplit("/models/", 1)[-1]
    model, _, action = tail.partition(":")
    return model, action


def _result_text(response: Any) -> str:
    """A functionResponse's `response` as text: the one string it wraps (`{"result": "..."}`, `{"output": ...}`,
    ADK's and google-genai's shapes), else its JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (only,) = response.values()
        if isinstance(only, str):
            return only
    return response if isinstance(response, str) else dumps(response)


def _by_name(unanswered: list[tuple[str, str]], name: str) -> str:
    """A response sent back without the call's id belongs to the first unanswered call of that name in the model
    answer before it (the API's pairing when ids are not populated: by name, in order)."""
    return next((i for i, n in unanswered if n == name), "")


def _tool_choice(body: dict[str, Any]) -> tuple[str | None, bool]:
    config = _get(_get(body, "toolConfig") or {}, "functionCallingConfig") or {}
    mode = (_get(config, "mode") or "").upper() or None
    allowed = _get(config, "allowedFunctionNames") or []
    if mode == "ANY" and len(allowed) == 1:
        return allowed[0], True
    label = {"ANY": "required", "NONE": "none", "AUTO": "auto", "VALIDATED": "auto"}.get(mode or "", mode)
    return (label.lower() if label else None), False


def _response_schema(body: dict[str, Any]) -> bool:
    """The request constrains the answer's text to a schema (`generationConfig.responseSchema` or
    `responseJsonSchema`: controlled generation)."""
    config = _get(body, "generationConfig") or {}
    return bool(_get(config, "responseSchema") or _get(config, "responseJsonSchema"))


def parse(body: dict[str, Any], path: str = "") -> Parsed:
    contents = _get(body, "contents") or []
    batches: list[list[str]] = []
    results: list[ToolResult] = []
    unanswered: list[tuple[str, str]] = []  # (id, name) of the latest model answer's calls not yet answered
    previous_role = None
    for content in contents:
        role, parts = content.get("role"), content.get("parts") or []
        if role == "model":
            calls = [(fc.get("id") or "", fc.get("name") or "") for p in parts if (fc := _get(p, "functionCall"))]
            if previous_role == "model" and batches:  # consecutive model contents are one answer
                batches[-1] += [i for i, _ in calls]
                unanswered += calls
            else:
                batches.append([i for i, _ in calls])
                unanswered = list(calls)
        else:
            for p in parts:
                if fr := _get(p, "functionResponse"):
                    call_id = fr.get("id") or _by_name(unanswered, fr.get("name") or "")
                    unanswered = [c for c in unanswered if c[0] != call_id]
                    results.append(ToolResult(call_id, _result_text(fr.get("response"))))
        previous_role = role
    offered = [
        d.get("name", "")
        for tool in _get(body, "tools") or []
        for d in _get(tool, "functionDeclarations") or []
    ]
    choice, named = _tool_choice(body)
    model, action = model_and_action(path)
    schemas = {d.get("name", ""): _get(d, "parametersJsonSchema") or d.get("parameters") or {}
               for tool in _get(body, "tools") or [] for d in _get(tool, "functionDeclarations") or []}
    instruction = _get(body, "systemInstruction")
    system = text_of(_get(instruction, "parts") if isinstance(instruction, dict) else instruction)
    return Parsed(
        conversation=Conversation(ID_PREFIX, [b for b in batches if b], results, offered, choice, named,
                                  system, schemas, [list(b) for b in batches], _response_schema(body)),
        model=model or None,
        stream=action == STREAM_ACTION,
        include_usage=True,
        messages=len(contents),
        tool_choice=choice,
    )


def _usage(r: Reply) -> dict[str, Any]:
    return {"promptTokenCount": r.input_tokens, "candidatesTokenCount": r.output_tokens,
            "totalTokenCount": r.input_tokens + r.output_tokens}


def _response(r: Reply, parts: list[dict[str, Any]], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate]}
    if last:
        candidate["finishReason"] = (r.finish or "stop").upper()  # the API's enum names are upper case
        out["usageMetadata"] = _usage(r)
    out.update(modelVersion=r.model, responseId=r.id)
    return out


def _call_parts(r: Reply) -> list[dict[str, Any]]:
    return [{"functionCall": {"id": ID_PREFIX + c.id, "name": c.tool, "args": c.args}} for c in r.served.calls]


def render(r: Reply) -> dict[str, Any]:
    parts = ([{"text": r.served.text}] if r.served.text else []) + _call_parts(r)
    return _response(r, parts or [{"text": ""}], last=True)


def render_stream(r: Reply, include_usage: bool = True) -> list[bytes]:
    """One chunk per text piece, then one with every function call (the API sends a call whole); the last chunk
    carries finishReason and usageMetadata."""
    pieces: list[list[dict[str, Any]]] = [[{"text": t}] for t in chunks(r.served.text)] if r.served.text else []
    if r.served.calls:
        pieces.append(_call_parts(r))
    pieces = pieces or [[{"text": ""}]]
    return [sse(_response(r, parts, last=i == len(pieces) - 1)) for i, parts in enumerate(pieces)]


# HTTP status -> google.rpc.Code name (the `status` of Google's error body)
STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ABORTED",
    429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error(status: int, message: str) -> dict[str, Any]:
    name = STATUS_NAMES.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    body: dict[str, Any] = {"code": status, "message": message, "status": name}
    if status == 429:
        body["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
    return {"error": body}
