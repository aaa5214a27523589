"""The price table, keyed by model id, in USD per million tokens (input, output).

It matches the Claude CLI's own table for the model the suite uses, so the harness's cost and Claude's
native budget agree. Every adapter requests the same model id.
"""

from __future__ import annotations

PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4-5-20250929": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-1": (15.0, 75.0),
}


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of one response, or None when the model has no price (unknown, never a made-up zero)."""
    price = PRICES_PER_MTOK.get(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
