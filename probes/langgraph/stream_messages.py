"""Standalone repro (no loopbench code): what create_agent + langchain_anthropic.ChatAnthropic (its defaults)
sends when the graph is streamed with stream_mode "messages", and the usage it then reports, against a tiny
Anthropic Messages server on 127.0.0.1 in this script (it answers `"stream": true` requests with the Messages SSE
events, the others with JSON; a tool call, then text; usage 1000 in / 100 out per response).

  .venv/bin/python probes/langgraph/stream_messages.py [CASE ...]   (default: every case)

Cases (each prints the `stream` field of every request, the "messages" chunks the graph yielded, and the AI
messages' usage_metadata in the final state):
  values        stream_mode=["values"]: 2 requests, stream absent (ChatAnthropic calls messages.create); usage
                1000/100 each
  messages      stream_mode=["values", "messages"]: 2 requests with stream true (langgraph's messages handler is a
                streaming callback handler, so BaseChatModel._should_stream says yes); usage 1000/100 each, as
                not streamed
  delta-output  the same, but message_delta's usage has output_tokens only (input_tokens only on message_start; the
                scripted server and this script's other cases repeat input_tokens on message_delta, as cumulative
                usage does): ChatAnthropic reads usage from message_delta alone
                (_make_message_chunk_from_anthropic_event keeps no usage from message_start), so the reported
                input_tokens are 0 for a request that consumed 1000
Printed (langchain-anthropic 1.7.10, langchain-core from the lock, langgraph 1.2.24):
  values: streams [None, None]; message chunks 0; usage [(1000, 100), (1000, 100)]
  messages: streams [True, True]; message chunks 8; usage [(1000, 100), (1000, 100)]
  delta-output: streams [True, True]; message chunks 8; usage [(0, 100), (0, 100)]
"""
import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool

LOG: list[object] = []  # the `stream` field of each request
CASE = {"delta_input": True}


def blocks(answered: bool) -> list[dict]:
    if answered:
        return [{"type": "text", "text": "All done."}]
    return [{"type": "tool_use", "id": "toolu_1", "name": "get_ticket", "input": {"ticket_id": "T-1"}}]


def sse(kind: str, **fields: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        LOG.append(body.get("stream"))
        answered = any(isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
                       for m in body["messages"])
        content = blocks(answered)
        stop = "end_turn" if answered else "tool_use"
        usage = {"input_tokens": 1000, "output_tokens": 100}
        message = {"id": f"msg_{len(LOG)}", "type": "message", "role": "assistant", "model": body["model"],
                   "stop_reason": stop, "stop_sequence": None}
        if not body.get("stream"):
            data = json.dumps({**message, "content": content, "usage": usage}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        out = [sse("message_start", message={**message, "content": [], "stop_reason": None,
                                             "usage": {"input_tokens": 1000, "output_tokens": 1}})]
        for i, b in enumerate(content):
            if b["type"] == "text":
                out.append(sse("content_block_start", index=i, content_block={"type": "text", "text": ""}))
                out.append(sse("content_block_delta", index=i, delta={"type": "text_delta", "text": b["text"]}))
            else:
                out.append(sse("content_block_start", index=i, content_block={**b, "input": {}}))
                out.append(sse("content_block_delta", index=i,
                               delta={"type": "input_json_delta", "partial_json": json.dumps(b["input"])}))
            out.append(sse("content_block_stop", index=i))
        delta_usage = usage if CASE["delta_input"] else {"output_tokens": 100}
        out.append(sse("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=delta_usage))
        out.append(sse("message_stop"))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in out:
            self.wfile.write(chunk)
            self.wfile.flush()


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return "Ticket T-1: a refund of order 1042."


async def one(url: str, case: str) -> None:
    LOG.clear()
    CASE["delta_input"] = case != "delta-output"
    modes = ["values"] if case == "values" else ["values", "messages"]
    graph = create_agent(ChatAnthropic(model="claude-sonnet-4-5", base_url=url, api_key="probe"), [get_ticket])
    state: dict = {}
    chunks = 0
    async for mode, item in graph.astream({"messages": [("user", "Read T-1.")]}, stream_mode=modes):
        if mode == "values":
            state = item
        else:
            chunks += 1
    ai = [m for m in state.get("messages", []) if m.type == "ai"]
    usage = [(m.usage_metadata or {}).get("input_tokens") for m in ai], \
        [(m.usage_metadata or {}).get("output_tokens") for m in ai]
    print(f"{case}: streams {LOG}; message chunks {chunks}; usage {list(zip(*usage, strict=True))}")


async def main(cases: list[str]) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    for case in cases:
        await one(f"http://127.0.0.1:{srv.server_port}", case)
    srv.shutdown()


asyncio.run(main(sys.argv[1:] or ["values", "messages", "delta-output"]))
