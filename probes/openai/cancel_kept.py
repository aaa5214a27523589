"""Standalone (no loopbench code): what the OpenAI Agents SDK keeps when its caller cancels a run while a tool runs,
against a fake Responses server in this script (JSON answers, or SSE when the request streams).

The task: turn 1 calls post_to_portal (instant), turn 2 calls lookup_policy (the tool sleeps 5 s), turn 3 answers.
The caller cancels 0.5 s into lookup_policy.

  A. non-streamed `Runner.run` as a task, `task.cancel()` (the SDK has no cancel API for it): `CancelledError`,
     no RunResult: no usage, no `to_input_list()`, nothing to continue from (the tool's task is cancelled too).
  B. `Runner.run_streamed` + `result.cancel()` (mode "immediate", the default), stream_events() read on to its end:
     the run stops at once; `context_wrapper.usage` keeps both responses (2 requests), but `new_items` /
     `to_input_list()` keep only turn 1 (the post call and its output): turn 2's `function_call` item, whose
     response had completed, is dropped with the turn (openai-agents-python #1895's lost history). Continuing from
     `to_input_list()` asks the model again for turn 2 (4 requests in all; lookup_policy runs again).
  C. `result.cancel(mode="after_turn")`: waits for lookup_policy to finish (~5 s), keeps turn 2 whole.

Run from the repo root: .venv/bin/python probes/openai/cancel_kept.py
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, FunctionTool, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

BODIES: list[dict[str, Any]] = []
TOOL_RUNS: list[str] = []


def reply(body: dict[str, Any]) -> dict[str, Any]:
    n = len(BODIES)
    outputs = [i for i in body["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if len(outputs) == 0:
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{n}", "call_id": "call_post_1",
                                "name": "post_to_portal", "arguments": "{}", "status": "completed"}
    elif len(outputs) == 1:
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": "call_policy_1", "name": "lookup_policy",
                "arguments": "{}", "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Posted; policy POL-7.", "annotations": []}]}
    return {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model"), "output": [item], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                                   "total_tokens": 11}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        BODIES.append(body)
        response = reply(body)
        if body.get("stream"):
            events = [{"type": "response.created", "sequence_number": 0, "response": {**response, "output": [],
                                                                                      "status": "in_progress"}},
                      {"type": "response.completed", "sequence_number": 1, "response": response}]
            out = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
            ctype = "text/event-stream"
        else:
            out, ctype = json.dumps(response).encode(), "application/json"
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def agent(client: AsyncOpenAI, policy_started: asyncio.Event) -> Agent[Any]:
    async def post(_ctx: Any, _args: str) -> str:
        TOOL_RUNS.append("post_to_portal")
        return "posted"

    async def lookup(_ctx: Any, _args: str) -> str:
        TOOL_RUNS.append("lookup_policy")
        policy_started.set()
        await asyncio.sleep(5)
        return "Policy POL-7"

    schema = {"type": "object", "properties": {}}
    tools = [FunctionTool(name=n, description=n, on_invoke_tool=f, params_json_schema=schema, strict_json_schema=False)
             for n, f in (("post_to_portal", post), ("lookup_policy", lookup))]
    return Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client), tools=tools)


def reset() -> None:
    BODIES.clear()
    TOOL_RUNS.clear()


async def non_streamed(client: AsyncOpenAI) -> None:
    reset()
    started = asyncio.Event()
    task = asyncio.ensure_future(Runner.run(agent(client, started), "Post, then look up the policy."))
    await started.wait()
    await asyncio.sleep(0.5)
    t0 = time.perf_counter()
    task.cancel()
    try:
        await task
        raised = "nothing"
    except asyncio.CancelledError as exc:
        raised = f"{type(exc).__name__} args={exc.args} attrs={sorted(vars(exc))}"
    print("A. Runner.run task.cancel():", json.dumps({
        "raised": raised, "stopped_after_s": round(time.perf_counter() - t0, 2), "requests": len(BODIES),
        "tool_runs": TOOL_RUNS}))


async def streamed(client: AsyncOpenAI, mode: str) -> list[Any]:
    reset()
    started = asyncio.Event()
    result = Runner.run_streamed(agent(client, started), "Post, then look up the policy.")

    async def cancel_later() -> None:
        await started.wait()
        await asyncio.sleep(0.5)
        result.cancel(mode=mode)  # type: ignore[arg-type]

    canceller = asyncio.ensure_future(cancel_later())
    t0 = time.perf_counter()
    raised = None
    try:
        async for _event in result.stream_events():
            pass
    except Exception as exc:  # noqa: BLE001 (what the stream raises is the finding)
        raised = type(exc).__name__
    await canceller
    kept = result.to_input_list()
    usage = result.context_wrapper.usage
    print(f"{'B' if mode == 'immediate' else 'C'}. run_streamed + cancel(mode={mode!r}):", json.dumps({
        "raised": raised, "elapsed_s": round(time.perf_counter() - t0, 2), "requests": len(BODIES),
        "usage.requests": usage.requests, "input_tokens": usage.input_tokens,
        "raw_responses": len(result.raw_responses), "new_items": [type(i).__name__ for i in result.new_items],
        "to_input_list types": [i.get("type", i.get("role")) for i in kept], "final_output": result.final_output,
        "tool_runs": TOOL_RUNS}, indent=1))
    return kept


async def main() -> None:
    set_tracing_disabled(True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k")

    await non_streamed(client)
    kept = await streamed(client, "immediate")
    reset()
    resumed = Runner.run_streamed(agent(client, asyncio.Event()), kept)
    async for _event in resumed.stream_events():
        pass
    print("B'. continued from to_input_list():", json.dumps({
        "requests": len(BODIES), "tool_runs": TOOL_RUNS, "final_output": resumed.final_output,
        "usage.requests": resumed.context_wrapper.usage.requests}))
    await streamed(client, "after_turn")
    server.shutdown()


asyncio.run(main())
