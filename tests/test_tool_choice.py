"""A turn's `tool_choice`: the loop's configuration for the request that turn answers. Checked when a file is
loaded; each adapter maps it onto its framework's own per-call setting or records it unsupported; the judge
compares what each request sent (the server's log) with what its turn asks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.judge.verdict import tool_choice_deviations
from loopbench.harness.record import RequestLogEntry
from loopbench.harness.scenario import SCENARIO_DIR, load_defaults, load_scenarios, parse_scenario
from tests.suite_helpers import extra_records

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "data" / "tool_choice"
OPENING = [{"id": "open", "tool_choice": "required", "calls": [{"id": "t_1", "tool": "get_ticket"}]},
           {"id": "answer", "after": {"call": "t_1"}, "text": "x"}]


def _problems(script: list[dict], **raw) -> list[str]:
    data = {"id": "s", "title": "t", "category": "baseline", "prompt": "p", "script": script,
            "tools": {"get_ticket": {}, "lookup_policy": {}}, "completion": {"final_text_contains": ["x"]},
            "expect": {"outcome": "completed"}, **raw}
    _, problems = parse_scenario(data, "s.yaml", load_defaults(SCENARIO_DIR)[0])
    return [f"{p.field}: {p.reason}" for p in problems]


@pytest.mark.parametrize(("turn", "reason"), [
    ({"tool_choice": "none", "calls": [{"id": "c_1", "tool": "get_ticket"}]}, "must not call tools"),
    ({"tool_choice": "required", "text": "x"}, "must call a tool"),
    ({"tool_choice": "lookup_policy", "calls": [{"id": "c_1", "tool": "get_ticket"}]}, "must call that tool"),
    ({"tool_choice": "any", "calls": [{"id": "c_1", "tool": "get_ticket"}]}, "must call that tool"),
    ({"tool_choice": 3, "text": "x"}, "tool_choice"),
])
def test_a_tool_choice_the_turn_contradicts_is_refused(turn, reason):
    found = _problems([{"id": "open", **turn}])
    assert any(reason in p for p in found), found


def test_turns_that_follow_the_same_call_must_ask_the_same_tool_choice():
    script = [{"id": "open", "calls": [{"id": "t_1", "tool": "get_ticket"}]},
              {"id": "ok", "after": {"call": "t_1", "result": "receipt"}, "tool_choice": "none", "text": "x"},
              {"id": "bad", "after": {"call": "t_1", "result": "error"}, "text": "y"}]
    (found,) = [p for p in _problems(script) if "tool_choice" in p]
    assert found.startswith("script[bad].tool_choice") and "cannot know which answers" in found


def test_the_rule_for_a_call_follows_the_conversation(make_scenario):
    sc = make_scenario([
        {"id": "open", "tool_choice": "required", "calls": [{"id": "t_1", "tool": "get_ticket"}]},
        {"id": "more", "after": {"call": "t_1"}, "repeat": 3, "calls": [{"id": "kb_{n}", "tool": "lookup_policy"}]},
        {"id": "last", "after": {"call": "kb_{n}"}, "tool_choice": "none", "text": "x"},
    ])
    assert sc.tool_choice_for([], any_results=False) == "required"
    assert sc.tool_choice_for([], any_results=True) is None  # not the opening call any more
    assert sc.tool_choice_for(["t_1"], any_results=True) is None
    assert sc.tool_choice_for(["kb_12"], any_results=True) == "none"
    assert sc.tool_choice_for(["kb_x"], any_results=True) is None
    assert [r.after_regex for r in sc.tool_choice_rules()] == [None, r"^kb_\d+$"]


def _request(seq: int, turn: str | None, choice: str | None, offered: tuple[str, ...] = ("t",)) -> RequestLogEntry:
    return RequestLogEntry(seq=seq, t_s=0, protocol="openai_chat", path="/v1/chat/completions", stream=False,
                           model="m", messages=1, tools_offered=list(offered), tool_choice=choice, prompt_bytes=1,
                           served_turn=turn, status=200)


def test_the_judge_compares_each_request_with_its_turn(make_scenario):
    sc = make_scenario(OPENING)
    assert tool_choice_deviations(sc, [_request(1, "open", "required"), _request(2, "answer", None)]) == []
    (dev,) = tool_choice_deviations(sc, [_request(1, "open", None), _request(2, "answer", "required")])
    assert (dev.name, dev.ideal, dev.observed) == ("tool_choice", "open: required", "open: auto")
    plain = make_scenario([{"id": "open", "text": "x"}])
    assert tool_choice_deviations(plain, [_request(1, "open", "required")]) == []  # nothing asked


def test_a_request_that_offers_no_tool_is_none_in_effect(make_scenario):
    """No tool offered leaves the model nothing to call: `none` in effect (Mastra sends toolChoice 'none' so)."""
    sc = make_scenario([{"id": "open", "text": "x", "tool_choice": "none"}])
    assert tool_choice_deviations(sc, [_request(1, "open", None, offered=())]) == []
    (dev,) = tool_choice_deviations(sc, [_request(1, "open", None)])
    assert dev.observed == "open: auto"
    wants_auto = make_scenario([{"id": "open", "text": "x", "tool_choice": "auto"}])
    assert tool_choice_deviations(wants_auto, [_request(1, "open", None, offered=())])[0].observed == "open: none"


def test_the_cases_validate():
    assert {s.id for s in load_scenarios(sorted(CASES.glob("[!_]*.yaml")))} == {
        "forced_first_tool", "forced_later_tool"}


# what each framework can express, from its own API (the adapters' mechanism tables say why)
# by framework (every variant) or framework:variant
UNSUPPORTED = {
    "openai-agents": {"forced_later_tool"},  # ModelSettings.tool_choice holds until a tool has run
    "claude-agent-sdk": {"forced_first_tool", "forced_later_tool"},  # no tool_choice option
    "google-adk:anthropic": {"forced_first_tool", "forced_later_tool"},  # AnthropicLlm always sends auto
}


def test_every_framework_sends_the_tool_choice_or_says_it_cannot(suite_run):
    """The cases on every variant: run beside the shared suite, in its warm workers (tests/suite_helpers.py)."""
    records = [r.model_dump(mode="json") for r in extra_records() if r.scenario.startswith("forced_")]
    assert {(r["framework"], r["variant"]) for r in records} == {
        (f, v) for f, v in resolve_selection([]) if adapter_class(f).unavailable_reason() is None}
    _each_sends_the_tool_choice_or_says_it_cannot(records)


@pytest.mark.process
def test_a_loop_of_your_own_runs_the_cases_next_to_a_framework(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "loopbench.cli", "run", "--scenarios", str(CASES), "--out", str(out),
         "-f", "openai-agents:default",
         "--loop-cmd", f"{sys.executable} examples/simple_loop.py", "--loop-name", "simple-loop"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    # the loop runs next to the framework -f names
    assert {(r["framework"], r["variant"]) for r in records} == {("openai-agents", "default"),
                                                                  ("simple-loop", "default")}
    _each_sends_the_tool_choice_or_says_it_cannot(records)


def _each_sends_the_tool_choice_or_says_it_cannot(records: list[dict]) -> None:
    scenarios = {s.id: s for s in load_scenarios(sorted(CASES.glob("[!_]*.yaml")))}
    assert {r["scenario"] for r in records} == set(scenarios)
    for r in records:
        cell = f"{r['scenario']}[{r['framework']}:{r['variant']}]"
        asked = {t.id: t.tool_choice for t in scenarios[r["scenario"]].script if t.tool_choice}
        # no tool_choice field is auto; no tool offered at all is none in effect (the judge's reading)
        sent = {q["served_turn"]: q["tool_choice"] or ("auto" if q["tools_offered"] else "none") for q in r["requests"]}
        assert r["outcome"] == "completed", cell
        intents = {i for i in r["native"]["mechanisms"] if i.startswith("tool_choice")}
        assert intents, cell
        if r["scenario"] in UNSUPPORTED.get(f"{r['framework']}:{r['variant']}", UNSUPPORTED.get(r["framework"], set())):
            assert intents <= set(r["unsupported"]) and r["verdict"] == "unsupported", cell
            assert [d["name"] for d in r["deviations"]] == ["tool_choice"], cell
        else:
            assert not intents & set(r["unsupported"]), cell
            assert all(sent[t] == c for t, c in asked.items()), (cell, sent)
            assert r["verdict"] == "conforms", (cell, r["deviations"])
