"""Reports built from a small committed results file (tests/data/reports_small: openai-agents runs and a
synthesized 'langgraph' copy, with one unstable cell)."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path
from typing import get_args

import pandas as pd
import pytest

from loopbench.harness.errors import BadInput, SchemaMismatch
from loopbench.harness.record import Outcome, RunRecord, Verdict
from loopbench.reports.build import FORMATS, build_reports
from loopbench.reports.cells import cells
from loopbench.reports.formatting import VERDICT_MARK
from loopbench.reports.frames import (
    accounting_details,
    conformance_frame,
    environment,
    matrix_frame,
    mechanisms_frame,
    stability_frame,
    units_frame,
)
from loopbench.reports.load import ResultsWarning, load_records, load_results
from loopbench.reports.markdown_report import MD_LINE_CAP
from loopbench.reports.show import show_run
from tests.edit_results import rewritten, write_records

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    d = tmp_path / "results"
    shutil.copytree(DATA, d)
    return d


@pytest.fixture(scope="module")
def records():
    return load_records(DATA)


# ---------------------------------------------------------------- load
def test_load_dir_and_file(records) -> None:
    assert len(records) == 23
    assert load_records(DATA / "results.jsonl") == records
    assert {r.framework for r in records} == {"openai-agents", "langgraph"}


def test_torn_last_line_is_skipped_with_a_warning(results_dir: Path) -> None:
    f = results_dir / "results.jsonl"
    text = f.read_text()
    f.write_text(text + text.splitlines()[0][:200])  # a writer killed mid-line
    with pytest.warns(ResultsWarning, match="torn last line"):
        res = load_results(results_dir)
    assert len(res.records) == 23
    assert any("torn" in w for w in res.warnings)


def test_a_bad_line_that_is_not_last_is_refused(results_dir: Path) -> None:
    f = results_dir / "results.jsonl"
    lines = f.read_text().splitlines()
    lines.insert(1, lines[0][:100])
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(BadInput, match=r"results.jsonl: line 2: not a results file"):
        load_results(results_dir)


def test_schema_mismatch_names_the_file_and_the_version(results_dir: Path) -> None:
    f = results_dir / "results.jsonl"
    lines = f.read_text().splitlines()
    rec = json.loads(lines[3])
    rec["schema_version"] = 99
    lines[3] = json.dumps(rec)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(SchemaMismatch) as exc:
        load_results(f)
    msg = str(exc.value)
    assert str(f) in msg and "line 4" in msg and "schema_version 99" in msg


@pytest.mark.parametrize("content", ["scenario,framework\na,b\n", '{"hello": 1}\n', "", "[1, 2]\n"])
def test_not_a_results_file(tmp_path: Path, content: str) -> None:
    f = tmp_path / "other.jsonl"
    f.write_text(content)
    with pytest.raises(BadInput, match="not a results file"):
        load_results(f)


def test_missing_path_and_empty_dir(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        load_results(tmp_path / "nope")
    with pytest.raises(BadInput, match="has no results.jsonl"):
        load_results(tmp_path)


def test_invalid_record_names_line_and_field(results_dir: Path) -> None:
    f = results_dir / "results.jsonl"
    lines = f.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["outcome"] = "exploded"
    lines[0] = json.dumps(rec)
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(BadInput, match=r"line 1: outcome"):
        load_results(f)


# ---------------------------------------------------------------- tables
def test_matrix_cells_show_outcome_counters_and_deviations(records) -> None:
    m = matrix_frame(records).set_index(["scenario", "column"])
    cell = m.loc[("runaway_step_limit", "openai-agents")]
    assert cell["outcome"] == "limit_steps" and cell["verdict"] == "deviates"
    assert "requests 8" in cell["key_counters"] and "tool runs 8 ✗" in cell["key_counters"]
    assert "tool_executions: 7→8" in cell["deviations"]
    assert m.loc[("support_draft_completes", "langgraph")]["verdict"] == "conforms"
    # a counter some framework deviated on is shown for every framework of that scenario
    assert "requests reported" in m.loc[("model_transient_error", "langgraph")]["key_counters"]


def test_units_table_covers_limit_scenarios_only(records) -> None:
    u = units_frame(records)
    assert set(u["scenario"]) == {"runaway_step_limit", "resume_keeps_allowance", "cost_budget", "deadline_slow_model"}
    row = u[(u["scenario"] == "cost_budget") & (u["column"] == "openai-agents")].iloc[0]
    assert row["intent"] == "8 model calls; $0.05"
    assert row["native setting"] == "max_turns=8; max_cost_usd: unsupported"
    assert row["requests observed"] == 3
    keep = u[(u["scenario"] == "resume_keeps_allowance") & (u["column"] == "langgraph")].iloc[0]
    assert keep["intent"] == "4 model calls" and keep["step unit"] == "turn"


def test_accounting_flags_hidden_retries(records) -> None:
    d = accounting_details(records)
    row = d[(d["scenario"] == "model_transient_error") & (d["column"] == "openai-agents")].iloc[0]
    assert (row["quantity"], row["reported"], row["observed"]) == ("model requests", 3, 5)


def test_stability_and_majority(records) -> None:
    c = {x.key: x for x in cells(records)}[("stops_without_finishing", "langgraph", "default")]
    assert c.unstable and len(c.records) == 2
    assert c.rep.repetition == 1  # a 1-1 tie: the lowest repetition is shown
    s = stability_frame(records)
    assert list(s["stable"]) == [False]
    conf = conformance_frame(records).set_index("column")
    assert conf.loc["langgraph", "unstable"] == 1
    assert conf.loc["openai-agents", "cells"] == 11
    assert conf.loc["openai-agents", ["conforms", "deviates", "unsupported", "error"]].sum() == 11


def test_environment_lists_every_framework_package(records) -> None:
    env = environment(records)
    assert env["python"] == ["3.11.7"] and env["node"] == ["v20.20.2"]
    assert env["frameworks"]["openai-agents"]["packages"] == {"openai": ["3.57.0"], "openai-agents": ["0.24.0"]}
    assert env["frameworks"]["langgraph"]["framework_version"] == ["1.2.24"]


# ---------------------------------------------------------------- build
@pytest.mark.process
def test_build_reports_writes_every_format(results_dir: Path) -> None:
    paths = build_reports(results_dir, set(FORMATS))
    names = {p.name for p in paths}
    assert {"report.md", "report.html", "matrix.csv", "summary.json"} <= names
    pngs = [p for p in paths if p.suffix == ".png"]
    assert {p.name for p in pngs} == {"verdict_map.png", "what_the_limit_allows.png", "context_growth.png"}
    assert all(p.read_bytes().startswith(b"\x89PNG") and p.parent == results_dir for p in pngs)

    md = (results_dir / "report.md").read_text()
    assert md.startswith("# loopbench report")
    # the first paragraph says which run this is (time, revision, versions), not where the file was read from
    head = " ".join(md.split("\n\n")[1].split())
    assert str(results_dir) not in md and "results.jsonl" not in head
    assert head.startswith("23 runs, started 2026-11-30 11:56:25 UTC") and "loopbench revision 18bb9f7+dirty" in head
    assert "openai-agents 0.24.0" in head
    assert md.index("## Scorecard") < md.index("## Comparison matrix") < md.index("## Environment")
    env_part = md.split("## Environment")[1]
    assert "- loopbench revision: 18bb9f7+dirty" in env_part and "- Python: 3.11.7" in env_part
    assert "openai-agents 0.24.0" in env_part and "langgraph 1.2.24" in env_part
    for section in ("## Comparison matrix", "## Units", "## Accounting", "## Documented claims",
                    "## Cost per model call", "## Stability", "![Verdict per scenario and framework variant]",
                    "### limits", "- `support_draft_completes`: Draft a support reply citing the policy"):
        assert section in md
    assert "⟳" in md  # the unstable cell
    assert max(len(x) for x in md.splitlines()) <= MD_LINE_CAP  # a terminal shows it

    csv = pd.read_csv(results_dir / "matrix.csv")
    assert len(csv) == 22 and {"scenario", "framework", "variant", "outcome", "verdict", "deviations",
                               "model_requests_observed", "unstable"} <= set(csv.columns)

    summary = json.loads((results_dir / "summary.json").read_text())
    verdicts = {c["id"]: c["verdict"] for c in summary["claims"]}
    assert verdicts["C01"] == "holds" and verdicts["C16"] == "not testable"
    assert "C09" not in verdicts  # a claim about claude-agent-sdk, which is not in this run
    assert summary["environment"]["frameworks"]["langgraph"]["framework_version"] == ["1.2.24"]

    page = (results_dir / "report.html").read_text()
    header = page.split("<nav>")[0]
    assert str(results_dir) not in header and "loopbench revision 18bb9f7+dirty" in header
    assert "http://" not in page and "https://" not in page  # one self-contained file
    assert page.count("data:image/png;base64,") == 3
    for r in load_records(results_dir):
        assert f'id="run-{r.run_id}"' in page
    assert 'href="#run-runaway_step_limit-openai-agents-default-r1-254c8f"' in page


def test_build_reports_subset_and_bad_format(results_dir: Path) -> None:
    paths = build_reports(results_dir, {"csv"})
    assert [p.name for p in paths] == ["matrix.csv"]
    with pytest.raises(BadInput, match="unknown format"):
        build_reports(results_dir, {"pdf"})


@pytest.mark.process
def test_build_reports_keeps_going_past_a_torn_line(results_dir: Path) -> None:
    f = results_dir / "results.jsonl"
    f.write_text(f.read_text() + '{"schema_version": 1, "run_id": "x')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_reports(results_dir, {"md"})
    assert any(issubclass(w.category, ResultsWarning) for w in caught)
    # the warning is a quote wrapped at 120 columns: read it without its line breaks and quote markers
    quoted = [line.removeprefix(">").strip() for line in (results_dir / "report.md").read_text().splitlines()]
    assert "torn last line" in " ".join(" ".join(quoted).split())


# ---------------------------------------------------------------- drill-down
def test_show_run_renders_record_requests_ledger_and_trace() -> None:
    text = show_run(DATA, "runaway_step_limit-openai-agents-default-r1-254c8f")
    assert "runaway_step_limit × openai-agents:default → limit_steps · deviates" in text
    assert "✗ tool_executions: 7→8" in text
    for part in ("Native signals", "MaxTurnsExceeded", "Model requests (server log)", "Tool ledger",
                 "Trace (traces/runaway_step_limit-openai-agents-default-r1-254c8f.jsonl)", "model_request"):
        assert part in text
    assert "\x1b[" not in text


def test_show_run_by_prefix_and_missing_trace() -> None:
    text = show_run(DATA / "results.jsonl", "runaway_step_limit-langgraph")
    assert "trace file" in text and "not found" in text
    with pytest.raises(BadInput, match="no such run id"):
        show_run(DATA, "nope")
    with pytest.raises(BadInput, match="2 runs start with it"):
        show_run(DATA, "stops_without_finishing-langgraph")


def test_mechanisms_show_each_intent_in_native_terms_per_variant(records) -> None:
    base = next(r for r in records if r.framework == "openai-agents")
    def with_mechanisms(**mechanisms: str):
        return base.native.model_copy(update={"mechanisms": mechanisms})

    stop = base.model_copy(update={"scenario": "denied_action",
                                   "native": with_mechanisms(deny_stop="tool input guardrail raise_exception")})
    go_on = base.model_copy(update={"scenario": "denied_action_continue",
                                    "native": with_mechanisms(deny_continue="tool input guardrail reject_content")})
    other = base.model_copy(update={"scenario": "denied_action", "framework": "langgraph",
                                    "native": with_mechanisms(deny_stop="wrap_tool_call raising")})
    df = mechanisms_frame([stop, go_on, other]).set_index("intent")
    assert df.loc["deny: stop the run", "openai-agents"] == "tool input guardrail raise_exception"
    assert df.loc["deny: tell the model, go on", "openai-agents"] == "tool input guardrail reject_content"
    assert df.loc["deny: stop the run", "langgraph"] == "wrap_tool_call raising"
    assert df.loc["deny: tell the model, go on", "langgraph"] == "–"
    assert any(i.startswith("limit: max_model_calls") for i in df.index)


def test_capabilities_come_from_the_records(records) -> None:
    from loopbench.harness.record import Capabilities
    from loopbench.reports.frames import capabilities_frame

    assert capabilities_frame(records).empty  # the fixture's v1 records carry none: nothing is made up
    caps = Capabilities(native_limits=frozenset({"max_model_calls"}), step_unit="turn", pause="snapshot",
                        pause_survives_restart=True, deny="a guardrail", notes=("n",))
    df = capabilities_frame([records[0].model_copy(update={"capabilities": caps})]).set_index("framework")
    row = df.loc[records[0].framework]
    assert (row["native limits"], row["step unit"], row["deny"], row["notes"]) == (
        "max_model_calls", "turn", "a guardrail", "n")
    assert bool(row["pause survives a restart"]) is True


@pytest.mark.parametrize("trace", ["../secret.txt", "/etc/hostname", "traces/../../secret.txt", "link.jsonl"])
def test_a_trace_path_outside_the_results_directory_is_never_read(tmp_path: Path, records, trace) -> None:
    from loopbench.reports.show import read_trace

    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "secret.txt").write_text('{"event": "SECRET"}\n')
    (results / "link.jsonl").symlink_to(tmp_path / "secret.txt")
    events, note = read_trace(results, records[0].model_copy(update={"trace": trace}))
    assert events == [] and "outside the results directory" in note
    (results / "traces").mkdir()
    (results / "traces" / "ok.jsonl").write_text('{"event": "fine"}\n')
    events, _ = read_trace(results, records[0].model_copy(update={"trace": "traces/ok.jsonl"}))
    assert events == [{"event": "fine"}]


def test_framework_cost_per_model_call_leaves_loopbench_out(records) -> None:
    from loopbench.reports.frames import cost_per_model_call

    r = next(r for r in records if r.scenario == "support_draft_completes" and r.framework == "openai-agents")
    calls = r.counters.model_requests_observed
    measured = r.model_copy(update={"counters": r.counters.model_copy(update={
        "cpu_s": 0.100, "loopbench_worker_cpu_s": 0.010, "loopbench_runner_cpu_s": 0.002})})
    cost = cost_per_model_call([measured])["openai-agents"]
    assert cost["framework_cpu_ms_per_model_call"] == round(90 / calls, 1)  # the ledger calls are not its work
    assert cost["loopbench_cpu_ms_per_run"] == 12.0
    # a record that does not separate loopbench's CPU (schema 1) charges nobody: unknown, not the total
    old = r.model_copy(update={"counters": r.counters.model_copy(update={
        "cpu_s": 0.100, "loopbench_worker_cpu_s": None, "loopbench_runner_cpu_s": None})})
    cost = cost_per_model_call([old])["openai-agents"]
    assert cost["framework_cpu_ms_per_model_call"] is None and cost["loopbench_cpu_ms_per_run"] is None


# ---------------------------------------------------------------- every mark explains itself
def _doctored(tmp_path: Path) -> Path:
    """The fixture with two cells like the published suite's unexplained ones: a ⚠ whose counters equal a conforming
    cell's (a limit reported as an answer: no counter to mark) and a ⚠ whose only deviation is its outcome."""
    def edit(r: dict) -> None:
        if r["scenario"] == "support_draft_completes" and r["framework"] == "openai-agents":
            r.update(verdict="deviates", deviations=[{"name": "limit reported as an answer",
                                                      "ideal": "a distinct limit signal", "observed": "a normal answer"}])
        if r["scenario"] == "approval_pause" and r["framework"] == "langgraph":
            r.update(outcome="failed", outcome_rule=7, verdict="deviates",
                     deviations=[{"name": "outcome", "ideal": "awaiting_approval", "observed": "failed"}])

    return rewritten(DATA, tmp_path / "doctored", edit)


CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _tables(lines: list[str]) -> list[list[list[str]]]:
    """The Markdown tables among `lines`: each its rows (header first, the delimiter row left out) of cells."""
    out: list[list[list[str]]] = []
    prev = ""
    for x in lines:
        if x.startswith("|"):
            if not prev.startswith("|"):
                out.append([])
            if not re.fullmatch(r"\|(?:-+\|)+", x):
                out[-1].append([c.strip() for c in CELL_SPLIT.split(x.strip()[1:-1])])
        prev = x
    return out


def _list_items(lines: list[str]) -> list[str]:
    """The list items among `lines`, each with its wrapped continuation lines joined."""
    items: list[str] = []
    within = False
    for x in lines:
        if x.startswith("- "):
            items.append(x[2:])
            within = True
        elif within and x.startswith("  "):
            items[-1] += " " + x.strip()
        else:
            within = False
    return items


def _matrix_blocks(md: str) -> dict[str, tuple[dict[str, str], list[list[list[str]]], dict[int, str]]]:
    """report.md's comparison matrix per category: its legend (scenario id -> title), its tables and its notes."""
    matrix = md.split("## Comparison matrix")[1].split("\n## ")[0]
    out = {}
    for block in matrix.split("\n### ")[1:]:
        lines = block.splitlines()
        items = _list_items(lines)
        legend = {m.group(1): m.group(2) for m in (re.fullmatch(r"`([^`]+)`: (.+)", x) for x in items) if m}
        notes = {int(m.group(1)): m.group(2) for m in (re.fullmatch(r"\[(\d+)\] (.+)", x) for x in items) if m}
        out[lines[0]] = (legend, _tables(lines), notes)
    return out


