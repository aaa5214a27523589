"""The report's fixed words, shared by the Markdown and the HTML renderer: how to read the matrix, the note
under each section's title, the glossary (every outcome and verdict of the record's vocabulary and every mark,
each in one line), and the marks of a claim's verdict."""

from __future__ import annotations

import os
from pathlib import Path
from typing import get_args

from loopbench.harness.record import Outcome, Verdict
from loopbench.reports.formatting import VERDICT_MARK

CLAIM_MARK: dict[str, str] = {"holds": "✓", "refuted": "✗", "not testable": "○"}

HOW_TO_READ = [
    "Each cell is one scenario × framework variant: the normalized outcome the harness derived from the "
    "framework's own signals and ground truth, the counters that matter for that scenario (in report.md, in "
    "the cell's note), and the verdict "
    "against the scenario's ideal (`conforms`, `deviates` with each deviation as name: ideal→observed, "
    "`unsupported` when the framework (or the variant's idiom) has no native control for a limit or an intent "
    "the scenario sets — e.g. a pause that can be resumed in another process —, `error` when loopbench itself "
    "broke, `hung` when the framework did not answer within the run's hard timeout and was stopped).",
    "`–` means unknown (the framework does not report it), never zero.",
    "With several repetitions, a cell shows its majority (outcome, verdict) — ties: the lowest repetition — and "
    "is marked unstable when its repetitions disagree.",
]


MECHANISMS_NOTE = (
    "A scenario states its intent (a denial that stops the run or one the model is told about, a pause for "
    "approval, a rejection, each neutral limit); each adapter maps it to its framework's documented mechanism "
    "and records which one in every run (`native.mechanisms`, `limits`). A variant is another idiom a "
    "user would pick for the same intents."
)


CAPABILITIES_NOTE = (
    "What each adapter declares it can do natively (the same table as `loopbench list`): the neutral limits it "
    "translates, its framework's step unit, how a pause is held, how a policy denial is expressed."
)


AGENTS_NOTE = (
    "The scenarios with sub-agents: the scripted server tells each request's agent by its system prompt, so the "
    "requests and tokens it served are known per agent. Per framework variant, what the tokens it reported for the "
    "run (input + output) cover: the whole tree (every agent's), the main loop alone, neither, or nothing "
    "reported; a cell whose children never made a request cannot tell the two apart. Then each cell. Cells not run "
    "(an idiom with no sub-agents) are left out."
)


GUARDED_NOTE = (
    "Each guarded idiom beside the idiom it guards: the same framework, agent and native limits, with "
    "loopbench.guard (the production loop policy as code, docs/guard.md) installed through the framework's own "
    "extension points. How many cells conform natively and guarded; then each cell that still deviates when "
    "guarded, with why: the hook the framework lacks (it declares it, below), a matter outside the policy (a "
    "count the framework reports itself, a task that sets no allowance), the framework's own end short of the "
    "ideal with no guard stop (the guard is a restraint: it refuses, stops or pauses, it cannot make a loop retry, "
    "resume or go on), or a gap of the guard's own where the framework has the hooks."
)

STREAMING_NOTE = (
    "Each streaming idiom beside the idiom whose loop it streams (the same framework, agent and limits, called "
    "through the framework's streaming entry point and read to the end): how many scenarios both ran, then every "
    "cell where the two differ — outcome, the calls pending at the end, the final text, the requests and tool runs "
    "observed, and the requests, tokens and cost the framework reported — as not streamed → streamed. Tokens "
    "served are what the scripted server sent as usage, in the events where the provider sends them."
)


COST_NOTE = ("Cells per framework variant (majority run per cell), and the framework's cost per model call: the "
             "median worker wall ms and the framework's CPU ms (the workers' CPU less loopbench's own part: its "
             "ledger calls, and the Vercel adapter's Python side) per observed model request, over runs without "
             "scripted delays; loopbench's own CPU ms per run (its part in the workers plus the runner's "
             "bookkeeping), shown apart; the largest worker RSS.")


ANSWERS_NOTE = (
    "The questions the suite exists for, answered by each framework's default idiom in these runs: each answer is "
    "what its scenario's run did (✓ as the production loop policy asks, ⚠ not, ⊘ the framework has no native "
    "control for it). Other idioms of a framework are in the scorecard and the matrix below.")
