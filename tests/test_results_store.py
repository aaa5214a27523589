"""The results file's one torn-line rule, shared by the runner (`--continue`) and the reports."""

from __future__ import annotations

import pytest

from loopbench.harness.errors import BadInput
from loopbench.harness.results_store import ResultsStore, split_lines

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
