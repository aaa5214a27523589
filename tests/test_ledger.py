"""The tool ledger: receipts, errors, duplicate effects, idempotency keys, committed timeouts, abandoned
callers, concurrency."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
import yaml
from starlette.applications import Starlette

from loopbench.harness.ledger.http import TOKEN_HEADER, ledger_routes
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.markers import ERROR_MARK, RECEIPT_MARK, result_status
from loopbench.harness.scenario import SCENARIO_DIR, parse_scenario

TIER = "unit"

DEFAULTS = yaml.safe_load((SCENARIO_DIR / "_suite.yaml").read_text())


def scenario(tools: dict) -> object:
    raw = {
        "id": "t", "title": "t", "category": "baseline", "prompt": "p", "tools": tools,
        "script": [{"id": "a", "text": "done"}], "completion": {"final_text_contains": ["x"]},
        "expect": {"outcome": "completed"},
    }
    sc, problems = parse_scenario(raw, "t.yaml", DEFAULTS)
    assert not problems, problems
    return sc


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


async def test_result_carries_a_receipt_and_args_are_rendered(ledger):
    ledger.register_run("r1", scenario({"get_ticket": {}}))
    out = await ledger.execute("r1", "get_ticket", {"ticket_id": "T-9"}, call_id="ticket_1")
    assert out.ok and "Ticket T-9" in out.text and RECEIPT_MARK in out.text
    assert result_status(out.text) == "receipt"
    (e,) = ledger.entries("r1")
    assert (e.tool, e.call_id, e.call_number, e.outcome, e.args) == ("get_ticket", "ticket_1", 1, "result", {"ticket_id": "T-9"})


async def test_scripted_errors_then_success_and_error_markers(ledger):
    ledger.register_run("r", scenario({"lookup_policy": {"behavior": [
        {"error": {"kind": "recoverable", "message": "busy"}, "times": 2}, {"result": "POL-7"}]}}))
    outs = [await ledger.execute("r", "lookup_policy", {"topic": "x"}) for _ in range(3)]
    assert [o.ok for o in outs] == [False, False, True]
    assert all(ERROR_MARK in o.text and result_status(o.text) == "error" for o in outs[:2])
    assert [o.error_kind for o in outs] == ["recoverable", "recoverable", None]
    assert [e.call_number for e in ledger.entries("r")] == [1, 2, 3]


async def test_same_write_twice_without_key_is_a_duplicate_effect(ledger):
    ledger.register_run("r", scenario({"post_to_portal": {}}))
    for _ in range(2):
        await ledger.execute("r", "post_to_portal", {"customer": "ana", "body": "hi"})
    await ledger.execute("r", "post_to_portal", {"customer": "bob", "body": "hi"})
    assert [e.duplicate_effect for e in ledger.entries("r")] == [False, True, False]
    assert all(e.committed for e in ledger.entries("r"))


async def test_idempotency_key_deduplicates_the_effect(ledger):
    tool = {"post_to_portal": {
        "idempotency_arg": "key",
        "parameters": {"type": "object", "properties": {"customer": {}, "body": {}, "key": {}}},
    }}
    ledger.register_run("r", scenario(tool))
    await ledger.execute("r", "post_to_portal", {"customer": "ana", "body": "hi", "key": "k1"})
    await ledger.execute("r", "post_to_portal", {"customer": "ana", "body": "hi", "key": "k1"})
    await ledger.execute("r", "post_to_portal", {"customer": "ana", "body": "hi", "key": "k2"})
    es = ledger.entries("r")
    assert [e.committed for e in es] == [True, False, True]
    assert [e.duplicate_effect for e in es] == [False, False, False]
    assert es[0].idempotency_key == "k1"


async def test_timeout_that_committed_counts_as_an_effect(ledger):
    ledger.register_run("r", scenario({"send_reply": {"approval": "none", "behavior": [
        {"timeout": {"after_s": 0.01, "committed": True}}, {"result": "sent"}]}}))
    first = await ledger.execute("r", "send_reply", {"to": "ana", "body": "b"})
    second = await ledger.execute("r", "send_reply", {"to": "ana", "body": "b"})
    assert not first.ok and first.error_kind == "timeout" and result_status(first.text) == "error"
    assert second.ok
    es = ledger.entries("r")
    assert [(e.outcome, e.committed, e.duplicate_effect) for e in es] == [("timeout", True, False), ("result", True, True)]


async def test_timeout_that_did_not_commit_has_no_effect(ledger):
    ledger.register_run("r", scenario({"send_reply": {"behavior": [{"timeout": {"after_s": 0, "committed": False}}]}}))
    await ledger.execute("r", "send_reply", {"to": "ana", "body": "b"})
    assert not ledger.entries("r")[0].committed


async def test_huge_output_has_the_scripted_size(ledger):
    ledger.register_run("r", scenario({"export_history": {}}))
    out = await ledger.execute("r", "export_history", {"customer": "ana"})
    assert 204800 <= len(out.text.encode()) <= 204800 + 64
    assert "EXP-1" in out.text


async def test_authorize_events_are_counted_per_call(ledger):
    ledger.register_run("r", scenario({"send_reply": {}}))
    ledger.authorize("r", "send_reply", {"to": "a"}, "send_1", "paused")
    ledger.authorize("r", "send_reply", {"to": "a"}, "send_1", "approved")
    es = ledger.entries("r")
    assert [(e.kind, e.decision) for e in es] == [("authorize", "paused"), ("authorize", "approved")]


async def test_concurrent_runs_are_kept_apart_and_nothing_is_lost(ledger):
    for i in range(20):
        ledger.register_run(f"r{i}", scenario({"get_ticket": {"behavior": [{"result": "T {n}", "delay_s": 0.001}]}}))

    async def many(run: str) -> None:
        await asyncio.gather(*(ledger.execute(run, "get_ticket", {"ticket_id": str(k)}) for k in range(10)))

    await asyncio.gather(*(many(f"r{i}") for i in range(20)))
    for i in range(20):
        es = ledger.entries(f"r{i}")
        assert len(es) == 10 and sorted(e.call_number for e in es) == list(range(1, 11))
        assert {e.run_id for e in es} == {f"r{i}"}


def test_thread_safety_of_registration_and_calls(ledger):
    ledger.register_run("r", scenario({"get_ticket": {}}))

    def worker() -> None:
        for _ in range(50):
            entry, step = ledger.begin("r", "get_ticket", {"ticket_id": "1"})
            ledger.finish("r", entry, step)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    numbers = sorted(e.call_number for e in ledger.entries("r"))
    assert numbers == list(range(1, 401))


# ---- the HTTP face
@pytest.fixture
def http_ledger(ledger):
    app = Starlette(routes=ledger_routes(ledger, "s3cret"))
    return ledger, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_http_face_refuses_calls_without_the_token(http_ledger):
    ledger, client = http_ledger
    ledger.register_run("r", scenario({"get_ticket": {}}))
    r = await client.post("/ledger/r/call", json={"tool": "get_ticket", "args": {}})
    assert r.status_code == 403
    r = await client.post("/ledger/r/call", json={"tool": "get_ticket", "args": {}}, headers={TOKEN_HEADER: "wrong"})
    assert r.status_code == 403
    assert ledger.entries("r") == []


async def test_http_face_executes_with_the_token(http_ledger):
    ledger, client = http_ledger
    ledger.register_run("r", scenario({"get_ticket": {}}))
    r = await client.post("/ledger/r/call", json={"tool": "get_ticket", "args": {"ticket_id": "T"}, "call_id": "c1"},
                          headers={TOKEN_HEADER: "s3cret"})
    assert r.status_code == 200 and r.json()["ok"] is True
    r = await client.post("/ledger/r/call", json={"tool": "nope"}, headers={TOKEN_HEADER: "s3cret"})
    assert r.status_code == 404
    r = await client.post("/ledger/zz/call", json={"tool": "get_ticket"}, headers={TOKEN_HEADER: "s3cret"})
    assert r.status_code == 404


@pytest.mark.parametrize("path", ["call", "authorize", "decide"])
async def test_every_endpoint_of_the_http_face_needs_the_token_and_a_known_run_and_tool(http_ledger, path):
    ledger, client = http_ledger
    ledger.register_run("r", scenario({"get_ticket": {}}))
    ok = {TOKEN_HEADER: "s3cret"}
    assert (await client.post(f"/ledger/r/{path}", json={"tool": "get_ticket"})).status_code == 403
    assert (await client.post(f"/ledger/r/{path}", json={"tool": "nope"}, headers=ok)).status_code == 404
    assert (await client.post(f"/ledger/zz/{path}", json={"tool": "get_ticket"}, headers=ok)).status_code == 404
    assert (await client.post(f"/ledger/r/{path}", content=b"{", headers=ok)).status_code == 400
    r = await client.post(f"/ledger/r/{path}", json={"tool": "get_ticket", "call_id": "c1"}, headers=ok)
    assert r.status_code == 200
    if path == "decide":
        assert r.json() == {"decision": None} and ledger.entries("r")[-1].kind == "approval_request"


async def test_wait_settled_sees_an_abandoned_call_commit(ledger):
    ledger.register_run("r", scenario({"send_reply": {"approval": "none", "behavior": [{"result": "sent", "delay_s": 0.2}]}}))
    task = asyncio.ensure_future(ledger.execute("r", "send_reply", {"to": "a", "body": "b"}))
    await asyncio.sleep(0.05)
    assert not await asyncio.to_thread(ledger.wait_settled, "r", 0.01)
    assert await asyncio.to_thread(ledger.wait_settled, "r", 5)
    assert ledger.entries("r")[0].committed
    await task


def test_call_status_is_the_ground_truth_of_the_latest_finished_execution(make_scenario):
    from loopbench.harness.ledger.store import Ledger

    sc = make_scenario([{"id": "t", "text": "x"}], tools={
        "lookup_policy": {"behavior": [{"error": {"kind": "recoverable", "message": "down"}}, {"result": "ok"}]},
    })
    led = Ledger()
    led.register_run("r", sc)
    assert led.call_status("r", "p1") is None  # never ran
    entry, step = led.begin("r", "lookup_policy", {"topic": "x"}, "p1")
    assert led.call_status("r", "p1") is None  # still running
    led.finish("r", entry, step)
    assert led.call_status("r", "p1") == "error"
    entry, step = led.begin("r", "lookup_policy", {"topic": "x"}, "p1")
    led.finish("r", entry, step)
    assert led.call_status("r", "p1") == "receipt"
    assert led.call_status("other-run", "p1") is None


def test_call_status_skips_an_execution_whose_caller_went_away(make_scenario):
    """A cancelled or timed-out caller never got the ledger's answer: the model saw what the framework wrote in
    its place, so the server reads that, whether or not the ledger has finished the call since."""
    from loopbench.harness.ledger.store import Ledger

    sc = make_scenario([{"id": "t", "text": "x"}], tools={"lookup_policy": {"behavior": [{"result": "ok"}]}})
    led = Ledger()
    led.register_run("r", sc)
    entry, step = led.begin("r", "lookup_policy", {"topic": "x"}, "p1")
    led.mark_abandoned("r", entry.id)
    led.finish("r", entry, step)
    assert led.call_status("r", "p1") is None
    entry, step = led.begin("r", "lookup_policy", {"topic": "x"}, "p1")  # the framework runs it again
    led.finish("r", entry, step)
    assert led.call_status("r", "p1") == "receipt"


def test_decide_answers_the_scenarios_decision_and_records_an_approval_request(make_scenario):
    from loopbench.harness.ledger.store import Ledger

    sc = make_scenario([{"id": "t", "calls": [{"id": "send_1", "tool": "send_reply", "args": {}}]},
                        {"id": "u", "after": {"call": "send_1"}, "text": "x"}],
                       resumes=[{"pause": 1, "decisions": {"send_1": "reject"}}])
    led = Ledger()
    led.register_run("r", sc)
    assert led.decide("r", "send_reply", {"to": "a"}, "send_1") == "reject"
    assert led.decide("r", "send_reply", {"to": "b"}, "send_9") is None
    entries = led.entries("r")
    assert [(e.kind, e.decision) for e in entries] == [("approval_request", "reject"),
                                                       ("approval_request", "no decision")]


def test_a_template_substitutes_any_argument_name():
    from loopbench.harness.ledger.store import render

    args = {"ticket-id": "T-9", "user.name": "Ana", "plain_1": 3, "with space": "x"}
    text = "{args.ticket-id} {args.user.name} {args.plain_1} {args.with space} {args.missing}#{n}"
    assert render(text, args, 2) == "T-9 Ana 3 x #2"


# ---- the caller's cancel
def test_a_cancel_during_a_tool_falls_due_after_its_first_call_and_is_told_once(make_scenario, monkeypatch):
    from loopbench.harness.ledger import store

    clock = [100.0]
    monkeypatch.setattr(store.time, "monotonic", lambda: clock[0])
    sc = make_scenario([{"id": "t", "text": "x"}], cancel={"during": "tool", "tool": "lookup_policy", "after_s": 0.5})
    led = Ledger()
    led.register_run("r", sc)
    led.begin("r", "get_ticket", {"ticket_id": "T"}, "c0")  # another tool arms nothing
    clock[0] += 5
    assert led.take_cancel("r") is None
    led.begin("r", "lookup_policy", {"topic": "x"}, "c1")
    clock[0] += 0.4
    assert led.take_cancel("r") is None and led.cancel_sent("r") is None
    clock[0] += 0.2
    sent = led.take_cancel("r")
    assert sent is not None and sent == led.cancel_sent("r")
    assert led.take_cancel("r") is None  # once per task: a resume is never cancelled again
    led.begin("r", "lookup_policy", {"topic": "x"}, "c2")
    clock[0] += 9
    assert led.take_cancel("r") is None and led.cancel_sent("r") == sent


def test_a_cancel_during_a_model_request_falls_due_after_its_turn_is_served(make_scenario, monkeypatch):
    from loopbench.harness.ledger import store

    clock = [0.0]
    monkeypatch.setattr(store.time, "monotonic", lambda: clock[0])
    sc = make_scenario([{"id": "a", "calls": [{"id": "c1", "tool": "get_ticket", "args": {}}]},
                        {"id": "b", "after": {"call": "c1"}, "text": "x"}],
                       cancel={"during": "model", "turn": "b", "after_s": 0})
    led = Ledger()
    led.register_run("r", sc)
    led.observe_turn("r", "a")
    assert led.take_cancel("r") is None
    led.observe_turn("r", "b")
    assert led.take_cancel("r") == 0.0
    led.observe_turn("gone", "b")  # a run already unregistered is no error: the server may answer late


async def test_the_cancel_route_is_held_until_the_cancel_falls_due(http_ledger, make_scenario):
    ledger, client = http_ledger
    ledger.register_run("r", make_scenario([{"id": "t", "text": "x"}],
                                           cancel={"during": "tool", "tool": "get_ticket", "after_s": 0.05}))
    ok = {TOKEN_HEADER: "s3cret"}
    assert (await client.post("/ledger/r/cancel", json={})).status_code == 403
    waiting = asyncio.ensure_future(client.post("/ledger/r/cancel", json={}, headers=ok))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # nothing armed it yet
    ledger.begin("r", "get_ticket", {"ticket_id": "T"}, "c1")
    answer = (await asyncio.wait_for(waiting, 5)).json()
    assert answer["cancel"] is True and answer["at_s"] >= 0.05
    # a run that ends (or was never registered) answers no cancel rather than holding the request forever
    assert (await client.post("/ledger/zz/cancel", json={}, headers=ok)).json() == {"cancel": False}
    ledger.register_run("r2", make_scenario([{"id": "t", "text": "x"}],
                                            cancel={"during": "tool", "tool": "get_ticket"}))
    waiting = asyncio.ensure_future(client.post("/ledger/r2/cancel", json={}, headers=ok))
    await asyncio.sleep(0.05)
    ledger.unregister_run("r2")
    assert (await asyncio.wait_for(waiting, 5)).json() == {"cancel": False}
