"""Hostile input files, one per case the adversarial audit tried and more: each is refused by `loopbench
validate` with exit 2, the file named, the field where there is one and the reason, and never a traceback.
The same files through `run` would be refused before anything runs (one loader for both)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.scenario import SCENARIO_DIR

TIER = "unit"

GOOD = "support_draft_completes"
RESUMING = "approval_approved_resume"
Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    """An edit setting a dotted path (list indices as numbers) in the scenario's data."""
    *parents, last = path.split(".")

    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[int(last) if isinstance(node, list) else last] = value

    return edit


def _tool(name: str) -> Edit:
    def edit(data: dict[str, Any]) -> None:  # not _set: a hostile name may hold dots
        data["tools"][name] = {"description": "d", "parameters": {"type": "object", "properties": {}},
                               "kind": "read", "behavior": [{"result": "r"}]}

    return edit


def _unreachable(data: dict[str, Any]) -> None:
    data["script"].append({"id": "never", "after": {"call": "ghost_1", "result": "receipt"},
                           "calls": [{"id": "never_1", "tool": "get_ticket", "args": {}}]})
    data["script"].append({"id": "ghost", "after": {"call": "never_1", "result": "receipt"},
                           "calls": [{"id": "ghost_1", "tool": "get_ticket", "args": {}}]})


def _good_text() -> str:
    return (SCENARIO_DIR / f"{GOOD}.yaml").read_text()


