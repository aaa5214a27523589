"""The scripted model server against LangChain's chat model classes. langchain-anthropic's ChatAnthropic (the
class LangChain's registry picks for a Claude model, the LangGraph adapter's default) with its own defaults:
Anthropic Messages at /v1/messages, a plain answer, tool calls and parallel tool calls carried back as
ToolMessages, a response with no content, the neutral tool_choice values as bind_tools takes them, and error
statuses with and without the client's retries. langchain-openai's ChatOpenAI (the `openai-compatible`
variant): chat completions (plain and streamed), a bind_tools tool call carried back as a ToolMessage, and the
Responses API streamed (LangChain returned an empty answer silently when `response.output_text.delta` events
were missing)."""

from __future__ import annotations

import anthropic
import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.exceptions import ModelError
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


# ---------------------------------------------------------------- ChatAnthropic (the adapter's default)
PARALLEL = [
    {"id": "read_both", "text": "Reading both.",
     "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}},
               {"id": "policy_1", "tool": "lookup_policy", "args": {"topic": "refund"}}]},
    {"id": "draft", "after": {"call": "policy_1", "result": "receipt"}, "text": "Refund accepted under POL-7."},
]


def lookup_policy(topic: str) -> str:
    """Look up the support policy for a topic."""
    return topic


def _claude(url: str, key: str, **kw) -> ChatAnthropic:
    # as the adapter builds it: the server's root (the Anthropic client adds /v1/messages), the class's defaults
    return ChatAnthropic(model="claude-sonnet-4-5", base_url=url, api_key=key, **kw)


def test_chat_anthropic_defaults_are_the_ones_the_adapter_records():
    llm = _claude("http://127.0.0.1:9", "k")
    assert (llm.max_retries, llm.default_request_timeout, llm.streaming) == (2, None, False)


def test_chat_anthropic_plain_answer(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "Refund accepted under POL-7.",
                                           "usage": {"input_tokens": 321, "output_tokens": 12}}]))
    ai = _claude(url, key).invoke([HumanMessage("help")])
    assert ai.content == "Refund accepted under POL-7." and not ai.tool_calls
    assert (ai.usage_metadata["input_tokens"], ai.usage_metadata["output_tokens"]) == (321, 12)
    assert ai.response_metadata["stop_reason"] == "end_turn"
    assert ai.response_metadata["model_provider"] == "anthropic"
    (entry,) = server.requests(run_id)
    assert (entry.protocol, entry.path, entry.model, entry.stream, entry.status) == (
        "anthropic_messages", "/v1/messages", "claude-sonnet-4-5", False, 200)


def test_chat_anthropic_bind_tools_round_trip(model_server, run):
    server, url = model_server
    run_id, key = run
    llm = _claude(url, key).bind_tools([get_ticket])
    history = [HumanMessage("help")]
    ai = llm.invoke(history)
    assert ai.tool_calls == [{"name": "get_ticket", "args": {"ticket_id": "T-1"}, "id": "toolu_ticket_1",
                              "type": "tool_call"}]
    assert ai.usage_metadata["input_tokens"] == 1000 and ai.response_metadata["stop_reason"] == "tool_use"
    history += [ai, ToolMessage(f"Ticket T-1 {R}", tool_call_id=ai.tool_calls[0]["id"])]
    final = llm.invoke(history)
    assert final.content == "Refund accepted under POL-7." and not final.tool_calls
    assert (final.usage_metadata["input_tokens"], final.usage_metadata["output_tokens"]) == (321, 12)
    log = server.requests(run_id)
    assert [(e.served_turn, e.tools_offered, e.calls_served) for e in log] == [
        ("read_ticket", ["get_ticket"], ["ticket_1"]), ("draft", ["get_ticket"], [])]
    assert [(r.call_id, r.status) for r in log[1].tool_results] == [("ticket_1", "receipt")]


def test_chat_anthropic_parallel_tool_calls_go_back_in_one_user_message(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(PARALLEL))
    llm = _claude(url, key).bind_tools([get_ticket, lookup_policy])
    ai = llm.invoke([HumanMessage("help")])
    assert [(c["id"], c["name"]) for c in ai.tool_calls] == [("toolu_ticket_1", "get_ticket"),
                                                             ("toolu_policy_1", "lookup_policy")]
    assert ai.text == "Reading both."
    results = [ToolMessage(f"{c['name']} {R}", tool_call_id=c["id"]) for c in ai.tool_calls]
    final = llm.invoke([HumanMessage("help"), ai, *results])
    assert final.content == "Refund accepted under POL-7."
    log = server.requests(run_id)
    assert log[0].calls_served == ["ticket_1", "policy_1"]
    # user, assistant, one user message holding both tool_result blocks
    assert log[1].messages == 3
    assert [(r.call_id, r.status) for r in log[1].tool_results] == [("ticket_1", "receipt"), ("policy_1", "receipt")]


