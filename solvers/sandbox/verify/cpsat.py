"""The CP-SAT check: a claimed CP-SAT point against the compact JSON form of its ``CpModelProto`` the capture sends,
in exact integer arithmetic, without OR-Tools (``check_cp``). Constraint kinds it does not check are counted (the
solve is then *partially* verified), never accused."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from solvers.sandbox.verify.common import CP_MAX_ITEMS, CP_MAX_TERMS, OBJ_TOL


def _verify_cp(i: int, rec: dict[str, Any], check: dict[str, Any], models_expected: bool, verdict: Any) -> None:
    cp = check.get("cp")
    if not isinstance(cp, dict):
        if models_expected:
            verdict.problems.append(f"solve {i + 1}: claims a CP-SAT solution without the model its capture sends")
        else:
            verdict.skipped += 1
        return
    if cp.get("too_large"):
        counts = rec.get("n_vars"), rec.get("n_constraints")
        if all(isinstance(c, int) for c in counts) and sum(counts) > CP_MAX_ITEMS:  # type: ignore[arg-type]
            verdict.skipped += 1
        else:
            verdict.problems.append(f"solve {i + 1}: CP-SAT model said to be too large to send, but it is not")
        return
    objective = rec["objective"]
    try:
        if len(cp["names"]) + len(cp["cons"]) > CP_MAX_ITEMS:
            raise ValueError("larger than the capture sends")
        if sum(len(con[2]) if isinstance(con[2], list) else 1 for con in cp["cons"]) > CP_MAX_TERMS:
            verdict.skipped += 1  # bounded parent time: a model this dense is not checked
            return
        problem, unchecked = check_cp(cp, rec["solution"], float(objective) if objective is not None else None)
    except Exception:  # any shape the capture does not build (the capture's own form is exercised by the tests)
        verdict.problems.append(f"solve {i + 1}: malformed CP-SAT model (not built by the capture)")
        return
    if problem is None:
        verdict.skipped += 1
        return
    verdict.checked += 1
    if problem:
        verdict.problems.append(f"solve {i + 1}: {problem}")
    elif unchecked:
        verdict.partial += 1




def check_cp(cp: dict[str, Any], solution: dict[str, Any], objective: float | None) -> tuple[str | None, int]:
    """('' , unchecked) when the captured CP-SAT point satisfies the compact model and reproduces the objective, a
    reason when it does not, None when the point cannot be matched to the variables. ``unchecked``: constraints of
    kinds this function does not check. CP-SAT values are integers, so every constraint is checked exactly."""
    names: list[str] = cp["names"]
    n = len(names)
    if "x" in cp:  # names are not unique: the capture sent the values by position; the named ones must agree
        x = [int(v) for v in cp["x"]]
        if len(x) != n:
            return "CP-SAT values do not match its variables", 0
        last = dict(zip(names, x, strict=True))
        if any(k not in last or float(last[k]) != v for k, v in solution.items()):
            return "captured solution disagrees with the CP-SAT values sent with it", 0
        if len(solution) < len(last):
            return None, 0
    else:
        x = []
        for name in names:
            v = solution.get(name)
            if v is None:
                return None, 0  # solution capped (max_solution_values): cannot be matched
            if not isinstance(v, int | float) or not math.isfinite(v) or abs(v) > 2**53:
                return f"CP-SAT variable {name} has a non-integer value {v!r}", 0
            if v != int(v):
                return f"CP-SAT variable {name} = {v!r} is not an integer", 0
            x.append(int(v))
    for j, dom in enumerate(cp["dom"]):
        if not _in_domain(x[j], dom):
            return f"CP-SAT variable {names[j]} = {x[j]} outside its domain {_show(dom)}", 0

    def lit(ref: int) -> int:
        return x[ref] if ref >= 0 else 1 - x[-ref - 1]

    def expr(e: Sequence[Any]) -> int:
        return sum(c * x[v] for v, c in zip(e[0], e[1], strict=True)) + int(e[2])

    unchecked = int(sum(cp.get("unchecked", {}).values()))
    for k, con in enumerate(cp["cons"]):
        tag, enforcement = con[0], con[1]
        if enforcement and not all(lit(r) for r in enforcement):
            continue
        why = _violates(tag, con[2:], x, lit, expr)
        if why:
            return f"CP-SAT constraint {k} ({tag}) {why}", unchecked
    obj = cp.get("obj")
    if obj is not None and objective is not None:
        kind, vars_, coeffs, offset = obj[0], obj[1], obj[2], float(obj[3])
        total = sum(c * x[v] for v, c in zip(vars_, coeffs, strict=True))
        if kind == "int":  # CP-SAT's own formula: scaling * (sum + offset), scaling 0 meaning 1
            scaling = float(obj[4]) or 1.0
            value = scaling * (total + offset)
            magnitude = abs(scaling) * (sum(abs(c * x[v]) for v, c in zip(vars_, coeffs, strict=True)) + abs(offset))
        else:  # floating-point objective: sum + offset
            value = total + offset
            magnitude = sum(abs(c * x[v]) for v, c in zip(vars_, coeffs, strict=True)) + abs(offset)
        if abs(objective - value) > OBJ_TOL * max(1.0, magnitude) + 1e-9:
            return f"claimed objective {objective:.10g} but the captured CP-SAT point gives {value:.10g}", unchecked
    return "", unchecked


def _violates(tag: str, args: list[Any], x: list[int], lit: Any, expr: Any) -> str:
    """Why an enforced CP-SAT constraint is violated by ``x`` ('' when it holds)."""
    if tag == "lin":
        vars_, coeffs, dom = args
        activity = sum(c * x[v] for v, c in zip(vars_, coeffs, strict=True))
        return "" if _in_domain(activity, dom) else f"activity {activity} outside {_show(dom)}"
    if tag in ("or", "and", "amo", "eo", "xor"):
        true = sum(lit(r) for r in args[0])
        ok = {"or": true >= 1, "and": true == len(args[0]), "amo": true <= 1, "eo": true == 1,
              "xor": true % 2 == 1}[tag]
        return "" if ok else f"has {true} of {len(args[0])} literals true"
    if tag == "alldiff":
        values = [expr(e) for e in args[0]]
        return "" if len(set(values)) == len(values) else f"repeats a value in {values[:10]}"
    target = expr(args[0]) if tag in ("max", "prod", "div", "mod") else 0
    if tag == "max":
        want = max(expr(e) for e in args[1])
    elif tag == "prod":
        want = math.prod(expr(e) for e in args[1])
    elif tag in ("div", "mod"):
        num, den = expr(args[1][0]), expr(args[1][1])
        if den == 0:
            return "divides by zero"
        quotient = abs(num) // abs(den) * (1 if (num >= 0) == (den > 0) else -1)  # C++: rounds towards zero
        want = quotient if tag == "div" else num - den * quotient
    elif tag == "iv":
        start, end, size = (expr(e) for e in args)
        return "" if start + size == end else f"start {start} + size {size} != end {end}"
    elif tag == "elem":
        index, target = expr(args[0]), expr(args[1])
        if not 0 <= index < len(args[2]):
            return f"index {index} out of range"
        want = expr(args[2][index])
    else:
        raise ValueError(f"unknown CP-SAT constraint tag {tag!r}")
    return "" if target == want else f"gives {target}, not {want}"


def _in_domain(value: int, dom: Sequence[int]) -> bool:
    return any(dom[k] <= value <= dom[k + 1] for k in range(0, len(dom) - 1, 2))


def _show(dom: Sequence[int]) -> str:
    return "[" + ", ".join(f"{dom[k]}..{dom[k + 1]}" for k in range(0, len(dom) - 1, 2)) + "]"
