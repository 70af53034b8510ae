"""The backend interface and its registry.

A backend turns chat requests into completions. It never raises for a failed request: every failure comes back
as an ``InfraFailure`` (kind, HTTP status, tries made) so a flaky server is recorded as infrastructure and never
counted against the model. Backends register themselves by spec scheme.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flywheel.config import PolicySection
from flywheel.policies.spec import PolicySpec, parse_spec
from solvers.errors import unknown_name


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make. ``key`` is the caller's handle (the cache fingerprint)."""

    key: str
    messages: tuple[dict[str, str], ...]
    temperature: float
    top_p: float
    max_tokens: int
    seed: int  # per (problem, sample): servers that honour it make each sample reproducible


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    tries: int = 1


@dataclass(frozen=True)
class InfraFailure:
    """A request that produced no usable reply after its bounded retries."""

    kind: str  # rate_limited | server_error | timeout | malformed | truncated | connection | http_error | backend
    message: str
    http_status: int | None = None
    tries: int = 1


Outcome = Completion | InfraFailure
OnResult = Callable[[ChatRequest, Outcome], None]


@dataclass
class Counters:
    """What a backend really did on the wire (retries included)."""

    requests_sent: int = 0
    retries: int = 0


class Backend(ABC):
    """Runs requests for one spec. ``identity`` goes into every cache fingerprint: it must change whenever the
    model behind the spec changes (a served model name + URL; a checkpoint's content hash)."""

    scheme: ClassVar[str]

    def __init__(self, spec: PolicySpec, settings: PolicySection) -> None:
        self.spec = spec
        self.settings = settings
        self.counters = Counters()

    @property
    def identity(self) -> dict[str, str]:
        return {"model": self.spec.model, "endpoint": self.spec.endpoint}

    @property
    def sampling_options(self) -> dict[str, Any]:
        """Settings of this backend that change the text a request gets (recorded with every attempt's sampling)."""
        return {}

    @abstractmethod
    async def run(self, requests: Sequence[ChatRequest], on_result: OnResult) -> None:
        """Complete every request, calling ``on_result`` once per request as soon as it is known."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections / memory."""


BACKENDS: dict[str, type[Backend]] = {}


def register_backend(cls: type[Backend]) -> type[Backend]:
    BACKENDS[cls.scheme] = cls
    return cls


def backend_schemes() -> list[str]:
    _load()
    return sorted(BACKENDS)


def make_backend(spec: str | PolicySpec, settings: PolicySection | None = None) -> Backend:
    """The backend for a spec string (raises UnknownNameError naming the known schemes)."""
    _load()
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    if parsed.scheme not in BACKENDS:
        raise unknown_name("policy scheme", parsed.scheme, sorted(BACKENDS))
    return BACKENDS[parsed.scheme](parsed, settings or PolicySection())


def _load() -> None:
    import flywheel.policies.backends.hf  # noqa: F401
    import flywheel.policies.backends.openai  # noqa: F401
    import flywheel.policies.backends.vllm  # noqa: F401
