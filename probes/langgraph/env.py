"""Probe helper: a scripted model server + ledger for one scenario, in this process."""
import secrets, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # the repo root
from contextlib import contextmanager
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.ledger.http import ledger_routes, LedgerClient
from loopbench.harness.model_server.app import ModelServer, running
from loopbench.harness.scenario import load_scenarios

@contextmanager
def scenario_env(sid):
    sc = [s for s in load_scenarios() if s.id == sid][0]
    ledger = Ledger(); token = secrets.token_hex(8)
    server = ModelServer(extra_routes=ledger_routes(ledger, token))
    with running(server) as url:
        run_id, key = f"probe-{sid}", f"lb-{secrets.token_hex(6)}"
        server.register_run(run_id, key, sc); ledger.register_run(run_id, sc)
        yield dict(sc=sc, url=url, key=key, run_id=run_id, ledger=LedgerClient(url, token, run_id),
                   requests=lambda: server.requests(run_id), entries=lambda: ledger.entries(run_id),
                   violations=lambda: server.violations(run_id))
