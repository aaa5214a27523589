"""Which framework? The questions the suite exists for, answered per framework (its default idiom) from the
records: a short answer per question and framework, with the run it comes from and whether that run conforms.

Each question names the scenario that asks it and reads that scenario's record only through its outcome, its
counters and what it left unsupported: the words are filled from what the run did, never from a table of answers.
The report's first section and the README's table are this (tests/test_answers.py derives each answer again from
the records and compares).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from loopbench.harness.record import RunRecord
from loopbench.reports.formatting import VERDICT_MARK


def _n(rec: RunRecord) -> int:
    return rec.counters.model_requests_observed or 0


def _requests(n: int) -> str:
    return f"{n} request{'s' if n != 1 else ''}"


def _written(rec: RunRecord) -> dict[str, int]:
    return {t: k for t, k in rec.counters.effects_by_tool.items() if k}


def _runaway(rec: RunRecord) -> str:
    if rec.outcome == "capped":
        return f"nothing: ran to loopbench's cap ({_requests(_n(rec))})"
    if rec.outcome.startswith("limit_"):
        return f"its default limit, at {_requests(_n(rec))}"
    return f"ends {rec.outcome} after {_requests(_n(rec))}"


def _step_limit(rec: RunRecord) -> str:
    limit = rec.limits.get("max_model_calls")
    told = f" (told {limit.neutral:g})" if limit is not None and limit.neutral is not None else ""
    if not rec.outcome.startswith("limit_"):
        return f"does not stop: {rec.outcome} after {_requests(_n(rec))}{told}"
    return f"stops at {_requests(_n(rec))}{told}, {rec.counters.tool_executions} tool runs"


def _native_limit(limit: str, outcome: str, what: Callable[[RunRecord], str], unit: str
                  ) -> Callable[[RunRecord], str]:
    def answer(rec: RunRecord) -> str:
        told = rec.limits.get(limit)  # type: ignore[call-overload]
        against = f" (limit {told.neutral:,g}{unit})" if told is not None and told.neutral is not None else ""
        if rec.outcome == outcome:
            return f"yes: stopped at {what(rec)}{against}"
        if limit in rec.unsupported:
            return f"none: ran on to {what(rec)}{against}"
        return f"{rec.outcome} at {what(rec)}{against}"

    return answer


def _tokens(rec: RunRecord) -> str:
    return f"{rec.counters.total_tokens_observed or 0:,} tokens"


def _seconds(rec: RunRecord) -> str:
    return f"{rec.counters.elapsed_s or 0:.1f} s"


def _resumed(rec: RunRecord) -> str:
    if not rec.counters.resumes:
        return f"no: {rec.outcome}, nothing to resume"
    writes = _written(rec)
    done = ", ".join(f"{t} {k}×" for t, k in writes.items()) or "no write"
    return f"{'yes' if rec.outcome == 'completed' else rec.outcome}: {done}"


def _twice(rec: RunRecord) -> str:
    again = {t: k for t, k in _written(rec).items() if k > 1}
    if again:
        return "writes again: " + ", ".join(f"{t} {k}×" for t, k in again.items())
    if rec.outcome == "hung":
        return "no second write; the second resume hangs"
    if rec.outcome == "failed":
        return "no second write; the second resume is refused"
    return "no second write"


def _rejection(rec: RunRecord) -> str:
    if rec.outcome == "denied":
        return "stops (denied)"
    writes = _written(rec)
    return f"goes on: {', '.join(writes)} instead" if writes else f"goes on ({rec.outcome}), no other write"


def _tool_failure(rec: RunRecord) -> str:
    if rec.outcome == "failed":
        return f"ends the run after {_requests(_n(rec))}"
    runs = max(rec.counters.tool_executions_by_tool.values(), default=0)
    return f"back to the model ({runs} tries), {rec.outcome}"


def _outage(rec: RunRecord) -> str:
    took = f" over {rec.counters.elapsed_s:.0f} s" if (rec.counters.elapsed_s or 0) >= 10 else ""
    return f"{rec.outcome} after {_requests(_n(rec))}{took}"


def _unknown_write(rec: RunRecord) -> str:
    if rec.counters.duplicate_effects:
        return f"sends it again ({rec.counters.duplicate_effects} duplicate), {rec.outcome}"
    return f"no second write, {rec.outcome}"


def _correction(rec: RunRecord) -> str:
    answers = rec.counters.structured_answers_observed or 0
    if rec.outcome == "completed" and answers > 1:
        return f"asks a correction, completes ({_requests(_n(rec))})"
    return f"{rec.outcome} after {_requests(_n(rec))}, {answers} answer{'s' if answers != 1 else ''}"


@dataclass(frozen=True)
class Question:
    id: str
    text: str  # as a chooser asks it
    scenario: str  # the scenario that asks it
    answer: Callable[[RunRecord], str]


QUESTIONS: tuple[Question, ...] = (
    Question("runaway_default", "No limit set: what stops a loop that never ends?", "default_limits", _runaway),
    Question("step_limit", "A step limit set: does it hold?", "runaway_step_limit", _step_limit),
    Question("token_budget", "A token budget?", "token_budget",
             _native_limit("max_total_tokens", "limit_budget", _tokens, "")),
    Question("deadline", "A deadline against a slow model?", "deadline_slow_model",
             _native_limit("deadline_s", "limit_deadline", _seconds, " s")),
    Question("approval_restart", "An approval pause, resumed in a new process?", "approval_approved_resume",
             _resumed),
    Question("resume_twice", "The same pause resumed twice: a second write?", "resume_twice", _twice),
    Question("rejection", "A rejected approval: does the run stop?", "approval_rejected_resume", _rejection),
    Question("unknown_write", "A write that timed out but went through?", "write_timeout_unknown", _unknown_write),
    Question("tool_transient", "A tool that fails twice, then works?", "tool_transient_error", _tool_failure),
    Question("tool_fatal", "A tool that fails for good?", "tool_fatal_error", _tool_failure),
    Question("model_outage", "A model that fails every request?", "model_outage", _outage),
    Question("validation", "A structured answer its validator rejects?", "output_check_rejects", _correction),
)


@dataclass(frozen=True)
class Answer:
    question: Question
    framework: str
    text: str
    verdict: str
    run_id: str

    @property
    def mark(self) -> str:
        return VERDICT_MARK.get(self.verdict, "")


def answers(records: list[RunRecord]) -> list[Answer]:
    """Every question's answer for every framework's default idiom that ran its scenario (first repetition)."""
    first: dict[tuple[str, str], RunRecord] = {}
    for r in records:
        if r.variant == "default":
            first.setdefault((r.scenario, r.framework), r)
    frameworks = sorted({f for _, f in first})
    return [Answer(q, f, q.answer(rec), rec.verdict, rec.run_id)
            for q in QUESTIONS for f in frameworks if (rec := first.get((q.scenario, f))) is not None
            and rec.outcome not in ("not_run", "error", "script_error")]


def answers_frame(records: list[RunRecord]) -> pd.DataFrame:
    """A row per question, a column per framework: `✓ answer` (the mark: its run's verdict). Empty when no
    question's scenario ran."""
    found = answers(records)
    if not found:
        return pd.DataFrame()
    frameworks = sorted({a.framework for a in found})
    rows = []
    for q in QUESTIONS:
        by = {a.framework: a for a in found if a.question.id == q.id}
        if by:
            rows.append({"question": f"{q.text} (`{q.scenario}`)",
                         **{f: f"{by[f].mark} {by[f].text}" if f in by else "–" for f in frameworks}})
    return pd.DataFrame(rows, columns=["question", *frameworks])


def answers_markdown(records: list[RunRecord]) -> str:
    """The README's "Which framework?" table: a row per question (its scenario named), a column per framework's
    default idiom, each cell `mark answer`; "" when no question's scenario ran."""
    frame = answers_frame(records)
    if frame.empty:
        return ""
    header = ["question", *frame.columns[1:]]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)
