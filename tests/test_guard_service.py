"""The guard over HTTP (loopbench/guard/service.py): the ops a Node framework's hooks call, on 127.0.0.1, with
the token checked, refusals as answers, a sub-agent's guard on the same allowance, and bad input refused with
the field named."""

from __future__ import annotations

import httpx

from loopbench.guard import Allowance, Budget, Guard, ToolRules
from loopbench.guard.service import GuardService, serving

TIER = "unit"


def _post(base: str, token: str, op: str, **body: object) -> dict:
    r = httpx.post(f"{base}/guard/{op}", json=body, headers={"x-guard-token": token}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_loop_over_http_stops_at_its_cap_and_pauses_for_approval():
    guard = Guard(Allowance(model_calls=3), ToolRules(needs_approval={"send_reply"}, writes={"send_reply"}))
    service = GuardService(guard)
    with serving(service) as base:
        assert base.startswith("http://127.0.0.1:")
        t = service.token
        for _ in range(2):
            held = _post(base, t, "before_model_call")["held"]
            _post(base, t, "after_model_call", held=held, input_tokens=900, output_tokens=50)
            call = _post(base, t, "before_tool_call", tool="search", args={"q": "x"})
            assert _post(base, t, "after_tool_call", held=call["held"], tool="search", args={"q": "x"},
                         result="nothing")["result"] == "nothing"
        pause = _post(base, t, "before_tool_call", tool="send_reply", args={"to": "ana"}, call_id="c1")
        assert pause["ok"] is False and pause["pause"]
        _post(base, t, "decide", tool="send_reply", args={"to": "ana"}, decision="approve", call_id="c1")
        sent = _post(base, t, "before_tool_call", tool="send_reply", args={"to": "ana"}, call_id="c1")
        _post(base, t, "after_tool_call", held=sent["held"], tool="send_reply", args={"to": "ana"}, result="sent",
              call_id="c1")
        assert _post(base, t, "before_tool_call", tool="send_reply", args={"to": "ana"},
                     call_id="c1")["recorded"] == "sent"  # a replay is answered, not run twice
        held = _post(base, t, "before_model_call")["held"]  # the third call: the last the cap allows
        _post(base, t, "after_model_call", held=held, input_tokens=900, output_tokens=50, agent="billing")
        stop = _post(base, t, "before_model_call", agent="billing")  # a sub-agent draws on the same allowance
        assert stop["ok"] is False and stop["stop"]["exit"] == "limit" and stop["stop"]["measure"] == "model_calls"
    assert guard.exit == "limit" and guard.budget is not None and guard.budget.used["model_calls"] == 3


def test_the_token_and_the_input_are_checked():
    service = GuardService(Guard(Allowance()))
    with serving(service) as base:
        assert httpx.post(f"{base}/guard/remaining", json={}, timeout=10).status_code == 403
        headers = {"x-guard-token": service.token}
        bad = httpx.post(f"{base}/guard/decide", json={"decision": "maybe"}, headers=headers, timeout=10)
        assert bad.status_code == 400 and "decision" in bad.text
        assert httpx.post(f"{base}/guard/explode", json={}, headers=headers, timeout=10).status_code == 404
        unknown = httpx.post(f"{base}/guard/after_tool_call", json={"held": "h9"}, headers=headers, timeout=10)
        assert unknown.status_code == 400 and "held" in unknown.text


def test_the_caller_s_cancel_is_the_task_s_exit_until_the_caller_goes_on():
    guard = Guard(Allowance(model_calls=5))
    service = GuardService(guard)
    with serving(service) as base:
        held = _post(base, service.token, "before_model_call")["held"]
        stop = _post(base, service.token, "cancel", message="the caller's abort signal fired")
        assert stop["ok"] is False and stop["stop"]["exit"] == "cancelled"
        assert guard.exit == "cancelled" and guard.exit_reason == "the caller's abort signal fired"
        _post(base, service.token, "model_call_failed", held=held)
    guard.resume()  # the caller continues the cancelled task: the cancel is not its exit any more
    assert guard.exit is None and guard.budget is not None and guard.budget.used["model_calls"] == 1


def test_start_clock_starts_the_segment_s_time_at_the_loop_s_first_hook():
    """A Node loop's first hook starts the segment's clock: the driver's own start-up is not spent, the earlier
    segments' time is; the answer is the time left."""
    now = [100.0]
    allowance = Allowance(wall_s=5)
    guard = Guard(allowance, budget=Budget.restore(allowance, {"elapsed_s": 1.0}, clock=lambda: now[0]))
    service = GuardService(guard)
    with serving(service) as base:
        now[0] += 30  # the driver starting: no hook ran
        assert _post(base, service.token, "start_clock")["remaining_s"] == 4.0
        now[0] += 1.5
        assert _post(base, service.token, "remaining")["remaining_s"] == 2.5
