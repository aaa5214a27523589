"""Safety: loopback only, no secret from the environment in any output, the ledger's token, bad output dirs."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from loopbench.cli import app
from loopbench.harness.ledger.http import ledger_routes
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.model_server import ModelServer, running
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios

TIER = "unit"

FAKE_SECRET = "sk-loopbench-FAKE-SECRET-0123456789"


def _listening_sockets() -> set[tuple[str, int]]:
    """(address, port) of every socket this process listens on (a server of an earlier test in the same pytest
    process may still be listening: hence the ports)."""
    return {(c.laddr.ip, c.laddr.port) for c in psutil.Process().net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def test_every_server_binds_to_loopback_only():
    before = _listening_sockets()
    with running(ModelServer(extra_routes=ledger_routes(Ledger(), "t"))) as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        assert _listening_sockets() - before == {("127.0.0.1", port)}


@pytest.mark.process
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


@pytest.mark.process
def test_proxy_variables_never_carry_loopback_traffic(tmp_path, monkeypatch):
    """HTTP(S)_PROXY / ALL_PROXY point at a local listener that records whatever reaches it: a run of every
    framework sends it nothing (children get an allow-listed environment and loopback is exempt)."""
    import socket
    import threading

    from loopbench.harness.adapter import BUILTIN, adapter_class

    received: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    received.append(conn.recv(4096))
                except OSError:
                    received.append(b"<connected>")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    variants = [(f, "default") for f in sorted(BUILTIN) if adapter_class(f).unavailable_reason() is None]
    chosen = [s for s in load_scenarios() if s.id == "support_draft_completes"]
    try:
        run_suite(RunPlan(scenarios=chosen, variants=variants, jobs=2, out_dir=tmp_path, show_progress=False))
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
    assert received == []
    records = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(records) == len(variants) == len(BUILTIN)
    assert {r["outcome"] for r in records} == {"completed"}


def test_children_get_an_allow_listed_environment():
    from loopbench.harness.run.environment import child_environment

    env = child_environment({"PATH": "/bin", "OPENAI_API_KEY": "sk-real", "AWS_SECRET_ACCESS_KEY": "x",
                             "HTTPS_PROXY": "http://proxy:3128", "LC_ALL": "C.UTF-8", "LOOPBENCH_CACHE": "/c",
                             "GITHUB_TOKEN": "t"})
    assert env["PATH"] == "/bin" and env["LC_ALL"] == "C.UTF-8" and env["LOOPBENCH_CACHE"] == "/c"
    assert not {"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "HTTPS_PROXY", "GITHUB_TOKEN"} & set(env)
    assert "127.0.0.1" in env["NO_PROXY"] and env["no_proxy"] == env["NO_PROXY"]
