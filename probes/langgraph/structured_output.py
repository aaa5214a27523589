"""Standalone repro (no loopbench code): what LangChain's create_agent(response_format=...) and the LangGraph
how-to's hand-built "bind output as tool" graph do when the model's structured answer fails validation, against a
tiny fake model server on 127.0.0.1 in this script (Anthropic Messages and OpenAI Chat Completions).

  .venv/bin/python probes/langgraph/structured_output.py [CASE ...]   (default: every case)

The fake model: its first answer calls get_ticket; every later one is the structured answer, as a call to the
request's one other tool when it offers one (the output tool), else as the JSON text. The answer is well formed
(it fits the schema) but its policy_id is a description, which the pydantic AfterValidator rejects; with
`valid_after` the answer becomes valid from that attempt on. Each case prints the requests (how the answer was
asked for: output_config.format / response_format / tools with strict, tool_choice), what the run raised or
returned, and the AI messages in the state (or on the exception).

Cases:
  auto-anthropic   create_agent(ChatAnthropic, response_format=Model): AutoStrategy -> ProviderStrategy
                   (output_config.format, no strict): StructuredOutputValidationError after 2 requests, no retry
  auto-openai      create_agent(ChatOpenAI(base_url=...), response_format=Model) with a Claude model id: also
                   ProviderStrategy (langchain's model-name fallback), response_format strict false: the same
  tool-strategy    response_format=ToolStrategy(Model), recursion_limit 7 (what 4 model calls translate to,
                   2N-1): each rejection is an error ToolMessage and one more model call, a model->model
                   superstep: 6 requests before GraphRecursionError
  tool-exact       as tool-strategy, but the 5th answer (the 6th request, superstep 7 = the limit) is valid: the
                   graph still raises GraphRecursionError, the limit checked before "no task left"
                   (langgraph/pregel/_loop.py:666-675); the valid answer is only in the last streamed state
  tool-no-cap      ToolStrategy(Model) with create_agent's own recursion_limit (9999); the answer turns valid at the
                   21st attempt: 22 requests, completed: ToolStrategy has no retry budget of its own
  stategraph       the how-to's Option 1 (bind_tools([get_ticket, Model], tool_choice="any"), a respond node doing
                   Model(**args)): pydantic's ValidationError out of the graph after 2 requests
"""
import asyncio
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any, Literal

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

LOG: list[dict[str, Any]] = []  # what each request asked for
VALID_AFTER: list[int | None] = [None]  # the attempt from which the answer is valid (None: never)
BAD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "the refund policy"}
GOOD = {"ticket_id": "T-1", "priority": "urgent", "policy_id": "POL-7"}


def policy_id_check(value: str) -> str:
    if re.search(r"^POL-[0-9]+$", value) is None:
        raise ValueError("policy_id must be a policy id such as POL-7, not a description")
    return value


class TicketTriage(BaseModel):
    """The triage of one support ticket."""

    model_config = ConfigDict(extra="forbid")
    ticket_id: str = Field(description="The ticket's id.")
    priority: Literal["low", "normal", "urgent"] = Field(description="How soon the ticket needs an answer.")
    policy_id: Annotated[str, AfterValidator(policy_id_check)] = Field(description="The id of the policy that applies.")


@tool
def get_ticket(ticket_id: str) -> str:
    """Read a support ticket by id."""
    return "Ticket T-1: a refund of order 1042, delivered 12 days ago."


def answer_for(messages: list[dict], tools: list[str]) -> tuple[str | None, dict | None]:
    """(output tool to call or None, the object): None, None for the opening request (call get_ticket)."""
    answered = sum(1 for m in messages if m["role"] == "assistant")
    if answered == 0:
        return None, None
    attempt = answered  # the assistant messages after the get_ticket call, plus this one
    valid = VALID_AFTER[0] is not None and attempt >= VALID_AFTER[0]
    others = [t for t in tools if t != "get_ticket"]
    return (others[0] if others else None), (GOOD if valid else BAD)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        payload = self.anthropic(body) if self.path.endswith("/messages") else self.openai(body)
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def anthropic(self, body: dict) -> dict:
        tools = [t["name"] for t in body.get("tools") or []]
        fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
        LOG.append({"tools": {t["name"]: t.get("strict") for t in body.get("tools") or []},
                    "output_format": fmt and {"type": fmt.get("type"), "strict": fmt.get("strict")},
                    "tool_choice": body.get("tool_choice")})
        out_tool, obj = answer_for(body["messages"], tools)
        n = len(LOG)
        if obj is None:
            content = [{"type": "tool_use", "id": "toolu_ticket_1", "name": "get_ticket",
                        "input": {"ticket_id": "T-1"}}]
        elif out_tool:
            content = [{"type": "tool_use", "id": f"toolu_out_{n}", "name": out_tool, "input": obj}]
        else:
            content = [{"type": "text", "text": json.dumps(obj)}]
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"], "content": content,
                "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 100}}

    def openai(self, body: dict) -> dict:
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        rf = body.get("response_format")
        LOG.append({"tools": {t["function"]["name"]: t["function"].get("strict") for t in body.get("tools") or []},
                    "response_format": rf and {"type": rf.get("type"),
                                               "strict": (rf.get("json_schema") or {}).get("strict")},
                    "tool_choice": body.get("tool_choice")})
        out_tool, obj = answer_for(body["messages"], tools)
        n = len(LOG)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if obj is None:
            message["tool_calls"] = [{"id": "call_ticket_1", "type": "function", "function": {
                "name": "get_ticket", "arguments": json.dumps({"ticket_id": "T-1"})}}]
        elif out_tool:
            message["tool_calls"] = [{"id": f"call_out_{n}", "type": "function",
                                      "function": {"name": out_tool, "arguments": json.dumps(obj)}}]
        else:
            message["content"] = json.dumps(obj)
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}}


