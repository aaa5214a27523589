"""The results file's one torn-line rule, shared by the runner (`--continue`) and the reports."""

from __future__ import annotations

import pytest

from loopbench.harness.errors import BadInput
from loopbench.harness.results.store import ResultsStore, split_lines

TIER = "unit"

LINE = '{"scenario": "s", "framework": "f", "variant": "default", "repetition": 1}'


def test_what_follows_the_last_newline_is_torn_whatever_its_bytes():
    found = split_lines((LINE + "\n").encode() + '{"scenario": "caf\u00e9'.encode()[:-1])  # cut inside a character
    assert found.lines == [LINE] and found.torn and "line 2: torn last line" in found.torn_warning("f")
    assert split_lines((LINE + "\n").encode()).torn == b""
    assert split_lines(LINE.encode()).lines == []  # no newline: not a complete record


def test_a_complete_line_that_is_not_utf8_is_bad_input():
    with pytest.raises(BadInput, match="line 2: not UTF-8"):
        split_lines((LINE + "\n").encode() + b"\xff\xfe\n")


def test_continue_cuts_the_torn_tail_and_keeps_the_complete_records(tmp_path):
    f = tmp_path / "results.jsonl"
    f.write_bytes((LINE + "\n").encode() + b'{"scenario": "x", "fr')
    keys, warnings = ResultsStore(f).finished_keys()
    assert keys == {("s", "f", "default", 1)} and len(warnings) == 1
    assert f.read_bytes() == (LINE + "\n").encode()


def test_a_fresh_run_keeps_the_old_results_until_it_has_a_record(tmp_path, make_scenario):
    from loopbench.harness.record import RunRecord

    f = tmp_path / "results.jsonl"
    f.write_text(LINE + "\n")
    store = ResultsStore(f, replace=True)
    assert f.read_text() == LINE + "\n"  # nothing recorded yet (a start-up failure here loses nothing)
    rec = RunRecord(run_id="r", scenario="s", framework="f", started_at="t", outcome="completed", outcome_rule=8,
                    verdict="conforms")
    store.append(rec)
    store.append(rec)
    assert len(f.read_text().splitlines()) == 2 and (tmp_path / "results.previous.jsonl").read_text() == LINE + "\n"


def test_the_output_directory_is_locked_and_the_holder_named(tmp_path):
    from loopbench.harness.results.store import OutLock

    with OutLock(tmp_path):
        with pytest.raises(BadInput, match=r"in use by loopbench pid \d+"):
            with OutLock(tmp_path):
                pass
    with OutLock(tmp_path):  # released: the next run takes it
        pass
