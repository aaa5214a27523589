"""The shared Node line protocol (adapters/node/protocol.py, protocol.mjs, README.md): its models validated on both
drivers' real answers — every line each driver wrote in a small real run (returned, paused and resumed, a deny
stop, a throw; Mastra's prepare), against a server and ledger of the module's own — and a malformed answer line
read as a clear error naming what is wrong."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from loopbench.adapters.mastra_agent import MastraAdapter
from loopbench.adapters.node import adapter as node_adapter
from loopbench.adapters.node import driver as node_driver
from loopbench.adapters.node.adapter import NodeAdapter
from loopbench.adapters.node.driver import NodeDriver
from loopbench.adapters.node.protocol import (
    PROTOCOL_VERSION,
    ErrorAnswer,
    Ping,
    Pong,
    PrepareAnswer,
    ProtocolError,
    read_answer,
    read_hello,
)
from loopbench.adapters.vercel_ai import VercelAIAdapter, VercelAnswer, VercelHello
from loopbench.harness.scenario import Scenario, load_scenarios
from tests.conftest import MiniHarness

NODE_ADAPTERS = [VercelAIAdapter, MastraAdapter]
# one scenario per way a segment ends (the approval one is resumed too; the cancel one carries the cancel fields; the
# output ones the structured answer: returned with it, and raised on one its validator rejects)
SCENARIOS = ("support_draft_completes", "approval_approved_resume", "denied_action", "model_fatal_error",
             "cancel_during_tool", "output_invalid_then_valid", "output_check_rejects")
# how each driver's run of cancel_during_tool ends: the AI SDK throws its AbortError; Mastra returns a normal result
# when aborted during a tool (adapters/mastra/probes/abort_in_tool.mjs)
CANCEL_ENDS = {"vercel-ai": "cancelled", "mastra": "returned"}


@pytest.fixture(scope="module")
def scenarios() -> dict[str, Scenario]:
    return {s.id: s for s in load_scenarios()}


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every line the driver answers, as it came (before the driver's own reading), with the model it was read as."""
    lines: list[tuple[str, dict[str, Any]]] = []
    real_answer, real_hello = node_driver.read_answer, node_driver.read_hello

    def answer(line: dict[str, Any], expect: Any) -> Any:
        lines.append((expect.__name__, line))
        return real_answer(line, expect)

    def hello(line: dict[str, Any], expect: Any) -> Any:
        lines.append(("hello", line))
        return real_hello(line, expect)

    monkeypatch.setattr(node_driver, "read_answer", answer)
    monkeypatch.setattr(node_driver, "read_hello", hello)
    return lines


@pytest.mark.parametrize("cls", NODE_ADAPTERS, ids=lambda c: c.id)
def test_the_models_read_every_real_answer_of_both_drivers(cls: type[NodeAdapter], monkeypatch, harness: MiniHarness,
                                                          scenarios, tmp_path):
    if (why := cls.unavailable_reason()) is not None:
        pytest.skip(why)
    lines = _record(monkeypatch)
    d = cls.new_driver()
    monkeypatch.setitem(node_adapter._drivers, cls.id, d)
    try:
        ended = set()
        for sid in SCENARIOS:
            sc = scenarios[sid]
            ctx = harness.context(sc, tmp_path)
            adapter = cls()
            asyncio.run(adapter.prepare(sc, ctx))
            result = asyncio.run(adapter.run(sc, ctx))
            ended.add(result.signals.ended)
            if sc.output is not None:  # the answer line carried a valid structured answer, or the failure raised
                answer = result.signals.final_output
                assert result.signals.ended in ("returned", "raised"), sid
                assert (answer is not None and sc.output.problems(answer) == []) is (result.signals.ended == "returned")
            if sc.cancel is not None:  # the driver saw the caller's cancel and aborted its controller
                cancel = result.signals.extra["cancel"]
                assert cancel["told"] and cancel["aborted"] and cancel["at_s"] is not None, cancel
                assert result.signals.ended == CANCEL_ENDS[cls.id]
            if result.signals.ended == "paused":
                decisions = {p.call_id: "approve" for p in result.signals.pending}
                asyncio.run(adapter.prepare(sc, ctx))
                resumed = asyncio.run(adapter.resume(sc, Path(ctx.snapshot_dir), decisions, ctx))
                ended.add(resumed.signals.ended)
        assert ended == {"returned", "paused", "raised"} | {CANCEL_ENDS[cls.id]}
        pong = d.request(Ping(), Pong).answer
        refused = d.request({"op": "fly"}, Pong).answer
        assert isinstance(pong, Pong) and isinstance(refused, ErrorAnswer) and "unknown op" in refused.error
    finally:
        d.close()

    # each line validated again, on its own, by the model of its kind: the models forbid undeclared fields, so a
    # field a driver sends that the protocol does not name fails here
    kinds = {name for name, _ in lines}
    assert {"hello", cls.answer_model.__name__, "Pong"} <= kinds
    if cls is MastraAdapter:
        assert PrepareAnswer.__name__ in kinds
    for name, line in lines:
        if name == "hello":
            hello = cls.hello_model.model_validate(line)
            assert hello.protocol == PROTOCOL_VERSION and hello.packages[cls.distribution]
            continue
        model = {a.__name__: a for a in (cls.answer_model, PrepareAnswer, Pong)}[name]
        if line["type"] == "error":
            ErrorAnswer.model_validate(line)
            continue
        model.model_validate(line)
        with pytest.raises(ValidationError, match="surprise"):
            model.model_validate({**line, "surprise": 1})


