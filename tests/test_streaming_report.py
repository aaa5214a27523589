"""The report's streamed-vs-not table (reports/streaming.py): a streaming idiom is paired with the idiom its
record names (`Capabilities.stream_of`), and every cell where the two differ is listed with the difference in
words; cells that agree are counted, not listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopbench.harness.record import Capabilities, RunRecord
from loopbench.reports.data import report_data
from loopbench.reports.html_report import render_html
from loopbench.reports.load import load_records, load_results
from loopbench.reports.markdown_report import render_markdown
from loopbench.reports.streaming import stream_pairs, streamed_vs_not
from tests.edit_results import write_records

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"
CAPS = Capabilities(native_limits=frozenset({"max_model_calls"}), step_unit="turn", pause="snapshot",
                    pause_survives_restart=True, deny="x")


def _as(r: RunRecord, variant: str, stream_of: str | None, **counters: object) -> RunRecord:
    return r.model_copy(update={
        "variant": variant, "run_id": f"{r.run_id}-{variant}",
        "capabilities": CAPS.model_copy(update={"stream_of": stream_of}),
        "counters": r.counters.model_copy(update=counters)})


@pytest.fixture(scope="module")
def plain() -> list[RunRecord]:
    return [_as(r, "default", None) for r in load_records(DATA) if r.framework == "openai-agents"]


def test_cells_that_agree_are_counted_and_those_that_differ_say_how(plain):
    streamed = []
    for r in plain:
        if r.scenario == "support_draft_completes":  # the stream reported more output tokens
            r = _as(r, "stream", "default", output_tokens_reported=(r.counters.output_tokens_reported or 0) + 7)
        elif r.scenario == "approval_pause":  # the stream did not pause
            r = _as(r, "stream", "default").model_copy(update={"outcome": "completed"})
        else:
            r = _as(r, "stream", "default")
        streamed.append(r)
    pairs, diffs = streamed_vs_not(plain + streamed)
    assert pairs.to_dict("records") == [{"framework": "openai-agents", "streamed": "openai-agents:stream",
                                         "not streamed": "openai-agents", "scenarios compared": len(plain),
                                         "cells differing": 2}]
    said = dict(zip(diffs["scenario"], diffs["differences"], strict=True))
    assert said == {"approval_pause": "outcome: awaiting_approval → completed",
                    "support_draft_completes": "output tokens reported: 300 → 307"}


def test_a_streaming_idiom_whose_counterpart_did_not_run_is_not_paired(plain):
    alone = [_as(r, "stream", "default") for r in plain]
    assert stream_pairs(alone) == []
    assert stream_pairs(plain) == []  # no streaming idiom at all
    assert stream_pairs(plain + [_as(plain[0], "stream", "default")]) == [("openai-agents", "stream", "default")]


def test_the_report_shows_the_section_only_when_a_pair_ran(plain, tmp_path):
    with_pair = report_data(load_results(write_records(tmp_path / "a", plain + [_as(r, "stream", "default")
                                                                                  for r in plain])))
    md = render_markdown(with_pair)
    assert "## Streamed vs not" in md and "No cell differs." in md
    assert "Streamed vs not" in render_html(with_pair)
    assert "Streamed vs not" not in render_markdown(report_data(load_results(write_records(tmp_path / "b", plain))))
