"""The scripted model server against the official `openai` client: Chat Completions and Responses, sync and
async, plain and streaming; retries, per-run routing, resume, the cap, violations."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest

from loopbench.harness.errors import BadInput
from loopbench.harness.model_server.app import bind

R = "[loopbench-receipt:L1]"

SUPPORT = [
    {"id": "read_ticket", "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}}]},
    {"id": "find_policy", "after": {"call": "ticket_1", "result": "receipt"},
     "calls": [{"id": "policy_1", "tool": "lookup_policy", "args": {"topic": "refund"}}],
     "usage": {"input_tokens": 1500, "output_tokens": 40}},
    {"id": "draft", "after": {"call": "policy_1", "result": "receipt"},
     "text": "Draft: Hello Ana, under policy POL-7 your refund for order 1042 is accepted."},
]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("get_ticket", "lookup_policy")
]
RESPONSE_TOOLS = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
                  for t in TOOLS]


@pytest.fixture
def support(make_scenario, register):
    sc = make_scenario(SUPPORT, sid="support")
    return register(sc)


def _sync(base_url: str, key: str, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url + "/v1", api_key=key, **kw)


def _async(base_url: str, key: str, **kw) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=key, **kw)


def _run_chat(client: openai.OpenAI, messages: list[dict]) -> list:
    """Drive the support script to the end, answering every call with a receipt; returns the completions."""
    out = []
    while True:
        c = client.chat.completions.create(model="claude-sonnet-4-5", messages=messages, tools=TOOLS)
        out.append(c)
        msg = c.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return out
        for tc in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": f"{tc.function.name} ok {R}"})


def test_chat_sync_plain_tool_calls_text_usage_and_log(model_server, support):
    server, url = model_server
    run_id, key = support
    messages = [{"role": "user", "content": "help"}]
    done = _run_chat(_sync(url, key), messages)
    first, second, last = done
    tc = first.choices[0].message.tool_calls[0]
    assert (tc.id, tc.function.name, json.loads(tc.function.arguments)) == ("call_ticket_1", "get_ticket",
                                                                             {"ticket_id": "T-1"})
    assert first.choices[0].finish_reason == "tool_calls" and last.choices[0].finish_reason == "stop"
    assert last.choices[0].message.content.startswith("Draft: Hello Ana, under policy POL-7")
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (1000, 100)  # model.usage
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (1500, 40)  # turn usage
    log = server.requests(run_id)
    assert [e.served_turn for e in log] == ["read_ticket", "find_policy", "draft"]
    assert [e.seq for e in log] == [1, 2, 3] and [e.status for e in log] == [200] * 3
    assert [e.messages for e in log] == [1, 3, 5]
    assert [e.calls_served for e in log] == [["ticket_1"], ["policy_1"], []]
    assert [(r.call_id, r.status) for r in log[2].tool_results] == [("ticket_1", "receipt"), ("policy_1", "receipt")]
    assert log[0].tools_offered == ["get_ticket", "lookup_policy"] and log[0].protocol == "openai_chat"
    assert [(e.input_tokens, e.output_tokens) for e in log] == [(1000, 100), (1500, 40), (1000, 100)]
    assert log[0].prompt_bytes < log[1].prompt_bytes < log[2].prompt_bytes
    assert not any(e.retry or e.stream for e in log) and server.violations(run_id) == []
    assert log[0].t_s <= log[1].t_s <= log[2].t_s and all(e.duration_ms > 0 for e in log)


def test_prompt_bytes_is_the_raw_body_length(model_server, support):
    server, url = model_server
    run_id, key = support
    import httpx

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "héllo"}], "tools": TOOLS}).encode()
    r = httpx.post(url + "/v1/chat/completions", content=body, headers={"authorization": f"Bearer {key}"})
    assert r.status_code == 200
    assert server.requests(run_id)[0].prompt_bytes == len(body)


async def test_chat_async_streaming_with_and_without_usage(model_server, support):
    server, url = model_server
    run_id, key = support
    async with _async(url, key) as client:
        chunks = [c async for c in await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "help"}], tools=TOOLS, stream=True,
            stream_options={"include_usage": True})]
        # the stream helper accumulates the same chunks into a final completion
        async with client.chat.completions.stream(model="m", messages=[{"role": "user", "content": "x"}],
                                                  tools=TOOLS) as s:
            final = await s.get_final_completion()
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas[0].id == "call_ticket_1" and deltas[0].function.name == "get_ticket"
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {"ticket_id": "T-1"}
    assert chunks[-1].choices == [] and (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (
        1000, 100)
    assert final.choices[0].message.tool_calls[0].id == "call_ticket_1" and final.usage is None  # not asked for
    log = server.requests(run_id)
    assert [(e.stream, e.served_turn, e.retry) for e in log] == [(True, "read_ticket", False),
                                                                (True, "read_ticket", True)]


def test_chat_streaming_text_turn(model_server, support):
    _, url = model_server
    _, key = support
    messages = [
        {"role": "user", "content": "help"},
        {"role": "assistant", "tool_calls": [{"id": "call_policy_1", "type": "function",
                                              "function": {"name": "lookup_policy", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_policy_1", "content": f"POL-7 {R}"},
    ]
    with _sync(url, key).chat.completions.stream(model="m", messages=messages,
                                                 stream_options={"include_usage": True}) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.content == SUPPORT[2]["text"] and final.choices[0].finish_reason == "stop"
    assert final.usage.total_tokens == 1100


def test_responses_sync_plain_and_stream(model_server, support):
    server, url = model_server
    run_id, key = support
    client = _sync(url, key)
    r1 = client.responses.create(model="m", input="help", tools=RESPONSE_TOOLS)
    call = r1.output[0]
    assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
        "function_call", "call_ticket_1", "get_ticket", {"ticket_id": "T-1"})
    items = [{"role": "user", "content": "help"}, call.model_dump(exclude_none=True),
             {"type": "function_call_output", "call_id": call.call_id, "output": f"ticket {R}"}]
    r2 = client.responses.create(model="m", input=items, tools=RESPONSE_TOOLS)
    assert r2.output[0].call_id == "call_policy_1" and r2.usage.input_tokens == 1500
    items += [r2.output[0].model_dump(exclude_none=True),
              {"type": "function_call_output", "call_id": "call_policy_1", "output": [{"type": "input_text",
                                                                                       "text": f"POL-7 {R}"}]}]
    with client.responses.stream(model="m", input=items, tools=RESPONSE_TOOLS) as s:
        kinds = [e.type for e in s]
        final = s.get_final_response()
    assert final.output_text == SUPPORT[2]["text"]
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens) == (1000, 100, 1100)
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert "response.output_text.delta" in kinds and kinds[-1] == "response.completed"
    assert [e.served_turn for e in server.requests(run_id)] == ["read_ticket", "find_policy", "draft"]


async def test_responses_async_stream_function_call_events(model_server, support):
    _, url = model_server
    _, key = support
    async with _async(url, key) as client, client.responses.stream(model="m", input="help",
                                                                     tools=RESPONSE_TOOLS) as s:
        events = [e async for e in s]
        final = await s.get_final_response()
    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.function_call_arguments.delta", "response.function_call_arguments.done",
                     "response.output_item.done", "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output[0].call_id == "call_ticket_1" and final.output[0].arguments == '{"ticket_id":"T-1"}'


def test_responses_previous_response_id_outputs_only(model_server, support):
    """A client that resends only the tool outputs (previous_response_id) still reaches the next turn."""
    server, url = model_server
    run_id, key = support
    r = _sync(url, key).responses.create(
        model="m", previous_response_id="resp_x", tools=RESPONSE_TOOLS,
        input=[{"type": "function_call_output", "call_id": "call_ticket_1", "output": f"ok {R}"}])
    assert r.output[0].call_id == "call_policy_1"


def test_retries_of_scripted_429_then_500_are_counted(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([
        {"id": "answer", "text": "fine", "fail_first": [{"status": 429}, {"status": 500}]}]))
    c = _sync(url, key).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert c.choices[0].message.content == "fine"
    log = server.requests(run_id)
    assert [(e.status, e.retry, e.served_turn) for e in log] == [(429, False, "answer"), (500, True, "answer"),
                                                                 (200, True, "answer")]
    assert log[0].error == "scripted HTTP 429 for turn answer" and (log[0].input_tokens, log[2].input_tokens) == (
        0, 1000)
    # OpenAI documents no retry header for a 429 or a 5xx: none is sent, so the client takes its own backoff
    # (0.5 s doubling, up to 25 % jitter off) — the server adds no hint for speed
    gaps = [b.t_s - a.t_s for a, b in zip(log, log[1:], strict=False)]
    assert all(g >= 0.3 for g in gaps), gaps
    assert server.violations(run_id) == []


def test_responses_errors_carry_openais_headers_and_the_client_retries_them(model_server, make_scenario, register):
    """The Responses route (the OpenAI Agents SDK's default) fails as OpenAI does: a 429 with the informational
    x-ratelimit-* headers and no retry hint (provider_errors.py), a 500 with none; the official client retries
    both with its own backoff."""
    server, url = model_server
    run_id, key = register(make_scenario([
        {"id": "answer", "text": "fine", "fail_first": [{"status": 429}, {"status": 500}]}]))
    with pytest.raises(openai.RateLimitError) as err:
        _sync(url, key, max_retries=0).responses.create(model="gpt-4.1", input="x")
    headers = err.value.response.headers
    assert headers["x-ratelimit-remaining-requests"] == "0" and headers["x-ratelimit-reset-requests"] == "1s"
    assert not {"retry-after", "retry-after-ms", "x-should-retry"} & set(headers)
    assert (err.value.body["type"], err.value.code) == ("rate_limit_error", "rate_limit_exceeded")
    r = _sync(url, key).responses.create(model="gpt-4.1", input="x")  # the 500, then the answer
    assert r.output_text == "fine" and r.usage.total_tokens == 1100
    log = server.requests(run_id)
    assert [(e.status, e.served_turn, e.protocol) for e in log] == [
        (429, "answer", "openai_responses"), (500, "answer", "openai_responses"), (200, "answer", "openai_responses")]
    assert [e.model for e in log] == ["gpt-4.1"] * 3 and server.violations(run_id) == []


async def test_fail_forever_exhausts_the_async_client_retries(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "x", "fail_first": [{"status": 500, "times":
                                                                                       "forever"}]}]))
    async with _async(url, key) as client:
        with pytest.raises(openai.InternalServerError) as err:
            await client.responses.create(model="m", input="x")
    assert err.value.status_code == 500 and err.value.body["type"] == "server_error"
    assert [(e.status, e.retry) for e in server.requests(run_id)] == [(500, False), (500, True), (500, True)]


async def test_concurrent_runs_are_kept_apart(model_server, make_scenario, register):
    server, url = model_server
    a_id, a_key = register(make_scenario([{"id": "a_turn", "text": "I am A", "delay_s": 0.1}], sid="scenario_a"))
    b_id, b_key = register(make_scenario([{"id": "b_turn", "calls": [{"id": "b_1", "tool": "get_ticket"}],
                                           "usage": {"input_tokens": 7, "output_tokens": 3}}], sid="scenario_b"))
    msgs = [{"role": "user", "content": "x"}]
    async with _async(url, a_key) as client_a, _async(url, b_key) as client_b:
        a, b = await asyncio.gather(
            client_a.chat.completions.create(model="m", messages=msgs),
            client_b.chat.completions.create(model="m", messages=msgs, stream=True, tools=TOOLS,
                                             stream_options={"include_usage": True}),
        )
        b_chunks = [c async for c in b]
    assert a.choices[0].message.content == "I am A"
    assert b_chunks[1].choices[0].delta.tool_calls[0].id == "call_b_1" and b_chunks[-1].usage.total_tokens == 10
    assert [e.served_turn for e in server.requests(a_id)] == ["a_turn"]
    assert [e.served_turn for e in server.requests(b_id)] == ["b_turn"]
    assert server.requests(a_id)[0].duration_ms >= 100


def test_resumed_conversation_in_a_fresh_client_gets_the_next_turn(model_server, make_scenario, register):
    """A new client (new process in real runs) sending the whole conversation continues where it was."""
    server, url = model_server
    run_id, key = register(make_scenario(SUPPORT, sid="support"))
    messages = [{"role": "user", "content": "help"}]
    first = _sync(url, key).chat.completions.create(model="m", messages=messages, tools=TOOLS)
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": "call_ticket_1", "content": f"Ticket T-1 {R}"},
                 {"role": "user", "content": "<system-reminder>the run was resumed</system-reminder>"},
                 {"role": "assistant", "content": None, "tool_calls": [{
                     "id": "call_policy_1", "type": "function",
                     "function": {"name": "lookup_policy", "arguments": '{"topic":"refund"}'}}]},
                 {"role": "tool", "tool_call_id": "call_policy_1", "content": f"POL-7 {R}"},
                 {"role": "user", "content": "Reminder: you have 2 turns left."}]
    resumed = _sync(url, key).chat.completions.create(model="m", messages=messages, tools=TOOLS)
    assert resumed.choices[0].message.content == SUPPORT[2]["text"]
    assert [(e.served_turn, e.retry) for e in server.requests(run_id)] == [("read_ticket", False), ("draft", False)]


def test_safety_cap(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(
        [{"id": "loop", "repeat": "forever", "calls": [{"id": "kb_{n}", "tool": "get_ticket"}]}], safety_cap=2))
    client = _sync(url, key)
    messages: list[dict] = [{"role": "user", "content": "x"}]
    for _ in range(2):
        msg = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages += [msg.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": f"no {R}"}]
    assert not server.capped(run_id)
    with pytest.raises(openai.BadRequestError, match="safety cap"):
        client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    log = server.requests(run_id)
    # the capped request is logged with the state it asked for (retry bookkeeping runs before the cap answers)
    assert [(e.status, e.served_turn) for e in log] == [(200, "loop#1"), (200, "loop#2"), (400, "loop#3")]
    assert server.capped(run_id) and server.violations(run_id) == []  # not retried, not a violation


def test_unanswerable_request_is_a_violation_not_a_default_answer(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(SUPPORT, sid="support"))
    messages = [
        {"role": "user", "content": "help"},
        {"role": "assistant", "tool_calls": [{"id": "call_ticket_1", "type": "function",
                                              "function": {"name": "get_ticket", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_ticket_1", "content": "[loopbench-error:fatal:L9] ticket store down"},
    ]
    with pytest.raises(openai.BadRequestError) as err:
        _sync(url, key).chat.completions.create(model="m", messages=messages)
    assert "script violation" in err.value.message and err.value.body["type"] == "invalid_request_error"
    log = server.requests(run_id)
    assert len(log) == 1 and log[0].status == 400 and log[0].served_turn is None  # not retried
    assert log[0].tool_results[0].status == "error"
    (v,) = server.violations(run_id)
    assert v.seq == 1 and "ticket_1: error" in v.reason


def test_a_call_of_a_tool_the_client_did_not_offer_is_a_violation(model_server, support):
    """A real provider only calls offered tools: no tools, or the wrong ones, and the scripted call is refused."""
    server, url = model_server
    run_id, key = support
    for tools in (None, [{"type": "function", "function": {"name": "lookup_policy", "parameters": {}}}]):
        with pytest.raises(openai.BadRequestError) as err:
            _sync(url, key).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                    **({"tools": tools} if tools else {}))
        assert "calls get_ticket, which the client did not offer" in err.value.message
    assert len(server.violations(run_id)) == 2
    assert "offered: none" in server.violations(run_id)[0].reason


def test_tool_choice_none_with_a_calls_turn_is_a_violation(model_server, support):
    server, url = model_server
    run_id, key = support
    with pytest.raises(openai.BadRequestError):
        _sync(url, key).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                tools=TOOLS, tool_choice="none")
    assert server.requests(run_id)[0].tool_choice == "none" and len(server.violations(run_id)) == 1
    c = _sync(url, key).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_ticket"}})
    assert c.choices[0].message.tool_calls[0].function.name == "get_ticket"
    assert server.requests(run_id)[1].tool_choice == "get_ticket"


def test_unknown_key_is_401(model_server):
    _, url = model_server
    with pytest.raises(openai.AuthenticationError):
        _sync(url, "nobody").chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])


async def test_scripted_delays(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "slow", "text": "a fairly long answer " * 4, "delay_s": 0.15,
                                           "stream_delay_s": 0.2}]))
    started = time.perf_counter()
    async with _async(url, key) as client:
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                      stream=True)
        first = None
        async for _chunk in stream:
            first = first or time.perf_counter()
        end = time.perf_counter()
    assert first - started >= 0.15  # before the headers
    # in the middle of the stream (less a margin: `first` is taken after the client parsed the first chunk)
    assert end - first >= 0.16
    assert server.requests(run_id)[0].duration_ms >= 350


def test_bind_refuses_a_port_in_use(model_server):
    _, url = model_server
    port = int(url.rsplit(":", 1)[1])
    with pytest.raises(BadInput, match=f"port {port} .* already in use"):
        bind(port)
