"""The guard's policy core (loopbench/guard/), without any framework: reservation under concurrency (parallel
calls never overshoot a cap), the deadline, approval bound to the exact call and rejection to its effect, stall
detection with a separate bound for polling, writes of unknown outcome, the allowance carried across a resume and
shared with a sub-agent, the first stop as the exit, bounded tool output; and the guard imports no harness."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

from loopbench.guard import (
    Allowance,
    AwaitingApproval,
    Denied,
    Estimate,
    Guard,
    GuardStop,
    LimitReached,
    Stalled,
    ToolRules,
    UnknownOutcome,
    normalized_tool,
)
from loopbench.guard.budget import Budget

TIER = "unit"

GUARD = Path(__file__).resolve().parent.parent / "loopbench" / "guard"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_parallel_tool_calls_never_pass_the_cap():
    guard = Guard(Allowance(tool_calls=10))
    started: list[int] = []
    refused: list[int] = []
    peak = [0.0]
    gate = threading.Barrier(40)

    def call(i: int) -> None:
        gate.wait()  # every thread asks at once
        try:
            r = guard.before_tool_call("search", {"q": i})
        except LimitReached:
            refused.append(i)
            return
        started.append(i)
        assert guard.budget is not None
        peak[0] = max(peak[0], guard.budget.used["tool_calls"] + guard.budget.in_flight["tool_calls"])
        time.sleep(0.01)
        guard.after_tool_call(r, "search", {"q": i}, f"result {i}")

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(started) == 10 and len(refused) == 30 and peak[0] <= 10
    assert guard.budget is not None and guard.budget.used["tool_calls"] == 10 and guard.exit == "limit"


def test_a_model_call_reserves_its_worst_case_and_settles_the_real_amounts():
    guard = Guard(Allowance(tokens=1000, cost_usd=0.05))
    est = Estimate(input_tokens=200, max_output_tokens=100, usd_per_input_token=1e-5, usd_per_output_token=2e-5)
    a, b, c = (guard.before_model_call(est) for _ in range(3))  # 900 tokens in flight
    with pytest.raises(LimitReached, match="tokens: 0 used \\+ 900 in flight \\+ 300"):
        guard.before_model_call(est)
    guard.after_model_call(a, input_tokens=200, output_tokens=20)  # used 220: 80 tokens back
    b.release()  # never sent: nothing used
    assert guard.budget is not None and guard.budget.used["tokens"] == 220
    d = guard.before_model_call(est)  # 220 + 300 (c) + 300 <= 1000
    c.release()
    d.release()
    with pytest.raises(RuntimeError, match="settled once"):
        d.release()


def test_the_deadline_refuses_the_next_call():
    clock = Clock()
    budget = Budget(Allowance(wall_s=5), clock=clock)
    guard = Guard(Allowance(wall_s=5), budget=budget)
    guard.before_model_call().release()
    clock.now += 5
    with pytest.raises(LimitReached, match="deadline of 5 s has passed") as stop:
        guard.before_tool_call("search", {})
    assert stop.value.measure == "wall_s" and guard.exit == "limit"


def test_a_segment_clock_started_late_keeps_the_earlier_segments_time():
    """A binding whose framework starts before its loop (a CLI process) starts the segment's clock at its first
    hook: the start-up is not spent, the time of the segments before is."""
    clock = Clock()
    allowance = Allowance(wall_s=5)
    budget = Budget.restore(allowance, {"elapsed_s": 2.0}, clock=clock)
    guard = Guard(allowance, budget=budget)
    clock.now += 10  # the process starting: no hook ran
    guard.start_clock()
    clock.now += 2.5
    guard.before_model_call().release()  # 2 + 2.5 < 5
    assert budget.elapsed_s() == 4.5
    clock.now += 0.5
    with pytest.raises(LimitReached, match="deadline of 5 s has passed"):
        guard.before_model_call()


def test_the_segment_clock_starts_once_and_never_from_a_sub_agent():
    """A binding calls start_clock from every hook that may come first: only the first call restarts the clock,
    and a sub-agent's guard leaves its parent's."""
    clock = Clock()
    guard = Guard(Allowance(wall_s=5), budget=Budget(Allowance(wall_s=5), clock=clock))
    clock.now += 10
    guard.child().start_clock()
    assert guard.budget is not None and guard.budget.elapsed_s() == 10
    guard.start_clock()
    clock.now += 1
    guard.start_clock()  # a later hook: the segment's time goes on
    assert guard.budget.elapsed_s() == 1


def test_approval_is_bound_to_the_exact_call_and_used_once():
    rules = ToolRules(needs_approval={"send_reply"}, effects={"send_reply": "outbound_message",
                                                            "send_email": "outbound_message"})
    guard = Guard(Allowance(), rules)
    ana = {"to": "ana@example.com", "body": "refund accepted"}
    with pytest.raises(AwaitingApproval) as pause:
        guard.before_tool_call("send_reply", ana)
    assert pause.value.call_args == ana and guard.exit == "awaiting_approval"
    guard.decide("mcp__loopbench__send_reply", ana, "approve")  # the same tool under the framework's name
    guard.before_tool_call("send_reply", dict(reversed(list(ana.items())))).commit()  # key order is not identity
    with pytest.raises(AwaitingApproval):  # the approval is spent
        guard.before_tool_call("send_reply", ana)
    with pytest.raises(AwaitingApproval):  # another recipient needs its own approval
        guard.before_tool_call("send_reply", {**ana, "to": "bob@example.com"})


def test_a_rejection_blocks_the_same_effect_through_another_tool():
    rules = ToolRules(needs_approval={"send_reply"}, effects={"send_reply": "outbound_message",
                                                            "SendEmail": "outbound_message"})
    guard = Guard(Allowance(), rules)
    guard.decide("send_reply", {"to": "ana@example.com"}, "reject")
    with pytest.raises(Denied, match="'outbound_message' was rejected"):
        guard.before_tool_call("send-email", {"to": "ana@example.com"})  # not gated itself, same effect
    assert guard.exit == "denied"
    guard.before_tool_call("search", {"q": "x"}).release()  # other effects go on


def test_the_same_call_with_the_same_result_is_a_stall_and_polling_has_its_own_bound():
    guard = Guard(Allowance(), ToolRules(polling={"job_status": 5}), stall_repeats=3)
    for result in ("none", "none", "found"):  # a changed result is progress
        guard.after_tool_call(guard.before_tool_call("search", {"q": "x"}), "search", {"q": "x"}, result)
    guard.after_tool_call(guard.before_tool_call("search", {"q": "x"}), "search", {"q": "x"}, "found")
    with pytest.raises(Stalled, match="3 times in a row"):
        guard.after_tool_call(guard.before_tool_call("search", {"q": "x"}), "search", {"q": "x"}, "found")
    polling = Guard(Allowance(), ToolRules(polling={"job_status": 5}), stall_repeats=3)
    for _ in range(4):
        polling.after_tool_call(polling.before_tool_call("job_status", {"id": 7}), "job_status", {"id": 7}, "running")
    with pytest.raises(Stalled, match="5 times in a row \\(bound 5\\)"):
        polling.after_tool_call(polling.before_tool_call("job_status", {"id": 7}), "job_status", {"id": 7}, "running")


def test_a_write_of_unknown_outcome_is_retried_only_with_its_key_or_after_verification():
    guard = Guard(Allowance(), ToolRules(writes={"issue_refund"}))
    args = {"order": 1042, "amount": 30}
    guard.tool_timed_out(guard.before_tool_call("issue_refund", args, key="k-1"), "issue_refund", args, "k-1")
    with pytest.raises(UnknownOutcome, match="outcome is unknown"):
        guard.before_tool_call("issue_refund", args)
    with pytest.raises(UnknownOutcome):
        guard.before_tool_call("issue_refund", args, key="k-2")
    retry = guard.before_tool_call("issue_refund", args, key="k-1")  # the same key: the service deduplicates
    guard.after_tool_call(retry, "issue_refund", args, {"refund": "r-9"})  # an answer settles the outcome
    guard.before_tool_call("issue_refund", args).release()
    keyless = Guard(Allowance(), ToolRules(writes={"issue_refund"}))
    keyless.tool_timed_out(keyless.before_tool_call("issue_refund", args), "issue_refund", args, None)
    with pytest.raises(UnknownOutcome):
        keyless.before_tool_call("issue_refund", args)
    keyless.writes.verified("issue_refund", args)  # a lookup said it did not happen
    keyless.before_tool_call("issue_refund", args).release()


def test_the_allowance_carries_across_a_resume():
    allowance = Allowance(model_calls=4, tool_calls=2, wall_s=10)
    rules = ToolRules(needs_approval={"send_reply"})
    clock = Clock()
    first = Guard(allowance, rules, budget=Budget(allowance, clock=clock))
    for _ in range(3):
        first.after_model_call(first.before_model_call(), input_tokens=10, output_tokens=5)
    first.decide("send_reply", {"to": "ana"}, "approve")
    in_flight = first.before_tool_call("search", {"q": 1})  # in flight at the pause: not used
    clock.now += 4
    snap = first.snapshot()
    assert in_flight.open
    resumed = Guard.restore(allowance, snap, rules)
    resumed.before_tool_call("send_reply", {"to": "ana"}).commit()  # the approval survived the pause
    resumed.after_model_call(resumed.before_model_call(), input_tokens=10, output_tokens=5)
    with pytest.raises(LimitReached, match="model_calls: 4 used"):
        resumed.before_model_call()
    assert resumed.budget is not None and resumed.budget.elapsed_s() >= 4
    assert resumed.budget.remaining_s() is not None and resumed.budget.remaining_s() <= 6  # type: ignore[operator]


def test_a_sub_agent_draws_on_the_parent_s_allowance():
    parent = Guard(Allowance(tool_calls=3))
    kid = parent.child()
    parent.before_tool_call("search", {"q": 1}).commit()
    kid.before_tool_call("lookup", {"id": 1}).commit()
    kid.before_tool_call("lookup", {"id": 2}).commit()
    with pytest.raises(LimitReached):
        parent.before_tool_call("search", {"q": 2})
    with pytest.raises(LimitReached):
        kid.before_tool_call("lookup", {"id": 3})
    assert parent.budget is kid.budget and parent.budget is not None and parent.budget.used["tool_calls"] == 3


def test_the_first_stop_is_the_exit_and_a_finish_does_not_replace_it():
    guard = Guard(Allowance(model_calls=0))
    with pytest.raises(LimitReached):
        guard.before_model_call()
    guard.finish("completed")
    assert (guard.exit, guard.exit_reason) == ("limit", "model_calls: 0 used + 0 in flight + 1 for this call > the "
                                                         "cap of 0")
    done = Guard(Allowance())
    done.finish()
    assert done.exit == "completed"


def test_a_long_tool_result_reaches_the_model_compacted_with_a_reference():
    guard = Guard(Allowance(), max_result_chars=20)
    text = "x" * 100
    got = guard.after_tool_call(guard.before_tool_call("read", {}), "read", {}, text)
    assert got.startswith("x" * 20 + "… [80 more characters") and "result:" in got
    (ref,) = guard.stored_results
    assert guard.stored_results[ref] == text and ref in got
    assert guard.after_tool_call(guard.before_tool_call("read", {"p": 1}), "read", {"p": 1}, "short") == "short"


def test_tool_names_normalize_across_frameworks():
    assert {normalized_tool(n) for n in ("send_reply", "mcp__loopbench__send_reply", "SendReply", "send-reply")} == {
        "send_reply"}


def test_the_guard_imports_no_harness_and_no_sdk():
    """The core imports pydantic and the standard library only; its HTTP service (service.py) also the server
    loopbench itself depends on (starlette, uvicorn), never an SDK."""
    for path in GUARD.glob("*.py"):
        allowed = {"loopbench", "pydantic", "__future__"} | ({"starlette", "uvicorn"} if path.name == "service.py"
                                                            else set())
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("loopbench.harness", "loopbench.adapters", "loopbench.reports",
                                            "loopbench.commands")), (path.name, name)
                top = name.split(".")[0]
                assert top in allowed or top in __import__("sys").stdlib_module_names, (path.name, name)


def test_no_tool_runs_when_no_model_call_is_left_to_read_it():
    guard = Guard(Allowance(model_calls=2))
    for turn in range(2):
        guard.after_model_call(guard.before_model_call(), input_tokens=10, output_tokens=5)
        if turn == 0:
            guard.before_tool_call("search", {"q": turn}).commit()
    with pytest.raises(LimitReached, match="no model call is left"):
        guard.before_tool_call("search", {"q": 1})
    assert guard.exit == "limit" and guard.stop_measure == "model_calls"
    assert Guard(Allowance(model_calls=0), tool_needs_model_call=False).before_tool_call("search", {}).open


def test_a_call_without_an_estimate_reserves_what_the_last_one_used():
    """10,500 tokens a call against 25,000: the third call is refused before it is sent (21,000 + 10,500), so
    the cap is never passed; without the estimate it would be sent and pass it."""
    guard = Guard(Allowance(tokens=25_000), price=lambda i, o: i * 3e-6 + o * 15e-6)
    for _ in range(2):
        guard.after_model_call(guard.before_model_call(), input_tokens=10_000, output_tokens=500)
    with pytest.raises(LimitReached, match="tokens"):
        guard.before_model_call()
    assert guard.budget is not None and guard.budget.used["tokens"] == 21_000
    assert guard.budget.used["cost_usd"] == pytest.approx(2 * 0.0375)
    blind = Guard(Allowance(tokens=25_000), estimate_from_last=False)
    for _ in range(3):
        blind.after_model_call(blind.before_model_call(), input_tokens=10_000, output_tokens=500)
    assert blind.budget is not None and blind.budget.used["tokens"] > 25_000


def test_a_fatal_tool_error_ends_the_task_and_a_sub_agent_s_stop_is_the_task_s():
    parent = Guard(Allowance())
    kid = parent.child()
    held = kid.before_tool_call("lookup_policy", {"topic": "refund"})
    with pytest.raises(GuardStop, match="permission denied"):
        kid.tool_failed(held, "lookup_policy", fatal=True, message="permission denied")
    assert kid.exit == parent.exit == "failed"
    again = parent.before_tool_call("lookup_policy", {"topic": "refund"})
    parent.tool_failed(again, "lookup_policy", fatal=False, message="busy")  # recoverable: the model retries
    assert parent.budget is not None and parent.budget.used["tool_calls"] == 2


def test_the_stall_check_compares_answers_by_the_given_key():
    """A request id in every answer would hide a stall: `result_key` says what counts as the same answer."""
    plain = Guard(Allowance())
    keyed = Guard(Allowance(), result_key=lambda r: r.split(" ", 1)[1])
    for n in range(3):
        plain.after_tool_call(plain.before_tool_call("search_kb", {"q": "x"}), "search_kb", {"q": "x"},
                              f"req-{n} nothing")
    for n in range(2):
        keyed.after_tool_call(keyed.before_tool_call("search_kb", {"q": "x"}), "search_kb", {"q": "x"},
                              f"req-{n} nothing")
    with pytest.raises(Stalled):
        keyed.after_tool_call(keyed.before_tool_call("search_kb", {"q": "x"}), "search_kb", {"q": "x"},
                              "req-2 nothing")
    assert plain.exit is None and keyed.exit == "stalled"
