"""A generated problem with solver-verified ground truth, the starting point of a contract test
(``contracts.testing.make_sample`` then bends its execution). It lives here, not in ``contracts/``, because it needs
the generators, which sit above the contracts layer."""

from __future__ import annotations

from functools import lru_cache

from flywheel.generators.base import generate_problem
from solvers.ground_truth import solve_ground_truth
from solvers.records import Problem


@lru_cache(maxsize=32)
def problem_with_truth(family: str = "production_planning", seed: int = 0, difficulty: int = 2,
                       infeasible: bool = False) -> Problem:
    """A generated problem with its ground truth (solved by the project's two-solver ground truth)."""
    p = generate_problem(family, seed, difficulty, infeasible_share=1.0 if infeasible else 0.0)
    return p.model_copy(update={"ground_truth": solve_ground_truth(p.ir)})
