"""The report's native-vs-guarded table (reports/guarded.py): a guarded idiom is paired with the idiom its record
names (`Capabilities.guard_of`); conformance is counted on both sides; each cell still deviating when guarded
says why — the hook the framework declares missing, a count outside the policy, or the guard's own gap."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopbench.harness.record import Capabilities, Deviation, RunRecord
from loopbench.reports.guarded import guard_pairs, native_vs_guarded
from loopbench.reports.load import load_records

TIER = "unit"

DATA = Path(__file__).parent / "data" / "reports_small"
CAPS = Capabilities(native_limits=frozenset({"max_model_calls"}), step_unit="turn", pause="snapshot",
                    pause_survives_restart=True, deny="x")
LACKS = {"before_model_call": "no hook runs before a model call"}


def _as(r: RunRecord, variant: str, guard_of: str | None, deviations: list[Deviation] | None = None) -> RunRecord:
    devs = r.deviations if deviations is None else deviations
    return r.model_copy(update={
        "variant": variant, "run_id": f"{r.run_id}-{variant}", "deviations": devs,
        "verdict": "deviates" if devs else "conforms",
        "capabilities": CAPS.model_copy(update={"guard_of": guard_of,
                                                "guard_lacks": LACKS if guard_of else {}})})


@pytest.fixture(scope="module")
def native() -> list[RunRecord]:
    return [_as(r, "default", None) for r in load_records(DATA) if r.framework == "openai-agents"]


def test_guarded_cells_are_counted_beside_native_ones_and_each_remaining_one_says_why(native):
    over = Deviation(name="model_requests_observed", ideal=2, observed=3)
    reported = Deviation(name="model_requests_reported", ideal=None, observed=2)
    stalled = Deviation(name="outcome", ideal="stalled", observed="limit_steps")
    says = {native[0].scenario: [over], native[1].scenario: [reported], native[2].scenario: [stalled]}
    guarded = [_as(r, "guarded", "default", says.get(r.scenario, [])) for r in native]
    pairs, remaining, lacks = native_vs_guarded(native + guarded)
    native_ok = sum(r.verdict == "conforms" for r in native)
    row = pairs.to_dict("records")[0]
    assert row == {"framework": "openai-agents", "guarded": "openai-agents:guarded", "native": "openai-agents",
                   "scenarios compared": len(native), "native conforms": native_ok,
                   "guarded conforms": len(native) - 3,
                   "cells the guard fixed": sum(r.verdict != "conforms" and r.scenario not in says for r in native),
                   "still deviating": 3}
    why = dict(zip(remaining["scenario"], remaining["why"], strict=True))
    assert why[native[0].scenario] == "missing hook `before_model_call`: no hook runs before a model call"
    assert why[native[1].scenario].startswith("outside the policy: the framework's own count")
    assert why[native[2].scenario] == "the framework has the hooks: the guard does not reach this yet"
    assert lacks.to_dict("records") == [{"framework": "openai-agents", "hook it lacks": "before_model_call",
                                         "what the policy cannot do there": "no hook runs before a model call"}]


def test_a_framework_that_ends_short_of_the_ideal_or_a_task_with_no_allowance_is_not_a_gap_of_the_guard(native):
    """The guard only restrains: a framework that gives up on its own (fewer requests than the ideal, no guard
    stop) is beyond it; a loop that runs to the server's cap where the task set no limit had nothing to enforce.
    A guard stop in the record, or a loop that did more than the ideal, leaves it the guard's own gap."""
    from loopbench.harness.record import LimitTranslation

    gave_up = [Deviation(name="outcome", ideal="completed", observed="failed"),
               Deviation(name="model_requests_observed", ideal=5, observed=1)]
    capped = [Deviation(name="outcome", ideal="limit_steps", observed="capped")]
    over = [Deviation(name="model_requests_observed", ideal=2, observed=3)]
    unset = {"max_model_calls": LimitTranslation(neutral=None, native=None)}
    set_ = {"max_model_calls": LimitTranslation(neutral=8, native="max_turns=8")}
    a, b, c, d = native[:4]
    guarded = [_as(a, "guarded", "default", gave_up).model_copy(update={"outcome": "failed"}),
               _as(b, "guarded", "default", capped).model_copy(update={"limits": unset}),
               _as(c, "guarded", "default", capped).model_copy(update={"limits": set_}),
               _as(d, "guarded", "default", over)]
    caps = guarded[3].capabilities.model_copy(update={"guard_lacks": {}})  # type: ignore[union-attr]
    guarded[3] = guarded[3].model_copy(update={"capabilities": caps})
    _, remaining, _ = native_vs_guarded(native + guarded)
    why = dict(zip(remaining["scenario"], remaining["why"], strict=True))
    assert why[a.scenario].startswith("beyond a restraint: the framework ended the task itself (failed)")
    assert why[b.scenario].startswith("outside the policy: the task sets no allowance")
    assert why[c.scenario].startswith("missing hook `before_model_call`")  # a cap was set: the hook is missing
    assert why[d.scenario] == "the framework has the hooks: the guard does not reach this yet"
    stopped = guarded[0].native.model_copy(update={"signals": guarded[0].native.signals.model_copy(
        update={"guard": {"exit": "failed"}})})
    _, remaining, _ = native_vs_guarded(native + [guarded[0].model_copy(update={"native": stopped})])
    assert remaining["why"].tolist() == ["the framework has the hooks: the guard does not reach this yet; missing hook "
                                         "`before_model_call`: no hook runs before a model call"]


def test_a_guarded_idiom_whose_native_one_did_not_run_is_not_paired(native):
    alone = [_as(r, "guarded", "default") for r in native]
    assert guard_pairs(alone) == [] and guard_pairs(native) == []