ALIAS_BOMB_IN_ARGS = _good_text().replace(
    "prompt:", "bomb: &a0 [x, x]\n" + "".join(f"b{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 60))
    + "prompt:", 1)

# (case id, scenario id, an edit of its data | the file's bytes, where and why it must be refused)
EDITS: list[tuple[str, str, Edit, str]] = [
    ("deadline-inf", GOOD, _set("limits.deadline_s", float("inf")), "limits.deadline_s: Input should be less"),
    ("deadline-1e300", GOOD, _set("limits.deadline_s", 1e300), "limits.deadline_s: Input should be less"),
    ("deadline-negative", GOOD, _set("limits.deadline_s", -1), "limits.deadline_s: Input should be greater"),
    ("deadline-nan", GOOD, _set("limits.deadline_s", float("nan")), "limits.deadline_s:"),
    ("turn-delay-1e300", GOOD, _set("script.0.delay_s", 1e300), "script[read_ticket].delay_s: Input should be less"),
    ("tool-delay-1e300", GOOD, _set("tools.get_ticket.behavior", [{"result": "x", "delay_s": 1e300}]),
     "tools.get_ticket.behavior.0.delay_s: Input should be less"),
    ("size-1e13", GOOD, _set("tools.get_ticket.behavior", [{"result": "x", "size_bytes": 10**13}]),
     "tools.get_ticket.behavior.0.size_bytes: Input should be less"),
    ("times-negative", GOOD, _set("tools.get_ticket.behavior", [{"result": "x", "times": -1}]),
     "tools.get_ticket.behavior.0.times: Input should be greater"),
    ("repeat-0", GOOD, _set("script.0.repeat", 0), "script[read_ticket].repeat: Input should be greater"),
    ("safety-cap-huge", GOOD, _set("safety_cap", 10**9), "safety_cap: Input should be less"),
    ("safety-cap-0", GOOD, _set("safety_cap", 0), "safety_cap: Input should be greater"),
    ("pause-1e9", RESUMING, _set("resumes.0.pause", 10**9), "resumes.0.pause: Input should be less"),
    ("pause-0", RESUMING, _set("resumes.0.pause", 0), "resumes.0.pause: Input should be greater"),
    ("decision-unknown", RESUMING, _set("resumes.0.decisions.send_1", "maybe"),
     "resumes.0.decisions.send_1: must be one of approve|reject"),
    ("number-as-string", GOOD, _set("script.0.delay_s", "1"), "script[read_ticket].delay_s: Input should be a valid number"),
    ("number-as-bool", GOOD, _set("script.0.delay_s", True), "script[read_ticket].delay_s: Input should be a valid number"),
    ("self-waiting-turn", GOOD, _set("script.1.after", {"call": "policy_1", "result": "receipt"}),
     "waits on its own call"),
    ("unreachable-turns", GOOD, _unreachable, "can never be served"),
    ("after-unknown-call", GOOD, _set("script.1.after.call", "ghost_9"), "no scripted call has id 'ghost_9'"),
    ("after-bad-result", GOOD, _set("script.1.after.result", "weird"), "script[find_policy].after.result: must be one of"),
    ("tool-name-space", GOOD, _tool("send reply"), "tools.send reply: a tool name is"),
    ("tool-name-quote", GOOD, _tool('say"hi'), "a tool name is"),
    ("tool-name-unicode", GOOD, _tool("émail"), "tools.émail: a tool name is"),
    ("tool-name-traversal", GOOD, _tool("../etc"), "tools.../etc: a tool name is"),
    ("tool-name-long", GOOD, _tool("x" * 65), "a tool name is"),
    ("id-traversal", GOOD, _set("id", "../x"), "id: String should match pattern"),
    ("script-empty", GOOD, _set("script", []), "script: List should have at least 1 item"),
    ("script-not-a-list", GOOD, _set("script", {"a": 1}), "script: Input should be a valid list"),
    ("prompt-empty", GOOD, _set("prompt", ""), "prompt: String should have at least 1 character"),
    ("prompt-nul", GOOD, _set("prompt", "a\x00b"), "prompt: contains control characters (U+0000)"),
    ("expect-negative", GOOD, _set("expect.counters.tool_executions", -1),
     "expect.counters.tool_executions: must be a number >= 0"),
    ("expect-bound-negative", GOOD, _set("expect.counters.tool_executions", {"max": -1}),
     "expect.counters.tool_executions.max: Input should be greater"),
    ("expect-min-above-max", GOOD, _set("expect.counters.tool_executions", {"min": 3, "max": 1}),
     "min 3 is above max 1"),
    ("expect-unknown-counter", GOOD, _set("expect.counters.tool_runs", 1), "expect.counters.tool_runs:"),
    ("expect-bad-outcome", GOOD, _set("expect.outcome", "done"), "expect.outcome: must be one of"),
    ("stall-at-negative", GOOD, _set("expect.stall_at_requests", -3),
     "expect.stall_at_requests: Input should be greater"),
    ("completion-empty", GOOD, _set("completion", {}), "completion: completion evidence must name"),
    ("category-unknown", GOOD, _set("category", "nope"), "category: must be one of"),
    ("unknown-key", GOOD, _set("nonsense", 1), "nonsense: unknown key"),
]

TEXT = _good_text()
RAW: list[tuple[str, bytes, str]] = [
    ("duplicate-key", TEXT.replace("prompt:", "prompt: first\nprompt:", 1).encode(), "duplicate key 'prompt'"),
    ("alias-bomb-in-args", ALIAS_BOMB_IN_ARGS.encode(), "more than 100 aliases"),
    ("not-utf8", TEXT.encode() + b"\nnote: \xff\xfe\n", "not UTF-8"),
    ("utf16-bom", TEXT.encode("utf-16"), "UTF-16 text: save it as UTF-8"),
    ("nul-byte", b"id: x\x00\n", "special characters are not allowed"),
    ("python-object", b"!!python/object/apply:os.system ['echo pwned']\n", "could not determine a constructor"),
    ("tab-indent", b"id: x\n\tbad: 1\n", "line 2, column 1"),
    ("nested-5000-deep", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper than 50 levels"),
    ("integer-5000-digits", TEXT.replace("prompt:", "safety_cap: 1" + "0" * 5000 + "\nprompt:", 1).encode(),
     "integer string conversion"),
    ("top-level-list", b"- a\n- b\n", "a scenario file must be a YAML mapping"),
    ("empty-file", b"", "a scenario file must be a YAML mapping"),
]

SUITE_FILES: list[tuple[str, bytes, str]] = [
    ("suite-malformed", b"tools: [unclosed\n", "_suite.yaml: line 2, column 1: YAML:"),
    ("suite-not-a-mapping", b"- 1\n", "_suite.yaml: must be a YAML mapping"),
    ("suite-not-utf8", b"tools: \xff\n", "_suite.yaml: line 1: not UTF-8"),
    ("suite-unknown-key", b"nonsense: 1\n", "_suite.yaml: nonsense: unknown key"),
    ("suite-tools-not-a-mapping", b"tools: [a, b]\n", "_suite.yaml: tools: must be a mapping"),
]


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    shutil.copy(SCENARIO_DIR / "_suite.yaml", tmp_path / "_suite.yaml")
    return tmp_path


def _refused(path: Path, expected: str) -> None:
    result = CliRunner().invoke(app, ["validate", str(path)])
    output = result.output.replace("\n", " ")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    assert str(path.parent) in output and expected in output, result.output


@pytest.mark.parametrize("case, scenario, edit, expected", EDITS, ids=[c[0] for c in EDITS])
def test_a_hostile_value_is_refused_with_file_field_and_reason(suite_copy, case, scenario, edit, expected):
    data = yaml.safe_load((SCENARIO_DIR / f"{scenario}.yaml").read_text())
    edit(data)
    path = suite_copy / f"{scenario}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    _refused(path, expected)


@pytest.mark.parametrize("case, raw, expected", RAW, ids=[c[0] for c in RAW])
def test_a_hostile_file_is_refused_with_file_and_reason(suite_copy, case, raw, expected):
    path = suite_copy / f"{GOOD}.yaml"
    path.write_bytes(raw)
    _refused(path, expected)


@pytest.mark.parametrize("case, raw, expected", SUITE_FILES, ids=[c[0] for c in SUITE_FILES])
def test_a_hostile_suite_file_is_refused_with_its_name(suite_copy, case, raw, expected):
    (suite_copy / "_suite.yaml").write_bytes(raw)
    path = suite_copy / f"{GOOD}.yaml"
    path.write_text(_good_text())
    _refused(path, expected)


def test_a_50_mb_file_is_refused_at_once_without_being_read(suite_copy):
    path = suite_copy / f"{GOOD}.yaml"
    with open(path, "wb") as fh:
        fh.truncate(50_000_000)  # sparse: its size is what is checked, before a byte is read
    _refused(path, "50,000,000 bytes: larger than the 1,000,000 bytes")


# ---------------------------------------------------------------- results files handed to report, diff, show
PUBLISHED = Path(__file__).resolve().parent.parent / "reports" / "published" / "results.jsonl"


def _published_lines(n: int) -> list[bytes]:
    with open(PUBLISHED, "rb") as fh:
        return [next(fh) for _ in range(n)]


BAD_RESULTS: list[tuple[str, Callable[[list[bytes]], bytes], str]] = [
    ("not-utf8-line", lambda g: g[0] + b'{"x": "\xff"}\n' + g[1], "line 2: not a results file: not UTF-8"),
    ("not-json-line", lambda g: g[0] + b"garbage\n" + g[1], "line 2: not a results file: not JSON"),
    ("json-not-a-record", lambda g: g[0] + b'{"a": 1}\n' + g[1], "line 2: not a results file: a RunRecord expected"),
    ("binary", lambda g: bytes(range(256)) * 4, "line 2: not a results file: not UTF-8"),
    ("empty", lambda g: b"", "not a results file: it holds no RunRecord"),
]


@pytest.mark.process
@pytest.mark.parametrize("command", ["report", "diff", "show"])
@pytest.mark.parametrize("case, make, expected", BAD_RESULTS, ids=[c[0] for c in BAD_RESULTS])
def test_a_bad_results_file_is_file_line_reason_with_exit_2(tmp_path, command, case, make, expected):
    bad = tmp_path / "results.jsonl"
    bad.write_bytes(make(_published_lines(2)))
    args = {"report": ["report", str(tmp_path), "--format", "md"], "diff": ["diff", str(tmp_path), str(PUBLISHED)],
            "show": ["show", "some-run", "--out", str(tmp_path)]}[command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"{bad}: {expected}" in result.output.replace("\n", " ") and "Traceback" not in result.output


@pytest.mark.process
@pytest.mark.parametrize("command", ["report", "diff", "show"])
def test_a_last_line_torn_inside_a_utf8_character_is_dropped_with_a_warning_line(tmp_path, command):
    good = _published_lines(3)
    (tmp_path / "results.jsonl").write_bytes(good[0] + good[1] + good[2][:50] + "é".encode()[:1])
    run_id = __import__("json").loads(good[0])["run_id"]
    args = {"report": ["report", str(tmp_path), "--format", "md"], "diff": ["diff", str(tmp_path), str(PUBLISHED)],
            "show": ["show", run_id, "--out", str(tmp_path)]}[command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output  # diff: 1 when the cells differ from all of published
    assert "warning " in result.output and "line 3: torn last line skipped (51 bytes)" in result.output
    assert "ResultsWarning" not in result.output
