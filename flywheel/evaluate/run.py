"""``flywheel eval run``: a policy answers benchmark items zero-shot; the sandbox and the stated rules judge them.

Greedy decoding (temperature 0) gives Pass@1; ``k`` > 1 samples at a temperature for pass@k. Optional
self-correction turns show the model its failed program and the sandbox's one-line error and ask again; they are
scored and reported separately, so the zero-shot number is never inflated by them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flywheel.benchmarks import BenchmarkItem, load_benchmark
from flywheel.config import PolicySection
from flywheel.evaluate.runner import execute_completions
from flywheel.evaluate.score import DEFAULT_RULES, Completion, ItemVerdict, judge, summarise
from flywheel.policies.run import generate_attempts
from solvers.records import Attempt, Problem

# Statuses a self-correction turn can act on: the program itself failed (its error message is informative).
_CORRECTABLE = {"code", "no_code", "solver_outcome"}


@dataclass
class EvalResult:
    verdicts: list[ItemVerdict]
    summary: dict[str, Any]
    corrected_verdicts: list[ItemVerdict] = field(default_factory=list)
    corrected_summary: dict[str, Any] = field(default_factory=dict)
    infra_errors: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)


def _problem(item: BenchmarkItem, question: str | None = None) -> Problem:
    return Problem(problem_id=f"{item.benchmark}/{item.id}", family=item.benchmark, generator_version="",
                   generator_code_hash="", seed=0, difficulty=0, params={}, question=question or item.question,
                   ir=None, label_source="benchmark", template_id=f"benchmark:{item.benchmark}")


def _completion(item: BenchmarkItem, attempt: Attempt) -> Completion:
    answer = item.answer
    if isinstance(answer, str) and answer.strip().lower() != "infeasible":
        try:
            answer = float(answer)
        except ValueError:
            answer = None
    return Completion(id=item.id, benchmark=item.benchmark, answer=answer,
                      answers_accepted=tuple(a for a in item.answers_accepted if a is not None),
                      completion=attempt.response, code=attempt.code or None, solver_api=attempt.api,
                      sample_index=attempt.sample_index)


def load_items(benchmarks: Sequence[str], limit: int | None = None) -> list[BenchmarkItem]:
    items: list[BenchmarkItem] = []
    for name in benchmarks:
        loaded = load_benchmark(name)
        items += loaded[:limit] if limit else loaded
    return items


def evaluate_policy(items: Sequence[BenchmarkItem], spec: str, *, rules: Sequence[str] = DEFAULT_RULES,
                    k: int = 1, temperature: float | None = None, api: str = "gurobipy", timeout_s: float = 60.0,
                    self_correct: int = 0, cache_dir: Path, workers: int | None = None,
                    settings: PolicySection | None = None, progress: bool = False) -> EvalResult:
    """Zero-shot evaluation of ``spec`` on ``items``; see the module docstring."""
    temp = (0.0 if k == 1 else 0.7) if temperature is None else temperature
    by_pid = {f"{it.benchmark}/{it.id}": it for it in items}
    run = generate_attempts([_problem(it) for it in items], spec, samples=k, temperature=temp, api=api,
                            round_id=0, cache_dir=cache_dir, progress=progress, settings=settings)
    completions = [_completion(by_pid[a.problem_id], a) for a in run.attempts]
    executions = execute_completions(completions, timeout_s=timeout_s, workers=workers, progress=progress)
    verdicts = [judge(c, e, rules) for c, e in zip(completions, executions, strict=True)]
    result = EvalResult(verdicts, summarise(verdicts, rules, k), infra_errors=list(run.infra_errors),
                        counters=dict(run.counters))
    if self_correct > 0:
        _self_correct(result, completions, executions, by_pid, spec, rules, k, api, timeout_s, self_correct,
                      cache_dir, workers, settings, progress)
    return result


def _self_correct(result: EvalResult, completions: list[Completion], executions: list[Any],
                  by_pid: dict[str, BenchmarkItem], spec: str, rules: Sequence[str], k: int, api: str,
                  timeout_s: float, turns: int, cache_dir: Path, workers: int | None,
                  settings: PolicySection | None, progress: bool) -> None:
    """Up to ``turns`` repair turns for failed first samples; the corrected verdicts replace the failed ones."""
    current = {(v.benchmark, v.id): v for v in result.verdicts if v.sample_index == 0}
    last = {(c.benchmark, c.id): (c, e) for c, e in zip(completions, executions, strict=True) if c.sample_index == 0}
    base = settings or PolicySection()
    repair_settings = base.model_copy(update={"template": "code_only"})
    for _ in range(turns):
        failed = [key for key, v in current.items() if v.labelled and v.miss_class in _CORRECTABLE]
        if not failed:
            break
        problems = []
        for key in failed:
            comp, ex = last[key]
            item = by_pid[f"{key[0]}/{key[1]}"]
            error = (ex.error or ex.status.value) if ex is not None else "no program found in the answer"
            question = (f"{item.question}\n\nA previous program for this problem was:\n```python\n"
                        f"{comp.program() or ''}\n```\nRunning it gave: {error}\nWrite a corrected program.")
            problems.append(_problem(item, question))
        run = generate_attempts(problems, spec, samples=1, temperature=0.0, api=api, round_id=0,
                                cache_dir=cache_dir, progress=progress, settings=repair_settings)
        comps = [_completion(by_pid[a.problem_id], a) for a in run.attempts]
        exes = execute_completions(comps, timeout_s=timeout_s, workers=workers, progress=progress)
        for comp, ex in zip(comps, exes, strict=True):
            key = (comp.benchmark, comp.id)
            current[key] = judge(comp, ex, rules)
            last[key] = (comp, ex)
        result.infra_errors += run.infra_errors
    result.corrected_verdicts = list(current.values())
    result.corrected_summary = summarise(result.corrected_verdicts, rules, 1)
