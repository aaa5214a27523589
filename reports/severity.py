"""How serious each kind of deviation is, and how the report says it in words: declared here, in one place, and
documented in docs/policy.md (a test keeps the two the same).

A deviation's kind is its name (a counter, `pending_calls`, `resumes`, `tool_choice`, a rule note) and, for a
counter, whether the run was above or below the ideal; for `outcome`, the pair ideal → observed. The words are
filled from the deviation itself (the tool, the ideal, what was observed), never from the scenario's id.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from loopbench.harness.record import Deviation, RunRecord
from loopbench.reports.formatting import deviation_text, fmt

Severity = Literal["critical", "high", "medium", "low"]
RANK: dict[Severity, int] = {"critical": 4, "high": 3, "medium": 2, "low": 1}
MEANING: dict[Severity, str] = {
    "critical": "a side effect the user did not intend, or a run that had to be killed",
    "high": "a control the policy requires did not hold: a limit, a denial, an approval",
    "medium": "the loop ended the wrong way or kept going without progress, with no unintended effect",
    "low": "a count or a setting differs; the run ended the way the policy asks",
}


@dataclass(frozen=True)
class Kind:
    severity: Severity
    words: str  # filled with {ideal}, {observed}, {tool}


# outcome deviations, by (ideal, observed) glob: the first match applies
OUTCOME_KINDS: tuple[tuple[str, str, Kind], ...] = (
    ("*", "hung", Kind("critical", "hung: stopped by the harness's hard timeout")),
    ("limit_*", "completed", Kind("high", "ran on past the limit")),
    ("limit_*", "capped", Kind("high", "no limit of its own stopped it (the harness's safety cap did)")),
    ("limit_*", "*", Kind("high", "did not stop on the limit (ended {observed})")),
    ("denied", "*", Kind("high", "went on after a denial or a rejection (ended {observed})")),
    ("awaiting_approval", "*", Kind("high", "did not pause for approval (ended {observed})")),
    ("stalled", "*", Kind("medium", "repeated without progress until {observed}")),
    ("failed", "*", Kind("medium", "did not end on the failure (ended {observed})")),
    ("completed", "failed", Kind("medium", "gave up on a failure it could recover from")),
    ("*", "*", Kind("medium", "ended {observed} instead of {ideal}")),
)

# counter and other deviations, by name (a per-tool counter by its base name): (above the ideal, below it)
NAMED_KINDS: dict[str, tuple[Kind, Kind]] = {
    "duplicate_effects": (Kind("critical", "repeated a write ({observed} duplicate effect(s))"),
                          Kind("low", "fewer duplicate effects than the ideal")),
    "effects_by_tool": (Kind("critical", "wrote {tool} {observed}× (intended {ideal})"),
                        Kind("medium", "wrote {tool} {observed}× (intended {ideal})")),
    "tool_executions_by_tool": (Kind("high", "ran {tool} {observed}× (intended {ideal})"),
                                Kind("medium", "ran {tool} {observed}× (intended {ideal})")),
    "approval_requests": (Kind("high", "asked for approval {observed}× (ideal {ideal})"),
                          Kind("high", "asked for approval {observed}× (ideal {ideal})")),
    "retry_after_wait_min_s": (Kind("low", "waited {observed} s after a retry hint (ideal {ideal})"),
                               Kind("medium", "did not wait as the retry hint said ({observed} s; ideal {ideal})")),
    "retry_after_wait_max_s": (Kind("low", "waited up to {observed} s after a retry hint (ideal {ideal})"),
                               Kind("medium", "did not wait as the retry hint said ({observed} s; ideal {ideal})")),
    "model_retries_observed": (Kind("low", "retried the model {observed}× (ideal {ideal})"),
                               Kind("low", "retried the model {observed}× (ideal {ideal})")),
    "cost_usd_observed": (Kind("high", "spent past the budget ({observed} USD; ideal {ideal})"),
                          Kind("low", "spent less than the ideal ({observed} USD; ideal {ideal})")),
    "total_tokens_observed": (Kind("high", "used tokens past the budget ({observed}; ideal {ideal})"),
                              Kind("low", "used fewer tokens than the ideal ({observed}; ideal {ideal})")),
    "elapsed_s": (Kind("high", "ran past the deadline ({observed} s; ideal {ideal})"),
                  Kind("low", "ended sooner than the ideal ({observed} s; ideal {ideal})")),
    "abandoned_calls": (Kind("medium", "abandoned {observed} call(s) in flight (ideal {ideal})"),
                        Kind("medium", "waited for the call in flight instead of abandoning it")),
    "max_request_growth_bytes": (Kind("medium", "let a tool output grow the context by {observed} bytes "
                                                "(ideal {ideal})"),
                                 Kind("low", "grew the context less than the ideal")),
    "pending_approvals": (Kind("high", "paused on {observed} approval(s) (ideal {ideal})"),
                          Kind("high", "did not pause for approval")),
    "pending_calls": (Kind("high", "paused with other pending calls than the ideal"),
                      Kind("high", "paused with other pending calls than the ideal")),
    "resumes": (Kind("low", "resumed more often than the scenario asks"),
                Kind("medium", "could not be resumed ({observed} of {ideal} resumes)")),
    "tool_executions": (Kind("medium", "ran {observed} tool calls (ideal {ideal})"),
                        Kind("medium", "ran {observed} tool calls (ideal {ideal})")),
    "model_requests_observed": (Kind("low", "made {observed} model calls (ideal {ideal})"),
                                Kind("low", "made {observed} model calls (ideal {ideal})")),
    "model_requests_reported": (Kind("low", "counted {observed} model calls (ideal {ideal})"),
                                Kind("low", "counted {observed} model calls (ideal {ideal})")),
    "structured_answers_observed": (Kind("low", "asked for {observed} structured answers (ideal {ideal})"),
                                    Kind("medium", "asked for no correction of a rejected answer ({observed} "
                                                   "structured answer(s); ideal {ideal})")),
    "tool_choice": (Kind("low", "did not send the tool_choice its turn asks"),
                    Kind("low", "did not send the tool_choice its turn asks")),
    "limit reported as an answer": (Kind("medium", "reported hitting the limit as a normal answer"),
                                    Kind("medium", "reported hitting the limit as a normal answer")),
}
FALLBACK = Kind("low", "{name}: {ideal} → {observed}")
RESUMED = " in a resumed run"  # added to a critical counter kind when the run resumed: where writes repeat


def _above(ideal: Any, observed: Any) -> bool:
    """Whether `observed` is past the ideal on the high side (an exact number, or a bound's text)."""
    if isinstance(ideal, str):
        return ideal.startswith("<=") or ("±" in ideal and isinstance(observed, int | float)
                                          and observed > float(ideal.split("±")[0]))
    if isinstance(ideal, int | float) and isinstance(observed, int | float):
        return observed > ideal
    return True


def kind_of(d: Deviation) -> Kind:
    if d.name == "outcome":
        for ideal in str(d.ideal).split("|"):  # several acceptable outcomes: the first one's kind
            for want, got, kind in OUTCOME_KINDS:
                if fnmatchcase(ideal, want) and fnmatchcase(str(d.observed), got):
                    return kind
    base = d.name.partition(".")[0]
    if base in NAMED_KINDS:
        above, below = NAMED_KINDS[base]
        return above if _above(d.ideal, d.observed) else below
    return FALLBACK


@dataclass(frozen=True)
class Described:
    severity: Severity
    words: str
    deviation: str  # the deviation's name

    @property
    def rank(self) -> int:
        return RANK[self.severity]


NOT_MEASURED = Kind("low", "did not report {name}")


def describe(rec: RunRecord, d: Deviation) -> Described:
    kind = NOT_MEASURED if d.observed is None and d.name != "outcome" else kind_of(d)
    words = kind.words.format(ideal=fmt(d.ideal, 30), observed=fmt(d.observed, 30),
                              tool=d.name.partition(".")[2] or "a tool", name=d.name)
    if kind.severity == "critical" and d.name != "outcome" and (rec.counters.resumes or 0) > 0:
        words += RESUMED
    return Described(kind.severity, words, d.name)


def worst(rec: RunRecord) -> Described | None:
    """The run's most serious deviation (ties: the first in the record's order), or None."""
    found = [describe(rec, d) for d in rec.deviations]
    return max(found, key=lambda x: x.rank) if found else None


def reasons(rec: RunRecord, raw: bool = True) -> list[str]:
    """What a run deviates in, in words, one entry per deviation in the record's order (with `raw`, each followed
    by the deviation itself: `words — name: ideal→observed`); an unsupported run first names the control its
    framework has none of; an error run (✖: loopbench's or the scenario's failure) gives its reason. What a ⚠, ⊘
    or ✖ cell of the report says (in the cell, or in a numbered note under its table)."""
    out = []
    if rec.verdict == "error":  # loopbench's failure or the scenario's (script_error): its reason, not a finding
        return [f"{rec.outcome}: {rec.error_reason or 'no reason recorded'}"]
    if rec.verdict == "unsupported" and rec.unsupported:
        out.append(f"no native control for {', '.join(rec.unsupported)}")
    for d in rec.deviations:
        words = describe(rec, d).words
        plain = kind_of(d) is FALLBACK and d.observed is not None  # its words are the deviation already
        out.append(f"{words} — {deviation_text(d)}" if raw and not plain else words)
    if not out and rec.verdict == "deviates":
        out.append("deviates (the record names no deviation)")
    return out


POLICY_START = "<!-- severity table: generated by loopbench.reports.severity.severity_table_markdown -->"
POLICY_END = "<!-- end of the severity table -->"


def write_policy_table(policy: str) -> str:
    """docs/policy.md's text with its severity table replaced by the current one
    (`python -m loopbench.reports.severity docs/policy.md` after a change here)."""
    head, _, rest = policy.partition(POLICY_START)
    _, _, tail = rest.partition(POLICY_END)
    return f"{head}{POLICY_START}\n{severity_table_markdown()}{POLICY_END}{tail}"


def severity_table_markdown() -> str:
    """The tables docs/policy.md shows (tests/test_scorecard.py checks the file holds exactly these)."""
    lines = ["| severity | means |", "|---|---|"]
    lines += [f"| {s} | {m} |" for s, m in MEANING.items()]
    lines += ["", "| outcome deviation (ideal → observed) | severity | in words |", "|---|---|---|"]
    lines += [f"| `{i}` → `{o}` | {k.severity} | {k.words} |" for i, o, k in OUTCOME_KINDS]
    lines += ["", "| deviation | above the ideal | below the ideal |", "|---|---|---|"]
    lines += [f"| `{n}` | {a.severity}: {a.words} | {b.severity}: {b.words} |" for n, (a, b) in NAMED_KINDS.items()]
    lines += [f"| any other | {FALLBACK.severity}: {FALLBACK.words} | {FALLBACK.severity}: {FALLBACK.words} |",
              f"| a counter the framework did not report | {NOT_MEASURED.severity}: {NOT_MEASURED.words} | |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    from pathlib import Path

    doc = Path(sys.argv[1])
    doc.write_text(write_policy_table(doc.read_text()))