def stategraph(llm: Any) -> Any:
    """The how-to's Option 1 ("bind output as tool"), as its notebook writes it."""

    class AgentState(MessagesState):
        final_response: TicketTriage

    model_with_response_tool = llm.bind_tools([get_ticket, TicketTriage], tool_choice="any")

    async def call_model(state: AgentState) -> dict:
        return {"messages": [await model_with_response_tool.ainvoke(state["messages"])]}

    def respond(state: AgentState) -> dict:
        call = state["messages"][-1].tool_calls[0]
        response = TicketTriage(**call["args"])
        return {"final_response": response, "messages": [
            {"type": "tool", "content": "Here is your structured response", "tool_call_id": call["id"]}]}

    def should_continue(state: AgentState) -> str:
        last = state["messages"][-1]
        if len(last.tool_calls) == 1 and last.tool_calls[0]["name"] == "TicketTriage":
            return "respond"
        return "continue"

    workflow = StateGraph(AgentState)
    workflow.add_node("agent", call_model)
    workflow.add_node("respond", respond)
    workflow.add_node("tools", ToolNode([get_ticket]))
    workflow.add_edge(START, "agent")
    workflow.add_conditional_edges("agent", should_continue, {"continue": "tools", "respond": "respond"})
    workflow.add_edge("tools", "agent")
    workflow.add_edge("respond", END)
    return workflow.compile()


async def one(url: str, case: str) -> None:
    LOG.clear()
    VALID_AFTER[0] = {"tool-no-cap": 21, "tool-exact": 5}.get(case)
    anthropic = ChatAnthropic(model="claude-sonnet-4-5", base_url=url, api_key="probe")
    config: dict[str, Any] = {}
    if case == "auto-anthropic":
        graph = create_agent(anthropic, [get_ticket], response_format=TicketTriage)
    elif case == "auto-openai":
        openai = ChatOpenAI(model="claude-sonnet-4-5", base_url=f"{url}/v1", api_key="probe")
        graph = create_agent(openai, [get_ticket], response_format=TicketTriage)
    elif case in ("tool-strategy", "tool-exact", "tool-no-cap"):
        graph = create_agent(anthropic, [get_ticket], response_format=ToolStrategy(TicketTriage))
        if case != "tool-no-cap":
            config = {"recursion_limit": 7}
    else:
        graph = stategraph(anthropic)
    state: dict = {}
    steps = 0
    try:
        async for mode, chunk in graph.astream({"messages": [("user", "Read ticket T-1 and triage it.")]}, config,
                                               stream_mode=["values", "debug"]):
            if mode == "values":
                state = chunk
            elif chunk.get("type") == "task":
                steps = max(steps, chunk["step"])
        raised, on_exc = "nothing", None
    except Exception as exc:  # noqa: BLE001 - printing what the framework raised
        chain, e = [], exc
        while e is not None:
            chain.append(type(e).__name__)
            e = e.__cause__
        raised = " <- ".join(chain) + f": {str(exc).splitlines()[0][:110]}"
        on_exc = getattr(exc, "ai_message", None)
    ai = [m for m in state.get("messages", []) if m.type == "ai"]
    answer = state.get("structured_response") or state.get("final_response")
    print(f"{case}: {len(LOG)} request(s), last superstep {steps}")
    for i, q in enumerate(LOG[:3], 1):
        print(f"    request {i}: {json.dumps(q)}")
    if len(LOG) > 3:
        print(f"    ... requests 4-{len(LOG)} ask the same way")
    print(f"    raised: {raised}\n    answer: {answer.model_dump(mode='json') if answer else None}\n"
          f"    AI messages in the state: {len(ai)}; on the exception: "
          f"{on_exc.usage_metadata if on_exc is not None else None}")


CASES = ("auto-anthropic", "auto-openai", "tool-strategy", "tool-exact", "tool-no-cap", "stategraph")


async def main(cases: list[str]) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    for case in cases:
        await one(f"http://127.0.0.1:{srv.server_port}", case)
    srv.shutdown()


asyncio.run(main(sys.argv[1:] or list(CASES)))
