"""Probe helper: the scripted server + ledger in a thread; register a scenario by id."""
import secrets, sys, contextlib
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # the repo root
from loopbench.harness.ledger.store import Ledger
from loopbench.harness.ledger.http import ledger_routes
from loopbench.harness.model_server.app import ModelServer, running
from loopbench.harness.scenario import load_scenarios

@contextlib.contextmanager
def served():
    ledger = Ledger(); token = secrets.token_hex(8)
    server = ModelServer(extra_routes=ledger_routes(ledger, token))
    with running(server) as base:
        def reg(sid):
            sc = next(s for s in load_scenarios() if s.id == sid)
            run_id = f"{sid}-{secrets.token_hex(3)}"; key = f"lb-{secrets.token_hex(8)}"
            server.register_run(run_id, key, sc); ledger.register_run(run_id, sc)
            return sc, run_id, key
        yield server, ledger, token, base, reg

def show(server, ledger, run_id):
    for r in server.requests(run_id):
        print(f"  req{r.seq} t={r.t_s:.2f} st={r.status} turn={r.served_turn} retry={r.retry} results={[ (t.call_id,t.status) for t in r.tool_results]} offered={r.tools_offered} model={r.model} {r.error or ''}")
    for e in ledger.entries(run_id):
        print(f"  ledger {e.kind} {e.tool} call_id={e.call_id} outcome={e.outcome} decision={e.decision}")
    for v in server.violations(run_id):
        print("  VIOLATION", v)
