"""Structured answers on the wire, read by each provider's own Python client: an output turn answers as the
request's output tool or as JSON text, a correction only when the earlier answer comes back, and a request that
constrains its answer to a schema (a strict response format, Anthropic's output format, Gemini's response schema)
never gets an answer that breaks it. The server's log says which attempt each response was."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from loopbench.harness.model_server.call_ids import ANTHROPIC_ID_PREFIX

OUTPUT: dict[str, Any] = {
    "name": "TicketTriage", "description": "d",
    "fields": {"ticket_id": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "urgent"]}},
}
BROKEN = {"ticket_id": "T-1", "priority": "asap"}
VALID = {"ticket_id": "T-1", "priority": "urgent"}
SCHEMA = {"type": "object", "properties": {"ticket_id": {"type": "string"},
                                           "priority": {"type": "string", "enum": ["low", "urgent"]}},
          "required": ["ticket_id", "priority"], "additionalProperties": False}
USER = [{"role": "user", "content": "triage T-1"}]


def _register(make_scenario, register) -> tuple[str, str]:
    sc = make_scenario([{"id": "triage", "output": [BROKEN, VALID]}], category="validation", output=OUTPUT,
                       tools={"get_ticket": {}}, completion={"final_output": {"priority": "urgent"}})
    return register(sc)


def _log(server, run_id: str) -> list[tuple[int | None, bool | None]]:
    return [(r.output_attempt, r.output_constrained) for r in server.requests(run_id)]


def test_chat_json_text_then_a_strict_format(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = _register(make_scenario, register)
    c = openai.OpenAI(base_url=url + "/v1", api_key=key)
    plain = c.chat.completions.create(model="m", messages=USER, response_format={"type": "json_object"})
    assert json.loads(plain.choices[0].message.content or "") == BROKEN and plain.choices[0].finish_reason == "stop"
    strict = c.chat.completions.create(model="m", messages=USER, response_format={
        "type": "json_schema", "json_schema": {"name": "TicketTriage", "schema": SCHEMA, "strict": True}})
    assert json.loads(strict.choices[0].message.content or "") == VALID
    assert _log(server, run_id) == [(1, False), (1, True)]


def test_responses_strict_text_format(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = _register(make_scenario, register)
    c = openai.OpenAI(base_url=url + "/v1", api_key=key)
    r = c.responses.create(model="m", input="triage T-1", text={"format": {
        "type": "json_schema", "name": "TicketTriage", "schema": SCHEMA, "strict": True}})
    assert json.loads(r.output_text) == VALID and _log(server, run_id) == [(1, True)]


def test_anthropic_output_tool_answer_then_its_correction(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = _register(make_scenario, register)
    c = anthropic.Anthropic(base_url=url, api_key=key)
    tools: list[Any] = [{"name": "get_ticket", "description": "d", "input_schema": {"type": "object"}},
                        {"name": "final_result", "description": "the answer", "input_schema": SCHEMA}]
    first = c.messages.create(model="m", max_tokens=100, messages=USER, tools=tools)
    (call,) = first.content
    assert call.type == "tool_use" and call.name == "final_result" and call.input == BROKEN
    assert call.id == ANTHROPIC_ID_PREFIX + "out_triage_1" and first.stop_reason == "tool_use"
    retry = [*USER, {"role": "assistant", "content": [call.model_dump()]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "is_error": True,
                                           "content": "priority: 'asap' is not one of low, urgent; fix it"}]}]
    second = c.messages.create(model="m", max_tokens=100, messages=retry, tools=tools)
    assert second.content[0].input == VALID  # type: ignore[union-attr]
    # a strict tool constrains the first answer too
    strict = [tools[0], {**tools[1], "strict": True}]
    third = c.messages.create(model="m", max_tokens=100, messages=USER, tools=strict)
    assert third.content[0].input == VALID  # type: ignore[union-attr]
    assert _log(server, run_id) == [(1, False), (2, False), (1, True)]
    # a correction is a new state, not a retry; the third request asks the first one's state again
    assert [r.retry for r in server.requests(run_id)] == [False, False, True]
    # the output call is the answer, not a tool call of the script
    assert all(r.calls_served == [] for r in server.requests(run_id))


def test_gemini_response_schema_is_a_constrained_answer(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = _register(make_scenario, register)
    c = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url))
    plain = c.models.generate_content(model="g", contents="triage T-1")
    constrained = c.models.generate_content(model="g", contents="triage T-1", config=types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema=SCHEMA))
    assert json.loads(plain.text or "") == BROKEN and json.loads(constrained.text or "") == VALID
    assert _log(server, run_id) == [(1, False), (1, True)]
