"""A hostile wire (scenario `wire_fault`, `fail_first[].retry_after_s`) driven with each provider's own Python client,
plain and streamed: what each client raises or retries when an answer is cut mid-way, is not valid JSON, ends
with a finish reason it does not know, or is a 429 that says how long to wait. The server's log is the ground
truth of what was sent and tried again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types

from loopbench.harness.judge.counters import retry_after_waits

TEXT = "A final answer long enough to span more than one streamed delta."


def _chat(url: str, key: str, stream: bool) -> tuple[str, Any]:
    c = openai.OpenAI(base_url=url + "/v1", api_key=key)
    if stream:
        chunks = [ch for ch in c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                         stream=True) if ch.choices]
        return "".join(ch.choices[0].delta.content or "" for ch in chunks), chunks[-1].choices[0].finish_reason
    r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    return r.choices[0].message.content or "", r.choices[0].finish_reason


def _responses(url: str, key: str, stream: bool) -> tuple[str, Any]:
    c = openai.OpenAI(base_url=url + "/v1", api_key=key)
    if stream:
        events = list(c.responses.create(model="m", input="x", stream=True))
        done = events[-1]
        assert done.type == "response.completed"
        return done.response.output_text, done.response.status
    r = c.responses.create(model="m", input="x")
    return r.output_text, r.status


def _anthropic(url: str, key: str, stream: bool) -> tuple[str, Any]:
    c = anthropic.Anthropic(base_url=url, api_key=key)
    kw: dict[str, Any] = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    if stream:
        with c.messages.stream(**kw) as s:
            m = s.get_final_message()
    else:
        m = c.messages.create(**kw)
    return m.content[0].text, m.stop_reason  # type: ignore[union-attr]


def _gemini(url: str, key: str, stream: bool) -> tuple[str, Any]:
    c = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url))
    if stream:
        out = list(c.models.generate_content_stream(model="g", contents="x"))
        return "".join(o.text or "" for o in out), out[-1].candidates[0].finish_reason  # type: ignore[index]
    r = c.models.generate_content(model="g", contents="x")
    return r.text or "", r.candidates[0].finish_reason  # type: ignore[index]


CLIENTS: dict[str, Callable[[str, str, bool], tuple[str, Any]]] = {
    "openai_chat": _chat, "openai_responses": _responses, "anthropic_messages": _anthropic,
    "gemini_generate": _gemini,
}
CASES = [(p, s) for p in CLIENTS for s in (False, True)]
IDS = [f"{p}-{'stream' if s else 'plain'}" for p, s in CASES]


def _drive(model_server, make_scenario, register, turn: dict[str, Any], protocol: str, stream: bool):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": TEXT, **turn}]))
    try:
        result: Any = CLIENTS[protocol](url, key, stream)
    except Exception as exc:  # noqa: BLE001 - what the client raised is the finding
        result = exc
    return result, server.requests(run_id)


def _delivered(protocol: str, stream: bool, kind: str) -> tuple[int, int]:
    """The usage a broken answer told its client in whole events. Cut: only Anthropic's stream says anything
    before the cut (its `message_start` carries the input tokens; the output tokens come at the end). One
    broken event: every stream's usage is in the other events, the last (here the chat client asks for none)."""
    if not stream or protocol == "openai_chat":
        return (0, 0)
    if kind == "malformed":
        return (1000, 100)
    return (1000, 0) if protocol == "anthropic_messages" else (0, 0)


# what each client does with a cut answer: the official clients retry a plain request whose body was cut (the
# read is inside their retry loop) but not a stream (the cut comes after they returned it); google-genai never
# retries unless asked. A stream cut is raised as the transport's own error by anthropic and google-genai.
CUT = {
    ("openai_chat", False): "retried", ("openai_chat", True): openai.APIConnectionError,
    ("openai_responses", False): "retried", ("openai_responses", True): openai.APIConnectionError,
    ("anthropic_messages", False): "retried", ("anthropic_messages", True): "RemoteProtocolError",
    ("gemini_generate", False): httpx.RemoteProtocolError, ("gemini_generate", True): httpx.RemoteProtocolError,
}


