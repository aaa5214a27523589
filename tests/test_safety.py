"""Safety: loopback only, no secret from the environment in any output, the ledger's token, bad output dirs."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.ledger import Ledger
from loopbench.harness.ledger_http import ledger_routes
from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios

FAKE_SECRET = "sk-loopbench-FAKE-SECRET-0123456789"


def _listening_addresses() -> set[str]:
    return {c.laddr.ip for c in psutil.Process().net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}


def test_every_server_binds_to_loopback_only():
    before = _listening_addresses()
    with running(ModelServer(extra_routes=ledger_routes(Ledger(), "t"))) as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        new = _listening_addresses() - before
        assert new == {"127.0.0.1"}


def test_no_environment_secret_reaches_records_traces_or_logs(tmp_path, monkeypatch, doubles):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LOOPBENCH_TEST_TOKEN"):
        monkeypatch.setenv(var, FAKE_SECRET)
    chosen = [s for s in load_scenarios() if s.id in ("support_draft_completes", "approval_approved_resume")]
    plan = RunPlan(scenarios=chosen, variants=[("double-onecall", "default"), ("openai-agents", "default")],
                   jobs=2, out_dir=tmp_path, show_progress=False)
    run_suite(plan)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "results.jsonl" for p in files) and len(files) > 5
    leaks = [str(p) for p in files if FAKE_SECRET.encode() in p.read_bytes()]
    assert leaks == []
    # the per-suite ledger token and the per-run keys stay out of the records too
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert records and all("lb-" not in json.dumps(r["requests"]) for r in records)


def test_an_output_dir_that_cannot_be_written_is_bad_input(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = CliRunner().invoke(app, ["run", "-f", "openai-agents", "-s", "support_draft_completes",
                                      "--out", str(blocker / "out")])
    assert result.exit_code == 2
    assert "not writable" in result.output
