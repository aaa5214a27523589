"""Standalone repro (no loopbench code): a child agent invoked from a parent's tool, the LangChain docs' subagents
(tool-calling) pattern: `@tool("research") async def call(query): return (await child.ainvoke(...))["messages"][-1]
.content`. A tiny Chat Completions server on 127.0.0.1 tells the agents apart by their system message: the parent
delegates once, then answers; the child calls `search` (CASE usage: once, then answers; CASE runaway: forever,
until the server's own cap of 40 child requests answers in text).

  .venv/bin/python probes/langgraph/subagent_tool.py [usage|runaway]

Printed per child idiom (create_agent, a hand-built StateGraph): requests by agent, the parent's reported usage
(the usage_metadata of the AIMessages in the parent's state), what a UsageMetadataCallbackHandler in the parent's
invocation config saw, the recursion_limit the child's tool reads from its config (`langgraph.config.get_config`),
and how the run ended. Measured with langchain 1.5.2 / langgraph 1.2.24:
- usage: 4 requests (main 2, research 2); the parent's AIMessages report main only (20 in / 10 out of 40 / 20
  served); the callback handler (callbacks are inherited by the child's run) sees all 4 (40 / 20). The child's
  tool reads recursion_limit 9999 (create_agent child) / 25 (StateGraph child: langgraph's default, inherited).
- runaway, the parent invoked with recursion_limit=15: the create_agent child reads recursion_limit 9999 (the
  config create_agent binds wins over the inherited one) and runs until the server's cap (40 child requests, then
  the parent answers; the callback sees 420 / 210); the StateGraph child inherits the parent's 15 and raises
  GraphRecursionError after 8 of its own model calls, out of the parent's tool and out of the parent's graph (9
  requests): neither charges the child's steps to the parent's budget, each child gets an allowance of its own.
"""
import asyncio
import json
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain.agents import create_agent
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.config import get_config
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

CHILD_PROMPT = "You are the research specialist."
CASE = sys.argv[1] if len(sys.argv) > 1 else "usage"
CAP = 40
BY_AGENT: Counter[str] = Counter()
LIMITS_SEEN: list[int] = []


def reply(agent: str, messages: list[dict]) -> dict:
    results = [m for m in messages if m["role"] == "tool"]
    if agent == "research":
        if (CASE == "usage" and results) or BY_AGENT["research"] >= CAP:
            return {"role": "assistant", "content": "KB-12"}
        call = {"name": "search", "arguments": json.dumps({"query": f"q{BY_AGENT['research']}"})}
    elif results:
        return {"role": "assistant", "content": f"research said: {results[-1]['content']}"}
    else:
        call = {"name": "research", "arguments": json.dumps({"query": "find the refund article"})}
    n = sum(BY_AGENT.values())
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{n}", "type": "function", "function": call}]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        system = " ".join(str(m.get("content") or "") for m in body["messages"] if m["role"] in ("system", "developer"))
        agent = "research" if CHILD_PROMPT in system else "main"
        BY_AGENT[agent] += 1
        msg = reply(agent, body["messages"])
        out = {"id": f"r{sum(BY_AGENT.values())}", "object": "chat.completion", "created": 0, "model": body["model"],
               "choices": [{"index": 0, "message": msg,
                            "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@tool
async def search(query: str) -> str:
    """Search the knowledge base."""
    LIMITS_SEEN.append(get_config().get("recursion_limit"))
    return "nothing found"


def stategraph(llm, tools, system: str | None):
    bound = llm.bind_tools(tools)

    async def model(state: MessagesState):
        prefix = [SystemMessage(system)] if system else []
        return {"messages": [await bound.ainvoke([*prefix, *state["messages"]])]}

    b = StateGraph(MessagesState)
    b.add_node("model", model)
    b.add_node("tools", ToolNode(tools))
    b.add_edge(START, "model")
    b.add_conditional_edges("model", tools_condition)
    b.add_edge("tools", "model")
    return b.compile()


async def one(name: str, url: str, idiom: str) -> None:
    BY_AGENT.clear()
    LIMITS_SEEN.clear()
    llm = ChatOpenAI(base_url=url, api_key="probe", model="probe-model")
    child = (create_agent(llm, [search], system_prompt=CHILD_PROMPT) if idiom == "create_agent"
             else stategraph(llm, [search], CHILD_PROMPT))

    @tool("research", description="The research specialist.")
    async def call_research(query: str):
        result = await child.ainvoke({"messages": [{"role": "user", "content": query}]})
        return result["messages"][-1].content

    parent = (create_agent(llm, [call_research], system_prompt="You are the lead.") if idiom == "create_agent"
              else stategraph(llm, [call_research], "You are the lead."))
    handler = UsageMetadataCallbackHandler()
    config: dict = {"callbacks": [handler]}
    if CASE == "runaway":
        config["recursion_limit"] = 15
    values: dict = {}
    try:
        async for chunk in parent.astream({"messages": [("user", "find the refund article")]}, config,
                                          stream_mode="values"):
            values = chunk
        ended = f"returned: {values['messages'][-1].content!r}"
    except Exception as exc:  # noqa: BLE001 - printing what the framework raised
        ended = f"raised {type(exc).__name__}: {str(exc)[:80]}"
    ais = [m for m in values.get("messages", []) if isinstance(m, AIMessage) and m.usage_metadata]
    reported = (sum(m.usage_metadata["input_tokens"] for m in ais), sum(m.usage_metadata["output_tokens"] for m in ais))
    seen = [(u["input_tokens"], u["output_tokens"]) for u in handler.usage_metadata.values()]
    print(f"{name:22} requests={dict(BY_AGENT)} parent AIMessages={len(ais)} reported in/out={reported} "
          f"callback in/out={seen} child's recursion_limit={sorted(set(LIMITS_SEEN))}\n{'':22} {ended}")


async def main() -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/v1"
    print(f"case {CASE}")
    await one("create_agent child", url, "create_agent")
    await one("StateGraph child", url, "stategraph")
    srv.shutdown()


asyncio.run(main())
