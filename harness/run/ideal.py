"""The ideal loop, in-process, against a scenario's script: the dry run `loopbench validate` (and `run`, before
anything starts) does to catch a script bug before it can be blamed on a framework.

The walk plays the production loop policy with no framework: it asks the scripted model (the server's own turn
choice, `model_server.script.select`) for each turn, runs every call the turn makes as the tool's scripted
behaviour says (the ledger's own `step_result`: receipt, error or timeout, call by call), pauses on a call that
needs approval and takes the scenario's first resume of that pause, ends on a final answer, a denial that
stops, a pause nobody resumes, or the scenario's model-call limit. Where the scripted model has no answer
for what such a loop sends — say a tool fails once while the script waits for a second failure — the scenario
cannot be run fairly on any framework, and the walk says where: the file, the turn whose calls came back
unanswered and what they returned.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from loopbench.harness.errors import BadInput, InputProblem, ScriptViolation
from loopbench.harness.ledger.store import step_result
from loopbench.harness.model_server.call_ids import OPENAI_ID_PREFIX
from loopbench.harness.model_server.script import Conversation, Served, ToolResult, select
from loopbench.harness.scenario import Scenario
from loopbench.harness.scenario.model import MAIN_AGENT

MAX_TURNS = 500  # a walk of a script that repeats forever ends here (the suite's runs end far sooner)
Ending = str  # "answered" | "paused" | "denied" | "limit" | "no answer"


@dataclass
class Walk:
    """One ideal loop through the script."""

    served: list[str] = field(default_factory=list)  # turn labels in order (`id` or `id#n`)
    ending: Ending = "answered"
    unanswered: str | None = None  # the scripted model's reason, when it had no answer
    after_turn: str | None = None  # the turn whose calls came back unanswered


def _decisions(scenario: Scenario, pause: int) -> dict[str, str] | None:
    """The decisions of the scenario's first resume of pause number `pause`, or None (nobody resumes it)."""
    found = next((r for r in scenario.resumes if r.pause == pause), None)
    return None if found is None else {call: str(d) for call, d in found.decisions.items()}


@dataclass
class _Tree:
    """What the agents of one walk share: the model-call allowance (the task's, whoever spends it), the tools'
    call numbers, the ledger's statuses and the pauses so far."""

    cap: int
    requests: int = 0
    statuses: dict[str, str] = field(default_factory=dict)
    calls_by_tool: Counter[str] = field(default_factory=Counter)
    pauses: int = 0


def walk(scenario: Scenario) -> Walk:
    out = Walk()
    cap = min(scenario.limits.max_model_calls or MAX_TURNS, scenario.safety_cap or MAX_TURNS, MAX_TURNS)
    _walk_agent(scenario, MAIN_AGENT, _Tree(cap), out)
    return out


def _walk_agent(scenario: Scenario, agent: str, tree: _Tree, out: Walk) -> str | None:
    """One agent's loop in its own conversation; its final text, or None when the walk ended inside it (`out`
    says how). A delegation walks the child there and then, its final text the delegation's result."""
    batches: list[list[str]] = []
    results: list[ToolResult] = []
    offered = [*scenario.tools_of(agent), *scenario.children_of(agent)]
    system = scenario.agents[agent].instructions if agent in scenario.agents else ""
    while tree.requests < tree.cap:
        tree.requests += 1
        conv = Conversation(id_prefix=OPENAI_ID_PREFIX, batches=batches, results=results, tools_offered=offered,
                            system=system)
        try:
            served: Served = select(scenario, conv, status_of=tree.statuses.get, agent=agent)
        except ScriptViolation as exc:
            out.ending, out.unanswered = "no answer", str(exc)
            return None
        out.served.append(served.label)
        if not served.calls:
            return served.text or ""
        tools = [c for c in served.calls if c.tool in scenario.tools]
        gated = [c for c in tools if scenario.tools[c.tool].approval == "required"]
        decisions: dict[str, str] = {}
        if gated:
            tree.pauses += 1
            found = _decisions(scenario, tree.pauses)
            if found is None:
                out.ending = "paused"
                return None
            decisions = found
        batches = [*batches, [OPENAI_ID_PREFIX + c.id for c in served.calls]]
        for call in served.calls:
            if call.tool in scenario.agents:
                answer = _walk_agent(scenario, call.tool, tree, out)
                if answer is None:
                    return None
                results = [*results, ToolResult(OPENAI_ID_PREFIX + call.id, answer)]
                continue
            spec = scenario.tools[call.tool]
            if spec.approval == "deny" or decisions.get(call.id) == "reject" or (
                    spec.approval == "required" and call.id not in decisions):
                if spec.approval == "deny" and scenario.policy.deny == "stop":
                    out.ending = "denied"
                    return None
                results = [*results, ToolResult(OPENAI_ID_PREFIX + call.id, "the call was not run")]  # no receipt
                continue
            tree.calls_by_tool[call.tool] += 1
            n = tree.calls_by_tool[call.tool]
            text, outcome, _ = step_result(spec.step_for_call(n), call.args, n, f"W{len(results) + 1}")
            tree.statuses[call.id] = "receipt" if outcome == "result" else "error"
            results = [*results, ToolResult(OPENAI_ID_PREFIX + call.id, text)]
        out.after_turn = served.turn.id
    out.ending = "limit"
    return None


def refuse_script_bugs(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios, or BadInput listing every script bug an ideal loop meets (what `run`, `validate` and the
    pytest plugin check before anything runs)."""
    if problems := [p for s in scenarios for p in script_problems(s)]:
        raise BadInput(problems)
    return scenarios


def script_problems(scenario: Scenario) -> list[InputProblem]:
    """What an ideal loop meets that the script cannot answer, as input problems naming the file and turn:
    the turn whose calls came back unanswered, and each turn that waits for one of those calls with a result
    the tool's scripted behaviour never gives there (the turn no path reaches)."""
    found = walk(scenario)
    if found.ending != "no answer":
        return []
    turn = found.after_turn or "?"
    made = {c.id for t in scenario.all_turns() if t.id == turn for c in t.calls}
    problems = [InputProblem(
        scenario.source, f"script[{turn}]",
        f"an ideal loop gets no answer after turn {turn!r}: {found.unanswered}, which is what the tools' "
        f"scripted behaviour returns, so every framework would stop here on the scenario's fault (turns "
        f"served: {' → '.join(found.served)}); add a turn whose `after` matches, or change the tool's `behavior`")]
    for other in scenario.all_turns():
        if other.after is not None and other.after.call in made:
            problems.append(InputProblem(
                scenario.source, f"script[{other.id}].after",
                f"waits for {other.after.call} to come back {other.after.result}, which the tool's scripted "
                "behaviour does not return there: no ideal loop reaches this turn"))
    return problems
