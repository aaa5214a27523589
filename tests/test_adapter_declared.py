"""The step the base owns (`Adapter.declared()`, run by `segment()` after every run and resume): for every
registered built-in variant and every scenario of the suite, a segment whose adapter said nothing but its
signals still records a mechanism for every intent the scenario states, every neutral limit the framework has no
native control for (untranslated, and in `unsupported`), and every `tool_choice` intent the idiom cannot
express in `unsupported`. No framework runs: the adapter's run is replaced by one that returns bare signals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, get_args

import pytest

from loopbench.harness.adapter import BUILTIN, TOOL_CHOICE_INTENTS, Adapter, RunContext, adapter_class
from loopbench.harness.record import LimitTranslation, NativeSignals, NeutralLimit, SegmentResult
from loopbench.harness.scenario import Scenario, load_scenarios

TIER = "unit"



SCENARIOS = load_scenarios()
VARIANTS = [(fid, v) for fid in sorted(BUILTIN) for v in adapter_class(fid).idioms()]


def _bare(cls: type[Adapter], said: SegmentResult) -> Adapter:
    """An instance of the variant whose run and resume return `said` (nothing else of the class changes)."""

    async def run(self: Adapter, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        return said

    async def resume(self: Adapter, scenario: Scenario, snapshot: Path, decisions: dict[str, str],
                     ctx: RunContext) -> SegmentResult:
        return said

    stub = type(f"Bare{cls.__name__}", (cls,), {"run": run, "resume": resume})
    instance: Adapter = object.__new__(stub)
    return instance


def _segment(cls: type[Adapter], scenario: Scenario, said: SegmentResult, tmp_path: Path) -> SegmentResult:
    ctx = RunContext(run_id="r", api_key="k", base_url="http://127.0.0.1:9", ledger_token="t", work_dir=tmp_path,
                     snapshot_dir=tmp_path)
    return asyncio.run(_bare(cls, said).segment(scenario, ctx))


@pytest.mark.parametrize(("fid", "variant"), VARIANTS, ids=[f"{f}:{v}" for f, v in VARIANTS])
def test_the_base_fills_what_every_segment_declares(fid: str, variant: str, tmp_path: Path) -> None:
    cls = adapter_class(fid, variant)
    bare = SegmentResult(signals=NativeSignals(ended="returned", final_text="done"))
    for scenario in SCENARIOS:
        seg = _segment(cls, scenario, bare, tmp_path)
        stated = Adapter.mechanisms(scenario, {})
        assert set(seg.mechanisms) == set(stated), (scenario.id, seg.mechanisms)
        for intent, how in seg.mechanisms.items():
            assert how == cls.mechanism_table.get(intent, "unsupported"), (scenario.id, intent)
        for name in get_args(NeutralLimit):
            value = getattr(scenario.limits, name)
            if value is None or name in cls.capabilities.native_limits:
                continue
            assert seg.limits[name] == LimitTranslation(neutral=value, native=None), (scenario.id, name)
            assert name in seg.unsupported, (scenario.id, name)
        for intent in TOOL_CHOICE_INTENTS:
            cannot = seg.mechanisms.get(intent, "").startswith("unsupported")
            assert (intent in seg.unsupported) == cannot, (scenario.id, intent)


def test_what_the_adapter_said_comes_first_and_wins(make_scenario: Any, tmp_path: Path) -> None:
    """An adapter's own words (a driver that says how it applied an intent; a limit with a note) are kept, and
    what it listed as unsupported keeps its order, each item once."""
    cls = adapter_class("openai-agents")
    scenario = make_scenario([{"id": "answer", "text": "x"}], limits={"max_model_calls": 3, "deadline_s": 5},
                             tools={"get_ticket": {"approval": "required"}})
    own = LimitTranslation(neutral=5, native=None, note="why not")
    said = SegmentResult(signals=NativeSignals(ended="returned"), mechanisms={"approval_pause": "its own words"},
                         limits={"deadline_s": own}, unsupported=["no_pause", "deadline_s"])
    seg = _segment(cls, scenario, said, tmp_path)
    assert seg.mechanisms == {"approval_pause": "its own words"}
    assert seg.limits["deadline_s"] == own
    assert seg.unsupported == ["no_pause", "deadline_s"]


@pytest.mark.parametrize(("fid", "variant"), VARIANTS, ids=[f"{f}:{v}" for f, v in VARIANTS])
def test_a_streaming_idiom_names_a_variant_of_its_framework_that_does_not_stream(fid: str, variant: str) -> None:
    """`Capabilities.stream_of` pairs a streaming idiom with the idiom whose loop it streams (the report's
    streamed-vs-not table): a variant of the same framework, itself not a streaming idiom."""
    of = adapter_class(fid, variant).capabilities.stream_of
    if of is None:
        return
    assert of != variant and of in adapter_class(fid).idioms(), (fid, variant, of)
    assert adapter_class(fid, of).capabilities.stream_of is None, (fid, variant, of)


def test_some_idiom_streams() -> None:
    assert any(adapter_class(f, v).capabilities.stream_of for f, v in VARIANTS)
