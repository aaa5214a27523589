"""The scenario's wire faults (`wire_fault`, `fail_first[].retry_after_s`): validation with an error naming the
field, how the server renders them per protocol (no client here: tests/test_server_wire_faults.py drives the
providers' own clients), and the retry-hint wait counters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
import yaml

from loopbench.harness.errors import BadInput
from loopbench.harness.judge.counters import retry_after_waits
from loopbench.harness.model_server import anthropic_messages, gemini_generate, openai_chat, openai_responses
from loopbench.harness.model_server.provider_errors import hint_s
from loopbench.harness.model_server.script import Served
from loopbench.harness.model_server.wire import Reply
from loopbench.harness.record import RequestLogEntry
from loopbench.harness.scenario import SCENARIO_DIR, load_defaults, load_scenarios, parse_scenario
from loopbench.reports.claims import known_claim_ids

TIER = "unit"

GOOD = SCENARIO_DIR / "support_draft_completes.yaml"


def _problems(tmp_path: Path, turn_extra: dict) -> list[str]:
    shutil.copy(SCENARIO_DIR / "_suite.yaml", tmp_path / "_suite.yaml")
    data = yaml.safe_load(GOOD.read_text())
    data["script"][0].update(turn_extra)
    path = tmp_path / "support_draft_completes.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BadInput) as info:
        load_scenarios([path], claim_ids=known_claim_ids())
    return [f"{p.field}: {p.reason}" for p in info.value.problems]


@pytest.mark.parametrize(("extra", "field", "words"), [
    ({"wire_fault": {"kind": "dropped"}}, "wire_fault.kind", "cut"),
    ({"wire_fault": {"kind": "cut", "times": 0}}, "wire_fault.times", ""),
    ({"wire_fault": {"kind": "cut", "finish_reason": "weird"}}, "script[read_ticket].wire_fault", "finish_reason"),
    ({"wire_fault": {"kind": "unknown_finish"}}, "script[read_ticket].wire_fault", "finish_reason"),
    ({"wire_fault": {"kind": "unknown_finish", "finish_reason": "tool_calls"}}, "script[read_ticket].wire_fault",
     "documents"),
    ({"wire_fault": {"kind": "unknown_finish", "finish_reason": "Not Snake"}}, "wire_fault.finish_reason", ""),
    ({"wire_fault": {"kind": "cut"}, "fail_first": [{"status": 500, "times": "forever"}]}, "script[read_ticket]",
     "wire_fault: follows"),
    ({"fail_first": [{"status": 500, "retry_after_s": 2}]}, "fail_first.0", "retry_after_s: only a 429"),
    ({"fail_first": [{"status": 429, "retry_after_s": 2, "headers": {"retry-after": "2"}}]}, "fail_first.0",
     "retry_after_s: declare"),
    ({"fail_first": [{"status": 429, "retry_after_s": 0}]}, "retry_after_s", ""),
])
def test_a_bad_wire_fault_is_refused_naming_the_field(tmp_path, extra, field, words):
    problems = _problems(tmp_path, extra)
    assert any(field in p and words in p for p in problems), problems


def test_the_wire_scenarios_load_and_a_wire_fault_counts_as_a_model_failure():
    defaults, problems = load_defaults(SCENARIO_DIR)
    assert not problems
    scenarios = {s.id: s for s in load_scenarios() if s.category == "wire"}
    assert {"wire_retry_after", "wire_cut_response", "wire_malformed_body", "wire_unknown_finish_reason"} <= set(
        scenarios)
    assert all(s.model_fails_first() for s in scenarios.values())  # the hard timeout grows by the retry window
    # the told wait is part of the scripted time a hard timeout allows for
    assert scenarios["wire_retry_after"].scripted_delay_s() >= 2
    sc, problems = parse_scenario({
        "id": "x", "title": "t", "category": "wire", "prompt": "p", "tools": {"get_ticket": {}},
        "script": [{"id": "a", "text": "t", "fail_first": [{"status": 429, "times": 3, "retry_after_s": 5}]}],
        "completion": {"final_text_contains": ["t"]}, "expect": {"outcome": "completed"}}, "x.yaml", defaults)
    assert sc is not None, problems
    assert sc.scripted_delay_s() == 15


@pytest.fixture
def reply(make_scenario) -> Reply:
    sc = make_scenario([{"id": "t", "text": "Some text"}])
    return Reply(Served(sc.script[0], None, [], "Some text"), "m", 11, 7, "abc", finish="paused_for_review")


def test_an_unknown_finish_is_each_protocols_own_field(reply):
    assert openai_chat.render(reply)["choices"][0]["finish_reason"] == "paused_for_review"
    assert openai_responses.render(reply)["status"] == "paused_for_review"
    assert anthropic_messages.render(reply)["stop_reason"] == "paused_for_review"
    assert gemini_generate.render(reply)["candidates"][0]["finishReason"] == "PAUSED_FOR_REVIEW"
    last = json.loads(anthropic_messages.render_stream(reply)[-2].split(b"data: ", 1)[1])
    assert last["delta"]["stop_reason"] == "paused_for_review"


def test_hint_s_reads_every_way_a_provider_says_wait():
    assert hint_s({"Retry-After": "2"}, {}) == 2.0
    assert hint_s({"retry-after-ms": "10", "retry-after": "5"}, {}) == 0.01
    assert hint_s({}, gemini_generate.error(429, "x")) == 1.0
    assert hint_s({"x-ratelimit-reset-requests": "1s"}, {"error": {"message": "x"}}) is None


def _entry(seq: int, t_s: float, status: int, retry: bool, hint: float | None = None, turn: str = "a",
           agent: str | None = None) -> RequestLogEntry:
    return RequestLogEntry(seq=seq, t_s=t_s, protocol="openai_chat", path="/", stream=False, model="m", messages=1,
                           tools_offered=[], prompt_bytes=1, served_turn=turn, status=status, retry=retry,
                           duration_ms=100, retry_after_s=hint, agent=agent)


def test_the_wait_after_a_hint_is_measured_to_the_next_try_of_the_same_state():
    log = [_entry(1, 0.0, 429, False, 2), _entry(2, 0.5, 200, False, turn="other", agent="child"),
           _entry(3, 2.1, 429, True, 2), _entry(4, 5.1, 200, True), _entry(5, 6.0, 429, False, 1, turn="b")]
    # 1 -> 3: 2.1 - 0.1; 3 -> 4: 5.1 - 2.2; the hinted 5 was never tried again; 2 is another state
    assert retry_after_waits(log) == [2.0, 2.9]
    assert retry_after_waits([_entry(1, 0.0, 429, False), _entry(2, 1.0, 200, True)]) == []  # no hint


def test_the_server_cuts_a_plain_body_short_of_its_content_length(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "a", "text": "hello there", "wire_fault": {"kind": "cut"}}]))
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete|expected"):
        httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []},
                   headers={"authorization": f"Bearer {key}"})
    r = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []},
                   headers={"authorization": f"Bearer {key}"})
    assert r.json()["choices"][0]["message"]["content"] == "hello there"  # times: 1, then the turn
    log = server.requests(run_id)
    assert [(e.wire_fault, e.retry, e.output_tokens) for e in log] == [("cut", False, 0), (None, True, 100)]


def test_the_server_breaks_one_event_of_a_malformed_stream(model_server, make_scenario, register):
    server, url = model_server
    run_id, key = register(make_scenario([{"id": "a", "text": "hello there", "wire_fault": {
        "kind": "malformed", "times": "forever"}}]))
    for _ in range(2):
        r = httpx.post(url + "/v1/messages", json={"model": "m", "max_tokens": 1, "messages": [], "stream": True},
                       headers={"x-api-key": key})
        assert r.status_code == 200
        data = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
        bad = []
        for i, d in enumerate(data):
            try:
                json.loads(d)
            except ValueError:
                bad.append(i)
        assert bad == [len(data) // 2] and json.loads(data[-1])["type"] == "message_stop"
    assert [e.wire_fault for e in server.requests(run_id)] == ["malformed", "malformed"]


def test_an_exception_raised_inside_a_provider_client_is_told_from_the_traceback():
    """What adapters read as a model failure when the client lets its own parsing or transport error escape
    unwrapped (a bare JSONDecodeError): a frame of the provider client's code, not the exception's type."""
    from loopbench.adapters.kit import raised_in_model_client

    def raised_in(module: str) -> BaseException:
        scope: dict = {"__name__": module, "json": json}
        exec("def parse():\n    return json.loads('{')\n", scope)
        try:
            try:
                scope["parse"]()
            except ValueError as inner:
                raise RuntimeError("the framework's wrapper") from inner
        except RuntimeError as exc:
            return exc
        raise AssertionError("unreachable")

    assert raised_in_model_client(raised_in("openai._response"))
    assert raised_in_model_client(raised_in("google.genai._api_client"))
    assert not raised_in_model_client(raised_in("my_tools.search"))  # a tool's own JSON error
    assert not raised_in_model_client(raised_in("openai_helpers"))  # a prefix, not the package
