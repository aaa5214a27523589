"""What a real provider sends with an HTTP error, by protocol and status: the defaults of a scripted failure.

A scripted failure sends only these headers unless the scenario declares its own (`fail_first[].headers`), so
no client sees a retry hint a real provider would not send: a hint added for speed changes what a client does
(ai@7 honours `retry-after-ms`; the Claude CLI stops at once on `x-should-retry: false`), and so the finding.

Sources (the providers' public API documentation, 2026-11):
- Anthropic Messages, "Rate limits": a 429 `rate_limit_error` comes "along with a retry-after header
  indicating how long to wait" (seconds). Its "Errors" page documents no retry header for 500 `api_error` or
  529 `overloaded_error`. The value sent here is the smallest whole second, 1.
- OpenAI (Chat Completions, Responses), "Rate limits" and "Error codes": a 429 carries the informational
  `x-ratelimit-*` headers (which no client in the suite reads) and no documented retry header; 5xx errors
  document none. A rate-limit 429 of the shared rate limiter may carry an optional `Retry-After` header, an
  integer number of seconds (openai/openai-openapi#564, 2026-08): sent only when the scenario asks for a hint
  (`retry_after_s`).
- Gemini API, "Troubleshooting" / "Rate limits": a 429 is RESOURCE_EXHAUSTED, and the hint to wait is in the body
  (a `google.rpc.RetryInfo` detail with `retryDelay`, gemini_generate.error), not in a header; 5xx errors
  (INTERNAL, UNAVAILABLE) document none.
Every error also carries the protocol's own error body (wire.openai_error / anthropic_messages.error /
gemini_generate.error).

`retry_after_s` of a scripted 429 is that provider's own hint: Anthropic's and OpenAI's `retry-after` header,
Gemini's `retryDelay` in the body. `hint_s` reads back the wait an answer told the client, whatever carried it.
"""

from __future__ import annotations

import re
from typing import Any

from loopbench.harness.model_server import anthropic_messages

# protocol name -> status -> headers
_DEFAULTS: dict[str, dict[int, dict[str, str]]] = {
    anthropic_messages.NAME: {429: {"retry-after": "1"}},
    "openai_chat": {429: {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                          "x-ratelimit-reset-requests": "1s"}},
    "openai_responses": {429: {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                               "x-ratelimit-reset-requests": "1s"}},
}
# the protocols whose provider sends a retry hint as a `retry-after` header (seconds); the others in the body
_HEADER_HINT = (anthropic_messages.NAME, "openai_chat", "openai_responses")


def default_headers(protocol: str, status: int) -> dict[str, str]:
    """The headers the real provider of `protocol` sends with an error of `status` (no retry hint unless it
    documents one)."""
    return dict(_DEFAULTS.get(protocol, {}).get(status, {}))


def hinted_headers(protocol: str, status: int, retry_after_s: int) -> dict[str, str]:
    """The headers of a 429 that tells the client to wait `retry_after_s` seconds, as the provider sends it."""
    headers = default_headers(protocol, status)
    if protocol in _HEADER_HINT:
        headers["retry-after"] = str(retry_after_s)
        if "x-ratelimit-reset-requests" in headers:
            headers["x-ratelimit-reset-requests"] = f"{retry_after_s}s"
    return headers


def hinted_body(body: dict[str, Any], retry_after_s: int) -> dict[str, Any]:
    """A Gemini error body whose RetryInfo says `retry_after_s` (other protocols' bodies carry no hint)."""
    for detail in (body.get("error") or {}).get("details") or []:
        if detail.get("@type", "").endswith("google.rpc.RetryInfo"):
            detail["retryDelay"] = f"{retry_after_s}s"
    return body


def hint_s(headers: dict[str, str], body: dict[str, Any]) -> float | None:
    """The wait an error answer tells the client, in seconds: `retry-after-ms`, `retry-after` (seconds; an HTTP date
    is not sent here), or a Gemini RetryInfo `retryDelay`; None when it carries no hint."""
    low = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(low[name]) * scale
        except (KeyError, ValueError):
            pass
    for detail in (body.get("error") or {}).get("details") or []:
        delay = re.fullmatch(r"([0-9.]+)s", str(detail.get("retryDelay", "")))
        if delay:
            return float(delay.group(1))
    return None
