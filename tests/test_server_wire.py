"""Each protocol module without HTTP: request parsing into the neutral conversation, and every rendered body
and stream event validated against the official clients' own pydantic types (so a missing field fails)."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from loopbench.harness.model_server import anthropic_messages, openai_chat, openai_responses
from loopbench.harness.model_server.script import Served, ServedCall
from loopbench.harness.model_server.wire import Reply

TIER = "unit"

R = "[loopbench-receipt:L1]"


@pytest.fixture
def reply(make_scenario):
    sc = make_scenario([{"id": "t", "text": "Some text that spans more than one delta chunk.",
                         "calls": [{"id": "a_1", "tool": "get_ticket"}, {"id": "b_1", "tool": "lookup_policy"}]}])
    served = Served(sc.script[0], None, [ServedCall("a_1", "get_ticket", {"ticket_id": "T-1"}),
                                         ServedCall("b_1", "mcp__s__lookup_policy", {"topic": "x"})], sc.script[0].text)
    return Reply(served, "claude-sonnet-4-5", 11, 7, "abc")


def _data(events: list[bytes]) -> list[dict]:
    out = []
    for e in events:
        data = e.decode().split("data: ", 1)[1].strip()
        if data != "[DONE]":
            out.append(json.loads(data))
    return out


@pytest.mark.process
def test_openai_chat_bodies_validate(reply):
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    body = ChatCompletion.model_validate(openai_chat.render(reply))
    assert [t.id for t in body.choices[0].message.tool_calls] == ["call_a_1", "call_b_1"]
    events = openai_chat.render_stream(reply, include_usage=True)
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [ChatCompletionChunk.model_validate(d) for d in _data(events)]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == reply.served.text
    assert chunks[-1].usage.total_tokens == 18
    assert all("usage" not in d for d in _data(openai_chat.render_stream(reply, include_usage=False)))


@pytest.mark.process
def test_openai_responses_bodies_validate(reply):
    from openai.types.responses import Response, ResponseStreamEvent

    body = Response.model_validate(openai_responses.render(reply))
    assert body.output_text == reply.served.text and [o.type for o in body.output] == ["message", "function_call",
                                                                                      "function_call"]
    adapter = TypeAdapter(ResponseStreamEvent)
    events = [adapter.validate_python(d) for d in _data(openai_responses.render_stream(reply))]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == reply.served.text
    assert events[-1].type == "response.completed" and events[-1].response.usage.output_tokens == 7


@pytest.mark.process
def test_anthropic_bodies_validate(reply):
    from anthropic.types import Message, RawMessageStreamEvent

    body = Message.model_validate(anthropic_messages.render(reply))
    assert [b.type for b in body.content] == ["text", "tool_use", "tool_use"] and body.stop_reason == "tool_use"
    adapter = TypeAdapter(RawMessageStreamEvent)
    events = [adapter.validate_python(d) for d in _data(anthropic_messages.render_stream(reply))]
    assert [e.type for e in events][:2] == ["message_start", "content_block_start"]
    assert events[-2].usage.output_tokens == 7 and events[-1].type == "message_stop"


def test_chat_parse():
    p = openai_chat.parse({
        "model": "m", "stream": True, "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "get_ticket"}}],
        "tool_choice": {"type": "function", "function": {"name": "get_ticket"}},
        "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "type": "function",
                                                                   "function": {"name": "x", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": f"ok {R}"}]},
        ]})
    c = p.conversation
    assert (p.model, p.stream, p.include_usage, p.messages, p.tool_choice) == ("m", True, True, 4, "get_ticket")
    assert c.batches == [["call_a"]] and c.results[0].text == f"ok {R}" and c.tool_choice_named
    assert c.tools_offered == ["get_ticket"]


def test_responses_parse_groups_assistant_items_and_keeps_orphan_outputs():
    p = openai_responses.parse({"input": [
        {"role": "user", "content": "u"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "let me"}]},
        {"type": "function_call", "call_id": "call_a", "name": "x", "arguments": "{}"},
        {"type": "function_call", "call_id": "call_b", "name": "y", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "r1"},
        {"type": "function_call_output", "call_id": "call_b", "output": "r2"},
        {"type": "function_call", "call_id": "call_c", "name": "x", "arguments": "{}"},
    ], "tool_choice": "required", "tools": [{"type": "function", "name": "x"}, {"type": "web_search"}]})
    assert p.conversation.batches == [["call_a", "call_b"], ["call_c"]]
    assert p.tool_choice == "required" and p.conversation.tools_offered == ["x"] and p.messages == 8
    only_outputs = openai_responses.parse({"previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "call_a", "output": "r1"}]})
    assert only_outputs.conversation.batches == [["call_a"]]
    assert openai_responses.parse({"input": "hi"}).messages == 1


def test_anthropic_parse_merges_consecutive_assistant_messages():
    p = anthropic_messages.parse({"model": "m", "tool_choice": {"type": "any"}, "tools": [{"name": "mcp__s__x"}],
                                  "messages": [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": [{"type": "text", "text": "t"},
                                          {"type": "tool_use", "id": "toolu_a", "name": "x", "input": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_b", "name": "x", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": f"a {R}"}]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "b", "is_error": True},
            {"type": "text", "text": "<system-reminder>r</system-reminder>"}]},
        {"role": "assistant", "content": "plain text"},
    ]})
    c = p.conversation
    assert c.batches == [["toolu_a", "toolu_b"]] and [r.text for r in c.results] == [f"a {R}", "b"]
    assert p.tool_choice == "required" and not c.tool_choice_named and p.messages == 5
    named = anthropic_messages.parse({"messages": [], "tool_choice": {"type": "tool", "name": "mcp__s__x"}})
    assert named.tool_choice == "mcp__s__x" and named.conversation.tool_choice_named
