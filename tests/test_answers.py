"""The chooser's view (reports/answers.py): each answer derived again, here, from the published records' raw JSON
(not through the module's rules), and compared with what the report says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopbench.reports.answers import QUESTIONS, answers, answers_frame
from loopbench.reports.load import load_records

TIER = "unit"

PUBLISHED = Path(__file__).resolve().parent.parent / "reports" / "published" / "results.jsonl"


@pytest.fixture(scope="module")
def raw() -> dict[tuple[str, str], dict[str, Any]]:
    """(scenario, framework) -> the default idiom's first record, as JSON."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for line in PUBLISHED.read_text().splitlines():
        r = json.loads(line)
        if r["variant"] == "default":
            out.setdefault((r["scenario"], r["framework"]), r)
    return out


@pytest.fixture(scope="module")
def said() -> dict[tuple[str, str], Any]:
    return {(a.question.id, a.framework): a for a in answers(load_records(PUBLISHED))}


def _q(qid: str) -> str:
    return next(q.scenario for q in QUESTIONS if q.id == qid)


def test_every_framework_answers_every_question_whose_scenario_it_ran(raw, said):
    frameworks = {f for _, f in raw}
    for q in QUESTIONS:
        ran = {f for f in frameworks if (q.scenario, f) in raw and raw[(q.scenario, f)]["outcome"] != "not_run"}
        assert {f for (qid, f) in said if qid == q.id} == ran, q.id


def test_a_runaway_loop_is_stopped_by_its_default_or_by_nothing(raw, said):
    for (qid, f), a in said.items():
        if qid != "runaway_default":
            continue
        r = raw[(_q(qid), f)]
        n = r["counters"]["model_requests_observed"]
        assert (r["outcome"] == "capped") == a.text.startswith("nothing"), (f, a.text)
        assert f"{n} request" in a.text and a.run_id == r["run_id"]


def test_a_step_limit_answer_carries_the_observed_counts(raw, said):
    for (qid, f), a in said.items():
        if qid == "step_limit":
            c = raw[(_q(qid), f)]["counters"]
            assert f"at {c['model_requests_observed']} requests" in a.text
            assert f"{c['tool_executions']} tool runs" in a.text


def test_budget_and_deadline_answers_say_yes_only_where_the_framework_stopped_on_them(raw, said):
    for (qid, f), a in said.items():
        if qid in ("token_budget", "deadline"):
            r = raw[(_q(qid), f)]
            stopped = r["outcome"] == ("limit_budget" if qid == "token_budget" else "limit_deadline")
            assert a.text.startswith("yes") == stopped, (qid, f, a.text)
            limit = "max_total_tokens" if qid == "token_budget" else "deadline_s"
            assert a.text.startswith("none") == (not stopped and limit in r["unsupported"])


def test_a_second_write_is_named_where_the_ledger_saw_one(raw, said):
    for (qid, f), a in said.items():
        if qid in ("resume_twice", "unknown_write"):
            r = raw[(_q(qid), f)]
            again = max(r["counters"]["effects_by_tool"].values(), default=0) > 1
            assert (a.text.startswith("writes again") or a.text.startswith("sends it again")) == again, (qid, f)


def test_a_rejection_stops_only_when_the_run_ended_denied(raw, said):
    for (qid, f), a in said.items():
        if qid == "rejection":
            r = raw[(_q(qid), f)]
            assert a.text.startswith("stops") == (r["outcome"] == "denied")
            for tool in r["counters"]["effects_by_tool"]:
                assert r["outcome"] == "denied" or tool in a.text


def test_the_mark_is_the_runs_verdict(raw, said):
    marks = {"conforms": "✓", "deviates": "⚠", "unsupported": "⊘"}
    for (qid, f), a in said.items():
        assert a.mark == marks[raw[(next(q.scenario for q in QUESTIONS if q.id == qid), f)]["verdict"]]


def test_the_table_has_a_row_per_question_and_a_column_per_framework(raw):
    frame = answers_frame(load_records(PUBLISHED))
    assert list(frame.columns) == ["question", *sorted({f for _, f in raw})]
    assert len(frame) == len({q.id for q in QUESTIONS if any(s == q.scenario for s, _ in raw)})


def test_a_correction_is_named_only_where_a_second_answer_completed_the_run(raw, said):
    for (qid, f), a in said.items():
        if qid != "validation":
            continue
        r = raw[(_q(qid), f)]
        corrected = r["outcome"] == "completed" and (r["counters"]["structured_answers_observed"] or 0) > 1
        assert a.text.startswith("asks a correction") == corrected, (f, a.text)
        assert f"{r['counters']['model_requests_observed']} request" in a.text, (f, a.text)
