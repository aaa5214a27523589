"""A user's own scenario directory, outside the package: `--scenarios PATH` for validate, list and run; its
own `_suite.yaml`, building on the built-in catalogue only when it says `extends: builtin`; a missing tool
says where tools are looked up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.scenario import SCENARIO_DIR, expand_paths, load_scenarios

TIER = "unit"


def _mine(directory: Path, suite: str | None) -> Path:
    """A copy of support_draft_completes as `my_refund` (it names catalogue tools without declaring them)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load((SCENARIO_DIR / "support_draft_completes.yaml").read_text())
    data.update(id="my_refund", title="My own refund scenario")
    (directory / "my_refund.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    if suite is not None:
        (directory / "_suite.yaml").write_text(suite)
    return directory


@pytest.mark.process
def test_a_directory_that_extends_the_builtin_suite_validates_lists_and_runs(tmp_path, doubles):
    mine = _mine(tmp_path / "mine", "extends: builtin\nlimits: {max_model_calls: 7}\n")
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", "--scenarios", str(mine)])
    assert ok.exit_code == 0 and "1 scenario(s) valid" in ok.output, ok.output
    listed = json.loads(runner.invoke(app, ["list", "--json", "--scenarios", str(mine)]).output)
    assert [s["id"] for s in listed["scenarios"]] == ["my_refund"]
    out = tmp_path / "out"
    ran = runner.invoke(app, ["run", "--scenarios", str(mine), "-f", "double-onecall", "--jobs", "1",
                              "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    (record,) = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert record["scenario"] == "my_refund"
    (scenario,) = load_scenarios(expand_paths([mine]))
    assert scenario.limits.max_model_calls == 7  # the directory's own default, laid over the builtin's
    assert scenario.tools["get_ticket"].description  # from the builtin catalogue


def test_without_extends_a_catalogue_tool_is_one_problem_that_says_where_tools_come_from(tmp_path):
    mine = _mine(tmp_path / "mine", None)
    result = CliRunner().invoke(app, ["validate", "--scenarios", str(mine)])
    out = result.output.replace("\n", " ")
    assert result.exit_code == 2
    assert "required key is missing" not in out, result.output
    for tool in ("get_ticket", "lookup_policy"):
        assert f"tools.{tool}: not declared: tools are looked up in this file and in" in out
    assert "_suite.yaml (there is none)" in out and "`extends: builtin`" in out and "send_reply" in out


def test_a_self_contained_file_needs_no_suite_file(tmp_path):
    data = yaml.safe_load((SCENARIO_DIR / "support_draft_completes.yaml").read_text())
    data["id"] = "standalone"
    for name in data["tools"]:
        data["tools"][name] = {"description": f"{name} tool", "kind": "read",
                               "parameters": {"type": "object", "properties": {}}, "behavior": [{"result": "ok"}]}
    path = tmp_path / "standalone.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(app, ["validate", "--scenarios", str(path)])
    assert result.exit_code == 0, result.output
    assert "no _suite.yaml here, so no suite defaults" in result.output.replace("\n", " ")  # said, not silent


@pytest.mark.process
def test_the_note_is_a_line_of_its_own_before_the_result_when_both_streams_share_a_pipe(tmp_path):
    """`loopbench validate DIR 2>&1 | cat`: the note (stderr) and the result (stdout) in one pipe, each on its own
    line, the note first."""
    import os
    import subprocess
    import sys

    for sid in ("first", "second"):
        data = yaml.safe_load((SCENARIO_DIR / "support_draft_completes.yaml").read_text())
        data["id"] = sid
        for name in data["tools"]:
            data["tools"][name] = {"description": f"{name} tool", "kind": "read",
                                   "parameters": {"type": "object", "properties": {}}, "behavior": [{"result": "ok"}]}
        (tmp_path / f"{sid}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run([sys.executable, "-m", "loopbench.cli", "validate", "--scenarios", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"note {tmp_path}: no _suite.yaml here, so no suite defaults"), lines
    assert lines[1] == "2 scenario(s) valid", lines


@pytest.mark.parametrize("suite, expected", [
    ("extends: somebody-else\n", "extends: must be builtin"),
    ("tools: [a]\n", "tools: must be a mapping"),
])
def test_a_bad_suite_file_of_a_user_directory_is_named(tmp_path, suite, expected):
    mine = _mine(tmp_path / "mine", suite)
    result = CliRunner().invoke(app, ["validate", "--scenarios", str(mine)])
    assert result.exit_code == 2 and expected in result.output, result.output


def test_a_scenarios_path_that_is_missing_or_empty_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "empty").mkdir()
    for path, reason in ((tmp_path / "nope", "no such file or directory"),
                         (tmp_path / "empty", "holds no scenario file")):
        for command in (["validate"], ["list"], ["run", "--out", str(tmp_path / "o")], ["serve"]):
            result = CliRunner().invoke(app, [*command, "--scenarios", str(path)])
            assert result.exit_code == 2 and f"{path}: --scenarios: {reason}" in result.output, (command, result.output)


@pytest.mark.process
def test_serve_a_scenario_of_your_own_prints_each_base_url_and_refuses_unoffered_tools(tmp_path):
    """`loopbench serve --scenarios DIR` (one scenario: no --scenario needed), driven by a plain openai client."""
    import re
    import subprocess
    import sys

    import openai

    mine = _mine(tmp_path / "mine", "extends: builtin\n")
    proc = subprocess.Popen([sys.executable, "-m", "loopbench.cli", "serve", "--scenarios", str(mine)],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = [proc.stderr.readline() for _ in range(4)]
        assert "scenario my_refund for any API key" in banner[0], banner
        (base,) = re.findall(r"base_url (http://127\.0\.0\.1:\d+/v1)", banner[1])
        assert re.search(r"Anthropic Messages: base_url http://127\.0\.0\.1:\d+$", banner[2].strip()), banner
        client = openai.OpenAI(base_url=base, api_key="anything", max_retries=0)
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
                 for n in ("get_ticket", "lookup_policy")]
        first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], tools=tools)
        assert first.choices[0].message.tool_calls[0].function.name == "get_ticket"
        with pytest.raises(openai.BadRequestError, match="did not offer"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
