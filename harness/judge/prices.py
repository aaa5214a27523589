"""Cost per response from the model table (harness/models.py): the served usage priced by the model id the request
named."""

from __future__ import annotations

from loopbench.harness.models import price_per_mtok


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of one response, or None when the model has no price (unknown, never a made-up zero)."""
    price = price_per_mtok(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