@pytest.mark.parametrize(("protocol", "stream"), CASES, ids=IDS)
def test_a_cut_answer(model_server, make_scenario, register, protocol, stream):
    result, log = _drive(model_server, make_scenario, register, {"wire_fault": {"kind": "cut"}}, protocol, stream)
    assert (log[0].status, log[0].wire_fault, log[0].calls_served) == (200, "cut", [])
    assert (log[0].input_tokens, log[0].output_tokens) == _delivered(protocol, stream, "cut")
    assert "cut" in (log[0].error or "")
    expected = CUT[(protocol, stream)]
    if expected == "retried":
        assert result == (TEXT, {"openai_chat": "stop", "openai_responses": "completed"}.get(protocol, "end_turn"))
        assert [(e.wire_fault, e.retry) for e in log] == [("cut", False), (None, True)]
    elif isinstance(expected, str):  # anthropic vendors its own copy of httpx: matched by name
        assert type(result).__name__ == expected, result
        assert len(log) == 1
    else:
        assert isinstance(result, expected), result
        assert len(log) == 1


@pytest.mark.parametrize(("protocol", "stream"), CASES, ids=IDS)
def test_a_malformed_body_escapes_every_client_as_a_json_error(model_server, make_scenario, register, protocol,
                                                                stream):
    """No client retries a 200 that is not JSON, and none but google-genai's stream wraps the error in its own
    exception type: a caller sees a bare JSONDecodeError (a framework that maps only the client's API errors to
    a model failure will not recognise it)."""
    result, log = _drive(model_server, make_scenario, register, {"wire_fault": {"kind": "malformed"}}, protocol,
                         stream)
    assert [(e.status, e.wire_fault) for e in log] == [(200, "malformed")]
    assert (log[0].input_tokens, log[0].output_tokens) == _delivered(protocol, stream, "malformed")
    if protocol == "gemini_generate" and stream:
        assert isinstance(result, errors.UnknownApiResponseError), result
    else:
        assert isinstance(result, json.JSONDecodeError), result


@pytest.mark.parametrize(("protocol", "stream"), CASES, ids=IDS)
def test_an_unknown_finish_reason_is_passed_through(model_server, make_scenario, register, protocol, stream):
    """Every client accepts an answer whose finish reason it does not know and hands the value on (google-genai
    warns and keeps it as an ad-hoc enum member): what happens next is the framework's."""
    fault = {"wire_fault": {"kind": "unknown_finish", "finish_reason": "paused_for_review"}}
    with pytest.warns(UserWarning, match="PAUSED_FOR_REVIEW") if protocol == "gemini_generate" else _nothing():
        result, log = _drive(model_server, make_scenario, register, fault, protocol, stream)
    text, reason = result
    assert text == TEXT
    wanted = "PAUSED_FOR_REVIEW" if protocol == "gemini_generate" else "paused_for_review"
    assert getattr(reason, "value", reason) == wanted
    assert [(e.status, e.wire_fault, e.input_tokens) for e in log] == [(200, "unknown_finish", 1000)]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize(("protocol", "stream"), CASES, ids=IDS)
def test_a_429_with_a_retry_hint(model_server, make_scenario, register, protocol, stream):
    """The hint goes as the provider sends it: Anthropic's and OpenAI's `retry-after` header, Gemini's RetryInfo
    in the body. The OpenAI and Anthropic clients wait as told (the server measures the gap); google-genai does
    not retry at all by default."""
    fault = {"fail_first": [{"status": 429, "retry_after_s": 1}]}
    result, log = _drive(model_server, make_scenario, register, fault, protocol, stream)
    assert log[0].status == 429 and log[0].retry_after_s == 1.0
    if protocol == "gemini_generate":
        assert isinstance(result, errors.ClientError) and result.code == 429, result
        assert result.details["error"]["details"][0]["retryDelay"] == "1s"
        assert len(log) == 1 and retry_after_waits(log) == []
        return
    assert result[0] == TEXT and [e.status for e in log] == [429, 200]
    (wait,) = retry_after_waits(log)
    assert 0.9 <= wait < 10, wait  # told 1 s: waited it (load only ever lengthens a gap)


def test_the_hint_is_a_header_for_anthropic_and_openai(model_server, make_scenario, register):
    server, url = model_server
    _, key = register(make_scenario([{"id": "answer", "text": TEXT,
                                      "fail_first": [{"status": 429, "times": 2, "retry_after_s": 3}]}]))
    for path, body in (("/v1/messages", {"model": "m", "max_tokens": 1, "messages": []}),
                       ("/v1/chat/completions", {"model": "m", "messages": []})):
        r = httpx.post(url + path, json=body, headers={"x-api-key": key, "authorization": f"Bearer {key}"})
        assert r.status_code == 429 and r.headers["retry-after"] == "3", r.headers
        assert "retry-after-ms" not in r.headers
