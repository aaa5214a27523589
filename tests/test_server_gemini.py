"""The scripted model server against the official `google-genai` client: generateContent plain and streamed
(`:streamGenerateContent?alt=sse`), parallel function calls with their ids, function responses matched back,
usage metadata, Google's error bodies and statuses, retries, function-calling modes, the key header."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

R = "[loopbench-receipt:L1]"

SCRIPT = [
    {"id": "read_ticket", "text": "Let me read the ticket.",
     "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}},
               {"id": "policy_1", "tool": "lookup_policy", "args": {"topic": "refund"}}]},
    {"id": "draft", "after": {"call": "policy_1", "result": "receipt"}, "text": "Draft citing POL-7.",
     "usage": {"input_tokens": 2222, "output_tokens": 33}},
]
TOOLS = [types.Tool(function_declarations=[
    types.FunctionDeclaration(name=n, description=n, parameters_json_schema={"type": "object"})
    for n in ("get_ticket", "lookup_policy")])]


@pytest.fixture
def run(make_scenario, register):
    return register(make_scenario(SCRIPT))


def _client(url: str, key: str, **http: object) -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url, **http))


def _config(**kw: object) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(tools=TOOLS, **kw)


def _followup(first: types.GenerateContentResponse) -> list[types.Content]:
    """The conversation after the parallel calls, as a client sends it back: each call's id in its response."""
    calls = first.function_calls or []
    return [
        types.Content(role="user", parts=[types.Part(text="help")]),
        first.candidates[0].content,
        types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(id=c.id, name=c.name,
                                                                response={"result": f"{c.name} {R}"}))
            for c in calls]),
    ]


