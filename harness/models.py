"""The suite's models, one table: for each provider, the model id a framework sends over that provider's wire
protocol, and every model's price (USD per million tokens, input and output).

A scenario names one model (`model.id`, by default the Anthropic entry). A framework drives it through the
model class its own docs and registry choose for it (docs/decisions.md, "Each framework's own model class"):
when that class speaks the scenario model's provider, it sends the scenario's id; when the framework's default
idiom is another provider's class (Google ADK's quick start is Gemini's, the OpenAI Agents SDK's OpenAI's), it
sends this table's model for that provider — never an id an adapter picks for itself. The scripted server
serves the same script and usage whichever id arrives; the cost observed prices each request by the id it
named (harness/judge/prices.py), so a model without a price here gives a null cost, never a guess.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

Provider = Literal["anthropic", "openai", "gemini"]


class ModelEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    provider: Provider
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    # the provider's entry: the model a framework sends over this provider's protocol when the scenario's
    # model is another provider's
    suite_default: bool = False


# Prices as each provider lists them for these ids (standard tier, prompts under 200k tokens). The Anthropic
# entry matches the Claude CLI's own table, so the harness's cost and Claude's native budget agree.
MODELS: tuple[ModelEntry, ...] = (
    ModelEntry(id="claude-sonnet-4-5", provider="anthropic", input_usd_per_mtok=3.0, output_usd_per_mtok=15.0,
               suite_default=True),
    ModelEntry(id="claude-sonnet-4-5-20250929", provider="anthropic", input_usd_per_mtok=3.0,
               output_usd_per_mtok=15.0),
    ModelEntry(id="claude-haiku-4-5", provider="anthropic", input_usd_per_mtok=1.0, output_usd_per_mtok=5.0),
    ModelEntry(id="claude-opus-4-1", provider="anthropic", input_usd_per_mtok=15.0, output_usd_per_mtok=75.0),
    ModelEntry(id="gpt-4.1", provider="openai", input_usd_per_mtok=2.0, output_usd_per_mtok=8.0, suite_default=True),
    ModelEntry(id="gemini-2.5-flash", provider="gemini", input_usd_per_mtok=0.30, output_usd_per_mtok=2.50,
               suite_default=True),
)
BY_ID: dict[str, ModelEntry] = {m.id: m for m in MODELS}
SUITE_DEFAULT: dict[Provider, ModelEntry] = {m.provider: m for m in MODELS if m.suite_default}
# a model id's provider by its family, for ids not in the table (a user's scenario may name another model)
_FAMILIES: tuple[tuple[str, Provider], ...] = (
    (r"claude-", "anthropic"), (r"(gpt-|o\d)", "openai"), (r"gemini-", "gemini"))


def provider_of(model_id: str) -> Provider | None:
    """The provider whose protocol carries `model_id` natively (None: a family this table does not know)."""
    if model_id in BY_ID:
        return BY_ID[model_id].provider
    for pattern, provider in _FAMILIES:
        if re.match(pattern, model_id):
            return provider
    return None


def model_for(scenario_model: str, provider: Provider) -> str:
    """The id a model class of `provider` sends for a scenario whose model is `scenario_model`: the scenario's own
    when it is that provider's, else the table's model for the provider."""
    if provider_of(scenario_model) == provider:
        return scenario_model
    return SUITE_DEFAULT[provider].id


def price_per_mtok(model_id: str) -> tuple[float, float] | None:
    entry = BY_ID.get(model_id)
    return None if entry is None else (entry.input_usd_per_mtok, entry.output_usd_per_mtok)
