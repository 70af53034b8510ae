"""AI-assisted data construction: backtranslation (IR -> story) with critic and refine passes, paraphrase
augmentation, and problem mutation.

An LLM-written story is used only if numeric coverage holds (``coverage.story_coverage``: every coefficient of the
model stated, no number invented); the critic's verdict is recorded and, by default, also required. A rejected
story is reported with the reason, never silently dropped. Every LLM call goes through the policy response cache,
so re-running a construction costs no request that already succeeded.

The new problem keeps the source's IR and ground truth (the story tells the same model), gets a new id (content
hash of source id + story), and its ``template_id`` names the construction step, template and policy for lineage.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flywheel.config import PolicySection
from flywheel.policies.backends.base import Backend, ChatRequest, Completion, make_backend
from flywheel.policies.cache import fingerprint
from flywheel.policies.coverage import Coverage, data_numbers, same_numbers, story_coverage
from flywheel.policies.prompts import RenderedPrompt, render
from flywheel.policies.run import PolicyRun, ask, sample_seed
from solvers.ir import as_jsonable, number_text
from solvers.records import Problem, canonical_json, content_hash

_CRITIC_OK = re.compile(r"VERDICT:\s*OK\b", re.IGNORECASE)


@dataclass
class Constructed:
    """One construction outcome: the new problem when accepted, else why not."""

    source_id: str
    kind: str  # backtranslation | paraphrase | mutation
    accepted: bool
    problem: Problem | None = None
    reason: str = ""
    coverage: float = 0.0
    critic_ok: bool | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)  # template id + hash + reply excerpt per LLM call


@dataclass
class ConstructRun:
    results: list[Constructed] = field(default_factory=list)
    counters: PolicyRun = field(default_factory=PolicyRun)

    @property
    def accepted(self) -> list[Problem]:
        return [r.problem for r in self.results if r.accepted and r.problem is not None]


class _Asker:
    """Batched, cached LLM calls for one construction run."""

    def __init__(self, backend: Backend, spec: str, cache_dir: Path, settings: PolicySection, temperature: float):
        self.backend, self.spec, self.cache_dir, self.settings = backend, spec, cache_dir, settings
        self.temperature = temperature
        self.run = PolicyRun()

    def __call__(self, items: list[tuple[str, str, RenderedPrompt]]) -> list[str | None]:
        """(problem id, step name, prompt) -> reply text, or None when the request failed (infrastructure)."""
        sampling = {"temperature": self.temperature, "top_p": self.settings.top_p,
                    "max_tokens": self.settings.max_tokens}
        reqs = [ChatRequest(key=fingerprint(**self.backend.identity, template_hash=pr.template_hash,
                                            prompt_hash=pr.prompt_hash, sampling=sampling, problem_id=pid, step=step),
                            messages=pr.messages, temperature=self.temperature, top_p=self.settings.top_p,
                            max_tokens=self.settings.max_tokens, seed=sample_seed(f"{pid}/{step}", 0))
                for pid, step, pr in items]
        outcomes = ask(self.backend, reqs, self.cache_dir, self.run, spec=self.spec)
        out: list[str | None] = []
        for (pid, step, _), r in zip(items, reqs, strict=True):
            o = outcomes.get(r.key)
            if isinstance(o, Completion):
                out.append(o.text.strip())
            else:
                self.run.infra_errors.append({"problem_id": pid, "step": step, "kind": getattr(o, "kind", "backend"),
                                              "message": getattr(o, "message", "no reply")})
                out.append(None)
        return out


def _step(prompt: RenderedPrompt, reply: str | None) -> dict[str, Any]:
    return {"template": prompt.template_id, "template_hash": prompt.template_hash,
            "reply": (reply or "")[:200], "failed": reply is None}


def _retold(source: Problem, story: str, kind: str, template_id: str, spec: str) -> Problem:
    """The source problem told anew: same model and answer, new question, new id, lineage in template_id."""
    pid = content_hash(canonical_json({"source": source.problem_id, "kind": kind, "question": story}))
    return source.model_copy(update={"problem_id": pid, "question": story,
                                     "template_id": f"{kind}:{template_id}@{spec}|from:{source.problem_id}"})


def backtranslate(problems: Sequence[Problem], spec: str, *, cache_dir: Path, settings: PolicySection | None = None,
                  temperature: float = 0.7, refine_rounds: int = 1, require_critic: bool = True,
                  backend: Backend | None = None) -> ConstructRun:
    """Write a new story for each problem's IR; critic, then refine (up to ``refine_rounds``) until the critic says
    OK and coverage holds. Coverage problems are added to the critique the refine pass sees."""
    settings = settings or PolicySection()
    asker = _Asker(backend or make_backend(spec, settings), spec, cache_dir, settings, temperature)
    todo = [p for p in problems if p.ir is not None]
    results = {p.problem_id: Constructed(p.problem_id, "backtranslation", False, reason="problem has no IR")
               for p in problems if p.ir is None}
    prompts = {p.problem_id: render("backtranslation", domain=p.domain or "business", formulation=p.formulation,
                                    numbers=", ".join(number_text(x) for x in sorted(data_numbers(p.ir))))  # type: ignore[arg-type]
               for p in todo}
    stories = dict(zip([p.problem_id for p in todo],
                       asker([(p.problem_id, "story", prompts[p.problem_id]) for p in todo]), strict=True))
    steps: dict[str, list[dict[str, Any]]] = {p.problem_id: [_step(prompts[p.problem_id], stories[p.problem_id])]
                                              for p in todo}
    verdict: dict[str, tuple[bool, Coverage | None]] = {}
    active = [p for p in todo if stories[p.problem_id] is not None]
    for rnd in range(refine_rounds + 1):
        critics = {p.problem_id: render("critic", formulation=p.formulation, story=stories[p.problem_id])
                   for p in active}
        replies = asker([(p.problem_id, f"critic{rnd}", critics[p.problem_id]) for p in active])
        refine: list[tuple[Problem, str]] = []
        for p, reply in zip(active, replies, strict=True):
            steps[p.problem_id].append(_step(critics[p.problem_id], reply))
            cov = story_coverage(stories[p.problem_id] or "", p.ir, p.distractors)  # type: ignore[arg-type]
            critic_ok = reply is not None and bool(_CRITIC_OK.search(reply))
            verdict[p.problem_id] = (critic_ok, cov)
            if not (cov.ok and (critic_ok or not require_critic)):
                refine.append((p, "\n".join(x for x in [(reply or "")[:1500], cov.problems] if x)))
        if rnd == refine_rounds or not refine:
            break
        fixes = {p.problem_id: render("refine", formulation=p.formulation, story=stories[p.problem_id],
                                      critique=critique) for p, critique in refine}
        new = asker([(p.problem_id, f"refine{rnd}", fixes[p.problem_id]) for p, _ in refine])
        active = []
        for (p, _), story in zip(refine, new, strict=True):
            steps[p.problem_id].append(_step(fixes[p.problem_id], story))
            if story is not None:
                stories[p.problem_id] = story
                active.append(p)
    for p in todo:
        story = stories[p.problem_id]
        critic_ok, cov = verdict.get(p.problem_id, (False, None))
        if story is None or cov is None:
            results[p.problem_id] = Constructed(p.problem_id, "backtranslation", False, reason="LLM request failed",
                                                steps=steps[p.problem_id])
            continue
        ok = cov.ok and (critic_ok or not require_critic)
        reason = "; ".join(x for x in [cov.problems, "" if critic_ok or not require_critic else "critic: REVISE"] if x)
        results[p.problem_id] = Constructed(
            p.problem_id, "backtranslation", ok, _retold(p, story, "backtranslation", "backtranslation/v1", spec)
            if ok else None, reason=reason, coverage=cov.coverage, critic_ok=critic_ok, steps=steps[p.problem_id])
    return ConstructRun([results[p.problem_id] for p in problems], asker.run)


def paraphrase(problems: Sequence[Problem], spec: str, *, cache_dir: Path, settings: PolicySection | None = None,
               temperature: float = 0.7, backend: Backend | None = None) -> ConstructRun:
    """Re-word each question; kept only if it states exactly the model's numbers (or, without an IR, exactly the
    original question's numbers)."""
    settings = settings or PolicySection()
    asker = _Asker(backend or make_backend(spec, settings), spec, cache_dir, settings, temperature)
    prompts = [render("paraphrase", question=p.question) for p in problems]
    replies = asker([(p.problem_id, "paraphrase", pr) for p, pr in zip(problems, prompts, strict=True)])
    run = ConstructRun(counters=asker.run)
    for p, pr, text in zip(problems, prompts, replies, strict=True):
        if text is None:
            run.results.append(Constructed(p.problem_id, "paraphrase", False, reason="LLM request failed",
                                           steps=[_step(pr, text)]))
            continue
        cov = story_coverage(text, p.ir, p.distractors) if p.ir is not None else same_numbers(p.question, text)
        run.results.append(Constructed(
            p.problem_id, "paraphrase", cov.ok, _retold(p, text, "paraphrase", pr.template_id, spec) if cov.ok else None,
            reason=cov.problems, coverage=cov.coverage, steps=[_step(pr, text)]))
    return run


