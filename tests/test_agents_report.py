"""The report's "Accounting across agents" (reports/agents.py): each sub-agent cell's requests and tokens served
per agent beside the tokens the framework reported, and what those cover — the tree, the main loop alone,
neither — counted per framework variant; cells not run are left out; the section and summary.json show it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopbench.harness.record import RunRecord
from loopbench.reports.agents import accounting_across_agents, coverage
from loopbench.reports.data import report_data
from loopbench.reports.html_report import render_html
from loopbench.reports.load import load_records, load_results
from loopbench.reports.markdown_report import render_markdown
from loopbench.reports.summary import render_json
from tests.edit_results import write_records

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"


@pytest.fixture(scope="module")
def base() -> RunRecord:
    return next(r for r in load_records(DATA) if r.framework == "openai-agents")


def _sub(base: RunRecord, variant: str, reported: tuple[int, int] | None, *, outcome: str = "completed",
         child_requests: int = 2) -> RunRecord:
    """A sub-agent cell: the main agent 2 requests, the child `child_requests`, 1000 in / 100 out each."""
    by_in = {"main": 2000, **({"billing": 1000 * child_requests} if child_requests else {})}
    by_out = {"main": 200, **({"billing": 100 * child_requests} if child_requests else {})}
    counters = base.counters.model_copy(update={
        "model_requests_by_agent": {"main": 2, **({"billing": child_requests} if child_requests else {})},
        "input_tokens_by_agent": by_in, "output_tokens_by_agent": by_out,
        "input_tokens_observed": sum(by_in.values()), "output_tokens_observed": sum(by_out.values()),
        "input_tokens_reported": None if reported is None else reported[0],
        "output_tokens_reported": None if reported is None else reported[1]})
    return base.model_copy(update={"scenario": "subagent_usage", "category": "subagents", "variant": variant,
                                   "run_id": f"sub-{variant}", "outcome": outcome, "counters": counters})


def test_reported_tokens_are_read_as_the_tree_the_main_loop_or_neither(base):
    assert coverage(_sub(base, "a", (4000, 400))) == "tree"
    assert coverage(_sub(base, "b", (2000, 200))) == "main loop"
    assert coverage(_sub(base, "c", (3000, 300))) == "neither"
    assert coverage(_sub(base, "d", None)) == "not reported"
    assert coverage(_sub(base, "e", (2000, 200), child_requests=0)) == "children never ran"


def test_cells_are_counted_per_variant_and_a_cell_not_run_is_left_out(base):
    records = [_sub(base, "default", (4000, 400)), _sub(base, "stream", (2000, 200)),
               _sub(base, "chat", None, outcome="not_run", child_requests=0), base]
    summary, detail = accounting_across_agents(records)
    assert summary.to_dict("records") == [
        {"framework": "openai-agents", "cells": 1, "tree": 1, "main loop": 0, "neither": 0, "not reported": 0,
         "children never ran": 0},
        {"framework": "openai-agents:stream", "cells": 1, "tree": 0, "main loop": 1, "neither": 0,
         "not reported": 0, "children never ran": 0}]
    row = detail.to_dict("records")[0]
    assert (row["requests main"], row["requests children"], row["tokens served main"], row["tokens served tree"],
            row["tokens reported"]) == (2, 2, 2200, 4400, 4400)


def test_the_reports_show_the_section_only_with_sub_agent_cells(base, tmp_path):
    plain = [r for r in load_records(DATA)]
    data = report_data(load_results(write_records(tmp_path / "a", [*plain, _sub(base, "default", (2000, 200))])))
    assert "## Accounting across agents" in render_markdown(data) and "Accounting across agents" in render_html(data)
    summary = json.loads(render_json(data))
    assert summary["agents_accounting"][0]["main loop"] == 1
    without = report_data(load_results(write_records(tmp_path / "b", plain)))
    assert "Accounting across agents" not in render_markdown(without)
    assert json.loads(render_json(without))["agents_accounting"] == []
