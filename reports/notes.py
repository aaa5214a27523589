"""The report's fixed words, shared by the Markdown and the HTML renderer: how to read the matrix, the note
under each section's title, and the marks of a claim's verdict."""

from __future__ import annotations

CLAIM_MARK: dict[str, str] = {"holds": "✓", "refuted": "✗", "not testable": "○"}

HOW_TO_READ = [
    "Each cell is one scenario × framework variant: the normalized outcome the harness derived from the "
    "framework's own signals and ground truth, the counters that matter for that scenario, and the verdict "
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


COST_NOTE = ("Cells per framework variant (majority run per cell), and the framework's cost per model call: the "
             "median worker wall ms and the framework's CPU ms (the workers' CPU less loopbench's own part: its "
             "ledger calls, and the Vercel adapter's Python side) per observed model request, over runs without "
             "scripted delays; loopbench's own CPU ms per run (its part in the workers plus the runner's "
             "bookkeeping), shown apart; the largest worker RSS.")


SCORECARD_NOTE = (
    "Each row is a framework variant, each column a category of scenarios: how many of its scenarios conform "
    "to the production loop policy (docs/policy.md), and the most serious deviation among the rest, in words, "
    "with its severity (critical, high, medium, low: reports/severity.py) and the scenario it came from. "
    "`error` cells are loopbench's failures and are not counted.")