def mutate_params(data: Any, rng: np.random.Generator, scale: float, depth: int = 0) -> Any:
    """Perturb every number inside the instance's data tables by a factor in [1 - scale, 1 + scale]; integers stay
    integers and positive numbers stay positive. Top-level scalars are left alone: in our families they are
    counts and switches that the story's structure depends on, not coefficients."""
    if isinstance(data, dict):
        return {k: mutate_params(v, rng, scale, depth + 1) for k, v in data.items()}
    if isinstance(data, list):
        return [mutate_params(v, rng, scale, depth + 1) for v in data]
    if depth >= 2 and isinstance(data, (int, float)) and not isinstance(data, bool):
        x = data * float(rng.uniform(1 - scale, 1 + scale))
        if isinstance(data, int):
            return max(1, round(x)) if data >= 1 else round(x)
        return round(x, 4) if data > 0 else x
    return data


def mutate(problems: Sequence[Problem], rng: np.random.Generator, *, scale: float = 0.2,
           retell: Callable[[Sequence[Problem]], ConstructRun] | None = None) -> ConstructRun:
    """New instances of the same families: the generator rebuilds the IR and tells the story from perturbed data
    (ground truth cleared: the round re-solves it); ``retell`` (e.g. a paraphrase with a policy bound) then lets the
    LLM re-tell the story, under the same coverage rule."""
    from flywheel.generators.base import get_family
    from solvers.render.formulation import formulation_text

    run = ConstructRun()
    mutated: list[Problem] = []
    for p in problems:
        if p.ir is None or not p.template_id.startswith(f"{p.family}/t"):
            run.results.append(Constructed(p.problem_id, "mutation", False, reason="not a generated problem"))
            continue
        fam = get_family(p.family)
        data = as_jsonable(mutate_params(p.params, rng, scale))
        try:
            ir = fam.build(data)
            # phrase, not question: the template may be one of the generic variants (story, distractors, ...)
            question = fam.phrase(data, int(p.template_id.rsplit("/t", 1)[1]), p.domain, ir)
        except Exception as exc:  # a perturbation the family cannot build: reported, not fatal
            run.results.append(Constructed(p.problem_id, "mutation", False, reason=f"build failed: {exc}"))
            continue
        pid = content_hash(canonical_json({"source": p.problem_id, "kind": "mutation", "ir": ir.content_hash()}))
        new = p.model_copy(update={"problem_id": pid, "params": data, "ir": ir, "question": str(question),
                                   "distractors": tuple(question.distractors),
                                   "formulation": formulation_text(ir), "ground_truth": None,
                                   "reference_programs": {}, "template_id": f"{p.template_id}|mutation-of:{p.problem_id}"})
        mutated.append(new)
        run.results.append(Constructed(p.problem_id, "mutation", True, new, coverage=1.0))
    if retell is not None and mutated:
        told = retell(mutated)
        by_source = {r.source_id: r for r in told.results}
        for r in run.results:
            if r.accepted and r.problem is not None:
                t = by_source[r.problem.problem_id]
                r.accepted, r.problem, r.reason, r.coverage, r.steps = (t.accepted, t.problem, t.reason,
                                                                         t.coverage, t.steps)
        run.counters = told.counters
    return run


def summary(run: ConstructRun) -> dict[str, Any]:
    kinds = sorted({r.kind for r in run.results})
    return {"kinds": kinds, "total": len(run.results), "accepted": sum(r.accepted for r in run.results),
            "rejected": sum(not r.accepted for r in run.results), **run.counters.counters,
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
