"""The scripted model server against langchain-openai's ChatOpenAI: chat completions (plain and streamed),
a bind_tools tool call carried back as a ToolMessage, and the Responses API streamed (LangChain returned an
empty answer silently when `response.output_text.delta` events were missing)."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI

R = "[loopbench-receipt:L1]"
SCRIPT = [
    {"id": "read_ticket", "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}}]},
    {"id": "draft", "after": {"call": "ticket_1", "result": "receipt"}, "text": "Refund accepted under POL-7.",
     "usage": {"input_tokens": 321, "output_tokens": 12}},
]


def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return ticket_id


@pytest.fixture
def run(make_scenario, register):
    return register(make_scenario(SCRIPT))


def _llm(url: str, key: str, **kw) -> ChatOpenAI:
    return ChatOpenAI(base_url=url + "/v1", api_key=key, model="claude-sonnet-4-5", **kw)


def test_chat_openai_bind_tools_round_trip(model_server, run):
    server, url = model_server
    run_id, key = run
    llm = _llm(url, key).bind_tools([get_ticket])
    history = [HumanMessage("help")]
    ai = llm.invoke(history)
    assert ai.tool_calls == [{"name": "get_ticket", "args": {"ticket_id": "T-1"}, "id": "call_ticket_1",
                              "type": "tool_call"}]
    assert ai.usage_metadata["input_tokens"] == 1000 and ai.usage_metadata["output_tokens"] == 100
    history += [ai, ToolMessage(f"Ticket T-1 {R}", tool_call_id=ai.tool_calls[0]["id"])]
    final = llm.invoke(history)
    assert final.content == "Refund accepted under POL-7." and not final.tool_calls
    assert (final.usage_metadata["input_tokens"], final.usage_metadata["output_tokens"]) == (321, 12)
    log = server.requests(run_id)
    assert [(e.served_turn, e.tools_offered, e.stream) for e in log] == [
        ("read_ticket", ["get_ticket"], False), ("draft", ["get_ticket"], False)]
    assert log[1].tool_results[0].status == "receipt"


def test_chat_openai_streaming_with_usage(model_server, run):
    server, url = model_server
    run_id, key = run
    history = [HumanMessage("help"), {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_ticket_1", "name": "get_ticket", "args": {"ticket_id": "T-1"}}]},
        ToolMessage(f"ok {R}", tool_call_id="call_ticket_1")]
    chunks = list(_llm(url, key, stream_usage=True).stream(history))
    full = chunks[0]
    for c in chunks[1:]:
        full += c
    assert full.content == "Refund accepted under POL-7." and len(chunks) > 2
    assert (full.usage_metadata["input_tokens"], full.usage_metadata["output_tokens"]) == (321, 12)
    assert server.requests(run_id)[0].stream


def test_chat_openai_responses_api_streaming_text(model_server, run):
    server, url = model_server
    run_id, key = run
    llm = _llm(url, key, use_responses_api=True, streaming=True).bind_tools([get_ticket])
    ai = llm.invoke([HumanMessage("help")])
    assert ai.tool_calls[0]["id"] == "call_ticket_1" and ai.tool_calls[0]["args"] == {"ticket_id": "T-1"}
    final = llm.invoke([HumanMessage("help"), ai, ToolMessage(f"ok {R}", tool_call_id="call_ticket_1")])
    assert final.text == "Refund accepted under POL-7."
    assert final.usage_metadata["input_tokens"] == 321
    assert [(e.protocol, e.stream, e.served_turn) for e in server.requests(run_id)] == [
        ("openai_responses", True, "read_ticket"), ("openai_responses", True, "draft")]