SCORECARD_NOTE = (
    "Each row is a framework variant, each column a category of scenarios: how many of its scenarios conform "
    "to the production loop policy (docs/policy.md), and the most serious deviation among the rest, in words, "
    "with its severity (critical, high, medium, low: reports/severity.py) and the scenario it came from. "
    "The most serious deviation is a deviating (⚠) cell's; unsupported (⊘) cells are counted apart. "
    "`error` cells (loopbench's failures, or the scenario's: `script_error`) are not counted.")


# ---------------------------------------------------------------- the glossary
# one line per value of the record's vocabulary (harness/record.py); docs/policy.md has the full tables. A value
# added there and not here is still listed (from the Literal), with UNDESCRIBED, and tests/test_reports.py fails.
OUTCOME_MEANING: dict[str, str] = {
    "completed": "ended normally, and the scenario's completion evidence holds (final text, receipts, effects "
                 "in the ledger)",
    "incomplete": "ended normally without that evidence: the model stopped, the task is not done",
    "limit_steps": "ended on the framework's own step limit (model calls, turns, steps)",
    "limit_budget": "ended on the framework's own budget limit (tokens, cost)",
    "limit_deadline": "ended on the framework's own deadline",
    "awaiting_approval": "paused with pending calls, waiting for a human decision",
    "denied": "the framework stopped the run on an action the policy denies",
    "failed": "ended on an error from a tool or the model",
    "stalled": "ended on a stall check (reserved: no framework has one natively)",
    "capped": "ran until the scripted server's safety cap: nothing of the framework's own stopped it",
    "cancelled": "the caller cancelled the run (the scenario's cancel) and the framework stopped on it",
    "hung": "did not end within its hard timeout: the harness stopped it",
    "error": "loopbench itself or the adapter broke: never the framework's behaviour (verdict error)",
    "script_error": "the scenario's own fault: its scripted model met a request its script cannot answer "
                    "(verdict error)",
    "not_run": "not started: the idiom cannot express the scenario (e.g. it has no sub-agents; verdict "
               "unsupported)",
}
VERDICT_MEANING: dict[str, str] = {
    "conforms": "the outcome is one the scenario accepts and every expected counter is within its bound",
    "deviates": "something differs from the scenario's ideal; each difference is a deviation, "
                "name: ideal → observed",
    "unsupported": "it deviates, and the framework (or the variant's idiom) has no native control for a limit or "
                   "an intent the scenario sets: the cell shows what it does without one",
    "error": "loopbench, its adapter or the scenario's script broke: the run says nothing about the framework",
}
UNDESCRIBED = "(not described here yet: see docs/policy.md)"
# the marks a matrix cell can carry besides its verdict's
OTHER_MARKS: tuple[tuple[str, str], ...] = (
    ("✗", "after the outcome or a counter: it differs from the scenario's ideal"),
    ("[n]", "the numbered note under the table: what the cell deviates in, in words, ideal → observed"),
    ("⟳", "unstable: the cell's repetitions disagree on outcome or verdict (the majority is shown)"),
    ("⇄", "changed against the baseline"),
    ("–", "unknown: the framework does not report it (never zero)"),
)


def outcome_glossary() -> list[tuple[str, str]]:
    """(outcome, its meaning) for every value of the record's `Outcome`, in its order."""
    return [(o, OUTCOME_MEANING.get(o, UNDESCRIBED)) for o in get_args(Outcome)]


def verdict_glossary() -> list[tuple[str, str, str]]:
    """(mark, verdict, its meaning) for every value of the record's `Verdict`, in its order."""
    return [(VERDICT_MARK.get(v, ""), v, VERDICT_MEANING.get(v, UNDESCRIBED)) for v in get_args(Verdict)]


POLICY_DOC = "docs/policy.md"
_CHECKOUT = Path(__file__).resolve().parent.parent


def policy_href(report_dir: Path) -> str | None:
    """The relative link from a report written in `report_dir` to docs/policy.md, when the report is written
    inside the loopbench checkout that holds it (reports/published/ → ../../docs/policy.md); else None (the
    report names the file without a link: never a path of the machine it was written on)."""
    policy = _CHECKOUT / POLICY_DOC
    where = Path(report_dir).resolve()
    if not policy.exists() or not where.is_relative_to(_CHECKOUT):
        return None
    return Path(os.path.relpath(policy, where)).as_posix()


GLOSSARY_NOTE = ("The words of the matrix, each in one line; the loop policy behind the verdicts, how an outcome "
                 "is derived and how serious each deviation is are in")
