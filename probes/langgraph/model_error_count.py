"""Standalone repro (no loopbench code): when the model call raises, LangGraph's state holds no trace of the
request(s) made, so "AI messages in the state" is not a request count. A tiny Chat Completions server on
127.0.0.1 answers every request with HTTP 500 (no retry hint, then with `x-should-retry: false`).

  .venv/bin/python probes/langgraph/model_error_count.py

Printed: requests the server saw, what the graph raised, the AI messages in the checkpointed state, and the
debug stream's model task and its task_result, which carries the error (and no message).
"""
import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

LOG: list[dict] = []
HEADERS: dict[str, str] = {}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        LOG.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        data = json.dumps({"error": {"message": "internal error", "type": "server_error"}}).encode()
        self.send_response(500)
        for k, v in {"content-type": "application/json", "content-length": str(len(data)), **HEADERS}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return "ticket"


async def one(url: str, headers: dict[str, str]) -> None:
    LOG.clear()
    HEADERS.clear()
    HEADERS.update(headers)
    graph = create_agent(ChatOpenAI(base_url=url, api_key="probe", model="probe-model"), [get_ticket],
                         checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    started, finished = [], []
    try:
        async for chunk in graph.astream({"messages": [("user", "Read T-1.")]}, cfg, stream_mode="debug"):
            if chunk["type"] in ("task", "task_result"):
                err = chunk["payload"].get("error")
                name = chunk["payload"]["name"] + (f" (error {type(err).__name__})" if err else "")
                (started if chunk["type"] == "task" else finished).append(name)
        raised = "nothing"
    except Exception as exc:  # noqa: BLE001 - printing what the framework raised
        raised = f"{type(exc).__name__}: {str(exc)[:60]}"
    state = await graph.aget_state(cfg)
    ai = [m for m in (state.values or {}).get("messages", []) if m.type == "ai"]
    print(f"500 with headers {headers or '{}'}: server saw {len(LOG)} request(s); raised {raised}\n"
          f"    state keys {sorted(state.values)}, AI messages in it: {len(ai)}; "
          f"tasks started {started}, task results {finished}")


async def main() -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/v1"
    await one(url, {})
    await one(url, {"x-should-retry": "false"})
    srv.shutdown()


asyncio.run(main())
