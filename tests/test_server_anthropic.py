"""The scripted model server against the official `anthropic` client: Messages plain and streaming (also the
`?beta=true` path the Claude CLI uses), tool_use ids, usage, 529 retries, tool_choice."""

from __future__ import annotations

import anthropic
import pytest

R = "[loopbench-receipt:L1]"

SCRIPT = [
    {"id": "read_ticket", "text": "Let me read the ticket.",
     "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}},
               {"id": "policy_1", "tool": "lookup_policy", "args": {"topic": "refund"}}]},
    {"id": "draft", "after": {"call": "policy_1", "result": "receipt"}, "text": "Draft citing POL-7.",
     "usage": {"input_tokens": 2222, "output_tokens": 33}},
]
TOOLS = [{"name": f"mcp__loopbench__{n}", "input_schema": {"type": "object"}} for n in ("get_ticket", "lookup_policy")]


@pytest.fixture
def run(make_scenario, register):
    return register(make_scenario(SCRIPT))


def _client(url: str, key: str, cls=anthropic.Anthropic, **kw):
    return cls(base_url=url, api_key=key, **kw)


def _followup(first_content: list) -> list[dict]:
    """The conversation after the parallel calls, as a Claude-Code-like client sends it (with injections)."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>env</system-reminder>"},
                                     {"type": "text", "text": "help"}]},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first_content]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ticket_1", "content": f"Ticket T-1 {R}"},
            {"type": "tool_result", "tool_use_id": "toolu_policy_1",
             "content": [{"type": "text", "text": f"Policy POL-7 {R}"}]},
            {"type": "text", "text": "<system-reminder>3 tasks pending</system-reminder>"},
        ]},
    ]


def test_messages_plain_parallel_tool_use_then_text(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    first = client.messages.create(model="m", max_tokens=100, tools=TOOLS,
                                   messages=[{"role": "user", "content": "help"}])
    assert first.stop_reason == "tool_use" and first.content[0].text == "Let me read the ticket."
    assert [(b.id, b.name, b.input) for b in first.content[1:]] == [
        ("toolu_ticket_1", "mcp__loopbench__get_ticket", {"ticket_id": "T-1"}),
        ("toolu_policy_1", "mcp__loopbench__lookup_policy", {"topic": "refund"})]
    assert (first.usage.input_tokens, first.usage.output_tokens) == (1000, 100)
    final = client.messages.create(model="m", max_tokens=100, tools=TOOLS,
                                   messages=_followup(first.content))
    assert final.stop_reason == "end_turn" and final.content[0].text == "Draft citing POL-7."
    assert (final.usage.input_tokens, final.usage.output_tokens) == (2222, 33)
    log = server.requests(run_id)
    assert [(e.protocol, e.served_turn, e.calls_served) for e in log] == [
        ("anthropic_messages", "read_ticket", ["ticket_1", "policy_1"]), ("anthropic_messages", "draft", [])]
    assert [(r.call_id, r.status) for r in log[1].tool_results] == [("ticket_1", "receipt"), ("policy_1", "receipt")]
    assert log[1].messages == 3 and log[0].tools_offered == [t["name"] for t in TOOLS]


def test_messages_streaming_and_beta_path(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    with client.messages.stream(model="m", max_tokens=100, tools=TOOLS,
                                messages=[{"role": "user", "content": "help"}]) as s:
        kinds = [e.type for e in s]
        first = s.get_final_message()
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert {"content_block_start", "content_block_delta", "content_block_stop", "text", "input_json"} <= set(kinds)
    assert [b.type for b in first.content] == ["text", "tool_use", "tool_use"]
    assert first.content[2].input == {"topic": "refund"} and first.stop_reason == "tool_use"
    assert (first.usage.input_tokens, first.usage.output_tokens) == (1000, 100)
    # the Claude CLI's path: /v1/messages?beta=true, streaming (the python client's beta namespace does not
    # add the query, so it is asked for explicitly)
    with client.beta.messages.stream(model="m", max_tokens=100, tools=TOOLS, extra_query={"beta": "true"},
                                     messages=_followup(first.content)) as s:
        final = s.get_final_message()
    assert final.content[0].text == "Draft citing POL-7." and final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (2222, 33)
    log = server.requests(run_id)
    assert [(e.path, e.stream, e.served_turn) for e in log] == [("/v1/messages", True, "read_ticket"),
                                                                ("/v1/messages?beta=true", True, "draft")]


async def test_overloaded_529_is_retried_and_counted(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "ok", "fail_first": [{"status": 529, "times": 2}]}]))
    async with _client(url, key, anthropic.AsyncAnthropic) as client:
        msg = await client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert msg.content[0].text == "ok"
    log = server.requests(run_id)
    assert [(e.status, e.retry) for e in log] == [(529, False), (529, True), (200, True)]
    # Anthropic documents no retry header for a 529: none is sent, so the client takes its own backoff (0.5 s
    # doubling, up to 25 % jitter off), never a hint the real provider would not send
    assert all(b.t_s - a.t_s >= 0.3 for a, b in zip(log, log[1:], strict=False)), log


async def test_a_declared_retry_header_is_sent_and_honoured(model_server, make_scenario, register):
    server, url = model_server
    widest = []
    # load only ever lengthens a gap (one measured 0.3 s in a loaded full test run, against 14-45 ms alone), so
    # the narrowest of three exchanges is the client's own timing; one that ignored the header would wait its
    # own backoff (>= 0.375 s) every time
    for _ in range(3):
        run_id, key = register(make_scenario([{"id": "answer", "text": "ok", "fail_first": [
            {"status": 529, "times": 2, "headers": {"retry-after-ms": "10"}}]}]))
        async with _client(url, key, anthropic.AsyncAnthropic) as client:
            msg = await client.messages.create(model="m", max_tokens=10,
                                               messages=[{"role": "user", "content": "x"}])
        assert msg.content[0].text == "ok"
        log = server.requests(run_id)
        assert [e.status for e in log] == [529, 529, 200]
        gaps = [b.t_s - a.t_s for a, b in zip(log, log[1:], strict=False)]
        assert min(gaps) >= 0.009, log  # the hint's 10 ms were waited
        widest.append(max(gaps))
    assert min(widest) < 0.3, widest


def test_overloaded_forever_surfaces_the_protocol_error(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "ok",
                                           "fail_first": [{"status": 529, "times": "forever"}]}]))
    with pytest.raises(anthropic.OverloadedError) as err:
        _client(url, key, max_retries=1).messages.create(model="m", max_tokens=10,
                                                         messages=[{"role": "user", "content": "x"}])
    assert err.value.body["error"]["type"] == "overloaded_error"
    assert len(server.requests(run_id)) == 2


def test_tool_choice_any_and_named(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    client.messages.create(model="m", max_tokens=10, tools=TOOLS, tool_choice={"type": "any"},
                           messages=[{"role": "user", "content": "x"}])
    with pytest.raises(anthropic.BadRequestError, match="does not call it"):
        client.messages.create(model="m", max_tokens=10, tools=TOOLS + [{"name": "other", "input_schema": {}}],
                               tool_choice={"type": "tool", "name": "other"},
                               messages=[{"role": "user", "content": "x"}])
    log = server.requests(run_id)
    assert [(e.tool_choice, e.status) for e in log] == [("required", 200), ("other", 400)]
    assert len(server.violations(run_id)) == 1


def test_unknown_key_is_401_authentication_error(model_server):
    _, url = model_server
    with pytest.raises(anthropic.AuthenticationError) as err:
        _client(url, "nobody").messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert err.value.body["error"]["type"] == "authentication_error"


def test_bearer_key_routes_too(model_server, run):
    """The Claude CLI may authenticate with `Authorization: Bearer` (ANTHROPIC_AUTH_TOKEN)."""
    server, url = model_server
    run_id, key = run
    anthropic.Anthropic(base_url=url, auth_token=key).messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}], tools=TOOLS)
    assert len(server.requests(run_id)) == 1