def test_chat_anthropic_response_with_no_content_is_still_a_response(model_server, make_scenario, register):
    """A 200 with no content blocks: one AIMessage with empty content, its usage and stop reason — the adapter
    counts it as a model response (probes/langgraph/anthropic_counts.py empty)."""
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "nothing", "text": ""}]))
    ai = _claude(url, key).invoke([HumanMessage("help")])
    assert ai.content == [] and not ai.tool_calls and ai.text == ""
    assert ai.usage_metadata["input_tokens"] == 1000 and ai.response_metadata["stop_reason"] == "end_turn"
    assert len(server.requests(run_id)) == 1


def test_chat_anthropic_takes_the_neutral_tool_choices_as_the_adapter_maps_them(model_server, make_scenario,
                                                                               register):
    """required -> 'any'; none -> {'type': 'none'} (a bare 'none' would be read as a tool's name); a tool's
    name as it is: the server logs what each request sent in the suite's neutral terms."""
    from loopbench.adapters.langgraph_agent import LangGraphAdapter

    server, url = model_server
    run_id, key = register(make_scenario([
        {"id": "open", "tool_choice": "required", "calls": [{"id": "ticket_1", "tool": "get_ticket"}]},
        {"id": "named", "after": {"call": "ticket_1"}, "tool_choice": "lookup_policy",
         "calls": [{"id": "policy_1", "tool": "lookup_policy"}]},
        {"id": "last", "after": {"call": "policy_1"}, "tool_choice": "none", "text": "POL-7."}]))
    llm = _claude(url, key)
    history: list = [HumanMessage("help")]
    for choice in ("required", "lookup_policy", "none"):
        native = LangGraphAdapter._native_tool_choice(choice)
        ai = llm.bind_tools([get_ticket, lookup_policy], tool_choice=native).invoke(history)
        history += [ai, *[ToolMessage(f"ok {R}", tool_call_id=c["id"]) for c in ai.tool_calls]]
    assert history[-1].content == "POL-7."
    assert [(e.tool_choice, e.status) for e in server.requests(run_id)] == [
        ("required", 200), ("lookup_policy", 200), ("none", 200)]
    assert server.violations(run_id) == []


def test_chat_anthropic_error_status_without_retries_raises_a_model_error(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "fine", "fail_first": [{"status": 500}]}]))
    with pytest.raises(ModelError) as err:
        _claude(url, key, max_retries=0).invoke([HumanMessage("help")])
    # langchain-anthropic re-raises the SDK's error as its LangChain-classified subclass of both
    assert isinstance(err.value, anthropic.InternalServerError) and err.value.status_code == 500
    assert [(e.status, e.retry) for e in server.requests(run_id)] == [(500, False)]


def test_chat_anthropic_default_retries_are_hidden_in_one_response(model_server, make_scenario, register):
    """429 (with Anthropic's retry-after: 1) then 500 (no header), then the answer: the client's default two
    retries make three requests for one AIMessage, which carries no trace of them."""
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "fine",
                                           "fail_first": [{"status": 429}, {"status": 500}]}]))
    ai = _claude(url, key).invoke([HumanMessage("help")])
    assert ai.content == "fine" and ai.usage_metadata["input_tokens"] == 1000
    log = server.requests(run_id)
    assert [(e.status, e.retry) for e in log] == [(429, False), (500, True), (200, True)]
    assert log[1].t_s - log[0].t_s >= 0.9  # the 429's retry-after: 1 was waited


def test_chat_anthropic_gives_up_after_its_retries_and_on_x_should_retry_false(model_server, make_scenario,
                                                                              register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "x",
                                           "fail_first": [{"status": 500, "times": "forever"}]}]))
    with pytest.raises(ModelError):
        _claude(url, key).invoke([HumanMessage("help")])
    assert [(e.status, e.retry) for e in server.requests(run_id)] == [(500, False), (500, True), (500, True)]
    run_id, key = register(make_scenario([{"id": "answer", "text": "x", "fail_first": [
        {"status": 500, "times": "forever", "headers": {"x-should-retry": "false"}}]}]))
    with pytest.raises(ModelError):
        _claude(url, key).invoke([HumanMessage("help")])
    assert len(server.requests(run_id)) == 1
