"""Check each captured solve against its own captured model, outside the program's process.

This package is the dispatcher (``verify_solves``: one verdict per record); each verifier has its own module:
``linear.py`` (a claimed solution against its MPS model), ``cpsat.py`` (a claimed CP-SAT point against its compact
model), ``nosolution.py`` (a no-solution claim re-solved by HiGHS), with ``highs.py`` (the parent's HiGHS) and
``common.py`` (limits, tolerances, names) shared.

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
  ``tampered``. The re-solve also settles infeasible vs unbounded where HiGHS can (infeasible; or a tightly
  re-checked point and an unbounded relaxation): a claim it contradicts that way (GLOP's "infeasible" for an
  unbounded LP, CBC's "unbounded" for a MIP with no integer point) is recorded (``Verdict.corrected``) and the
  record's status follows the evidence, the solver's own claim kept in ``claimed_status``
  (``verify/nosolution.py``).
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

from dataclasses import dataclass, field
from typing import Any

from solvers.sandbox.verify.common import (
    CHECK_KEY,
    CLAIMED_KEY,
    CLAIMS_NO_SOLUTION,
    CLAIMS_SOLUTION,
    CP_MAX_ITEMS,
    CP_MAX_TERMS,
    CP_SAT,
    FAST_MPS_CHARS,
    FEAS_TOL,
    HUGE,
    INT_TOL,
    LINEAR_SOLVER,
    MATHOPT,
    MAX_MPS_CHARS,
    MAX_RESOLVE_MPS_CHARS,
    MODEL_BUILDER,
    NOT_CHECKED,
    OBJ_TOL,
    PARTIAL,
    PYOMO,
    REFUTED,
    RESOLVE_TIME_S,
    RESOLVED,
    TIGHT_TOL,
    UNVERIFIED,
    VERIFIED,
)
from solvers.sandbox.verify.cpsat import _verify_cp, check_cp
from solvers.sandbox.verify.highs import _highs, _read
from solvers.sandbox.verify.linear import _check_highs, _check_parsed, _values_by_column, check_record
from solvers.sandbox.verify.nosolution import Evidence, _check_no_solution, _objective_rows
from solvers.statuses import SolveStatus

__all__ = [
    "CHECK_KEY", "CLAIMS_NO_SOLUTION", "CLAIMS_SOLUTION", "CP_MAX_ITEMS", "CP_MAX_TERMS", "CP_SAT", "FAST_MPS_CHARS",
    "FEAS_TOL", "HUGE", "INT_TOL", "LINEAR_SOLVER", "MATHOPT", "MODEL_BUILDER", "MAX_MPS_CHARS", "MAX_RESOLVE_MPS_CHARS", "NOT_CHECKED",
    "OBJ_TOL", "PARTIAL", "PYOMO", "REFUTED", "RESOLVED", "RESOLVE_TIME_S", "TIGHT_TOL", "UNVERIFIED", "VERIFIED",
    "CLAIMED_KEY", "Evidence", "Verdict", "_check_highs", "_check_no_solution", "_check_parsed", "_highs", "_objective_rows", "_read",
    "_values_by_column", "check_cp", "check_record", "verify_solves",
]


@dataclass
class Verdict:
    checked: int = 0
    skipped: int = 0  # claimed a solution but carried no checkable model (no MPS, too large, unreadable, names)
    partial: int = 0  # checked, but with constraints this module cannot check (CP-SAT scheduling, routing, ...)
    resolved: int = 0  # no-solution claims re-solved by HiGHS (and not contradicted, unless listed in problems)
    problems: list[str] = field(default_factory=list)
    per_record: list[str] = field(default_factory=list)  # VERIFIED ... NOT_CHECKED, one per record, in order
    # no-solution claims whose status the re-solve changed (infeasible <-> unbounded, or inf_or_unbd settled)
    corrected: list[str] = field(default_factory=list)

    def note(self) -> str:
        return (f"verified {self.checked} solve(s) ({self.partial} partially), {self.skipped} unverifiable, "
                f"{self.resolved} no-solution claim(s) re-solved"
                + "".join(f"; {c}" for c in self.corrected))


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "objective": (float, int, type(None)), "bound": (float, int, type(None)),
    "solution": (dict,), "model_mps": (str, type(None)), "solver": (str,), "api": (str,),
}


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "objective": (float, int, type(None)), "bound": (float, int, type(None)),
    "solution": (dict,), "model_mps": (str, type(None)), "solver": (str,), "api": (str,),
}


# APIs whose capture always exports the model (their writers take anything the library can hold). With MPS capture on,
# a solution claimed through one of them without its model did not come from the capture. OR-Tools and pyomo depend
# on the record's kind (``_model_promised``).
MODEL_APIS = {"gurobipy", "highspy", "coptpy", "docplex", "pulp"}
KNOWN_APIS = MODEL_APIS | {"ortools", "pyomo", "scipy", "pyscipopt", "cvxpy"}


def verify_solves(records: list[Any], models_expected: bool = False) -> Verdict:
    """Check every captured solve; ``problems`` lists the records that contradict themselves or are malformed.
    ``models_expected``: MPS capture was on, so a record claiming a solution must carry the model its kind promises.
    Removes each record's ``verify`` key (the capture's check data) in place."""
    verdict = Verdict()
    statuses = {str(s) for s in SolveStatus}
    checks = [rec.pop(CHECK_KEY, None) if isinstance(rec, dict) else None for rec in records]
    for rec in records:  # set only by the re-solve below, never by a record itself
        if isinstance(rec, dict):
            rec.pop(CLAIMED_KEY, None)
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
        evidence = _check_no_solution(rec, check)
        if evidence is None:
            verdict.skipped += 1  # not re-solved: the claim stands unverified
            return
        verdict.resolved += 1
        if evidence.problem:
            verdict.problems.append(f"solve {i + 1}: {evidence.problem}")
        elif evidence.found and evidence.found != rec["status"]:
            # infeasible vs unbounded (or a settled "infeasible or unbounded"): the status follows the evidence, the
            # solver's own claim is kept beside it
            verdict.corrected.append(f"solve {i + 1}: claimed {rec['status']}, re-solved {evidence.found} "
                                     f"({evidence.detail})")
            rec["claimed_status"], rec["status"] = rec["status"], evidence.found
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
    if api in ("pyomo", "scipy", "pyscipopt", "cvxpy") \
            or (api == "ortools" and check.get("kind") in (MATHOPT, MODEL_BUILDER)):
        return check.get("linear") is not False  # "linear": false only for a model MPS cannot hold
    return True  # pywraplp exports every model it can hold; an ortools record without a known kind is not the capture's
