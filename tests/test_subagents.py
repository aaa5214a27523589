"""Sub-agents in the core: the scenario format's `agents` and its validation errors, the server telling agents
apart and filling a delegation's arguments from the offered tool's schema, the ideal walk through a child, and
the ground truth per agent (request log and ledger attributed, counted by agent)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from loopbench.harness.errors import ScriptViolation
from loopbench.harness.judge.counters import build_counters
from loopbench.harness.model_server.script import (
    Conversation,
    ToolResult,
    delegation_args,
    delegation_tool,
    request_agent,
    select,
)
from loopbench.harness.record import LedgerEntry, RequestLogEntry
from loopbench.harness.run.ideal import walk
from loopbench.harness.scenario import load_defaults, load_scenarios, parse_scenario
from loopbench.harness.scenario.load import SCENARIO_DIR

TIER = "unit"

CHILD = "You are the billing specialist. Look refunds up."
RAW = {
    "id": "subagent_case",
    "title": "a parent and its billing child",
    "category": "subagents",
    "prompt": "Was order 1042 refunded?",
    "instructions": "You are the support lead.",
    "tools": {"lookup_refund": {}, "get_ticket": {}},
    "agents": {"billing": {
        "description": "The billing specialist.",
        "instructions": CHILD,
        "tools": ["lookup_refund"],
        "script": [
            {"id": "b_lookup", "calls": [{"id": "refund_1", "tool": "lookup_refund", "args": {"order_id": "1042"}}]},
            {"id": "b_answer", "after": {"call": "refund_1"}, "text": "Refund RF-88."},
        ],
    }},
    "script": [
        {"id": "delegate", "calls": [{"id": "ask_1", "tool": "billing", "task": "Look up order 1042."}]},
        {"id": "answer", "after": {"call": "ask_1"}, "text": "RF-88"},
    ],
    "completion": {"final_text_contains": ["RF-88"]},
    "expect": {"outcome": "completed", "counters": {"model_requests_by_agent.billing": 2}},
}


def parsed(raw: dict) -> tuple[object, list[str]]:
    defaults, _ = load_defaults(SCENARIO_DIR)
    sc, problems = parse_scenario(raw, "case/subagent_case.yaml", defaults)
    return sc, [f"{p.field}: {p.reason}" for p in problems]


@pytest.fixture
def scenario():
    sc, problems = parsed(RAW)
    assert problems == [] and sc is not None
    return sc


def changed(path: str, value: object) -> dict:
    raw = copy.deepcopy(RAW)
    *head, last = path.split(".")
    node = raw
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is None:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return raw


# ---------------------------------------------------------------- the format's validation
@pytest.mark.parametrize(("path", "value", "problem"), [
    ("agents.billing.tools", ["lookup_refnd"], "agents.billing.tools.0: tool 'lookup_refnd' is not declared in tools"),
    ("script.0.calls.0.tool", "biling", "script[delegate].calls.0.task: only a call to a child agent has a task; "
                                        "'biling' is not an agent (agents: billing)"),
    ("agents.billing.script.1.after.call", "ask_1",
     "agents.billing.script.1.after.call: call 'ask_1' is another agent's: a turn follows its own agent's calls"),
    ("agents.billing.script.1.after.call", "refund_9",
     "agents.billing.script.1.after.call: no scripted call has id 'refund_9'"),
    ("script.0.calls.0.task", None, "script[delegate].calls.0.task: a call to agent 'billing' is a delegation: it needs the "
                                     "`task` it hands over"),
    ("agents.billing.script.0.calls.0.tool", "get_ticket",
     "agents.billing.script.0.calls.0.tool: tool 'get_ticket' is agent 'main''s, not 'billing''s (its tools: "
     "lookup_refund)"),
    ("agents.billing.script.0.id", "answer", "agents.billing.script.0.id: duplicate turn id 'answer'"),
    ("agents.billing.instructions", "You are the support lead.",
     "agents.billing.instructions: the main agent's instructions hold them"),
])
def test_a_bad_agent_reference_names_the_file_the_agent_and_the_field(path, value, problem):
    sc, problems = parsed(changed(path, value))
    assert sc is None and any(p.startswith(problem) for p in problems), problems


def test_a_child_no_turn_delegates_to_cannot_be_reached():
    raw = changed("script.0", {"id": "delegate", "calls": [{"id": "ask_1", "tool": "get_ticket",
                                                            "args": {"ticket_id": "T-1"}}]})
    sc, problems = parsed(raw)
    assert sc is None and any(p.startswith("agents.billing: no turn of the main script delegates to it")
                              for p in problems), problems


def test_a_child_turn_that_cannot_be_reached_is_named_by_its_agent():
    raw = copy.deepcopy(RAW)
    raw["agents"]["billing"]["script"].append({"id": "b_never", "after": {"call": "refund_1", "result": "receipt"},
                                               "calls": [{"id": "refund_2", "tool": "lookup_refund",
                                                          "args": {"order_id": "1"}}]})
    raw["agents"]["billing"]["script"].append({"id": "b_orphan", "after": {"call": "refund_3"}, "text": "x"})
    raw["agents"]["billing"]["script"].append({"id": "b_loop", "after": {"call": "refund_3"},
                                               "calls": [{"id": "refund_3", "tool": "lookup_refund",
                                                          "args": {"order_id": "2"}}]})
    sc, problems = parsed(raw)
    assert sc is None and any(p.startswith("agents.billing.script.4.after.call: turn 'b_loop' waits on its own call")
                              for p in problems), problems


def test_per_agent_expectations_name_an_agent_that_exists():
    sc, problems = parsed(changed("expect.counters", {"model_requests_by_agent.biling": 1}))
    assert sc is None and problems == [
        "expect.counters.model_requests_by_agent.biling: no agent 'biling' (agents: main, billing)"]


def test_only_the_main_agent_delegates():
    raw = copy.deepcopy(RAW)
    raw["agents"]["billing"]["script"][0]["calls"] = [{"id": "refund_1", "tool": "billing", "task": "again"}]
    sc, problems = parsed(raw)
    assert sc is None and any("only the main agent delegates" in p for p in problems), problems


def test_the_suite_s_sub_agent_scenarios_load_and_an_ideal_loop_walks_them():
    found = {s.id: s for s in load_scenarios() if s.agents}
    assert set(found) == {"subagent_usage", "subagent_runaway", "subagent_token_budget", "subagent_approval",
                          "subagent_tool_failure", "subagent_deadline", "subagent_model_failure"}
    usage = walk(found["subagent_usage"])
    assert (usage.served, usage.ending) == (["delegate", "billing_lookup", "billing_answer", "answer"], "answered")
    # the task's limit counts the child's calls: the walk stops at 8 model calls, 7 of them the child's
    runaway = walk(found["subagent_runaway"])
    assert runaway.ending == "limit" and len(runaway.served) == 8
    assert walk(found["subagent_approval"]).served[-1] == "answer"


# ---------------------------------------------------------------- the server: which agent, which tool
def conv(system: str, offered: list[str], schemas: dict | None = None, *steps: tuple[str, object]) -> Conversation:
    batches, results = [], []
    for kind, value in steps:
        if kind == "calls":
            batches.append(["call_" + i for i in value])  # type: ignore[union-attr]
        else:
            cid, text = value  # type: ignore[misc]
            results.append(ToolResult("call_" + cid, text))
    return Conversation("call_", batches, results, offered, system=system, tool_schemas=schemas or {})


def test_a_request_is_the_child_s_when_its_system_prompt_holds_the_child_s_instructions(scenario):
    assert request_agent(scenario, conv(f"Some framework preamble.\n{CHILD}\nMore.", [])) == "billing"
    assert request_agent(scenario, conv("You are the support lead.", [])) == "main"
    assert request_agent(scenario, conv("", [])) == "main"


def test_each_agent_is_answered_from_its_own_script(scenario):
    opening = select(scenario, conv("lead", ["billing", "get_ticket"], {"billing": {
        "type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}}), agent="main")
    assert opening.label == "delegate" and opening.calls[0].args == {"input": "Look up order 1042."}
    # the child, after a handoff, sees its parent's delegation in its history: its own opening turn answers
    child = select(scenario, conv(CHILD, ["lookup_refund"], None, ("calls", ["ask_1"])), agent="billing")
    assert child.label == "b_lookup" and child.calls[0].tool == "lookup_refund"
    done = select(scenario, conv(CHILD, ["lookup_refund"], None, ("calls", ["refund_1"]),
                                 ("result", ("refund_1", "RF-88 [loopbench-receipt:L1]"))), agent="billing")
    assert done.label == "b_answer"
    back = select(scenario, conv("lead", ["billing"], None, ("calls", ["ask_1"]), ("result", ("ask_1", "RF-88"))),
                  agent="main")
    assert back.label == "answer"


@pytest.mark.parametrize(("offered", "schemas", "tool", "args"), [
    # OpenAI Agents as_tool / ADK AgentTool / a plain tool named after the child
    (["billing"], {"billing": {"properties": {"request": {"type": "string"}}, "required": ["request"]}},
     "billing", {"request": "T"}),
    # a handoff: transfer_to_<child>, no parameters
    (["get_ticket", "transfer_to_billing"], {"transfer_to_billing": {"type": "object", "properties": {}}},
     "transfer_to_billing", {}),
    # the Claude Agent SDK's Task tool: the child is a parameter
    (["Task", "get_ticket"], {"Task": {"properties": {"description": {"type": "string"}, "prompt": {"type": "string"},
                                                      "subagent_type": {"type": "string"}},
                                       "required": ["description", "prompt", "subagent_type"]}},
     "Task", {"description": "T", "prompt": "T", "subagent_type": "billing"}),
    # the CLI's Agent tool (2.1): subagent_type optional (without it the CLI runs its general-purpose agent)
    (["Agent", "get_ticket"], {"Agent": {"properties": {"description": {"type": "string"},
                                                        "prompt": {"type": "string"},
                                                        "subagent_type": {"type": "string"},
                                                        "run_in_background": {"type": "boolean"}},
                                         "required": ["description", "prompt"]}},
     "Agent", {"description": "T", "prompt": "T", "subagent_type": "billing"}),
    # Mastra's agent-<child> tool on a strict (OpenAI-compatible) route: every parameter required, the optional
    # ones nullable: they stay null (a task in maxSteps or instructions would be a model's mistake)
    (["agent-billing"], {"agent-billing": {"properties": {
        "prompt": {"type": "string"}, "threadId": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "instructions": {"type": ["string", "null"]}, "resumeData": {"anyOf": [{"description": "x"}, {"type": "null"}]},
        "maxSteps": {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "null"}]}},
        "required": ["prompt", "threadId", "instructions", "resumeData", "maxSteps"]}},
     "agent-billing", {"prompt": "T", "threadId": None, "instructions": None, "resumeData": None, "maxSteps": None}),
    # Gemini's upper-case types, ADK's transfer_to_agent
    (["transfer_to_agent"], {"transfer_to_agent": {"properties": {"agent_name": {"type": "STRING"}}}},
     "transfer_to_agent", {"agent_name": "billing"}),
])
def test_a_delegation_goes_to_the_tool_that_reaches_the_child_with_arguments_from_its_schema(offered, schemas, tool,
                                                                                             args):
    c = conv("", offered, schemas)
    assert delegation_tool("billing", c, ["get_ticket"]) == tool
    assert delegation_args("billing", "T", schemas[tool]) == args


def test_no_tool_reaching_the_child_or_an_unfillable_parameter_is_a_violation(scenario):
    with pytest.raises(ScriptViolation, match="no offered tool reaches agent 'billing'"):
        select(scenario, conv("lead", ["get_ticket"]), agent="main")
    with pytest.raises(ScriptViolation, match="requires 'count' of type 'integer'"):
        delegation_args("billing", "T", {"properties": {"count": {"type": "integer"}}, "required": ["count"]})


# ---------------------------------------------------------------- ground truth per agent
def request(seq: int, agent: str | None, tokens: int = 100) -> RequestLogEntry:
    return RequestLogEntry(seq=seq, t_s=0, protocol="openai_chat", path="/v1/chat/completions", stream=False,
                           model="gpt-4.1", messages=1, tools_offered=[], prompt_bytes=1, status=200,
                           input_tokens=tokens, output_tokens=10, agent=agent)


def test_requests_and_tool_runs_are_counted_per_agent_and_for_the_tree():
    ledger = [LedgerEntry(id="L1", run_id="r", kind="call", tool="lookup_refund", agent="billing"),
              LedgerEntry(id="A2", run_id="r", kind="authorize", tool="lookup_refund", agent="billing")]
    c = build_counters(model_id="gpt-4.1", requests=[request(1, "main"), request(2, "billing", 200),
                                                     request(3, "billing"), request(4, "main")],
                       ledger=ledger, segments=[], elapsed_s=None, cpu_s=None, peak_rss_mb=None)
    assert c.model_requests_by_agent == {"main": 2, "billing": 2} and c.model_requests_observed == 4
    assert c.input_tokens_by_agent == {"main": 200, "billing": 300} and c.input_tokens_observed == 500
    assert c.output_tokens_by_agent == {"main": 20, "billing": 20}
    assert c.tool_executions_by_agent == {"billing": 1}
    assert c.get("model_requests_by_agent.billing") == 2 and c.get("tool_executions_by_agent.main") == 0
    # a scenario of one agent attributes nothing: no per-agent count is made up
    alone = build_counters(model_id="gpt-4.1", requests=[request(1, None)], ledger=[], segments=[], elapsed_s=None,
                           cpu_s=None, peak_rss_mb=None)
    assert alone.model_requests_by_agent == {} and alone.input_tokens_by_agent == {}


def test_the_ledger_attributes_a_tool_run_to_the_agent_that_owns_the_tool(scenario):
    import asyncio

    from loopbench.harness.ledger.store import Ledger

    ledger = Ledger()
    ledger.register_run("r", scenario)
    asyncio.run(ledger.execute("r", "lookup_refund", {"order_id": "1042"}, "refund_1"))
    asyncio.run(ledger.execute("r", "get_ticket", {"ticket_id": "T-1"}, None))
    assert [(e.tool, e.agent) for e in ledger.entries("r")] == [("lookup_refund", "billing"), ("get_ticket", "main")]


def test_the_scenario_readme_documents_agents():
    readme = (Path(__file__).resolve().parent.parent / "scenarios" / "README.md").read_text()
    assert "## Agents" in readme and "`task`" in readme and "model_requests_by_agent" in readme
