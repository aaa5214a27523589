"""The Claude Agent SDK adapter through the real runner: the whole suite, both variants.

Assertions are ground-truth facts that do not depend on the framework's choices, the signal mapping, the cost
relation measured between the CLI's `total_cost_usd` and the price table, routing across a resumed session,
and that no CLI process outlives the suite.

`model_fatal_error` runs in a second plan with a longer hard margin: with its default retry policy the CLI keeps
retrying a 500 for about 2.5 minutes (it honours retry headers only for 429/529), longer than the runner's
default margin of 60 s, so under `loopbench run` that scenario is recorded as `hung` for this framework.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.prices import cost_usd
from harness.record import RunRecord
from tests.suite_helpers import full_suite, run_framework

FRAMEWORK = "claude-agent-sdk"
VARIANTS = ("default", "can-use-tool")
SLOW = "model_fatal_error"


def _bundled_cli() -> str | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return str(path) if path.exists() else None


def _cli_processes_under(root: Path) -> list[int]:
    """PIDs of live bundled-CLI processes whose environment points into `root` (started by this test)."""
    cli = _bundled_cli()
    if cli is None:
        return []
    found = subprocess.run(["pgrep", "-f", cli], capture_output=True, text=True).stdout.split()
    mine = []
    for pid in found:
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue  # gone meanwhile
        if str(root).encode() in env:
            mine.append(int(pid))
    return mine


@pytest.fixture(scope="module")
def suite() -> tuple[dict[tuple[str, str], RunRecord], Path]:
    return run_framework(FRAMEWORK), full_suite()


@pytest.fixture(scope="module")
def records(suite) -> dict[tuple[str, str], RunRecord]:
    return suite[0]


def test_no_cli_process_survives_the_suite(suite):
    _, root = suite
    assert _cli_processes_under(root) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_support_draft_completes(records, variant):
    r = records[("support_draft_completes", variant)]
    assert r.outcome == "completed" and r.outcome_rule == 8
    assert r.counters.model_requests_observed == 3 and r.counters.tool_executions == 2
    # every tool result reached the server with its scripted id: the call id mapping is exact
    assert {e.call_id for e in r.ledger if e.kind == "call"} == {"ticket_1", "policy_1"}
    assert r.requests[0].tools_offered == ["mcp__loopbench__get_ticket", "mcp__loopbench__lookup_policy"]
    assert r.native["settings"]["tools"] == [] and r.native["settings"]["setting_sources"] == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_approval_pause_keeps_the_pending_call(records, variant):
    r = records[("approval_pause", variant)]
    assert r.outcome == "awaiting_approval"
    assert r.counters.tool_executions_by_tool.get("send_reply", 0) == 0
    (pending,) = r.pauses[-1].pending
    assert pending.tool == "send_reply" and pending.call_id == "send_1"
    assert pending.args["to"] == "ana@example.com" and "POL-7" in pending.args["body"]
    assert r.counters.authorize_events_by_tool["send_reply"] == 1


def test_approval_pause_is_a_deferred_tool_use_with_a_snapshot(suite):
    records, root = suite
    r = records[("approval_pause", "default")]
    signals = r.native["signals"]
    assert signals["terminal_reason"] == "tool_deferred" and signals["ended"] == "paused"
    snapshot = root / "runs" / r.run_id / "segment0" / "snapshot"
    session = json.loads((snapshot / "session.json").read_text())
    assert list((snapshot / "config" / "projects").glob(f"*/{session['session_id']}.jsonl"))


def test_can_use_tool_pause_does_not_survive_a_restart(records):
    r = records[("approval_pause", "can-use-tool")]
    assert r.native["signals"]["terminal_reason"] == "aborted_tools"
    assert any("pause does not survive a restart" in n for n in r.native["notes"])


def test_approved_resume_runs_in_another_process_and_sends_once(records):
    r = records[("approval_approved_resume", "default")]
    assert r.outcome == "completed"
    assert [s.kind for s in r.pauses] == ["run", "resume"]
    assert r.pauses[0].worker_pid != r.pauses[1].worker_pid
    assert r.counters.tool_executions_by_tool["send_reply"] == 1 and r.counters.resumes == 1
    # routing by API key survives the resume: the resumed CLI's requests are in this run's log
    assert r.counters.model_requests_observed == 4
    last = r.requests[-1]
    assert {t.call_id: t.status for t in last.tool_results}.get("send_1") == "receipt"
    assert last.t_s > r.pauses[0].elapsed_s
    # the approval point ran again in the resumed process (defer, then allow)
    assert r.counters.authorize_events_by_tool["send_reply"] == 2
    assert [e.decision for e in r.ledger if e.kind == "authorize"] == ["approval required: deferred", "approved"]


def test_approved_call_runs_in_process_with_can_use_tool(records):
    r = records[("approval_approved_resume", "can-use-tool")]
    assert r.outcome == "completed" and r.counters.resumes == 0
    assert r.counters.tool_executions_by_tool["send_reply"] == 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_max_turns_is_the_step_limit(records, variant):
    r = records[("runaway_step_limit", variant)]
    assert r.outcome == "limit_steps"
    signals = r.native["signals"]
    assert signals["subtype"] == "error_max_turns" and signals["limit_signal"] == "raised"
    assert signals["exception_type"] == "ResultError"  # query() raises after the error result
    assert r.limits["max_model_calls"]["native"] == "max_turns=8"
    assert r.counters.model_requests_observed == 8
    assert r.counters.runtime_step_unit.startswith("turn")


@pytest.mark.parametrize("variant", VARIANTS)
def test_budget_is_the_cost_limit(records, variant):
    r = records[("cost_budget", variant)]
    assert r.outcome == "limit_budget"
    assert r.native["signals"]["subtype"] == "error_max_budget_usd"
    assert r.limits["max_cost_usd"]["native"] == "max_budget_usd=0.05"
    assert r.unsupported == []


def test_token_budget_and_deadline_are_unsupported_not_dropped(records):
    assert records[("token_budget", "default")].unsupported == ["max_total_tokens"]
    assert records[("deadline_slow_model", "default")].unsupported == ["deadline_s"]
    assert records[("deadline_slow_tool", "default")].unsupported == ["deadline_s"]


def test_reported_cost_equals_the_served_usage_priced_by_the_table(records):
    """The CLI prices claude-sonnet-4-5 like harness/prices.py: its total_cost_usd (summed per segment) equals the
    served usage × the price table, retries and resumes included."""
    compared = 0
    for key, r in records.items():
        if r.counters.cost_usd_reported is None:
            continue
        served = sum(cost_usd(q.model or "claude-sonnet-4-5", q.input_tokens, q.output_tokens) or 0
                     for q in r.requests if q.status == 200)
        assert r.counters.cost_usd_reported == pytest.approx(served, abs=1e-9), key
        compared += 1
    assert compared >= len(records) - 2  # model_fatal_error reports no cost


def test_hidden_retries_are_visible(records):
    r = records[("model_transient_error", "default")]
    assert r.outcome == "completed"
    assert r.counters.model_requests_observed == 5 and r.counters.model_retries_observed == 2
    assert r.counters.model_requests_reported == 3


@pytest.mark.parametrize("variant", VARIANTS)
def test_model_fatal_error_fails_after_the_cli_retries(records, variant):
    r = records[(SLOW, variant)]
    assert r.outcome == "failed"
    assert r.native["signals"]["failure"] == "model"
    assert r.counters.model_requests_observed >= 2 and r.counters.model_retries_observed >= 1


def test_denied_action_never_runs_the_tool(records):
    for variant in VARIANTS:
        r = records[("denied_action", variant)]
        assert r.counters.tool_executions_by_tool.get("delete_account", 0) == 0
        assert r.counters.authorize_events_by_tool.get("delete_account", 0) >= 1
    assert records[("denied_action", "can-use-tool")].outcome == "denied"
    default = records[("denied_action", "default")]
    assert default.native["signals"]["extra"]["permission_denials"][0]["tool_name"].endswith("__delete_account")


def test_resume_twice_is_measured(records):
    r = records[("resume_twice", "default")]
    assert r.counters.resumes == 2
    assert r.counters.tool_executions_by_tool["send_reply"] >= 1
    assert r.counters.duplicate_effects == r.counters.tool_executions_by_tool["send_reply"] - 1


def test_nothing_written_to_home(suite):
    _, root = suite
    home = Path(os.path.expanduser("~"))
    marker = root.name  # every cwd and config dir of the suite lies under root; the CLI names dirs after the cwd
    for place in (home / ".cache" / "claude-cli-nodejs", home / ".claude" / "projects"):
        if place.exists():
            assert not [p.name for p in place.iterdir() if marker in p.name], place
