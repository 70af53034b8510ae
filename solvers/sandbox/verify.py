"""Check each captured solve against its own captured model, outside the program's process.

Why: the capture runs inside the program's interpreter, and anything in that address space (the channel's signing
key included) can in principle be reached by the program. So the trusted side (the pool's parent, where results are
classified) does not take a record's numbers on faith. What it checks, per record:

- **A claimed solution with an MPS model** (gurobipy, highspy, coptpy, docplex, pulp, OR-Tools' linear solver and
  MathOpt, linear pyomo): the model is re-read with HiGHS's MPS semantics (a small model in pure Python,
  ``mps.py``, which gives exactly HiGHS's model or defers to HiGHS's own reader), and the captured solution must
  reproduce the claimed objective (c·x + constant) and satisfy the variable bounds, row bounds and integrality
  (``check_record``). Columns the capture renamed (pyomo's numeric labels when two names share a symbolic label;
  MathOpt, whose converter refuses repeated or empty names) come with a column -> name map.
- **A claimed CP-SAT solution**: the capture sends a compact form of the ``CpModelProto`` (variable domains, linear
  constraints with their enforcement literals, the Boolean constraints, all_different, lin_max, int_prod/div/mod,
  interval and element constraints, the objective with its offset and scaling) as plain JSON; ``check_cp`` checks the
  captured point against it in exact integer arithmetic, without OR-Tools. The other CP-SAT constraints (no_overlap,
  cumulative, circuit, routes, table, automaton, inverse, reservoir, ...) and expressions with negated references
  are counted and left unchecked: such a solve is *partially* verified, never ``tampered`` for what was not checked.
- **A claimed "infeasible" / "unbounded" / "infeasible or unbounded"** with a small plain MPS model
  (``MAX_RESOLVE_MPS_CHARS``, only the sections and bound types every reader takes alike, one objective row, the
  objective sense agreeing with the record, no number large enough (``HUGE``) for two solvers to disagree on whether
  it is infinite): HiGHS re-solves it, each solve under ``RESOLVE_TIME_S``. Each of the three claims is refuted
  only by a finite optimum shown beyond doubt: a point HiGHS finds that this module re-checks to ``TIGHT_TOL``
  (integers rounded first), and a bounded continuous relaxation (``_check_no_solution``). A feasible point alone
  refutes nothing: GLOP reports an unbounded LP as "infeasible", and Gurobi's "unbounded" says nothing about
  feasibility. Time limits, numerical trouble, a point that fails the tight re-check: all doubtful, never
  ``tampered``.
- **Models the capture always sends**: with MPS capture on, a record that claims a solution must carry the model
  its hook promises: the MPS of gurobipy/highspy/coptpy/docplex/pulp and of OR-Tools' linear solver (``pywraplp``
  exports any model it can hold); the MPS of a pyomo or MathOpt model unless the capture found it beyond MPS
  (pyomo: decided only when the export failed, with pyomo functions bound at import, before user code ran; MathOpt:
  quadratic terms, cones, SOS, indicators); CP-SAT's compact form (unless over ``CP_MAX_ITEMS``, which the record's
  own counts must then show). Which hook made a record (``kind``: OR-Tools' linear solver, CP-SAT, MathOpt, pyomo)
  is stamped by the wrapper that the hook installed, not by anything the program's objects report. A record
  without the model its kind promises did not come from an intact capture: ``tampered``.

A claimed result whose numbers disagree with its own model is not believed: the execution becomes ``tampered``.
Typical forgeries it catches: a solver object whose objective or status is overridden, a poisoned describer or
exporter, a fake point reported for a real model, a fake "infeasible" or "unbounded".

What it cannot catch: a forger who also fabricates a model consistent with the fake numbers (the contracts compare
the captured model with the problem), or who signs a whole record (or rewrites the hook's closure) as a kind that
carries no checkable model (nonlinear pyomo, a too-large CP-SAT model with matching counts). Not verified (reported
as unverifiable, never as tampered, so that honest programs are never punished for what their exporter could not
write): nonlinear pyomo models (and pyomo models with SOS, GDP, logical or other non-plain components), quadratic
models of any API (HiGHS's reader drops quadratic constraint rows, so the linear check would be wrong), MathOpt
models beyond MPS, records whose solution does not name every column (capped at ``max_solution_values``, names the
exporter rewrote, two columns under one name), models over ``MAX_MPS_CHARS``, the unchecked CP-SAT constraint
kinds, and every record made with MPS capture off. No-solution claims are re-solved only for small plain-MPS models:
CP-SAT's are never re-checked, nor pyomo's "no feasible solution" exceptions (no model is exported then), nor a
gurobipy solve run with a callback (lazy constraints added by a callback are not in the exported model), nor a solve
whose solver was given an objective cutoff or limit (``capture.CUTOFF_RE``: "infeasible" then means "nothing better
than the cutoff"). A program can also make its own solve unverifiable on purpose (a dummy nonlinear constraint in
pyomo, expression classes patched so that pyomo's degree function calls the model nonlinear, names that collide).

The capture's check data travels in a record's ``verify`` key; ``verify_solves`` removes it (it is for this check
only, not part of the stored ``SolveCall``).

Cost in the parent (2-core machine; CPU time, CPU lock held, machine loaded by others): an MPS record of up to
``FAST_MPS_CHARS`` is read and checked in pure Python, ~0.13 ms for bench/sandbox.py's knapsacks (HiGHS's reader +
numpy: ~0.55 ms, 4.1x more; ``bench/verify_mps.py``); larger ones by HiGHS plus O(nonzeros) numpy (~1.5 ms at 340
nonzeros, ~9 ms at 3,200; models over ``MAX_MPS_CHARS`` skipped); a CP-SAT record is pure Python over its JSON (~45 us for bench/sandbox.py's 15-variable
knapsack; building the JSON costs the program's sandbox ~0.2 ms); a re-solved no-solution claim 0.6-13 ms for the
generators' infeasible models (2-132 columns, up to 30k characters), never more than a read plus two
``RESOLVE_TIME_S`` solves.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solvers.sandbox.mps import MpsModel
from solvers.sandbox.mps import parse as parse_mps
from solvers.statuses import SolveStatus

# Records that claim a primal solution: their numbers must agree with their model.
CLAIMS_SOLUTION = {str(SolveStatus.OPTIMAL), str(SolveStatus.TIME_LIMIT_WITH_SOLUTION)}
# Records that claim there is no (finite) optimum: re-solved when the model is small.
CLAIMS_NO_SOLUTION = {str(SolveStatus.INFEASIBLE), str(SolveStatus.UNBOUNDED), str(SolveStatus.INF_OR_UNBD)}
# Models up to this size are read in pure Python (solvers/sandbox/mps.py) when that reader takes them: 3-5x cheaper
# than HiGHS's reader + numpy for the typical captured model (under 3k characters), even at ~6k; at ~20k characters
# (~400 nonzeros) HiGHS is cheaper (bench/verify_mps.py).
FAST_MPS_CHARS = 10_000
MAX_MPS_CHARS = 500_000  # ~1000 columns x 1000 rows: a HiGHS read costs ~30-60 ms there (2-core machine, loaded)
# Re-solving costs the parent CPU that the programs need: only small models (~200 columns x 200 rows of a typical
# textbook model), and never longer than RESOLVE_TIME_S (an LP of that size solves in milliseconds; a MIP that HiGHS
# cannot settle in that time stays unchecked).
MAX_RESOLVE_MPS_CHARS = 40_000
RESOLVE_TIME_S = 0.3
# Tolerances. Solvers accept a point whose rows are violated by up to their feasibility tolerance (1e-6, absolute,
# on the *scaled* model; unscaling can multiply that by the row's magnitude) and integers off by their integrality
# tolerance (1e-5 in Gurobi/COPT/HiGHS): the checks allow 100x / 10x that, relative to the magnitudes involved, so an
# honest solver's point always passes while a forged number (off by far more than rounding) does not.
FEAS_TOL = 1e-4
INT_TOL = 1e-4
OBJ_TOL = 1e-6
# Refuting a no-solution claim needs the opposite certainty: a point that every solver accepts. Integers are rounded
# to integers, and rows and bounds must hold to 1e-9 relative to their magnitude: three orders of magnitude inside
# the 1e-6 feasibility tolerance of every solver here, and far above the double-precision error of a row activity
# (~ n * 1e-16 * magnitude). A model that is infeasible only by less than that is feasible to every solver.
TIGHT_TOL = 1e-9
# A finite number this large may be "infinite" to one solver and finite to another (HiGHS and CPLEX read >= 1e20 as
# infinite, COPT >= 1e30): a model (or point) with one is not re-solved.
HUGE = 1e15
# CP-SAT models larger than this (variables + constraints) are sent without their compact form (building it costs
# the program's sandbox ~5 us per item); a record may say so only when its own counts are that large.
CP_MAX_ITEMS = 20_000
CP_MAX_TERMS = 1_000_000  # the parent checks ~10 M linear terms/s in Python: at most ~0.1 s per record
# Which hook made a record: stamped by the solve wrapper its hook installed (``capture.wrap_solve(kind=...)``).
LINEAR_SOLVER, CP_SAT, MATHOPT, PYOMO = "ortools.linear_solver", "ortools.cp_sat", "ortools.mathopt", "pyomo"
CHECK_KEY = "verify"


# What the parent's check concluded for one solve (stored as ``SolveCall.verification``): its claimed point and
# objective agree with its own model (VERIFIED), do so for every constraint kind this module checks while others
# went unchecked (PARTIAL), its no-solution claim was re-solved by HiGHS without contradiction (RESOLVED), it claims
# something but carried no model this module can check (UNVERIFIED), it contradicts its model or is not the
# capture's (REFUTED: the execution is ``tampered``), or it claims nothing to check (NOT_CHECKED: an error, a limit).
VERIFIED, PARTIAL, RESOLVED, UNVERIFIED, REFUTED, NOT_CHECKED = (
    "verified", "partial", "re-solved", "unverified", "refuted", "")


@dataclass
class Verdict:
    checked: int = 0
    skipped: int = 0  # claimed a solution but carried no checkable model (no MPS, too large, unreadable, names)
    partial: int = 0  # checked, but with constraints this module cannot check (CP-SAT scheduling, routing, ...)
    resolved: int = 0  # no-solution claims re-solved by HiGHS (and not contradicted, unless listed in problems)
    problems: list[str] = field(default_factory=list)
    per_record: list[str] = field(default_factory=list)  # VERIFIED ... NOT_CHECKED, one per record, in order

    def note(self) -> str:
        return (f"verified {self.checked} solve(s) ({self.partial} partially), {self.skipped} unverifiable, "
                f"{self.resolved} no-solution claim(s) re-solved")


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "objective": (float, int, type(None)), "bound": (float, int, type(None)),
    "solution": (dict,), "model_mps": (str, type(None)), "solver": (str,), "api": (str,),
}


# APIs whose capture always exports the model (their writers take anything the library can hold). With MPS capture on,
# a solution claimed through one of them without its model did not come from the capture. OR-Tools and pyomo depend
# on the record's kind (``_model_promised``).
MODEL_APIS = {"gurobipy", "highspy", "coptpy", "docplex", "pulp"}
KNOWN_APIS = MODEL_APIS | {"ortools", "pyomo"}


def verify_solves(records: list[Any], models_expected: bool = False) -> Verdict:
    """Check every captured solve; ``problems`` lists the records that contradict themselves or are malformed.
    ``models_expected``: MPS capture was on, so a record claiming a solution must carry the model its kind promises.
    Removes each record's ``verify`` key (the capture's check data) in place."""
    verdict = Verdict()
    statuses = {str(s) for s in SolveStatus}
    checks = [rec.pop(CHECK_KEY, None) if isinstance(rec, dict) else None for rec in records]
    for i, (rec, check) in enumerate(zip(records, checks, strict=True)):
        before = (len(verdict.problems), verdict.checked, verdict.partial, verdict.resolved, verdict.skipped)
        _verify_one(i, rec, check, statuses, models_expected, verdict)
        verdict.per_record.append(_outcome(before, verdict))
    return verdict


def _outcome(before: tuple[int, int, int, int, int], verdict: Verdict) -> str:
    """One record's verdict, from what checking it added to the counts."""
    problems, checked, partial, resolved, skipped = before
    if len(verdict.problems) > problems:
        return REFUTED
    if verdict.partial > partial:
        return PARTIAL
    if verdict.checked > checked:
        return VERIFIED
    if verdict.resolved > resolved:
        return RESOLVED
    if verdict.skipped > skipped:
        return UNVERIFIED
    return NOT_CHECKED


