"""The committed comparison (reports/published/, `make publish`) must match what this checkout measures:
a behaviour change of loopbench or of a framework cannot land unnoticed. Refresh it deliberately with
`make publish` and review the diff."""

from __future__ import annotations

from pathlib import Path

from loopbench.reports.claims import check_claims
from loopbench.reports.diff import diff_results
from loopbench.reports.load import load_records

TIER = "unit"

PUBLISHED = Path(__file__).resolve().parent.parent / "reports" / "published" / "results.jsonl"


def test_the_suite_behaves_as_published(suite_run):
    assert PUBLISHED.exists(), "reports/published/results.jsonl is missing: run `make publish`"
    markdown, changed = diff_results(PUBLISHED, suite_run)
    assert not changed, "behaviour differs from reports/published (refresh with `make publish`):\n" + markdown


def test_published_diff_against_itself_is_unchanged():
    _, changed = diff_results(PUBLISHED, PUBLISHED)
    assert not changed


# Each documented claim's verdict on the publication, pinned: a claim that silently flips (a framework changed, a
# predicate edited, a path misspelt) fails here. Refresh it with the publication, reviewing each change.
PUBLISHED_CLAIMS = {
    **{f"C{i:02d}": "holds" for i in range(1, 25)}, "C18": "refuted",
    "C25": "refuted",  # LangGraph's ToolStrategy corrects past the 4-call limit (6 requests)
    **{f"MA{i:02d}": "holds" for i in range(1, 11)}, "MA09": "refuted",  # no onAbort on a cancel during a tool
    **{f"ADK{i:02d}": "holds" for i in range(1, 15)},
    **{f"PA{i:02d}": "holds" for i in range(1, 16)},
}


def test_each_published_claims_verdict_is_pinned():
    verdicts = {r.claim.id: r.verdict for r in check_claims(load_records(PUBLISHED))}
    assert verdicts == PUBLISHED_CLAIMS


def test_the_publication_carries_a_stability_check_that_held_against_it():
    """`make stability` ran the timing-sensitive cells beside a CPU hog against these very records, and no
    repetition changed: the report's Stability section says so from stability.json."""
    from loopbench.reports.stability import read_check

    check = read_check(PUBLISHED.parent)
    assert check is not None, "reports/published/stability.json is missing: run `make stability`"
    revisions = {r.environment.get("loopbench_revision") for r in load_records(PUBLISHED)}
    assert revisions == {check.against_revision} and check.holds and check.hog_processes >= 1
    assert check.repetitions >= 3
