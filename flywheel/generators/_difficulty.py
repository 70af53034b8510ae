"""Measured difficulty: how hard a problem is by what it is (size, integrality, techniques) and by what solving it
cost, rather than only by the knob it was generated at.

``measured_difficulty`` is a score on a log scale (about 1 for a 3-variable LP, about 6 for a few hundred binaries
with several techniques that take a second to solve); ``measured_level`` cuts it into the knob's 1..5 range so a
curriculum can use either. The cut points are fixed (not fitted to a store), so a level means the same in every
store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

# Score cut points between levels 1|2|3|4|5 (see the module docstring).
LEVEL_CUTS = (2.0, 3.0, 4.0, 5.0)


def measured_difficulty(metrics: Mapping[str, int], n_techniques: int, solve_ms: float | None) -> float:
    """Score = log10 of the model's size (variables + constraints + non-zeros) + 1 if any variable is integer
    + 0.5 per modelling technique + 0.5 for a quadratic objective + log10(1 + ground-truth solve ms)."""
    size = metrics.get("n_vars", 0) + metrics.get("n_constraints", 0) + metrics.get("n_nonzeros", 0)
    integer = metrics.get("n_integer", 0) + metrics.get("n_binary", 0)
    score = math.log10(1 + size) + (1.0 if integer else 0.0) + 0.5 * n_techniques
    score += 0.5 if metrics.get("n_quadratic_terms", 0) else 0.0
    score += math.log10(1 + max(0.0, solve_ms or 0.0))
    return round(score, 4)


def measured_level(score: float) -> int:
    """The score on the knob's 1..5 scale."""
    return 1 + sum(score >= cut for cut in LEVEL_CUTS)