def test_generate_content_parallel_function_calls_then_text(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    first = client.models.generate_content(model="gemini-test", contents="help", config=_config())
    assert first.candidates[0].finish_reason == types.FinishReason.STOP
    assert first.candidates[0].content.parts[0].text == "Let me read the ticket."
    assert [(c.id, c.name, c.args) for c in first.function_calls] == [
        ("fc_ticket_1", "get_ticket", {"ticket_id": "T-1"}), ("fc_policy_1", "lookup_policy", {"topic": "refund"})]
    u = first.usage_metadata
    assert (u.prompt_token_count, u.candidates_token_count, u.total_token_count) == (1000, 100, 1100)
    final = client.models.generate_content(model="gemini-test", contents=_followup(first), config=_config())
    assert final.text == "Draft citing POL-7." and not final.function_calls
    assert (final.usage_metadata.prompt_token_count, final.usage_metadata.candidates_token_count) == (2222, 33)
    log = server.requests(run_id)
    assert [(e.protocol, e.path, e.model, e.served_turn, e.calls_served) for e in log] == [
        ("gemini_generate", "/v1beta/models/gemini-test:generateContent", "gemini-test", "read_ticket",
         ["ticket_1", "policy_1"]),
        ("gemini_generate", "/v1beta/models/gemini-test:generateContent", "gemini-test", "draft", [])]
    assert [(r.call_id, r.status) for r in log[1].tool_results] == [("ticket_1", "receipt"), ("policy_1", "receipt")]
    assert log[1].messages == 3 and log[0].tools_offered == ["get_ticket", "lookup_policy"]


async def test_stream_generate_content_sends_text_pieces_then_the_calls(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    chunks = [c async for c in await client.aio.models.generate_content_stream(
        model="gemini-test", contents="help", config=_config())]
    assert len(chunks) >= 2
    assert "".join(c.text or "" for c in chunks[:-1]) == "Let me read the ticket."
    assert [c.name for c in chunks[-1].function_calls] == ["get_ticket", "lookup_policy"]
    # finishReason and usage on the last chunk only
    assert [c.usage_metadata is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    first = types.GenerateContentResponse(candidates=[types.Candidate(content=types.Content(
        role="model", parts=[p for c in chunks for p in c.candidates[0].content.parts]))])
    final = [c async for c in await client.aio.models.generate_content_stream(
        model="gemini-test", contents=_followup(first), config=_config())]
    assert "".join(c.text or "" for c in final) == "Draft citing POL-7."
    assert final[-1].usage_metadata.total_token_count == 2222 + 33
    log = server.requests(run_id)
    assert [(e.path, e.stream, e.served_turn, e.error) for e in log] == [
        ("/v1beta/models/gemini-test:streamGenerateContent?alt=sse", True, "read_ticket", None),
        ("/v1beta/models/gemini-test:streamGenerateContent?alt=sse", True, "draft", None)]


def test_a_response_without_its_call_id_is_paired_by_name_in_order(model_server, run):
    """A client that sends a result back without the call's id: the result belongs to the first unanswered call
    of that name in the model answer before it."""
    server, url = model_server
    run_id, key = run
    client = _client(url, key)
    first = client.models.generate_content(model="gemini-test", contents="help", config=_config())
    followup = _followup(first)
    for part in followup[2].parts:
        part.function_response.id = None
    followup[2].parts.reverse()  # by name, not by position
    final = client.models.generate_content(model="gemini-test", contents=followup, config=_config())
    assert final.text == "Draft citing POL-7."
    assert [(r.call_id, r.status) for r in server.requests(run_id)[1].tool_results] == [
        ("policy_1", "receipt"), ("ticket_1", "receipt")]


def test_parse_pairs_results_only_with_the_answer_before_them():
    from loopbench.harness.model_server import gemini_generate

    def call(i, name):
        return {"functionCall": {"id": i, "name": name, "args": {}}}

    def result(name, i=None):
        return {"functionResponse": {"name": name, "response": {"result": "r"}, **({"id": i} if i else {})}}

    p = gemini_generate.parse({"contents": [
        {"role": "user", "parts": [{"text": "x"}]},
        {"role": "model", "parts": [call("fc_a", "t")]}, {"role": "model", "parts": [call("fc_b", "t")]},
        {"role": "user", "parts": [result("t"), result("t")]},
        {"role": "model", "parts": [call("fc_c", "u")]},
        {"role": "user", "parts": [result("t"), result("u")]},
    ], "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["u"]}},
        "tools": [{"functionDeclarations": [{"name": "t"}, {"name": "u"}]}]},
        path="/v1beta/models/g:generateContent")
    conv = p.conversation
    assert conv.batches == [["fc_a", "fc_b"], ["fc_c"]]
    assert [r.call_id for r in conv.results] == ["fc_a", "fc_b", "", "fc_c"]
    assert (p.model, p.stream, p.tool_choice, conv.tool_choice_named, p.messages) == ("g", False, "u", True, 6)
    assert gemini_generate.parse({"contents": []}, path="/v1beta/models/g:streamGenerateContent").stream


def test_rate_limit_is_resource_exhausted_with_retry_info(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "ok",
                                           "fail_first": [{"status": 429, "times": "forever"}]}]))
    client = _client(url, key)  # held: a Client closes its connections when it is collected
    with pytest.raises(errors.ClientError) as err:
        client.models.generate_content(model="gemini-test", contents="x")
    assert (err.value.code, err.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert err.value.details["error"]["details"][0]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    # google-genai does not retry unless asked (HttpOptions.retry_options): one request
    assert [e.status for e in server.requests(run_id)] == [429]


def test_server_errors_are_retried_when_the_client_is_told_to(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "answer", "text": "ok", "fail_first": [{"status": 503, "times": 2}]}]))
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.02)
    client = _client(url, key, retry_options=retry)
    reply = client.models.generate_content(model="gemini-test", contents="x")
    assert reply.text == "ok"
    assert [(e.status, e.retry) for e in server.requests(run_id)] == [(503, False), (503, True), (200, True)]
    run_id, key = register(make_scenario([{"id": "answer", "text": "ok",
                                           "fail_first": [{"status": 500, "times": "forever"}]}]))
    client = _client(url, key)
    with pytest.raises(errors.ServerError) as err:
        client.models.generate_content(model="gemini-test", contents="x")
    assert (err.value.code, err.value.status) == (500, "INTERNAL")


def test_function_calling_modes_are_the_tool_choice(model_server, run):
    server, url = model_server
    run_id, key = run
    client = _client(url, key)

    def mode(**kw: object) -> types.GenerateContentConfig:
        return _config(tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(**kw)))

    client.models.generate_content(model="gemini-test", contents="x", config=mode(mode="ANY"))
    with pytest.raises(errors.ClientError, match="calls tools"):
        client.models.generate_content(model="gemini-test", contents="x", config=mode(mode="NONE"))
    with pytest.raises(errors.ClientError, match="does not call it"):
        client.models.generate_content(model="gemini-test", contents="x",
                                       config=mode(mode="ANY", allowed_function_names=["other"]))
    log = server.requests(run_id)
    assert [(e.tool_choice, e.status) for e in log] == [("required", 200), ("none", 400), ("other", 400)]


def test_unknown_key_is_unauthenticated_and_other_methods_are_violations(model_server, run):
    server, url = model_server
    stranger = _client(url, "nobody")
    with pytest.raises(errors.ClientError) as err:
        stranger.models.generate_content(model="gemini-test", contents="x")
    assert (err.value.code, err.value.status) == (401, "UNAUTHENTICATED")
    run_id, key = run
    client = _client(url, key)
    with pytest.raises(errors.ClientError) as err:
        client.models.count_tokens(model="gemini-test", contents="x")
    assert (err.value.code, err.value.status) == (404, "NOT_FOUND")
    assert "unsupported endpoint" in server.violations(run_id)[0].reason
