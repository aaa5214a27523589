"""The command line: list, validate, and bad input refused with exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.scenario import SCENARIO_DIR

TIER = "unit"

runner = CliRunner()


def test_list_json_shows_the_48_scenarios_and_the_frameworks():
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["scenarios"]) == 48
    assert {"id", "category", "claims"} <= set(data["scenarios"][0])
    assert isinstance(data["frameworks"], list)


def test_validate_the_suite():
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0 and "48 scenario(s) valid" in result.output


def test_validate_a_broken_copy_names_file_field_and_reason(tmp_path: Path):
    shutil.copy(SCENARIO_DIR / "_suite.yaml", tmp_path)
    broken = tmp_path / "approval_pause.yaml"
    text = (SCENARIO_DIR / "approval_pause.yaml").read_text()
    broken.write_text(text.replace("send_reply: {}", "send_reply: {approval: sometimes}", 1))
    assert broken.read_text() != text
    result = runner.invoke(app, ["validate", str(broken)])
    assert result.exit_code == 2
    assert f"{broken}: tools.send_reply.approval: must be one of none|required|deny" in result.output.replace("\n", "")


def test_run_refuses_an_unknown_framework_with_the_available_ones():
    result = runner.invoke(app, ["run", "--framework", "nosuch", "--out", "/tmp/lb-unused"])
    assert result.exit_code == 2
    assert "unknown framework 'nosuch'" in result.output


def test_run_refuses_a_glob_that_matches_nothing():
    result = runner.invoke(app, ["run", "--scenario", "zzz*", "--out", "/tmp/lb-unused"])
    assert result.exit_code == 2
    assert "matches no scenario" in result.output


def test_serve_on_a_port_in_use_exits_2_with_a_clear_message():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.output


@pytest.mark.process
def test_report_and_diff_refuse_what_is_not_a_results_file(tmp_path: Path):
    bogus = tmp_path / "results.jsonl"
    bogus.write_text('{"hello": "world"}\n')
    for args in (["report", str(tmp_path)], ["diff", str(tmp_path), str(tmp_path)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert str(bogus) in result.output.replace("\n", "")
    missing = runner.invoke(app, ["diff", str(tmp_path / "nope"), str(tmp_path)])
    assert missing.exit_code == 2


def test_schema_exports_the_json_schemas_of_a_scenario_and_a_record():
    import json

    record = runner.invoke(app, ["schema", "record"])
    assert record.exit_code == 0, record.output
    props = json.loads(record.output)["properties"]
    assert props["schema_version"]["default"] == 7 and "segments" in props and "pauses" not in props
    assert "loopbench_version" in props
    scenario = runner.invoke(app, ["schema", "scenario"])
    assert scenario.exit_code == 0 and "script" in json.loads(scenario.output)["properties"]
    assert runner.invoke(app, ["schema", "nonsense"]).exit_code == 2


def test_list_shows_each_adapters_declared_capabilities():
    import json

    result = runner.invoke(app, ["list", "--json"])
    frameworks = {f["id"]: f for f in json.loads(result.output)["frameworks"]}
    oai = frameworks["openai-agents"]["capabilities"]
    assert oai["native_limits"] == ["max_model_calls"] and oai["pause"] == "snapshot"
    assert oai["pause_survives_restart"] is True and "guardrail" in oai["deny"]
    assert frameworks["claude-agent-sdk"]["capabilities"]["native_limits"] == ["max_cost_usd", "max_model_calls"]
    table = runner.invoke(app, ["list"]).output
    assert "capabilities (declared by each adapter)" in table and "hasToolCall" in table


def test_run_options_are_bounded():
    for args in (["--jobs", "0"], ["--jobs", "1000"], ["--repeat", "1000"], ["--hard-margin", "0"]):
        result = runner.invoke(app, ["run", *args])
        assert result.exit_code == 2, (args, result.output)


def test_the_command_lines_fail_on_words_are_the_records():
    from loopbench.commands.choices import FailOnChoice
    from loopbench.harness.record import FailOn

    assert [c.value for c in FailOnChoice] == [k.value for k in FailOn]


def test_run_help_says_a_bare_framework_is_every_variant_of_it():
    result = runner.invoke(app, ["run", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "`-f F` runs every variant (idiom) of F, `-f F:VARIANT` that one only" in text, result.output


@pytest.mark.process
def test_help_imports_no_command_work():
    """`loopbench --help` reads the command table only: none of the harness, the reports or the runner is imported
    (their start-up is what made it slow; `loopbench bench` measures the time)."""
    import subprocess
    import sys

    code = ("import sys; from typer.testing import CliRunner; from loopbench.cli import app; "
            "assert CliRunner().invoke(app, ['--help']).exit_code == 0; "
            "print(sorted(m for m in sys.modules if m.startswith(('loopbench.harness', 'loopbench.reports', "
            "'loopbench.commands.run', 'pydantic', 'aiohttp', 'httpx'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