def _verify_one(i: int, rec: Any, check: Any, statuses: set[str], models_expected: bool, verdict: Verdict) -> None:
    """Check record ``i`` (see ``verify_solves``); what it finds goes into ``verdict``'s counts and problems."""
    if not isinstance(rec, dict) or any(not isinstance(rec.get(k), t) for k, t in _RECORD_TYPES.items()) \
            or rec["status"] not in statuses or rec["api"] not in KNOWN_APIS \
            or not isinstance(check, dict | type(None)):
        verdict.problems.append(f"solve {i + 1}: malformed record (not built by the capture)")
        return
    check = check or {}
    if rec["status"] in CLAIMS_NO_SOLUTION:
        problem = _check_no_solution(rec, check)
        if problem is None:
            verdict.skipped += 1  # not re-solved: the claim stands unverified
        else:
            verdict.resolved += 1
            if problem:
                verdict.problems.append(f"solve {i + 1}: {problem}")
        return
    if rec["status"] not in CLAIMS_SOLUTION:
        return
    if rec["api"] == "ortools" and check.get("kind") == CP_SAT:
        _verify_cp(i, rec, check, models_expected, verdict)
        return
    if rec["objective"] is None:
        return
    mps = rec["model_mps"]
    if not mps and models_expected and _model_promised(rec["api"], check):
        verdict.problems.append(f"solve {i + 1}: claims a solution without the model its capture always exports")
        return
    if not mps or len(mps) > MAX_MPS_CHARS:
        verdict.skipped += 1
        return
    solution = rec["solution"]
    labels = check.get("labels")
    if labels is not None:  # columns renamed by the capture (pyomo, MathOpt): column -> solution's name
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            verdict.problems.append(f"solve {i + 1}: malformed column names (not built by the capture)")
            return
        if len(set(labels.values())) < len(labels):  # two columns, one name: the solution kept only one value
            verdict.skipped += 1
            return
        solution = {label: solution[name] for label, name in labels.items() if name in solution}
    problem = check_record(mps, solution, float(rec["objective"]), rec.get("sense"))
    if problem is None:
        verdict.skipped += 1
    elif problem:
        verdict.problems.append(f"solve {i + 1}: {problem}")
        verdict.checked += 1
    else:
        verdict.checked += 1


