"""Retry policy: which failures are worth another try and how long to wait.

Exponential backoff with full jitter (delay ~ U(0, min(cap, base * 2**retry))) spreads a burst of clients that
all hit a 429 at once, so they do not retry in lockstep. A server's ``Retry-After`` is honoured but capped, so a
hostile or confused server cannot park the round.
"""

from __future__ import annotations

import numpy as np

# Transient by nature: another try may succeed. 4xx other than 408/409/429 are the caller's fault (bad key, unknown
# model) and would fail the same way again.
RETRYABLE_KINDS = frozenset({"rate_limited", "server_error", "timeout", "malformed", "truncated", "connection"})
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def failure_kind(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    if status in (408,):
        return "timeout"
    return "http_error"


def backoff_delay(retry: int, base_s: float, cap_s: float, rng: np.random.Generator,
                  retry_after_s: float | None = None) -> float:
    """Seconds to wait before retry number ``retry`` (0-based)."""
    if retry_after_s is not None and retry_after_s >= 0:
        # Honour the server, plus a little jitter so clients that got the same header do not collide.
        return min(cap_s, retry_after_s) + float(rng.uniform(0, base_s / 4))
    return float(rng.uniform(0, min(cap_s, base_s * 2**retry)))


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (the delta-seconds form; HTTP dates are rare on LLM servers)."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None
