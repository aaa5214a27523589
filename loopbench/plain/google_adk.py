"""A plain Google ADK script for `support_draft_completes` — no loopbench code: what a user would write.

Long-lived, like a service: one JSON request per stdin line (`server_url`: the Gemini API base URL, `api_key`,
`prompt`, `max_turns`), one JSON answer per stdout line (`ok`, `text`, `wall_s`, `cpu_s`: this process's wall and
CPU time around the run). `loopbench bench` times it against loopbench's run of the same scenario.

ADK's quick start, as the adapter's default idiom: its own `Gemini` model class with a Gemini model named in the
code (the request's `model` is the scenario's, a Claude id, which is not what this idiom sends), and the sessions
in ADK's on-disk `SqliteSessionService`, opened once when the service starts.
"""

import asyncio
import json
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types


def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return f"Ticket {ticket_id}: customer ana@example.com asks for a refund of order 1042, delivered 12 days ago."


def lookup_policy(topic: str) -> str:
    """Look up the support policy that applies to a topic."""
    return "Policy POL-7: refunds are accepted within 30 days of delivery."


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


MODEL = "gemini-2.5-flash"
STORE = tempfile.TemporaryDirectory(prefix="adk-plain-")  # the service's database directory, for its lifetime
sessions = SqliteSessionService(str(Path(STORE.name) / "sessions.db"))  # one per service process


async def run(req: dict) -> str:
    # the bench gives each run its own key: the model (and its client) is built per request
    model = Gemini(model=MODEL, base_url=req["server_url"], client_kwargs={"api_key": req["api_key"]})
    agent = LlmAgent(name="support", model=model, tools=[get_ticket, lookup_policy])
    runner = Runner(agent=agent, app_name="support", session_service=sessions)
    session = await sessions.create_session(app_name="support", user_id="user", session_id=uuid.uuid4().hex)
    text = ""
    config = RunConfig(max_llm_calls=req["max_turns"]) if req.get("max_turns") else RunConfig()
    message = types.Content(role="user", parts=[types.Part(text=req["prompt"])])
    async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message, run_config=config):
        if event.is_final_response() and event.content and event.content.parts:
            text = "".join(p.text for p in event.content.parts if p.text) or text
    return text


async def main() -> None:
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": True}), flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        req = json.loads(line)
        c0, t0 = cpu_s(), time.perf_counter()
        text = await run(req)
        print(json.dumps({"ok": True, "text": text, "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0}),
              flush=True)


if __name__ == "__main__":
    asyncio.run(main())
