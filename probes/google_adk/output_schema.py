"""Standalone (no loopbench code): google-adk's structured answer (`LlmAgent(output_schema=..., output_key=...)`)
against a fake Gemini API server in this script, when the answer fails validation.

The output schema is a pydantic model whose `policy_id` carries an `AfterValidator` raising ValueError unless it
is a policy id (POL-<digits>). The fake `generateContent` server calls `lookup` first, then answers with the k-th
object of the case's list, k = 1 + the set_model_response answers already in the conversation: as a
`set_model_response` call when the request offers that tool, else as the JSON text. Run from the repo root:
.venv/bin/python probes/google_adk/output_schema.py CASE

- `correct`: tools + output_schema; the first answer breaks the validator, the second fits. ADK offers its
  `set_model_response` tool (the Gemini API model reports `capabilities.output_schema_and_tools` False), answers the
  rejected call with an error dict ("Validation Error found: ... Recall the set_model_response function
  correctly...") and calls the model again: 3 requests, completed, the validated object in state[output_key].
  Printed (google-adk 2.13.0): `offered=['set_model_response', 'lookup'] response_schema=False` /
  `returned requests=3 rejections=1 state={'ticket_id': 'T-1', 'policy_id': 'POL-7'}` /
  `error sent back: Validation Error found: | 1 validation error for Triage | policy_id | Value error, policy_id
  must be a policy id such as POL-7 ...`
- `never`: every answer breaks the validator, `RunConfig(max_llm_calls=4)`: each correction is one more LLM call
  under the same counter: 4 requests (1 lookup + 3 answers), then `LlmCallsLimitExceededError` before a 5th.
  Printed: `raised LlmCallsLimitExceededError requests=4 rejections=3`
- `no-budget`: the first 12 answers break the validator, the 13th fits, no max_llm_calls (RunConfig's default
  500): ADK has no retry budget of its own for set_model_response: it asks 12 times and completes.
  Printed: `returned requests=14 rejections=12 state={'ticket_id': 'T-1', 'policy_id': 'POL-7'}`
- `no-tools`: the agent has no tools: ADK sends the schema as the request's response schema (no set_model_response)
  and validates the final text with validate_schema when output_key is set (agents/llm_agent.py:1140-1147): a
  text that breaks the validator raises the pydantic ValidationError out of run_async after 1 request, no
  correction. Printed: `offered=[] response_schema=True` / `raised ValidationError title=Triage requests=1`
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

BAD = {"ticket_id": "T-1", "policy_id": "the refund policy"}
GOOD = {"ticket_id": "T-1", "policy_id": "POL-7"}
STATE: dict[str, Any] = {"requests": 0, "answers": [BAD], "bodies": []}


def is_policy_id(value: str) -> str:
    if re.search(r"^POL-[0-9]+$", value) is None:
        raise ValueError("policy_id must be a policy id such as POL-7")
    return value


class Triage(BaseModel):
    """The triage of one ticket."""

    model_config = ConfigDict(extra="forbid")
    ticket_id: str = Field(description="The ticket's id.")
    policy_id: Annotated[str, AfterValidator(is_policy_id)] = Field(description="The policy that applies.")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        STATE["requests"] += 1
        STATE["bodies"].append(body)
        offered = [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]
        parts = [p for c in body.get("contents", []) for p in c.get("parts", [])]
        looked_up = any(p.get("functionResponse", {}).get("name") == "lookup" for p in parts)
        k = sum(1 for p in parts if p.get("functionResponse", {}).get("name") == "set_model_response")
        answers = STATE["answers"]
        answer = answers[min(k, len(answers) - 1)]
        n = STATE["requests"]
        if "lookup" in offered and not looked_up:
            part: dict[str, Any] = {"functionCall": {"id": f"fc_{n}", "name": "lookup", "args": {"q": "T-1"}}}
        elif "set_model_response" in offered:
            part = {"functionCall": {"id": f"fc_{n}", "name": "set_model_response", "args": answer}}
        else:
            part = {"text": json.dumps(answer)}
        self._send(200, {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                         "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        out = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


def lookup(q: str) -> str:
    """Look a ticket up."""
    return "ticket T-1: a refund request"


async def run(base: str, tools: list[Any], **config: Any) -> None:
    agent = LlmAgent(name="a", model=Gemini(model="gemini-2.5-flash", base_url=base, client_kwargs={"api_key": "k"}),
                     tools=tools, output_schema=Triage, output_key="triage")
    service = InMemorySessionService()
    await service.create_session(app_name="p", user_id="u", session_id="s")
    runner = Runner(agent=agent, app_name="p", session_service=service)
    events: list[Any] = []
    message = types.Content(role="user", parts=[types.Part(text="triage T-1")])
    try:
        async for e in runner.run_async(user_id="u", session_id="s", new_message=message,
                                        run_config=RunConfig(**config)):
            events.append(e)
        outcome = "returned"
    except Exception as exc:  # noqa: BLE001 - the probe prints what ADK raised
        title = getattr(exc, "title", None)
        outcome = f"raised {type(exc).__name__}" + (f" title={title}" if title else "")
    first = STATE["bodies"][0]
    offered = [d["name"] for t in first.get("tools", []) for d in t.get("functionDeclarations", [])]
    schema = "responseSchema" in first.get("generationConfig", {}) or \
        "responseJsonSchema" in first.get("generationConfig", {})
    print(f"offered={offered} response_schema={schema}")
    errors = [fr.response["error"] for e in events for fr in e.get_function_responses()
              if fr.name == "set_model_response" and "error" in (fr.response or {})]
    session = await service.get_session(app_name="p", user_id="u", session_id="s")
    state = session.state.get("triage") if session is not None else None
    print(f"{outcome} requests={STATE['requests']} rejections={len(errors)}" +
          (f" state={state}" if outcome == "returned" else ""))
    if errors:
        print("error sent back: " + " | ".join(errors[0].splitlines()[:4]) + " ...")


async def case_correct(base: str) -> None:
    STATE["answers"] = [BAD, GOOD]
    await run(base, [lookup])


async def case_never(base: str) -> None:
    STATE["answers"] = [BAD]
    await run(base, [lookup], max_llm_calls=4)


async def case_no_budget(base: str) -> None:
    STATE["answers"] = [BAD] * 12 + [GOOD]
    await run(base, [lookup])


async def case_no_tools(base: str) -> None:
    STATE["answers"] = [BAD, GOOD]
    await run(base, [])


CASES = {"correct": case_correct, "never": case_never, "no-budget": case_no_budget, "no-tools": case_no_tools}


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: output_schema.py {{{'|'.join(CASES)}}}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    asyncio.run(CASES[sys.argv[1]](f"http://127.0.0.1:{server.server_address[1]}"))


if __name__ == "__main__":
    main()