def _model_promised(api: str, check: dict[str, Any]) -> bool:
    """Does an intact capture always send an MPS model for a solution claimed through this record's hook?"""
    if api in MODEL_APIS:
        return True
    if api == "ortools" and check.get("kind") == CP_SAT:
        return False  # CP-SAT's compact model is required separately (_verify_cp)
    if api == "pyomo" or (api == "ortools" and check.get("kind") == MATHOPT):
        return check.get("linear") is not False  # "linear": false only for a model MPS cannot hold
    return True  # pywraplp exports every model it can hold; an ortools record without a known kind is not the capture's


def _verify_cp(i: int, rec: dict[str, Any], check: dict[str, Any], models_expected: bool, verdict: Verdict) -> None:
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


# ---- CP-SAT ----------------------------------------------------------------------------------------------------

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


# ---- MPS models -------------------------------------------------------------------------------------------------

def check_record(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """'' when the claimed objective and solution agree with the model, a reason when they do not, None when the
    model cannot be checked (unreadable by HiGHS, quadratic, or the solution does not name every column).

    A model of up to ``FAST_MPS_CHARS`` is read by ``mps.parse`` (pure Python, HiGHS's semantics) when that reader
    takes it, and checked in pure Python with the same arithmetic as the HiGHS + numpy path below, operation for
    operation (numpy's pairwise sum, bincount's order): the same verdict, reason text included
    (``tests/test_sandbox_mps.py``). Everything else goes through HiGHS."""
    if len(mps) <= FAST_MPS_CHARS:
        model = parse_mps(mps)
        if model is not None:
            return _check_parsed(model, solution, objective, sense)
    return _check_highs(mps, solution, objective, sense)


def _check_parsed(model: MpsModel, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """``_check_highs`` on a model read by ``mps.parse``, without numpy: for a small model, numpy's per-call cost is
    most of the check."""
    names = model.col_names
    if not names:
        return None
    values = _values_by_column(names, solution, model.col_lower, model.col_upper)
    if values is None:
        return None
    try:
        x = [float(v) for v in values]
    except (TypeError, ValueError):
        return "solution values are not numbers"
    if not all(map(math.isfinite, x)):
        return "solution has non-finite values"
    terms = [c * v for c, v in zip(model.col_cost, x, strict=True)]
    value = model.offset + _numpy_sum(terms)
    scale = max(1.0, _numpy_sum([abs(t) for t in terms]), abs(model.offset))
    record_max = (sense or "").startswith("max")
    candidates = [value] + ([-value] if model.maximize != record_max else [])
    if not any(abs(objective - v) <= OBJ_TOL * scale + 1e-9 for v in candidates):
        return f"claimed objective {objective:.10g} but the captured solution gives {value:.10g} on its own model"
    return _infeasibility_parsed(model, x, FEAS_TOL, INT_TOL)


def _numpy_sum(values: list[float]) -> float:
    """``float(np.array(values).sum())``, bit for bit: numpy adds a contiguous float64 array pairwise (blocks of up
    to 128 summed with 8 accumulators, halves above that, a plain loop below 8 items), onto an initial 0.0."""
    return 0.0 + _pairwise(values, 0, len(values)) if values else 0.0


def _pairwise(a: list[float], lo: int, n: int) -> float:
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[lo:lo + 8]
        i = lo + 8
        end = lo + n - n % 8
        while i < end:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < lo + n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def _infeasibility_parsed(model: MpsModel, x: list[float], tol: float, int_tol: float) -> str:
    """``_infeasibility`` on a model read by ``mps.parse``: the same comparisons in the same order, so the same first
    violation and the same numbers in the reason (``a if a > 1.0 else 1.0`` is ``np.maximum(1.0, a)``: no NaN here;
    an integral value is 0 off its rounding, so it skips the rounding)."""
    for name, xj, lo, up in zip(model.col_names, x, model.col_lower, model.col_upper, strict=True):
        a = abs(xj)
        slack = tol * (a if a > 1.0 else 1.0)
        if xj < lo - slack or xj > up + slack:
            return f"variable {name} = {xj:.10g} outside its bounds [{lo:.10g}, {up:.10g}]"
    for name, xj, integer in zip(model.col_names, x, model.integer, strict=True):
        if integer and not xj.is_integer():
            a = abs(xj)
            if abs(xj - round(xj)) > int_tol * (a if a > 1.0 else 1.0):
                return f"integer variable {name} = {xj:.10g} is fractional"
    m = len(model.row_names)
    if m:
        activity, magnitude = [0.0] * m, [0.0] * m
        for xj, column in zip(x, model.columns, strict=True):  # column by column, in order: np.bincount's sums
            for i, a in column:
                contrib = a * xj
                activity[i] += contrib
                magnitude[i] += abs(contrib)
        for name, act, mag, lo, up in zip(model.row_names, activity, magnitude, model.row_lower, model.row_upper,
                                          strict=True):
            bound = min(abs(lo), abs(up))
            big = mag if mag > bound else bound
            slack = tol * (big if big > 1.0 else 1.0)
            if act < lo - slack or act > up + slack:
                return f"constraint {name}: activity {act:.10g} outside [{lo:.10g}, {up:.10g}]"
    return ""


def _check_highs(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """``check_record`` through HiGHS's MPS reader and numpy."""
    import numpy as np

    lp = _read(mps)
    if lp is None:
        return None
    names = list(lp.col_names_)
    n = int(lp.num_col_)
    if n == 0 or len(names) != n:
        return None
    lower, upper = np.asarray(lp.col_lower_, dtype=float), np.asarray(lp.col_upper_, dtype=float)
    values = _values_by_column(names, solution, lower, upper)
    if values is None:
        return None
    try:
        x = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        return "solution values are not numbers"
    if not np.all(np.isfinite(x)):
        return "solution has non-finite values"
    cost = np.asarray(lp.col_cost_, dtype=float)
    terms = cost * x
    value = float(lp.offset_) + float(terms.sum())
    scale = max(1.0, float(np.abs(terms).sum()), abs(float(lp.offset_)))
    mps_max = int(lp.sense_) == -1
    record_max = (sense or "").startswith("max")
    # An exporter that writes a maximisation as "minimise the negated costs" (no OBJSENSE section) gives -value.
    candidates = [value] + ([-value] if mps_max != record_max else [])
    if not any(abs(objective - v) <= OBJ_TOL * scale + 1e-9 for v in candidates):
        return f"claimed objective {objective:.10g} but the captured solution gives {value:.10g} on its own model"
    return _infeasibility(lp, x, names, FEAS_TOL, INT_TOL)


def _infeasibility(lp: Any, x: Any, names: list[str], tol: float, int_tol: float) -> str:
    """Why the point ``x`` violates the model's bounds, integrality or rows beyond ``tol`` (relative to the
    magnitudes involved), or '' when it does not."""
    import numpy as np

    n = int(lp.num_col_)
    lower, upper = np.asarray(lp.col_lower_, dtype=float), np.asarray(lp.col_upper_, dtype=float)
    slack = tol * np.maximum(1.0, np.abs(x))
    bad = np.nonzero((x < lower - slack) | (x > upper + slack))[0]
    if bad.size:
        j = int(bad[0])
        return f"variable {names[j]} = {x[j]:.10g} outside its bounds [{lower[j]:.10g}, {upper[j]:.10g}]"
    integer = _integer_columns(lp)
    off = np.abs(x - np.round(x))
    bad = np.nonzero(integer & (off > int_tol * np.maximum(1.0, np.abs(x))))[0]
    if bad.size:
        j = int(bad[0])
        return f"integer variable {names[j]} = {x[j]:.10g} is fractional"
    m = int(lp.num_row_)
    if m:
        a = lp.a_matrix_
        start, index, values = (np.asarray(a.start_, dtype=np.int64), np.asarray(a.index_, dtype=np.int64),
                                np.asarray(a.value_, dtype=float))
        if int(a.format_) == 2:  # row-wise: start_ indexes rows, index_ holds columns
            rows, cols = np.repeat(np.arange(m), np.diff(start)), index
        else:  # column-wise (what the MPS reader gives)
            rows, cols = index, np.repeat(np.arange(n), np.diff(start))
        contrib = values * x[cols]
        activity = np.bincount(rows, weights=contrib, minlength=m)
        magnitude = np.bincount(rows, weights=np.abs(contrib), minlength=m)
        rlo, rhi = np.asarray(lp.row_lower_, dtype=float), np.asarray(lp.row_upper_, dtype=float)
        slack = tol * np.maximum(1.0, np.maximum(magnitude, np.minimum(np.abs(rlo), np.abs(rhi))))
        bad = np.nonzero((activity < rlo - slack) | (activity > rhi + slack))[0]
        if bad.size:
            r = int(bad[0])
            row_names = list(lp.row_names_)
            name = row_names[r] if r < len(row_names) else f"row {r}"
            return f"constraint {name}: activity {activity[r]:.10g} outside [{rlo[r]:.10g}, {rhi[r]:.10g}]"
    return ""


def _integer_columns(lp: Any) -> Any:
    import numpy as np

    n = int(lp.num_col_)
    integrality = np.asarray(lp.integrality_, dtype=int) if len(lp.integrality_) else np.zeros(n, dtype=int)
    return integrality == 1  # HighsVarType.kInteger (semi-continuous / semi-integer are not checked)


# pyomo writes MPS with "symbolic labels": its _cpxlp_translation_table keeps letters, digits and "()_", turns
# "[]{}" into "()()" and anything else into "_" (x[1,2] -> x(1_2)); the captured solution keeps the program's names.
_PYOMO_BRACKETS = str.maketrans("[]{}", "()()")
_PYOMO_OTHER = re.compile(r"[^A-Za-z0-9()_]")


def _values_by_column(names: list[str], solution: dict[str, Any], lower: Any, upper: Any) -> list[Any] | None:
    """The solution's value of each MPS column: by name, else by pyomo's label of the name; a column the solution
    does not name may only be one the model fixes (pyomo's ONE_VAR_CONSTANT). None when the two cannot be matched."""
    labels: dict[str, Any] | None = None
    values = []
    for j, name in enumerate(names):
        if name in solution:
            values.append(solution[name])
            continue
        if labels is None:
            labels = {}
            for key, value in solution.items():
                label = _PYOMO_OTHER.sub("_", str(key).translate(_PYOMO_BRACKETS))
                labels[label] = value if label not in labels else None  # two names, one label: ambiguous
        if labels.get(name) is not None:
            values.append(labels[name])
        elif lower[j] == upper[j] and abs(lower[j]) < 1e30:
            values.append(lower[j])
        else:
            return None
    return values


# ---- no-solution claims -----------------------------------------------------------------------------------------

# The MPS sections HiGHS's reader takes in full. Anything else (QUADOBJ/QMATRIX/QCMATRIX, SOS, INDICATORS, GENCONS,
# LAZYCONS, PWLOBJ, CSECTION, ...) means HiGHS would see a relaxation or a different model: not re-solved, since
# a relaxation can be feasible where the real model is not.
_PLAIN_SECTIONS = {"NAME", "OBJSENSE", "OBJSENS", "ROWS", "COLUMNS", "RHS", "RANGES", "BOUNDS", "ENDATA"}
# Bound types whose meaning every reader shares. "UP" with a negative value (and no lower bound) is read as
# lower = -inf by some readers and as an empty range by others: not re-solved.
_PLAIN_BOUNDS = {"UP", "LO", "FX", "FR", "MI", "PL", "BV", "LI", "UI"}


def _objective_rows(mps: str) -> int:
    """How many objective ("N") rows a plain MPS model has; -1 when it is not plain (``_PLAIN_SECTIONS``,
    ``_PLAIN_BOUNDS``)."""
    section, n_rows = "", 0
    for line in mps.splitlines():
        if not line.strip() or line.startswith("*"):
            continue
        parts = line.split()
        if not line[0].isspace():
            section = parts[0].upper()
            if section not in _PLAIN_SECTIONS:
                return -1
        elif section == "ROWS" and parts[0].upper() == "N":
            n_rows += 1
        elif section == "BOUNDS":
            kind = parts[0].upper()
            if kind not in _PLAIN_BOUNDS:
                return -1
            if kind == "UP":
                try:
                    if float(parts[-1]) < 0:
                        return -1
                except ValueError:
                    return -1
    return n_rows


def _check_no_solution(rec: dict[str, Any], check: dict[str, Any]) -> str | None:
    """Re-solve a small model whose solve claimed infeasible / unbounded / infeasible-or-unbounded: a reason when
    HiGHS contradicts the claim beyond doubt, '' when it was re-solved without contradiction, None when not
    re-solved (no model, too large, not plain MPS, solved with a callback, objective sense unclear).

    Every such claim is refuted by the same evidence: the model has a finite optimum. That takes two HiGHS solves:
    (1) without the objective, a point, which must pass the tight re-check (then the model is feasible); (2) the
    continuous relaxation with the objective, which must be optimal (then the objective is bounded on it, and a
    feasible MIP whose relaxation is bounded has a finite optimum: rational data, Meyer's theorem). A feasible point
    alone is not enough: an unbounded model reported as "infeasible" is what GLOP (pywraplp) honestly says."""
    mps = rec["model_mps"]
    if not mps or len(mps) > MAX_RESOLVE_MPS_CHARS or check.get("callback") or check.get("cutoff") \
            or _objective_rows(mps) != 1:
        return None
    with _RESOLVING:
        return _resolve(rec, mps)


# One re-solve at a time in a process: the parent classifies on one thread per worker, and HiGHS's MIP solver shares
# its task scheduler between instances. Re-solves are rare and short; reading models stays concurrent.
_RESOLVING = threading.Lock()


def _resolve(rec: dict[str, Any], mps: str) -> str | None:
    import highspy
    import numpy as np

    lp = _read(mps)  # loads the model into this thread's HiGHS instance
    if lp is None:
        return None
    h = _highs()
    try:
        n = int(lp.num_col_)
        numbers = np.concatenate([np.asarray(a, dtype=float) for a in (
            lp.col_lower_, lp.col_upper_, lp.row_lower_, lp.row_upper_, lp.col_cost_, lp.a_matrix_.value_)]
            + [np.array([float(lp.offset_)])])
        finite = numbers[np.isfinite(numbers)]
        sense = rec.get("sense")
        if n == 0 or (finite.size and float(np.abs(finite).max()) >= HUGE) \
                or sense not in ("minimize", "maximize") or (int(lp.sense_) == -1) != (sense == "maximize"):
            return None
        columns = np.arange(n, dtype=np.int32)
        cost = np.asarray(lp.col_cost_, dtype=float)
        h.changeColsCost(n, columns, np.zeros(n))  # (1) any point
        h.setOptionValue("time_limit", RESOLVE_TIME_S)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return ""
        x = np.asarray(h.getSolution().col_value, dtype=float)
        if x.size != n or not np.all(np.isfinite(x)) or float(np.abs(x).max()) >= HUGE:
            return ""
        x = np.where(_integer_columns(lp), np.round(x), x) + 0.0  # + 0.0: no -0 in the reason
        names = list(lp.col_names_) if len(lp.col_names_) == n else [f"c{j}" for j in range(n)]
        if _infeasibility(lp, x, names, TIGHT_TOL, 0.0):
            return ""  # HiGHS's point is feasible only to its own tolerance: doubtful
        h.changeColsCost(n, columns, cost)  # (2) the relaxation, with the objective
        h.changeColsIntegrality(n, columns, np.array([highspy.HighsVarType.kContinuous] * n))
        h.clearSolver()
        h.setOptionValue("time_limit", RESOLVE_TIME_S)
        h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return ""
        bound = float(h.getInfo().objective_function_value)
        if not math.isfinite(bound) or abs(bound) >= HUGE:
            return ""
        point = ", ".join(f"{names[j]}={x[j]:.6g}" for j in range(min(n, 4)))
        return (f"claimed {rec['status']}, but its own model has a finite optimum: a point that satisfies every bound "
                f"and row to 1e-9 ({point}{', ...' if n > 4 else ''}) and a bounded relaxation ({bound:.10g}, HiGHS)")
    except Exception:  # HiGHS could not take it: not re-solved
        return None
    finally:
        h.clearModel()


# ---- HiGHS in the parent ----------------------------------------------------------------------------------------

_local = threading.local()
_scratch: list[str] = []


def _highs() -> Any:
    """One quiet Highs instance per thread (the parent classifies on each worker's feeder thread), or None."""
    try:
        import highspy
    except ImportError:
        return None
    h = getattr(_local, "highs", None)
    if h is None:
        from solvers.stdout import fd1_redirected

        with fd1_redirected():  # the first Highs() of a process prints a banner; this runs in the caller's process
            h = _local.highs = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


def _load(h: Any, mps: str) -> bool:
    """Read ``mps`` into ``h`` (through a private scratch file: HiGHS reads MPS from files only)."""
    import highspy

    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="flywheel-verify-"))  # private (0700), made once per process
    path = os.path.join(_scratch[0], f"{threading.get_ident()}.mps")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(mps)
        h.clearModel()
        h.resetOptions()
        h.setOptionValue("output_flag", False)
        # HiGHS's thread pool is global to the process and fixed by the first run(): a run asking for another size
        # fails ("Not Set"). Every HiGHS run in the project uses one thread (ground truth, contracts), so this one too.
        h.setOptionValue("threads", 1)
        return h.readModel(path) != highspy.HighsStatus.kError
    except Exception:  # a model HiGHS cannot take: unverified, not tampered
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _read(mps: str) -> Any:
    """The model as a HiGHS ``HighsLp``, or None if HiGHS cannot read it or it has a quadratic objective (the linear
    check would be wrong)."""
    h = _highs()
    if h is None or not _load(h, mps):
        return None
    try:
        model = h.getModel()
        if int(model.hessian_.dim_) > 0:
            return None
        return model.lp_
    except Exception:
        return None
