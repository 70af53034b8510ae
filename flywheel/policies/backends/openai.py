"""``openai:MODEL@URL``: any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp, Ollama, hosted).

Async with bounded concurrency (a semaphore plus a connection pool of the same size), a total per-request deadline,
and bounded retries with exponential backoff and jitter on 429 / 5xx / timeouts / malformed or truncated bodies.
Every failure is returned as an ``InfraFailure``; nothing raises past ``run``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from flywheel.config import PolicySection
from flywheel.policies.backends.base import (
    Backend,
    ChatRequest,
    Completion,
    InfraFailure,
    OnResult,
    Outcome,
    register_backend,
)
from flywheel.policies.backends.retry import RETRYABLE_KINDS, backoff_delay, failure_kind, parse_retry_after
from flywheel.policies.spec import PolicySpec


class _Failed(Exception):
    def __init__(self, kind: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.status, self.retry_after = kind, message, status, retry_after


def parse_chat_reply(status: int, body: bytes, headers: httpx.Headers | dict[str, str]) -> tuple[str, str, dict]:
    """(text, finish_reason, usage) of a 200 reply, or raise ``_Failed`` saying what was wrong with it."""
    if status != 200:
        snippet = body[:200].decode("utf-8", "replace").replace("\n", " ")
        raise _Failed(failure_kind(status), f"HTTP {status}: {snippet}", status,
                      parse_retry_after(headers.get("retry-after")))
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        # A JSON document cut short is a truncated body; anything else that does not parse is malformed.
        stripped = body.rstrip()
        kind = "truncated" if stripped.startswith(b"{") and not stripped.endswith(b"}") else "malformed"
        raise _Failed(kind, f"reply is not JSON ({exc}); {len(body)} bytes", status) from None
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Failed("malformed", f"reply has no choices[0].message.content: {str(data)[:200]}", status) from None
    if not isinstance(text, str):
        raise _Failed("malformed", f"choices[0].message.content is {type(text).__name__}, not text", status)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return text, str(choice.get("finish_reason") or ""), usage


@register_backend
class OpenAIBackend(Backend):
    scheme = "openai"

    def __init__(self, spec: PolicySpec, settings: PolicySection, rng: np.random.Generator | None = None) -> None:
        super().__init__(spec, settings)
        # Jitter only shapes timing, never content; still an explicit generator, seeded for reproducible tests.
        self.rng = rng or np.random.default_rng(0)
        self.api_key = os.environ.get(settings.api_key_env, "")

    def _body(self, req: ChatRequest) -> dict[str, Any]:
        return {"model": self.spec.model, "messages": list(req.messages), "temperature": req.temperature,
                "top_p": req.top_p, "max_tokens": req.max_tokens, "seed": req.seed, "stream": False}

    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        n = self.settings.concurrency
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        gate = asyncio.Semaphore(n)
        async with httpx.AsyncClient(limits=limits, headers=headers, timeout=self.settings.timeout_s) as client:

            async def one(req: ChatRequest) -> None:
                async with gate:
                    outcome = await self.complete(client, req)
                on_result(req, outcome)

            await asyncio.gather(*(one(r) for r in requests))

    async def complete(self, client: httpx.AsyncClient, req: ChatRequest) -> Outcome:
        """One request with bounded retries; the outcome of the last try if all fail."""
        url = f"{self.spec.url}/chat/completions"
        s = self.settings
        last: _Failed | None = None
        for attempt in range(s.max_retries + 1):
            if attempt:
                self.counters.retries += 1
                await asyncio.sleep(backoff_delay(attempt - 1, s.backoff_base_s, s.backoff_max_s, self.rng,
                                                  last.retry_after if last else None))
            self.counters.requests_sent += 1
            t0 = time.perf_counter()
            try:
                async with asyncio.timeout(s.timeout_s):
                    resp = await client.post(url, json=self._body(req))
                text, finish, usage = parse_chat_reply(resp.status_code, resp.content, resp.headers)
                return Completion(text=text, finish_reason=finish, usage=usage,
                                  latency_s=time.perf_counter() - t0, tries=attempt + 1)
            except _Failed as exc:
                last = exc
            except (TimeoutError, httpx.TimeoutException):
                last = _Failed("timeout", f"no complete reply within {s.timeout_s:g}s")
            except httpx.RemoteProtocolError as exc:
                msg = str(exc)
                kind = "truncated" if "complete message body" in msg or "incomplete" in msg.lower() else "connection"
                last = _Failed(kind, msg[:300])
            except httpx.HTTPError as exc:
                last = _Failed("connection", f"{type(exc).__name__}: {exc}"[:300])
            except Exception as exc:  # anything else (TLS setup, a body we cannot encode): recorded, not raised
                last = _Failed("backend", f"{type(exc).__name__}: {exc}"[:300])
            if last.kind not in RETRYABLE_KINDS and last.status not in (408, 409):
                break
        assert last is not None
        return InfraFailure(kind=last.kind, message=last.message, http_status=last.status, tries=attempt + 1)
