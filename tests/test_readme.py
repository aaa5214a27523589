"""The README's excerpt of the published matrix says what `reports/published/results.jsonl` says.

`python -m tests.test_readme` prints the excerpt from the published records, to paste after `make publish`.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from loopbench.harness.adapter import BUILTIN
from loopbench.harness.record import column_of
from loopbench.reports.cells import cells
from loopbench.reports.load import load_records

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PUBLISHED = ROOT / "reports" / "published" / "results.jsonl"
MARK = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘", "error": "✖"}
# README column -> (framework, variant): each framework's default idiom, by the report's own column names (the
# report has every variant)
COLUMNS = {column_of(f, "default"): (f, "default") for f in sorted(BUILTIN)}
ROWS = ("runaway_step_limit", "default_limits", "token_budget", "cost_budget", "deadline_slow_model",
        "approval_approved_resume", "resume_twice", "resume_keeps_allowance", "denied_action", "tool_transient_error",
        "write_timeout_unknown", "model_transient_error", "model_outage")


def _published() -> dict[tuple[str, str, str], str]:
    out = {}
    for c in cells(load_records(PUBLISHED)):
        r = c.rep
        requests = r.counters.model_requests_observed
        out[(r.scenario, r.framework, r.variant)] = f"{MARK.get(r.verdict, '?')} {r.outcome} ({requests} req)"
    return out


def excerpt() -> str:
    published = _published()
    lines = ["| scenario | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for sid in ROWS:
        lines.append(f"| {sid} | " + " | ".join(published[(sid, *fv)] for fv in COLUMNS.values()) + " |")
    return "\n".join(lines)


def _readme_rows() -> dict[str, list[str]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scenario | claude-agent-sdk |"))
    cols = [c.strip() for c in lines[start].strip("|").split("|")][1:]
    assert cols == list(COLUMNS), cols
    rows = {}
    for line in lines[start + 2:]:  # the table's rows, up to its end
        m = re.match(r"\| ([a-z_]+) \| (.+) \|$", line)
        if not m:
            break
        rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_readme_excerpt_matches_the_published_records():
    published = _published()
    rows = _readme_rows()
    assert set(ROWS) <= set(rows), sorted(set(ROWS) - set(rows))
    for sid, shown in rows.items():
        expected = [published[(sid, *fv)] for fv in COLUMNS.values()]
        assert shown == expected, sid


def test_the_excerpt_check_can_fail(tmp_path, monkeypatch):
    """A changed cell in the README is caught."""
    changed = README.read_text(encoding="utf-8").replace("| denied_action | ✓", "| denied_action | ⚠", 1)
    fake = tmp_path / "README.md"
    fake.write_text(changed, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "README", fake)
    try:
        test_readme_excerpt_matches_the_published_records()
    except AssertionError:
        return
    raise AssertionError("a changed README cell was not caught")


def test_the_bench_summary_is_written_from_its_results() -> None:
    """reports/bench/README.md says only what `loopbench bench` writes from the results.json beside it."""
    import json

    from loopbench.bench import markdown

    here = ROOT / "reports" / "bench"
    assert (here / "README.md").read_text() == markdown(json.loads((here / "results.json").read_text()))


def test_the_readme_lists_every_outcome_and_verdict():
    """The README's "Outcomes and verdicts" names every value of the record's vocabulary."""
    from typing import get_args

    from loopbench.harness.record import Outcome, Verdict

    text = README.read_text(encoding="utf-8")
    part = text[text.index("## Outcomes and verdicts"):text.index("## The published matrix, condensed")]
    assert [o for o in get_args(Outcome) if f"`{o}`" not in part] == []
    assert [v for v in get_args(Verdict) if f"`{v}`" not in part] == []


# ---- the README's findings, each sentence's numbers re-derived from the published records
DEFAULTS = list(COLUMNS)


def _rep(scenario: str, framework: str, variant: str = "default"):
    return _cells()[(scenario, framework, variant)]


@cache
def _cells() -> dict[tuple[str, str, str], Any]:
    return {c.key: c.rep for c in cells(load_records(PUBLISHED))}


def _counter(scenario: str, framework: str, name: str, variant: str = "default"):
    return _rep(scenario, framework, variant).counters.get(name)


def test_the_findings_on_limits_hold():
    # "all seven stop a runaway loop at 8 requests; all but LangGraph still run the tool calls of the 8th response"
    assert {f: _counter("runaway_step_limit", f, "model_requests_observed") for f in DEFAULTS} == dict.fromkeys(DEFAULTS, 8)
    assert {f for f in DEFAULTS if _counter("runaway_step_limit", f, "tool_executions") == 8} == set(DEFAULTS) - {"langgraph"}
    assert _counter("runaway_step_limit", "langgraph", "tool_executions") == 7
    # defaults: Vercel 1 step, Mastra 5, OpenAI Agents 10 turns, pydantic-ai 50 requests; the others capped at 50
    stops = {f: (_rep("default_limits", f).outcome, _counter("default_limits", f, "model_requests_observed"))
             for f in DEFAULTS}
    assert {f: n for f, (o, n) in stops.items() if o == "limit_steps"} == {
        "vercel-ai": 1, "mastra": 5, "openai-agents": 10, "pydantic-ai": 50}
    assert {f for f, (o, _) in stops.items() if o == "capped"} == {"claude-agent-sdk", "langgraph", "google-adk"}
    # token budget: only pydantic-ai, stopped at 31,500 against 25,000
    r = _rep("token_budget", "pydantic-ai")
    assert (r.outcome, r.counters.total_tokens_observed, r.limits["max_total_tokens"].neutral) == (
        "limit_budget", 31_500, 25_000)
    assert {f for f in DEFAULTS if _rep("token_budget", f).outcome == "limit_budget"} == {"pydantic-ai"}
    # cost budget: the Claude Agent SDK and pydantic-ai, both past it (0.063 against 0.05); openai-chat unenforced
    for f in ("claude-agent-sdk", "pydantic-ai"):
        r = _rep("cost_budget", f)
        assert (r.outcome, r.counters.cost_usd_observed, r.limits["max_cost_usd"].neutral) == (
            "limit_budget", 0.063, 0.05)
    assert {f for f in DEFAULTS if _rep("cost_budget", f).outcome == "limit_budget"} == {"claude-agent-sdk",
                                                                                         "pydantic-ai"}
    assert _rep("cost_budget", "pydantic-ai", "openai-chat").outcome == "completed"
    # deadlines: Vercel, Mastra and pydantic-ai stop at 3.5 s (slow model) and 2 s (slow tool); the others finish
    stopped = {"vercel-ai", "mastra", "pydantic-ai"}
    for sid, deadline in (("deadline_slow_model", 3.5), ("deadline_slow_tool", 2)):
        assert {f for f in DEFAULTS if _rep(sid, f).outcome == "limit_deadline"} == stopped, sid
        assert {f for f in DEFAULTS if _rep(sid, f).outcome == "completed"} == set(DEFAULTS) - stopped, sid
        assert all(_rep(sid, f).limits["deadline_s"].neutral == deadline for f in stopped)


def test_the_findings_on_writes_resumes_and_rejections_hold():
    twice = {f for f in DEFAULTS if _counter("write_timeout_unknown", f, "effects_by_tool.send_reply") == 2}
    assert twice == set(DEFAULTS) - {"langgraph", "google-adk"} and len(twice) == 5
    assert all(_rep("write_timeout_unknown", f).outcome == "failed" for f in ("langgraph", "google-adk"))
    sent = {f: _counter("resume_twice", f, "tool_executions_by_tool.send_reply") for f in DEFAULTS}
    assert {f for f, n in sent.items() if n == 2} == {"openai-agents", "pydantic-ai", "vercel-ai"}
    assert {f: _rep("resume_twice", f).outcome for f in ("langgraph", "google-adk", "mastra", "claude-agent-sdk")} == {
        "langgraph": "completed", "google-adk": "completed", "mastra": "failed", "claude-agent-sdk": "hung"}
    allowance = {f: _counter("resume_keeps_allowance", f, "model_requests_observed") for f in DEFAULTS}
    assert {f for f, n in allowance.items() if n == 4} == {"openai-agents"}
    assert set(allowance.values()) - {4} <= {6, 7}
    assert _counter("resume_keeps_allowance", "pydantic-ai", "model_requests_observed", "conversation") == 4
    assert all(_counter("approval_rejected_resume", f, "tool_executions_by_tool.post_to_portal") == 1
               for f in DEFAULTS)


def test_the_findings_on_failures_hold():
    transient = {f for f in DEFAULTS if _rep("tool_transient_error", f).outcome == "failed"}
    assert transient == {"langgraph", "google-adk", "pydantic-ai"}
    assert {_rep("tool_transient_error", f).outcome for f in set(DEFAULTS) - transient} == {"completed"}
    fatal = {f: _rep("tool_fatal_error", f).outcome for f in DEFAULTS}
    assert {f for f, o in fatal.items() if o == "failed"} == {"langgraph", "google-adk"}
    assert {o for f, o in fatal.items() if f not in ("langgraph", "google-adk")} == {"incomplete"}
    assert _rep("tool_fatal_error", "pydantic-ai", "raise-fatal").outcome == "failed"
    # model errors: ADK's Gemini class and Mastra do not retry; the clients of the others give 3 in an outage
    for f in ("google-adk", "mastra"):
        assert (_rep("model_transient_error", f).outcome, _counter("model_transient_error", f,
                                                                   "model_requests_observed")) == ("failed", 1)
        assert _counter("model_outage", f, "model_requests_observed") == 1
    assert {f: _counter("model_outage", f, "model_requests_observed") for f in DEFAULTS
            if f not in ("google-adk", "mastra", "claude-agent-sdk")} == dict.fromkeys(
        ["langgraph", "openai-agents", "pydantic-ai", "vercel-ai"], 3)
    assert _counter("model_outage", "google-adk", "model_requests_observed", "anthropic") == 3
    assert _counter("model_outage", "claude-agent-sdk", "model_requests_observed") == 11
    # "report 3 of 5": OpenAI Agents, LangGraph, pydantic-ai and the Vercel AI SDK; the Claude Agent SDK all 5
    reported = {f: (_counter("model_transient_error", f, "model_requests_reported"),
                    _counter("model_transient_error", f, "model_requests_observed")) for f in DEFAULTS}
    assert {f for f, v in reported.items() if v == (3, 5)} == {"openai-agents", "langgraph", "pydantic-ai",
                                                                "vercel-ai"}
    assert reported["claude-agent-sdk"] == (5, 5)


def test_the_findings_on_stalls_and_context_hold():
    assert all((_rep("repeated_empty_search", f).outcome, _counter("repeated_empty_search", f,
                                                                   "model_requests_observed")) == ("limit_steps", 8)
               for f in DEFAULTS)
    growth = {f: _counter("huge_tool_output", f, "max_request_growth_bytes") for f in DEFAULTS}
    assert all(208_000 <= g <= 208_800 for f, g in growth.items() if f != "claude-agent-sdk"), growth
    assert 1_800 <= growth["claude-agent-sdk"] <= 2_000 and growth["claude-agent-sdk"] <= 16_384


def test_the_findings_on_streaming_hold():
    from loopbench.reports.streaming import streamed_vs_not

    pairs, differing = streamed_vs_not(load_records(PUBLISHED))
    assert set(pairs["framework"]) == set(DEFAULTS) - {"claude-agent-sdk"}  # its SDK streams in every idiom
    assert set(pairs["scenarios compared"]) == {48}
    # the same requests, tool runs and final text but in two scenarios: a cut stream, a cancelled task
    reported = {"requests reported", "input tokens reported", "output tokens reported", "cost reported $",
                "input tokens served", "output tokens served",  # a broken stream: the usage of its whole events
                "final text"}  # what the run says it answered (the Vercel streams', below)
    behaved = {(v, s) for v, s, text in zip(differing["streamed"], differing["scenario"], differing["differences"],
                                            strict=True)
               if {w.split(":")[0] for w in text.split("; ")} - reported}
    assert behaved == {("openai-agents:stream", "wire_cut_response"), ("langgraph:stream-messages", "wire_cut_response"),
                       ("vercel-ai:stream-text", "wire_cut_response"),
                       ("vercel-ai:tool-loop-agent-stream", "wire_cut_response"),
                       ("openai-agents:stream", "cancel_then_resume")}
    by = {f: sorted(zip(d["streamed"], d["scenario"], d["differences"], strict=True))
          for f, d in differing.groupby("framework")}
    # pydantic-ai: null from `run`, a count from the event stream, in 10 scenarios
    assert len(by["pydantic-ai"]) == 11 and all(d.startswith("requests reported: null → ") for *_, d in by["pydantic-ai"])
    # the Vercel AI SDK: no step from either stream where a deadline or a cancel stops a tool
    no_step = {s for v, s, d in by["vercel-ai"] if d.startswith("requests reported: 1 → null")}
    assert no_step == {"deadline_slow_tool", "subagent_deadline", "cancel_during_tool"}
    # the Vercel streams keep a rejected structured answer's text; generateText throws with none
    text = {(v, s) for v, s, d in by["vercel-ai"] if d.startswith("final text: none → ")}
    assert text == {(v, s) for v in ("vercel-ai:stream-text", "vercel-ai:tool-loop-agent-stream")
                    for s in ("output_check_rejects", "output_never_valid")}


def _by_agent(scenario: str, framework: str, variant: str = "default") -> dict[str, int]:
    return _rep(scenario, framework, variant).counters.get("model_requests_by_agent")


def test_the_findings_on_sub_agents_hold():
    from loopbench.reports.agents import coverage

    # whose tokens: 2 of 4 requests the child's; the tree in three, the main agent's in four
    assert all(sum(_by_agent("subagent_usage", f).values()) == 4 and _by_agent("subagent_usage", f)["billing"] == 2
               for f in DEFAULTS)
    covers = {f: coverage(_rep("subagent_usage", f)) for f in DEFAULTS}
    assert {f for f, c in covers.items() if c == "tree"} == {"openai-agents", "pydantic-ai", "claude-agent-sdk"}
    assert {f for f, c in covers.items() if c == "main loop"} == {"google-adk", "langgraph", "vercel-ai", "mastra"}
    assert coverage(_rep("subagent_usage", "pydantic-ai", "delegate-no-usage")) == "main loop"
    claude = _rep("subagent_usage", "claude-agent-sdk")
    assert claude.native.signals.extra["usage"]["input_tokens"] == claude.counters.get("input_tokens_by_agent")["main"]
    # the runaway child: nobody stops at 8; each stop and its request count
    runaway = {f: (_rep("subagent_runaway", f).outcome, _by_agent("subagent_runaway", f)) for f in DEFAULTS}
    assert all(sum(n.values()) != 8 for _, n in runaway.values())
    assert {f: sum(n.values()) for f, (_, n) in runaway.items() if f not in ("claude-agent-sdk", "langgraph")} == {
        "google-adk": 9, "pydantic-ai": 50, "openai-agents": 12, "mastra": 7, "vercel-ai": 22}
    assert runaway["google-adk"][1]["research"] == 8 and runaway["openai-agents"][1]["research"] == 10
    assert runaway["mastra"][1]["research"] == 5 and runaway["vercel-ai"][1]["research"] == 20
    assert (runaway["google-adk"][0], runaway["pydantic-ai"][0]) == ("limit_steps", "limit_steps")
    assert {runaway[f][0] for f in ("claude-agent-sdk", "langgraph")} == {"capped"}
    # the token budget: only pydantic-ai, at 5,500 against 4,000; the deadline: the three with one
    budget = {f: _rep("subagent_token_budget", f) for f in DEFAULTS}
    assert {f for f, r in budget.items() if r.outcome == "limit_budget"} == {"pydantic-ai"}
    assert (budget["pydantic-ai"].counters.total_tokens_observed,
            budget["pydantic-ai"].limits["max_total_tokens"].neutral) == (5_500, 4_000)
    deadline = {f: _rep("subagent_deadline", f).outcome for f in DEFAULTS}
    assert {f for f, o in deadline.items() if o == "limit_deadline"} == {"pydantic-ai", "vercel-ai", "mastra"}
    assert {o for f, o in deadline.items() if f not in ("pydantic-ai", "vercel-ai", "mastra")} == {"completed"}
    assert all(_rep("subagent_deadline", f).counters.elapsed_s > 5 for f, o in deadline.items() if o == "completed")
    # the approval inside the child: a pause and a resume that continues it, or an incomplete run
    approval = {f: _rep("subagent_approval", f) for f in DEFAULTS}
    paused = {f for f, r in approval.items() if r.counters.resumes == 1}
    assert paused == {"openai-agents", "langgraph", "mastra"}
    assert all(approval[f].outcome == "completed" and approval[f].counters.get("tool_executions_by_tool") == {
        "lookup_refund": 1, "issue_refund": 1} for f in paused)
    assert all(r.outcome == "incomplete" and "issue_refund" not in r.counters.get("tool_executions_by_tool")
               for f, r in approval.items() if f not in paused)
    # the child's model failing for good
    failure = {f: _rep("subagent_model_failure", f).outcome for f in DEFAULTS}
    assert {f for f, o in failure.items() if o == "failed"} == {"langgraph", "google-adk", "pydantic-ai"}
    assert {o for f, o in failure.items() if f not in ("langgraph", "google-adk", "pydantic-ai")} == {"incomplete"}


def test_the_speed_section_is_the_committed_bench_results_in_words():
    """The README's speed section is `readme_speed` of reports/bench/results.json, word for word (its line breaks
    aside): a new `make bench` means pasting `python -m tests.test_readme speed`."""
    import json

    from loopbench.bench.summary import readme_speed

    results = json.loads((ROOT / "reports" / "bench" / "results.json").read_text())
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]
    assert " ".join(section.split()) == " ".join(readme_speed(results).split())
    assert set(results["frameworks"]) == set(COLUMNS), "the bench covers every framework"


if __name__ == "__main__":  # `python -m tests.test_readme [speed]`: the text to paste after `make publish` / `make bench`
    if sys.argv[1:] == ["answers"]:
        from loopbench.reports.answers import answers_markdown

        print(answers_markdown(load_records(PUBLISHED)))
    elif sys.argv[1:] == ["speed"]:
        import json

        from loopbench.bench.summary import readme_speed

        print(readme_speed(json.loads((ROOT / "reports" / "bench" / "results.json").read_text())))
    else:
        print(excerpt())


def test_the_findings_on_cancellation_hold():
    # during a tool: six stop at once; Mastra returns normally, without onAbort (MA09 refuted)
    during_tool = {f: _rep("cancel_during_tool", f).outcome for f in DEFAULTS}
    assert {f for f, o in during_tool.items() if o == "cancelled"} == set(DEFAULTS) - {"mastra"}
    assert during_tool["mastra"] == "incomplete"
    assert all(_rep("cancel_during_model", f).outcome == "cancelled" for f in DEFAULTS)
    # Runner.run's cancelled task leaves no usage; its streamed run reports the finished response
    assert _counter("cancel_during_tool", "openai-agents", "model_requests_reported") is None
    assert _counter("cancel_during_tool", "openai-agents", "model_requests_reported", "stream") == 1
    # continued in a new process: five finish without posting again; openai-agents' Runner.run and Mastra do not
    resumed = {f: (_rep("cancel_then_resume", f).outcome,
                   _counter("cancel_then_resume", f, "tool_executions_by_tool.post_to_portal")) for f in DEFAULTS}
    finished = {"claude-agent-sdk", "langgraph", "google-adk", "pydantic-ai", "vercel-ai"}
    assert {f for f, v in resumed.items() if v == ("completed", 1)} == finished
    assert resumed["openai-agents"] == ("cancelled", 1) and _rep("cancel_then_resume", "openai-agents").counters.resumes == 0
    assert _rep("cancel_then_resume", "openai-agents", "stream").outcome == "completed"
    assert resumed["mastra"][0] == "incomplete" and _rep("cancel_then_resume", "mastra").counters.resumes == 0


def _pending_at_pauses(r) -> list[int]:
    return [len(s.pending) for s in r.segments if s.outcome_signals.ended == "paused"]


def test_the_findings_on_parallel_approvals_and_after_a_resume_hold():
    def ran(f: str, tool: str, sid: str = "parallel_approvals_split") -> int:
        return _counter(sid, f, f"tool_executions_by_tool.{tool}")

    once = {"openai-agents", "langgraph", "pydantic-ai", "google-adk", "vercel-ai"}
    for f in once:
        r = _rep("parallel_approvals_split", f)
        assert (r.outcome, ran(f, "send_reply"), ran(f, "issue_refund")) == ("completed", 1, 0), f
        assert _pending_at_pauses(r) == [2], f
    r = _rep("parallel_approvals_split", "mastra")
    assert (r.outcome, ran("mastra", "send_reply"), ran("mastra", "issue_refund")) == ("awaiting_approval", 1, 0)
    assert _pending_at_pauses(r) == [1, 1]
    r = _rep("parallel_approvals_split", "claude-agent-sdk")
    assert (r.outcome, ran("claude-agent-sdk", "send_reply"), ran("claude-agent-sdk", "issue_refund")) == (
        "incomplete", 0, 0)
    # a deadline after the resume: pydantic-ai, Vercel and Mastra stop at 3 s; the other four finish
    stops = {f for f in DEFAULTS if _rep("resume_then_deadline", f).outcome == "limit_deadline"}
    assert stops == {"pydantic-ai", "vercel-ai", "mastra"}
    assert {_rep("resume_then_deadline", f).outcome for f in set(DEFAULTS) - stops} == {"completed"}
    assert _rep("resume_then_deadline", "mastra").limits["deadline_s"].neutral == 3
    # a fatal lookup after the resume: LangGraph and ADK fail; the other five look up again and answer
    fatal = {f: _rep("resume_then_tool_fatal", f).outcome for f in DEFAULTS}
    assert {f for f, o in fatal.items() if o == "failed"} == {"langgraph", "google-adk"}
    assert all(o == "completed" and ran(f, "lookup_refund", "resume_then_tool_fatal") == 2
               for f, o in fatal.items() if f not in ("langgraph", "google-adk"))
    # the approved write once in every case; the rejected refund's approved fallback reply once
    assert all(ran(f, "send_reply", "resume_then_deadline") == 1 and ran(f, "issue_refund", "resume_then_tool_fatal")
               == 1 for f in DEFAULTS)
    assert all((_rep("rejection_fallback_write", f).outcome, ran(f, "send_reply", "rejection_fallback_write"),
                ran(f, "issue_refund", "rejection_fallback_write")) == ("completed", 1, 0) for f in DEFAULTS)


def test_the_findings_on_the_hostile_wire_hold():
    # a 429 with Retry-After: 2, waited out as told (2.0-2.5 s) where the client retries; ADK and Mastra fail after 1
    waited = {f: _rep("wire_retry_after", f).counters for f in DEFAULTS}
    for f in ("google-adk", "mastra"):
        assert (_rep("wire_retry_after", f).outcome, waited[f].model_requests_observed) == ("failed", 1)
    for f in set(DEFAULTS) - {"google-adk", "mastra"}:
        assert _rep("wire_retry_after", f).outcome == "completed", f
        assert 2.0 <= waited[f].retry_after_wait_min_s <= waited[f].retry_after_wait_max_s <= 2.5, f
    # a body that is not JSON: failed after 1 request in six; the Claude CLI retries it
    bad = {f: (_rep("wire_malformed_body", f).outcome, _counter("wire_malformed_body", f, "model_requests_observed"))
           for f in DEFAULTS}
    assert {f for f, v in bad.items() if v == ("failed", 1)} == set(DEFAULTS) - {"claude-agent-sdk"}
    assert bad["claude-agent-sdk"][0] == "completed"
    assert {_rep("wire_malformed_body", f).native.signals.exception_type for f in
            ("openai-agents", "langgraph", "google-adk")} == {"JSONDecodeError"}
    # a cut answer: a plain body is retried by openai, anthropic and Vercel; ADK and Mastra fail; pydantic-ai's
    # Anthropic model streams, and a cut stream is not retried; the Claude CLI retries its stream
    cut = {f: _rep("wire_cut_response", f) for f in DEFAULTS}
    assert {f for f, r in cut.items() if r.outcome == "completed"} == {"openai-agents", "langgraph", "vercel-ai",
                                                                        "claude-agent-sdk"}
    assert {f for f, r in cut.items() if r.outcome == "failed"} == {"google-adk", "mastra", "pydantic-ai"}
    assert [q.stream for q in cut["pydantic-ai"].requests] == [True]
    assert all(_rep("wire_cut_response", f, v).outcome == "failed" for f, v in (
        ("openai-agents", "stream"), ("langgraph", "stream-messages"), ("vercel-ai", "stream-text")))
    # an unknown finish reason: Vercel stops after that step without running the call; the others go on
    unknown = {f: _rep("wire_unknown_finish_reason", f) for f in DEFAULTS}
    assert unknown["vercel-ai"].outcome == "incomplete" and unknown["vercel-ai"].counters.tool_executions == 0
    assert {f for f, r in unknown.items() if r.outcome == "completed"} == set(DEFAULTS) - {"vercel-ai"}


def test_the_chooser_table_is_the_published_answers():
    """The README's "Which framework?" table is `answers_markdown` of the published records, row for row: a
    changed answer means pasting `python -m tests.test_readme answers` after `make publish`."""
    from loopbench.reports.answers import answers_markdown

    table = answers_markdown(load_records(PUBLISHED))
    assert table and table in README.read_text(encoding="utf-8")


def test_the_chooser_table_check_can_fail(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    assert "✓ its default limit, at 10 requests" in text
    fake = tmp_path / "README.md"
    fake.write_text(text.replace("✓ its default limit, at 10 requests", "✓ its default limit, at 9 requests", 1),
                    encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "README", fake)
    try:
        test_the_chooser_table_is_the_published_answers()
    except AssertionError:
        return
    raise AssertionError("a changed answer in the README was not caught")


def test_the_headline_findings_hold():
    # four stop a runaway loop by default, at their own limits; the other three run to the cap
    stops = {f: (_rep("default_limits", f).outcome, _counter("default_limits", f, "model_requests_observed"))
             for f in DEFAULTS}
    assert {f: n for f, (o, n) in stops.items() if o == "limit_steps"} == {
        "openai-agents": 10, "pydantic-ai": 50, "mastra": 5, "vercel-ai": 1}
    # told to stop at 8, all seven do
    assert all(_rep("runaway_step_limit", f).outcome == "limit_steps" and _counter(
        "runaway_step_limit", f, "model_requests_observed") == 8 for f in DEFAULTS)
    # a rejection stops none; the other write reaches the customer
    assert all(_rep("approval_rejected_resume", f).outcome != "denied" for f in DEFAULTS)
    # writes twice: five after a timed-out send, three on a second resume
    assert sum(_counter("write_timeout_unknown", f, "effects_by_tool.send_reply") == 2 for f in DEFAULTS) == 5
    assert sum(_counter("resume_twice", f, "tool_executions_by_tool.send_reply") == 2 for f in DEFAULTS) == 3
    # one token budget, three deadlines; no stall detection
    assert sum(_rep("token_budget", f).outcome == "limit_budget" for f in DEFAULTS) == 1
    assert sum(_rep("deadline_slow_model", f).outcome == "limit_deadline" for f in DEFAULTS) == 3
    assert not any(_rep("repeated_empty_search", f).outcome == "stalled" for f in DEFAULTS)


def test_the_findings_on_structured_answers_hold():
    corrects = {"claude-agent-sdk", "google-adk", "pydantic-ai"}
    constrained = set(DEFAULTS) - corrects
    for f in corrects:  # the rejected answer goes back; the correction completes in 3 requests
        r = _rep("output_check_rejects", f)
        assert (r.outcome, r.counters.model_requests_observed, r.counters.structured_answers_observed) == (
            "completed", 3, 2), f
    for f in constrained:  # a constrained answer: the schema-breaking one never comes; the check's rejection fails
        r = _rep("output_invalid_then_valid", f)
        assert (r.outcome, r.counters.model_requests_observed) == ("completed", 2), f
        r = _rep("output_check_rejects", f)
        assert (r.outcome, r.counters.model_requests_observed) == ("failed", 2), f
    assert {_rep("output_check_rejects", f).native.signals.exception_type for f in
            ("openai-agents", "langgraph", "vercel-ai")} == {"ModelBehaviorError", "StructuredOutputValidationError",
                                                            "AI_NoObjectGeneratedError"}
    # never valid under a 4-call limit: Claude and ADK stop at the limit, pydantic-ai at its output budget (3)
    never = {f: _rep("output_never_valid", f) for f in DEFAULTS}
    assert {f for f, r in never.items() if r.outcome == "limit_steps"} == {"claude-agent-sdk", "google-adk"}
    assert all(never[f].counters.model_requests_observed == 4 for f in ("claude-agent-sdk", "google-adk"))
    assert (never["pydantic-ai"].outcome, never["pydantic-ai"].counters.model_requests_observed) == ("failed", 3)
    assert all((never[f].outcome, never[f].counters.model_requests_observed) == ("failed", 2) for f in constrained)
    # LangGraph's ToolStrategy idiom corrects too, and goes past the 4-call limit
    tool = _rep("output_never_valid", "langgraph", "tool-strategy")
    assert (tool.outcome, tool.counters.model_requests_observed) == ("limit_steps", 6)
    assert _rep("output_check_rejects", "langgraph", "tool-strategy").outcome == "completed"


def test_the_finding_on_guarded_mode_holds():
    """The guarded variants' finding: cells conforming guarded and natively, over every framework, and how many
    of those still deviating name a missing hook, are outside the policy, or are the guard's own gap."""
    from loopbench.reports.guarded import native_vs_guarded

    pairs, remaining, _ = native_vs_guarded(load_records(PUBLISHED))
    assert len(pairs) == len(BUILTIN)
    total, guarded, native = (int(pairs[k].sum()) for k in ("scenarios compared", "guarded conforms",
                                                            "native conforms"))
    # a cell counts under its first reason in this order: a missing hook, the guard's own gap, a restraint the
    # framework applied itself, outside the policy
    kinds = {"hook": 0, "outside": 0, "restraint": 0, "gap": 0}
    for why in remaining["why"]:
        parts = why.split("; ")
        kind = ("hook" if any(p.startswith("missing hook") for p in parts)
                else "gap" if any(p.startswith("the framework has") for p in parts)
                else "restraint" if any(p.startswith("beyond a restraint") for p in parts) else "outside")
        kinds[kind] += 1
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert (f"{guarded} of the {total} guarded cells conform, against {native} of the same {total} natively"
            in text), (guarded, native, total)
    assert (f"of the {total - guarded} still deviating, {kinds['hook']} name a hook the framework lacks, "
            f"{kinds['restraint']} are a framework's own stop short of the ideal that no hook can undo, "
            f"{kinds['outside']} are outside the policy and {kinds['gap']} are gaps of the guard's own") in text, kinds
    per = ", ".join(f"{r['framework']} {r['guarded conforms']}/{r['scenarios compared']}"
                    for _, r in pairs.iterrows())
    assert f"({per})" in text, per
