"""The server object itself: registration, the standalone default run, extra routes, malformed requests,
binding."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from loopbench.harness.errors import BadInput, UnknownRun
from loopbench.harness.model_server import ModelServer, running, serve_forever
from loopbench.harness.model_server.app import bind

TIER = "unit"

TEXT = [{"id": "hello", "text": "hello"}]


def test_standalone_default_scenario_answers_any_key_and_extra_routes(make_scenario):
    async def ping(request):
        return PlainTextResponse("pong")

    server = ModelServer([Route("/ledger/ping", ping)], default_scenario=make_scenario(TEXT))
    with running(server) as url:
        r = httpx.post(url + "/v1/messages", headers={"x-api-key": "anything"},
                       json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})
        assert r.status_code == 200 and r.json()["content"][0]["text"] == "hello"
        assert httpx.get(url + "/ledger/ping").text == "pong"
    assert [e.served_turn for e in server.requests("default")] == ["hello"]


def test_registration_from_another_thread_while_serving(make_scenario):
    server = ModelServer()
    with running(server) as url:
        t = threading.Thread(target=server.register_run, args=("r", "k", make_scenario(TEXT)))
        t.start()
        t.join()
        ok = httpx.post(url + "/v1/chat/completions", headers={"authorization": "Bearer k"},
                        json={"messages": [{"role": "user", "content": "x"}]})
        assert ok.status_code == 200
        with pytest.raises(ValueError, match="already"):
            server.register_run("r2", "k", make_scenario(TEXT))
        server.unregister_run("r")
        gone = httpx.post(url + "/v1/chat/completions", headers={"authorization": "Bearer k"},
                          json={"messages": []})
        assert gone.status_code == 401 and gone.json()["error"]["code"] == "invalid_api_key"
    with pytest.raises(UnknownRun, match="not registered"):
        server.requests("r")


def test_malformed_body_is_a_logged_violation(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(TEXT))
    r = httpx.post(url + "/v1/responses", headers={"authorization": f"Bearer {key}"}, content=b"{not json")
    assert r.status_code == 400 and r.headers["x-should-retry"] == "false"
    assert r.json()["error"]["type"] == "invalid_request_error"
    (entry,) = server.requests(run_id)
    assert entry.status == 400 and entry.prompt_bytes == 9 and entry.protocol == "openai_responses"
    assert server.violations(run_id)[0].seq == 1


def _post_chat(url: str, key: str, messages: list[dict] | None = None) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", headers={"authorization": f"Bearer {key}"},
                      json={"messages": messages or [{"role": "user", "content": "x"}]})


def test_a_scripted_error_sends_no_retry_hint_a_real_provider_does_not_send(model_server, make_scenario, register):
    _, url = model_server
    _, key = register(make_scenario([{"id": "t", "text": "x", "fail_first": [{"status": 503}]}]))
    r = _post_chat(url, key)
    assert r.status_code == 503
    assert not {"retry-after-ms", "retry-after", "x-should-retry"} & set(r.headers)
    assert r.json()["error"]["type"] == "server_error"


def test_anthropic_429_carries_the_documented_retry_after(model_server, make_scenario, register):
    _, url = model_server
    _, key = register(make_scenario([{"id": "t", "text": "x", "fail_first": [{"status": 429}]}]))
    r = httpx.post(url + "/v1/messages", headers={"x-api-key": key},
                   json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]})
    assert (r.status_code, r.headers.get("retry-after"), r.headers.get("retry-after-ms")) == (429, "1", None)


def test_a_scripted_error_sends_exactly_the_headers_it_declares(model_server, make_scenario, register):
    _, url = model_server
    failure = {"status": 500, "times": "forever", "headers": {"x-should-retry": "false"}, "message": "boom"}
    _, key = register(make_scenario([{"id": "t", "text": "x", "fail_first": [failure]}]))
    r = _post_chat(url, key)
    assert (r.status_code, r.headers["x-should-retry"], r.json()["error"]["message"]) == (500, "false", "boom")
    assert "retry-after-ms" not in r.headers


def test_a_second_resume_of_the_same_state_is_not_a_client_retry(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(TEXT))
    _post_chat(url, key)
    _post_chat(url, key)  # the same state again in the same segment: a client retry
    server.begin_segment(run_id)
    _post_chat(url, key)  # a resume asks for it again: not a retry
    assert [r.retry for r in server.requests(run_id)] == [False, True, False]


def test_a_capped_request_still_gets_its_retry_bookkeeping(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(TEXT, safety_cap=1))
    _post_chat(url, key)
    r = _post_chat(url, key)
    assert r.status_code == 400 and server.capped(run_id)
    assert [(e.served_turn, e.retry) for e in server.requests(run_id)] == [("hello", False), ("hello", True)]


def test_bind_and_serve_forever_refuse_a_port_in_use():
    sock = bind(0)
    sock.listen()
    port = sock.getsockname()[1]
    try:
        # TCP explicitly: asyncio then turns Nagle off on accepted connections (else ~40 ms per response)
        assert sock.proto == socket.IPPROTO_TCP
        with pytest.raises(BadInput, match=f"port {port} on 127.0.0.1 is already in use"):
            serve_forever(port, None)
    finally:
        sock.close()


def test_unsupported_endpoint_is_a_violation(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario(TEXT))
    r = httpx.post(url + "/v1/messages/batches?beta=true", headers={"x-api-key": key}, json={"messages": []})
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"
    assert server.violations(run_id)[0].reason == "unsupported endpoint: POST /v1/messages/batches"
    assert server.requests(run_id) == []  # not a model request


def test_client_that_gives_up_during_a_scripted_delay_is_logged(make_scenario):
    done = threading.Event()
    server = ModelServer(on_request=lambda run_id, entry: done.set())
    server.register_run("r", "k", make_scenario([{"id": "slow", "text": "late", "delay_s": 0.3}]))
    with running(server) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url + "/v1/chat/completions", headers={"authorization": "Bearer k"}, timeout=0.1,
                       json={"messages": [{"role": "user", "content": "x"}]})
        assert done.wait(5)
    (entry,) = server.requests("r")
    assert (entry.status, entry.error, entry.served_turn) == (499, "client disconnected before the response", "slow")
    assert entry.input_tokens == 0 and server.violations("r") == []


def test_client_that_leaves_mid_stream_is_logged(make_scenario):
    done = threading.Event()
    server = ModelServer(on_request=lambda run_id, entry: done.set())
    server.register_run("r", "k", make_scenario([{"id": "slow", "text": "a long answer " * 10, "stream_delay_s": 0.3}]))
    with running(server) as url:
        with httpx.stream("POST", url + "/v1/chat/completions", headers={"authorization": "Bearer k"},
                          json={"messages": [{"role": "user", "content": "x"}], "stream": True}) as r:
            assert b"data: " in next(r.iter_raw())
        assert done.wait(5)
    (entry,) = server.requests("r")
    assert (entry.status, entry.error) == (200, "client disconnected mid-stream")


def test_count_tokens_is_answered_and_recorded_but_not_a_model_request(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "a", "text": "x"}]))
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}]}
    r = httpx.post(f"{url}/v1/messages/count_tokens", json=body, headers={"x-api-key": key})
    assert r.status_code == 200 and r.json()["input_tokens"] == -(-len(r.request.content) // 4)
    assert server.requests(run_id) == [] and server.violations(run_id) == []
    (aux,) = server.auxiliary(run_id)
    assert aux["path"] == "/v1/messages/count_tokens" and aux["input_tokens"] == r.json()["input_tokens"]
    assert httpx.post(f"{url}/v1/messages/count_tokens", json=body, headers={"x-api-key": "nope"}).status_code == 401


async def test_count_tokens_checks_the_key_before_it_reads_the_body():
    """An unknown caller's body is never read (a huge body cannot grow the runner's memory)."""
    from starlette.requests import Request

    async def receive():  # the body: reading it fails this test
        raise AssertionError("the body was read before the key was checked")

    scope = {"type": "http", "method": "POST", "path": "/v1/messages/count_tokens", "query_string": b"",
             "headers": [(b"x-api-key", b"nope"), (b"content-length", b"200000000")]}
    response = await ModelServer()._count_tokens(Request(scope, receive))
    assert response.status_code == 401


@pytest.mark.process
def test_an_idle_connection_stays_open_past_every_client_pools_expiry(model_server):
    """A request, 6 s idle (past httpx's 5 s pool expiry and uvicorn's default keep-alive), a second request on
    the same connection: the server must not close it first, or a client reusing it at that moment fails."""
    import http.client
    import time
    from urllib.parse import urlparse

    _, base = model_server
    url = urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", "/keep-alive-probe")
        conn.getresponse().read()
        local = conn.sock.getsockname()
        time.sleep(6)
        conn.request("GET", "/keep-alive-probe")  # http.client does not reconnect on its own
        assert conn.getresponse().status == 404 and conn.sock.getsockname() == local
    finally:
        conn.close()
