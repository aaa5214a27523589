"""The committed comparison (reports/published/, `make publish`) must match what this checkout measures:
a behaviour change of loopbench or of a framework cannot land unnoticed. Refresh it deliberately with
`make publish` and review the diff."""

from __future__ import annotations

from pathlib import Path

from loopbench.reports.diff import diff_results

PUBLISHED = Path(__file__).resolve().parent.parent / "reports" / "published" / "results.jsonl"


def test_the_suite_behaves_as_published(suite_run):
    assert PUBLISHED.exists(), "reports/published/results.jsonl is missing: run `make publish`"
    markdown, changed = diff_results(PUBLISHED, suite_run)
    assert not changed, "behaviour differs from reports/published (refresh with `make publish`):\n" + markdown


def test_published_diff_against_itself_is_unchanged():
    _, changed = diff_results(PUBLISHED, PUBLISHED)
    assert not changed
