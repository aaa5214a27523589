"""Turn choice (harness/model_server/script.py) without HTTP: the rules of scenarios/README.md."""

from __future__ import annotations

import pytest

from loopbench.harness.errors import ScriptViolation
from loopbench.harness.model_server.script import Conversation, ToolResult, resolve_tool, result_status, select

TIER = "unit"

CATALOGUE = ["get_ticket", "lookup_policy", "send_reply", "check_status", "search_kb"]  # what a client offers
R = "[loopbench-receipt:L1]"
E = "[loopbench-error:recoverable:L2]"


def conv(*steps: tuple[str, object], offered: list[str] | None = None, choice: str | None = None,
         named: bool = False, prefix: str = "call_") -> Conversation:
    """steps: ("calls", [ids]) for an assistant message, ("result", (id, text)) for a tool result."""
    batches, results = [], []
    for kind, value in steps:
        if kind == "calls":
            batches.append([prefix + i for i in value])  # type: ignore[union-attr]
        else:
            cid, text = value  # type: ignore[misc]
            results.append(ToolResult(prefix + cid, text))
    return Conversation(prefix, batches, results, CATALOGUE if offered is None else offered, choice, named)


SUPPORT = [
    {"id": "read", "calls": [{"id": "ticket_1", "tool": "get_ticket", "args": {"ticket_id": "T-1"}}]},
    {"id": "on_error", "after": {"call": "ticket_1", "result": "error"}, "text": "the ticket failed"},
    {"id": "find", "after": {"call": "ticket_1", "result": "receipt"},
     "calls": [{"id": "policy_1", "tool": "lookup_policy", "args": {"topic": "refund"}}]},
    {"id": "not_run", "after": {"call": "ticket_1", "result": "none"}, "text": "not run"},
    {"id": "draft", "after": {"call": "policy_1", "contains": "POL-7"}, "text": "Draft citing POL-7"},
    {"id": "other", "after": {"call": "policy_1"}, "text": "no policy id"},
]


@pytest.fixture
def support(make_scenario):
    return make_scenario(SUPPORT)


def test_opening_turn_when_no_scripted_call_is_in_the_conversation(support):
    served = select(support, conv())
    assert (served.label, [c.id for c in served.calls], served.calls[0].args) == ("read", ["ticket_1"], {"ticket_id": "T-1"})


@pytest.mark.parametrize(("text", "turn"), [
    (f"Ticket T-1 ... {R}", "find"),
    (f"Tool failed: {E}", "on_error"),
    ("The user denied this tool call", "not_run"),  # a result without a marker: rejected / denied
    (None, "not_run"),  # no result at all
])
def test_branch_on_receipt_error_or_none(support, text, turn):
    steps = [("calls", ["ticket_1"])] + ([("result", ("ticket_1", text))] if text is not None else [])
    assert select(support, conv(*steps)).label == turn


def test_contains_and_first_match_in_file_order(support):
    base = [("calls", ["ticket_1"]), ("result", ("ticket_1", R)), ("calls", ["policy_1"])]
    assert select(support, conv(*base, ("result", ("policy_1", f"Policy POL-7 {R}")))).label == "draft"
    assert select(support, conv(*base, ("result", ("policy_1", f"nothing {R}")))).label == "other"