def _matrix_cells(md: str) -> list[tuple[str, str, str, dict[int, str]]]:
    """Every cell of report.md's comparison matrix: (scenario, column, text, the notes under its tables)."""
    out = []
    for _, tables, notes in _matrix_blocks(md).values():
        for head, *rows in tables:
            assert head[0] == "scenario"
            for texts in rows:
                out += [(texts[0], col, text, notes) for col, text in zip(head[1:], texts[1:], strict=True)]
    return out


def _reps(records: list[RunRecord]) -> dict[tuple[str, str], RunRecord]:
    return {(c.scenario, c.column): c.rep for c in cells(records)}


@pytest.mark.process
def test_every_deviating_cell_of_report_md_says_what_deviates(tmp_path: Path) -> None:
    from loopbench.reports.severity import describe

    d = _doctored(tmp_path)
    build_reports(d, {"md"})
    md = (d / "report.md").read_text()
    reps = _reps(load_records(d))
    found = _matrix_cells(md)
    assert len(found) == 22
    warned = [(sid, col, text, notes) for sid, col, text, notes in found if text.startswith(("⚠", "⊘"))]
    assert len(warned) == 14
    for sid, col, text, notes in warned:
        refs = [int(n) for n in re.findall(r"\[(\d+)\]", text)]
        assert len(refs) == 1, f"{sid} × {col}: {text!r} gives no reason"
        assert refs[0] in notes, f"{sid} × {col}: note [{refs[0]}] is not under its table"
        rec = reps[(sid, col)]
        for dev in rec.deviations:  # the note says each deviation in words
            assert describe(rec, dev).words in notes[refs[0]], (sid, col, notes[refs[0]])
    # a ✓ cell gives no note
    assert not any("[" in text for _, _, text, _ in found if text.startswith("✓"))
    # the cell whose counters are a conforming cell's says in its note what deviates
    (cell,) = [(text, notes) for sid, col, text, notes in found if (sid, col) == ("support_draft_completes",
                                                                                   "openai-agents")]
    assert re.fullmatch(r"⚠ completed \[\d+\]", cell[0])  # no counter in report.md: the note says it
    note = cell[1][int(re.search(r"\[(\d+)\]", cell[0]).group(1))]
    assert "reported hitting the limit as a normal answer" in note and "a distinct limit signal→a normal answer" in note
    # notes are numbered once through the report; the same words are one note for every cell they fit
    numbers = [int(m) for m in re.findall(r"^- \[(\d+)\] ", md, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
    runaway = [text for sid, _, text, _ in found if sid == "runaway_step_limit"]
    assert len(set(runaway)) == 1


def test_report_md_fits_a_terminal(tmp_path: Path, records) -> None:
    """No line of report.md is longer than MD_LINE_CAP (but one unbreakable word); the matrix gives each category's
    scenarios with their titles once, then tables of at most MD_MATRIX_COLUMNS variants of one framework each."""
    from loopbench.harness.record import column_of
    from loopbench.reports.data import report_data
    from loopbench.reports.markdown_report import MD_MATRIX_COLUMNS, render_markdown

    # openai-agents in six idioms (tables of 3 and 3), langgraph in one: the published suite's shape, smaller; and a
    # scenario title too long for a line
    long_title = "Draft a support reply citing the policy" + ", and so on" * 20
    base = [r.model_copy(update={"scenario_title": long_title}) if r.scenario == "support_draft_completes" else r
            for r in records]
    wide = base + [r.model_copy(update={"variant": f"idiom-{i}", "run_id": f"{r.run_id}-idiom-{i}"})
                   for r in base if r.framework == "openai-agents" for i in range(1, 6)]
    md = render_markdown(report_data(load_results(write_records(tmp_path / "wide", wide))))
    long = [x for x in md.splitlines() if len(x) > MD_LINE_CAP and not re.fullmatch(r"[-> ]*\S+", x)]
    assert not long, long[:3]
    assert f"- `support_draft_completes`: {long_title}" not in md  # wrapped

    blocks = _matrix_blocks(md)
    framework_of = {column_of(r.framework, r.variant): r.framework for r in wide}
    want: dict[str, dict[str, str]] = {}
    for r in wide:
        want.setdefault(r.category or "other", {})[r.scenario] = r.scenario_title or r.scenario
    assert len(blocks) == len(want)
    for label, (legend, tables, _) in blocks.items():
        (cat,) = [c for c, scen in want.items() if set(scen) == set(legend)]
        assert legend == want[cat], label  # each scenario, with its title
        shown: dict[str, list[str]] = {}
        for head, *rows in tables:
            variants = head[1:]
            assert 1 <= len(variants) <= MD_MATRIX_COLUMNS and len({framework_of[v] for v in variants}) == 1, head
            assert [row[0] for row in rows] == sorted(legend), label  # every scenario of the category, by id
            shown.setdefault(framework_of[variants[0]], []).extend(variants)
        assert shown == {"langgraph": ["langgraph"],
                         "openai-agents": ["openai-agents", *(f"openai-agents:idiom-{i}" for i in range(1, 6))]}
    assert [len(t[0]) - 1 for t in next(iter(blocks.values()))[1]] == [1, 3, 3]  # as even as can be


def test_wrapped_prose_renders_as_before() -> None:
    from loopbench.reports.markdown_report import md_wrap

    text = "word " * 30 + "- not an item, 1. not a list, # not a heading, > not a quote, | not a row, ```" + " x" * 40
    wrapped = md_wrap(text, "- ", width=40)
    lines = wrapped.splitlines()
    assert len(lines) > 5 and lines[0].startswith("- word") and all(x.startswith("  ") for x in lines[1:])
    assert " ".join(wrapped[2:].split()) == " ".join(text.split())  # a soft line break is a space
    assert not any(re.match(r"\s*(?:[-+*>#|]|\d+[.)]|```)(?:\s|$)", x) for x in lines[1:])
    assert md_wrap("a-very-long-word-that-cannot-break " * 2, width=10).splitlines() == [
        "a-very-long-word-that-cannot-break"] * 2


@pytest.mark.process
def test_a_deviating_outcome_carries_a_cross(tmp_path: Path) -> None:
    d = _doctored(tmp_path)
    build_reports(d, {"md"})
    reps = _reps(load_records(d))
    found = _matrix_cells((d / "report.md").read_text())
    assert found
    for sid, col, text, _ in found:
        rec = reps[(sid, col)]
        deviates = any(x.name == "outcome" for x in rec.deviations)
        assert text.startswith(f"{VERDICT_MARK[rec.verdict]} {rec.outcome} ✗") == deviates, (sid, col, text)
    (failed,) = [t for sid, col, t, _ in found if (sid, col) == ("approval_pause", "langgraph")]
    assert re.fullmatch(r"⚠ failed ✗ \[\d+\]", failed)


@pytest.mark.process
def test_the_glossary_names_every_outcome_and_verdict(results_dir: Path) -> None:
    from loopbench.reports.notes import UNDESCRIBED, outcome_glossary, policy_href, verdict_glossary

    assert [o for o, _ in outcome_glossary()] == list(get_args(Outcome))
    assert [v for _, v, _ in verdict_glossary()] == list(get_args(Verdict))
    assert all(m != UNDESCRIBED for _, m in outcome_glossary())  # describe a new outcome in reports/notes.py
    assert all(m != UNDESCRIBED for _, _, m in verdict_glossary())
    build_reports(results_dir, {"md"})
    md = (results_dir / "report.md").read_text()
    glossary = md.split("## Glossary")[1].split("\n## ")[0]
    assert md.index("## Comparison matrix") < md.index("## Glossary")
    for o in get_args(Outcome):
        assert re.search(rf"^- `{o}`: \w", glossary, flags=re.M), o
    for v in get_args(Verdict):
        assert re.search(rf"^- {re.escape(VERDICT_MARK[v])} `{v}`: \w", glossary, flags=re.M), v
    for mark in ("✗", "⟳", "[n]"):
        assert f"- {mark} " in glossary
    # docs/policy.md: linked from a report inside the checkout, named (never a local path) from one elsewhere
    assert "`docs/policy.md`" in glossary and str(results_dir) not in md
    root = Path(__file__).resolve().parent.parent
    assert policy_href(root / "reports" / "published") == "../../docs/policy.md"
    assert policy_href(results_dir) is None


@pytest.mark.process
def test_a_report_lists_only_the_claims_about_the_frameworks_in_its_run(results_dir: Path) -> None:
    from loopbench.reports.claims import claims_about, load_claims

    claims = load_claims()
    assert {c.framework for c in claims} - {"all"} > {"openai-agents", "langgraph"}  # others exist to leave out
    assert [c.id for c in claims_about(claims, {"langgraph"})] == [
        c.id for c in claims if c.framework in ("langgraph", "all")]
    build_reports(results_dir, {"md", "html", "json"})
    present = {r.framework for r in load_records(results_dir)}
    assert present == {"openai-agents", "langgraph"}
    md = (results_dir / "report.md").read_text()
    table = md.split("## Documented claims")[1].split("\n## ")[0]
    listed = {m.group(1) for m in (re.match(r"- \*\*C\d\d\*\* .*? · ([\w-]+): ", x) for x in table.splitlines()) if m}
    assert listed == present | {"all"}
    summary = json.loads((results_dir / "summary.json").read_text())
    assert {c["framework"] for c in summary["claims"]} == present | {"all"}
    html = (results_dir / "report.html").read_text()
    claims_html = html.split('id="claims"')[1].split("</section>")[0]
    for other in {c.framework for c in claims} - present - {"all"}:
        assert f"<td>{other}</td>" not in claims_html and other not in table
    assert "<td>langgraph</td>" in claims_html
