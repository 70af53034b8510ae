"""Policy spec strings: ``openai:MODEL@URL``, ``hf:PATH``, ``vllm:PATH``.

A spec names a model and where it runs. It is stored verbatim with every attempt, so it is the policy's identity
in the store; the parsed form only routes the request to a backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from solvers.errors import ConfigError


@dataclass(frozen=True)
class PolicySpec:
    """A parsed spec. ``model`` is the served model name (openai:) or the checkpoint path (hf:, vllm:)."""

    raw: str
    scheme: str
    model: str
    url: str = ""  # base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1

    @property
    def endpoint(self) -> str:
        """Where requests go: part of the response-cache fingerprint."""
        return self.url or "local"


def parse_spec(spec: str) -> PolicySpec:
    """Split ``SCHEME:REST``. ``openai:`` needs ``MODEL@URL`` with an http(s) URL; the base URL gets ``/v1``
    appended when it has no path, because every OpenAI-compatible server we target mounts the API there."""
    scheme, sep, rest = spec.partition(":")
    if not sep or not scheme or not rest:
        raise ConfigError("a policy spec reads SCHEME:TARGET, e.g. openai:MODEL@http://127.0.0.1:8000/v1 or "
                          "hf:path/to/checkpoint", culprit=spec)
    if scheme != "openai":
        return PolicySpec(raw=spec, scheme=scheme, model=rest)
    model, at, url = rest.rpartition("@")
    if not at or not model:
        raise ConfigError("an openai: spec reads openai:MODEL@URL, e.g. openai:qwen@http://127.0.0.1:8000/v1",
                          culprit=spec)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"the server URL must be http(s)://HOST[:PORT][/v1], got {url!r}", culprit=spec)
    base = url.rstrip("/")
    if parsed.path in ("", "/"):
        base += "/v1"
    return PolicySpec(raw=spec, scheme=scheme, model=model, url=base)