# ---------------------------------------------------------------- a malformed line is a clear error
GOOD = {"id": "r1", "type": "result", "cpu_us": 10, "own_cpu_us": 1, "events": [], "ended": "returned",
        "settings": {}, "mechanisms": {}, "deny": {"intent": "stop", "denied_tools": [], "stop_tools": [],
                                                   "step_bound": None},
        "steps": [], "harness_errors": [], "step_count_source": "result.steps", "model_responses": 1,
        "model_responses_source": "result.steps", "language_model_calls": 1, "language_model_responses": 1,
        "warnings": []}


CANCEL = {"told": True, "at_s": 1.5, "aborted": True, "abort_ms": 3.0, "on_abort": {"steps": 0}, "abort_part": True,
          "steps": 0, "steps_source": "onAbort steps"}


def test_a_cancelled_answer_carries_how_the_framework_stopped():
    a = read_answer({**GOOD, "ended": "cancelled", "cancel": CANCEL}, VercelAnswer)
    assert isinstance(a, VercelAnswer) and a.cancel is not None and a.cancel.on_abort is not None
    with pytest.raises(ProtocolError, match=r"cancel\.aborted\n.*Field required"):
        read_answer({**GOOD, "ended": "cancelled", "cancel": {k: v for k, v in CANCEL.items() if k != "aborted"}},
                    VercelAnswer)


def test_a_malformed_answer_line_names_what_is_wrong():
    assert isinstance(read_answer(GOOD, VercelAnswer), VercelAnswer)
    with pytest.raises(ProtocolError, match=r"(?s)protocol 4 VercelAnswer.*\nended\n"):
        read_answer({**GOOD, "ended": "sideways"}, VercelAnswer)
    with pytest.raises(ProtocolError, match=r"deny\n.*Field required"):
        read_answer({k: v for k, v in GOOD.items() if k != "deny"}, VercelAnswer)
    with pytest.raises(ProtocolError, match=r"type\n.*'result'"):
        read_answer({**GOOD, "type": "answer"}, VercelAnswer)
    with pytest.raises(ProtocolError, match=r"(?s)ErrorAnswer.*\nerror\n.*Field required"):
        read_answer({"id": None, "type": "error"}, VercelAnswer)


def test_a_hello_of_another_protocol_or_a_refusing_one_is_refused():
    hello = {"type": "hello", "ok": True, "protocol": PROTOCOL_VERSION, "pid": 1, "node": "v22.0.0", "packages": {},
             "defaults": {"generateText_stopWhen": None, "streamText_stopWhen": None,
                          "ToolLoopAgent_stopWhen": None}}
    assert read_hello(hello, VercelHello).defaults.generateText_stopWhen is None
    with pytest.raises(Exception, match="speaks protocol 3, not 4"):
        read_hello({**hello, "protocol": 3}, VercelHello)
    with pytest.raises(Exception, match="cannot start.*cannot import ai"):
        read_hello({"type": "hello", "ok": False, "protocol": 4, "error": "cannot import ai"}, VercelHello)
    with pytest.raises(ProtocolError, match="defaults"):
        read_hello({**hello, "defaults": {}}, VercelHello)


# a driver that says hello, then answers every request with a line the protocol does not have
FAKE = f"""
import json, sys
print(json.dumps({{"type": "hello", "ok": True, "protocol": {PROTOCOL_VERSION}, "pid": 1, "node": "v22",
                  "packages": {{}}, "defaults": {{"generateText_stopWhen": None, "streamText_stopWhen": None,
                                               "ToolLoopAgent_stopWhen": None}}}}),
      flush=True)
for line in sys.stdin:
    print(json.dumps({{"id": json.loads(line)["id"], "type": "result", "pong": "yes"}}), flush=True)
"""


def test_a_driver_answering_off_protocol_raises_a_protocol_error_and_keeps_serving(tmp_path):
    d: NodeDriver[VercelHello] = NodeDriver(tmp_path, VercelHello, "fake driver")
    d.argv = [sys.executable, "-c", FAKE]
    try:
        with pytest.raises(ProtocolError, match=r"(?s)Pong.*\npong\n  Input should be True"):
            d.request(Ping(), Pong)
        with pytest.raises(ProtocolError, match="cpu_us"):
            d.request(Ping(), Pong)
        assert d.alive() and d.starts == 1
    finally:
        d.close()
