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
  document none.
- Gemini API, "Troubleshooting" / "Rate limits": a 429 is RESOURCE_EXHAUSTED, and the hint to wait is in the body
  (a `google.rpc.RetryInfo` detail with `retryDelay`, gemini_generate.error), not in a header; 5xx errors
  (INTERNAL, UNAVAILABLE) document none.
Every error also carries the protocol's own error body (wire.openai_error / anthropic_messages.error /
gemini_generate.error).
"""

from __future__ import annotations

from loopbench.harness.model_server import anthropic_messages

# protocol name -> status -> headers
_DEFAULTS: dict[str, dict[int, dict[str, str]]] = {
    anthropic_messages.NAME: {429: {"retry-after": "1"}},
    "openai_chat": {429: {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                          "x-ratelimit-reset-requests": "1s"}},
    "openai_responses": {429: {"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0",
                               "x-ratelimit-reset-requests": "1s"}},
}


def default_headers(protocol: str, status: int) -> dict[str, str]:
    """The headers the real provider of `protocol` sends with an error of `status` (no retry hint unless it
    documents one)."""
    return dict(_DEFAULTS.get(protocol, {}).get(status, {}))
