"""Named rules for "does this objective match the ground truth", shared by contracts and evaluation.

Every comparison returns the rule name and the tolerance it actually used, so a stored verdict says exactly how
lenient it was. A MIP solved to a gap g only guarantees its incumbent within g * |objective| of the optimum, so every
rule widens its tolerance by the achieved gap (never by more than the solver admits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from solvers.errors import unknown_name
from solvers.registry import by_name


@dataclass(frozen=True)
class Comparison:
    match: bool
    rule: str
    tolerance: float  # the absolute tolerance applied (after widening by the gap)
    abs_diff: float
    predicted: float
    expected: float
    mip_gap: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


Rule = Callable[[float, float, float], Comparison]
RULES: dict[str, Rule] = {}


def rule(name: str) -> Callable[[Rule], Rule]:
    return by_name(RULES, name)


def _gap_width(pred: float, gt: float, gap: float) -> float:
    return max(gap, 0.0) * max(abs(pred), abs(gt))


@rule("strict")
def strict(pred: float, gt: float, gap: float = 0.0) -> Comparison:
    """|p - g| <= 1e-6 (|g| + 1): the solvers' own default feasibility/optimality tolerances are 1e-6 relative."""
    tol = 1e-6 * (abs(gt) + 1) + _gap_width(pred, gt, gap)
    diff = abs(pred - gt)
    return Comparison(diff <= tol, "strict", tol, diff, pred, gt, gap)


@rule("orlm_lenient")
def orlm_lenient(pred: float, gt: float, gap: float = 0.0) -> Comparison:
    """ORLM's evaluation: round both to integers, then accept a 5% relative error (their published tolerance)."""
    rp, rg = float(round(pred)), float(round(gt))
    tol = 0.05 * abs(rg) + _gap_width(pred, gt, gap)
    diff = abs(rp - rg)
    return Comparison(diff <= tol, "orlm_lenient", tol, diff, pred, gt, gap)


def abs_rel(pred: float, gt: float, gap: float = 0.0, atol: float = 1e-6, rtol: float = 1e-6) -> Comparison:
    """|p - g| <= atol + rtol |g| (+ gap): the general form, for suites that set their own atol/rtol."""
    tol = atol + rtol * abs(gt) + _gap_width(pred, gt, gap)
    diff = abs(pred - gt)
    return Comparison(diff <= tol, f"abs_rel(atol={atol:g},rtol={rtol:g})", tol, diff, pred, gt, gap)


def compare(pred: float, gt: float, rule_name: str = "strict", mip_gap: float | None = None,
            atol: float | None = None, rtol: float | None = None) -> Comparison:
    """Compare a predicted objective with the ground truth under a named rule (or explicit atol/rtol)."""
    gap = float(mip_gap or 0.0)
    if not (math.isfinite(pred) and math.isfinite(gt)):
        return Comparison(pred == gt, rule_name, 0.0, math.inf, pred, gt, gap)
    if atol is not None or rtol is not None:
        return abs_rel(pred, gt, gap, atol if atol is not None else 0.0, rtol if rtol is not None else 0.0)
    if rule_name not in RULES:
        raise unknown_name("tolerance rule", rule_name, list(RULES))
    return RULES[rule_name](pred, gt, gap)
