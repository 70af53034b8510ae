"""``generate_attempts``: K samples per problem from a policy, as ``Attempt`` records, through the response cache.

Every (problem, sample index) becomes one chat request whose fingerprint keys the cache. Cached replies are used
as they are; the rest go to the backend, and each success is cached the moment it arrives. A request that fails
after its bounded retries becomes an ``infra_errors`` row (never an attempt, so never a model failure) and is
simply asked again on the next run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flywheel.config import PolicySection
from flywheel.policies.backends.base import Backend, ChatRequest, Completion, InfraFailure, Outcome, make_backend
from flywheel.policies.cache import ResponseCache, fingerprint
from flywheel.policies.extract import extract_code
from flywheel.policies.prompts import RenderedPrompt, render
from solvers.errors import ConfigError, unknown_name
from solvers.records import Attempt, Problem, canonical_json, content_hash
from solvers.render import APIS


@dataclass
class PolicyRun:
    """What a policy produced for a batch of problems, plus what it cost on the wire."""

    attempts: list[Attempt] = field(default_factory=list)
    infra_errors: list[dict[str, Any]] = field(default_factory=list)
    requests_sent: int = 0  # HTTP requests / generate calls actually made, retries included
    cache_hits: int = 0
    retries: int = 0
    wall_s: float = 0.0
    details: dict[str, dict[str, Any]] = field(default_factory=dict)  # attempt_id -> finish_reason, usage, latency

    @property
    def counters(self) -> dict[str, Any]:
        n = len(self.attempts) + len(self.infra_errors)
        return {"attempts": len(self.attempts), "infra_errors": len(self.infra_errors),
                "requests_sent": self.requests_sent, "cache_hits": self.cache_hits, "retries": self.retries,
                "cache_hit_rate": round(self.cache_hits / n, 4) if n else 0.0, "wall_s": round(self.wall_s, 3)}


def sample_seed(problem_id: str, sample_index: int) -> int:
    """A per-sample seed for servers that honour one: sample k of a problem is reproducible and differs from k+1."""
    return int(content_hash(f"{problem_id}#{sample_index}", 8), 16) & 0x7FFFFFFF


def attempt_id(problem_id: str, policy: str, prompt_hash: str, sample_index: int, response: str) -> str:
    return content_hash(canonical_json({"problem_id": problem_id, "policy": policy, "prompt_hash": prompt_hash,
                                        "sample_index": sample_index, "response": response}))


@dataclass(frozen=True)
class _Job:
    problem: Problem
    sample_index: int
    prompt: RenderedPrompt
    request: ChatRequest


def generate_attempts(
    problems: Sequence[Problem],
    spec: str,
    *,
    samples: int,
    temperature: float,
    api: str,
    round_id: int,
    cache_dir: Path,
    progress: bool = True,
    settings: PolicySection | None = None,
    backend: Backend | None = None,
) -> PolicyRun:
    """K = ``samples`` attempts per problem from policy ``spec``, asking the backend only for uncached requests.

    Attempts come back in (problem, sample index) order. ``settings`` (the config's ``[policy]`` section) sets the
    template, retries, concurrency and label source; ``backend`` overrides the one the spec names (tests, benches).
    """
    if samples < 1:
        raise ConfigError("samples must be at least 1", culprit="--samples")
    if temperature < 0:
        raise ConfigError("temperature must be >= 0", culprit="--temperature")
    if api not in APIS:
        raise unknown_name("solver API", api, list(APIS))
    settings = settings or PolicySection()
    backend = backend or make_backend(spec, settings)
    run = PolicyRun()
    t0 = time.perf_counter()
    sampling = {"temperature": temperature, "top_p": settings.top_p, "max_tokens": settings.max_tokens,
                **backend.sampling_options}
    identity = backend.identity
    jobs: list[_Job] = []
    for problem in problems:
        prompt = render(settings.template, question=problem.question, api=api)
        for k in range(samples):
            key = fingerprint(**identity, template_hash=prompt.template_hash, prompt_hash=prompt.prompt_hash,
                              sampling=sampling, problem_id=problem.problem_id, sample_index=k)
            req = ChatRequest(key=key, messages=prompt.messages, temperature=temperature, top_p=settings.top_p,
                              max_tokens=settings.max_tokens, seed=sample_seed(problem.problem_id, k))
            jobs.append(_Job(problem, k, prompt, req))

    outcomes = ask(backend, [j.request for j in jobs], cache_dir, run, spec=spec, progress=progress)

    for job in jobs:
        outcome = outcomes.get(job.request.key) or InfraFailure(kind="backend", message="backend returned nothing")
        p, k = job.problem, job.sample_index
        if isinstance(outcome, InfraFailure):
            run.infra_errors.append({"problem_id": p.problem_id, "sample_index": k, "kind": outcome.kind,
                                     "http_status": outcome.http_status, "attempts": outcome.tries,
                                     "message": outcome.message, "policy": spec, "round": round_id})
            continue
        aid = attempt_id(p.problem_id, spec, job.prompt.template_hash, k, outcome.text)
        run.attempts.append(Attempt(
            attempt_id=aid, problem_id=p.problem_id, round=round_id, policy=spec, api=api, response=outcome.text,
            code=extract_code(outcome.text) or "", sample_index=k, prompt_template=job.prompt.template_id,
            prompt_hash=job.prompt.template_hash, sampling={**sampling, "seed": job.request.seed},
            label_source=settings.label_source))
        run.details[aid] = {"finish_reason": outcome.finish_reason, "usage": outcome.usage,
                            "latency_s": round(outcome.latency_s, 4), "tries": outcome.tries}
    run.wall_s = time.perf_counter() - t0
    return run


def ask(backend: Backend, requests: Sequence[ChatRequest], cache_dir: Path, run: PolicyRun, *, spec: str,
        progress: bool = False) -> dict[str, Outcome]:
    """Outcome per request key: cached completions as they are, the rest from the backend (each success cached as
    it arrives). Adds cache hits, requests sent and retries to ``run``'s counters."""
    cache = ResponseCache(cache_dir)
    outcomes: dict[str, Outcome] = {}
    todo: dict[str, ChatRequest] = {}  # a request listed twice is asked once
    for req in requests:
        hit = cache.get(req.key)
        if hit is not None:
            outcomes[req.key] = hit
            run.cache_hits += 1
        else:
            todo.setdefault(req.key, req)
    bar = _Progress(len(todo), spec) if progress and todo else None
    identity = backend.identity

    def on_result(req: ChatRequest, outcome: Outcome) -> None:
        outcomes[req.key] = outcome
        if isinstance(outcome, Completion):
            cache.put(req.key, outcome, {"spec": spec, **identity})
        if bar:
            bar.advance()

    sent, retried = backend.counters.requests_sent, backend.counters.retries
    try:
        if todo:
            asyncio.run(_run_backend(backend, list(todo.values()), on_result))
    finally:
        if bar:
            bar.close()
        cache.close()
    run.requests_sent += backend.counters.requests_sent - sent
    run.retries += backend.counters.retries - retried
    return outcomes


async def _run_backend(backend: Backend, todo: list[ChatRequest], on_result: Any) -> None:
    try:
        await backend.run(todo, on_result)
    finally:
        await backend.aclose()


class _Progress:
    """A Rich progress bar over requests (only drawn on a terminal by Rich itself)."""

    def __init__(self, total: int, spec: str) -> None:
        from rich.progress import Progress

        self.progress = Progress(transient=True)
        self.task = self.progress.add_task(f"policy {spec}", total=total)
        self.progress.start()

    def advance(self) -> None:
        self.progress.advance(self.task)

    def close(self) -> None:
        self.progress.stop()