def test_injected_messages_and_unscripted_calls_do_not_move_the_conversation(support):
    c = conv(
        ("calls", ["ticket_1"]), ("result", ("ticket_1", f"<system-reminder>x</system-reminder> ok {R}")),
        ("calls", ["abc123"]), ("result", ("abc123", "a framework's own tool call")),  # not scripted
    )
    assert select(support, c).label == "find"
    # the same id under the other protocol's prefix is not a scripted call of this protocol
    assert select(support, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", R)), prefix="toolu_")).label == "find"


def test_no_matching_turn_is_a_violation(make_scenario):
    sc = make_scenario([
        {"id": "read", "calls": [{"id": "ticket_1", "tool": "get_ticket"}]},
        {"id": "find", "after": {"call": "ticket_1", "result": "receipt"}, "text": "done"},
    ])
    with pytest.raises(ScriptViolation, match=r"ticket_1: error"):
        select(sc, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", E))))


def test_no_receipt_matches_error_and_none(make_scenario):
    sc = make_scenario([
        {"id": "read", "calls": [{"id": "ticket_1", "tool": "get_ticket"}]},
        {"id": "failed", "after": {"call": "ticket_1", "result": "no_receipt"}, "text": "failed"},
        {"id": "ok", "after": {"call": "ticket_1"}, "text": "ok"},
    ])
    assert select(sc, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", E)))).label == "failed"
    assert select(sc, conv(("calls", ["ticket_1"]))).label == "failed"
    assert select(sc, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", R)))).label == "ok"


POLL = [
    {"id": "start", "calls": [{"id": "job_1", "tool": "check_status", "args": {"job_id": "J"}}]},
    {"id": "poll", "after": {"call": "job_1"}, "repeat": 3,
     "calls": [{"id": "status_{n}", "tool": "check_status", "args": {"job_id": "J-{n}"}}], "text": "poll {n}"},
    {"id": "done", "after": {"call": "status_{n}", "contains": "JOB-DONE"}, "text": "finished"},
]


def test_repeating_turn_numbers_and_continues(make_scenario):
    sc = make_scenario(POLL)
    c = [("calls", ["job_1"]), ("result", ("job_1", R))]
    first = select(sc, conv(*c))
    assert (first.label, first.calls[0].id, first.calls[0].args, first.text) == ("poll#1", "status_1", {"job_id": "J-1"},
                                                                              "poll 1")
    c += [("calls", ["status_1"]), ("result", ("status_1", f"running {R}"))]
    assert select(sc, conv(*c)).label == "poll#2"  # continuation: its own call is in the batch
    c += [("calls", ["status_2"]), ("result", ("status_2", f"running {R}"))]
    assert select(sc, conv(*c)).label == "poll#3"
    # an `after` naming the template matches any n, and explicit afters win over continuation
    done = c + [("calls", ["status_3"]), ("result", ("status_3", f"JOB-DONE {R}"))]
    assert select(sc, conv(*done)).label == "done"
    # repeat: 3 is used up: nothing answers
    with pytest.raises(ScriptViolation):
        select(sc, conv(*c, ("calls", ["status_3"]), ("result", ("status_3", f"running {R}"))))


def test_forever_repeating_opening_turn(make_scenario):
    sc = make_scenario([{"id": "loop", "repeat": "forever", "calls": [{"id": "kb_{n}", "tool": "check_status"}]}])
    c = [("calls", [f"kb_{i}"]) for i in range(1, 41)]
    assert select(sc, conv()).label == "loop#1"
    assert select(sc, conv(*c)).label == "loop#41"


def test_parallel_calls_are_one_batch(make_scenario):
    sc = make_scenario([
        {"id": "both", "calls": [{"id": "ticket_1", "tool": "get_ticket"}, {"id": "policy_1", "tool": "lookup_policy"}]},
        {"id": "policy_failed", "after": {"call": "policy_1", "result": "error"}, "text": "policy failed"},
        {"id": "fine", "after": {"call": "ticket_1", "result": "receipt"}, "text": "fine"},
    ])
    served = select(sc, conv())
    assert [c.id for c in served.calls] == ["ticket_1", "policy_1"]
    batch = ("calls", ["ticket_1", "policy_1"])
    assert select(sc, conv(batch, ("result", ("ticket_1", R)), ("result", ("policy_1", E)))).label == "policy_failed"
    assert select(sc, conv(batch, ("result", ("ticket_1", R)), ("result", ("policy_1", R)))).label == "fine"


def test_tool_names_modulo_prefix():
    assert resolve_tool("get_ticket", ["mcp__loopbench__get_ticket", "Bash"]) == "mcp__loopbench__get_ticket"
    assert resolve_tool("get_ticket", ["mcp__x__get_ticket", "get_ticket"]) == "get_ticket"  # exact wins
    assert resolve_tool("get_ticket", ["mcp__x__my_get_ticket"]) == "get_ticket"  # `__` boundary required
    assert resolve_tool("get_ticket", []) == "get_ticket"  # not offered: the bare name


def test_served_call_uses_the_offered_name(support):
    assert select(support, conv(offered=["mcp__loopbench__get_ticket"])).calls[0].tool == "mcp__loopbench__get_ticket"


def test_tool_choice_is_honoured(support):
    with pytest.raises(ScriptViolation, match="'none'"):
        select(support, conv(choice="none"))
    with pytest.raises(ScriptViolation, match="'required'"):
        select(support, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", E)), choice="required"))
    with pytest.raises(ScriptViolation, match="lookup_policy"):
        select(support, conv(choice="lookup_policy", named=True, offered=["get_ticket", "lookup_policy"]))
    assert select(support, conv(choice="get_ticket", named=True)).label == "read"
    assert select(support, conv(choice="required")).label == "read"


def test_result_status_markers():
    assert result_status(f"x {R}") == "receipt"
    assert result_status(f"x {E}") == "error"
    assert result_status("plain") == "none"
    assert result_status(None) == "none"


def test_explicit_after_beats_continuation(make_scenario):
    sc = make_scenario([
        {"id": "start", "calls": [{"id": "try_{n}", "tool": "get_ticket"}], "repeat": 2},
        {"id": "again", "after": {"call": "try_{n}", "result": "none"}, "repeat": 2,
         "calls": [{"id": "retry_{n}", "tool": "get_ticket"}]},
        {"id": "give_up", "after": {"call": "retry_{n}"}, "text": "gave up"},
    ])
    assert select(sc, conv(("calls", ["try_1"]))).label == "again#1"
    # retry_{n} of `again` is its own template: continuation would go on, but `give_up` matches first
    assert select(sc, conv(("calls", ["try_1"]), ("calls", ["retry_1"]))).label == "give_up"


def test_exhausted_explicit_turn_is_skipped(make_scenario):
    sc = make_scenario([
        {"id": "start", "calls": [{"id": "job_1", "tool": "check_status"}]},
        {"id": "poll", "after": {"call": "status_{n}", "result": "none"}, "repeat": 2,
         "calls": [{"id": "status_{n}", "tool": "check_status"}]},
        {"id": "stop", "after": {"call": "status_{n}"}, "text": "stopped polling"},
    ])
    c = [("calls", ["job_1"]), ("calls", ["status_1"])]
    assert select(sc, conv(*c)).label == "poll#2"
    assert select(sc, conv(*c, ("calls", ["status_2"]))).label == "stop"  # poll#3 would exceed repeat: 2


@pytest.mark.parametrize(("ledger_says", "turn"), [("error", "on_error"), ("receipt", "find"), (None, "not_run")])
def test_ground_truth_decides_a_result_whatever_the_framework_wrote(support, ledger_says, turn):
    # a framework that words a failed call its own way ("An error occurred while running the tool"), with no
    # marker left: the ledger's ground truth for the call decides; an unknown call falls back to the markers
    steps = [("calls", ["ticket_1"]), ("result", ("ticket_1", "An error occurred while running the tool."))]
    seen: list[str] = []

    def status_of(call_id: str) -> str | None:
        seen.append(call_id)
        return ledger_says

    assert select(support, conv(*steps), status_of).label == turn
    assert seen == ["ticket_1"]


def test_a_call_without_a_result_is_none_whatever_the_ledger_says(support):
    assert select(support, conv(("calls", ["ticket_1"])), lambda _cid: "receipt").label == "not_run"


def test_a_merged_batch_is_answered_from_its_latest_call_not_by_asking_again(support):
    """A framework that merges a new response into the last assistant message (Mastra's message list, when a run
    is continued) sends the earlier call and the newer one in one batch: the turn whose call already came back with
    a receipt is passed over, as a model does not ask again for what it has."""
    merged = conv(("calls", ["ticket_1", "policy_1"]), ("result", ("ticket_1", R)),
                  ("result", ("policy_1", "POL-7 " + R)))
    assert select(support, merged).label == "draft"
    # the same call not answered yet (no result: a client retry of the request) is asked again
    assert select(support, conv(("calls", ["ticket_1"]), ("result", ("ticket_1", R)))).label == "find"
