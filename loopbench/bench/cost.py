"""4. Per framework column, from the full suite's records: the framework's own CPU per model call (the workers'
CPU less loopbench's own part in them), loopbench's own CPU per run, wall per model call and peak worker RSS."""

from __future__ import annotations

from typing import Any


def cost_numbers(results: str) -> dict[str, dict[str, Any]]:
    from loopbench.reports.frames import cost_per_model_call
    from loopbench.reports.load import load_results

    return cost_per_model_call(load_results(results).records)

