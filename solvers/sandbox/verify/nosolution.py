"""The no-solution re-solve: a small plain MPS model whose solve claimed "infeasible", "unbounded" or "infeasible
or unbounded" is re-solved by HiGHS (``_check_no_solution``), both ways: a finite optimum refutes the claim (the
execution is ``tampered``); otherwise what HiGHS shows (infeasible, or feasible and unbounded) is the evidence the
record's status then follows, the solver's own claim kept beside it (``SolveCall.claimed_status``). Example: GLOP
answers INFEASIBLE for ``maximize x, x >= 0``, which HiGHS shows unbounded; CBC answers UNBOUNDED for a MIP with no
integer point (``2 y = 1``) whose relaxation is unbounded, which HiGHS shows infeasible."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from solvers.sandbox.verify.common import HUGE, MAX_RESOLVE_MPS_CHARS, RESOLVE_TIME_S, TIGHT_TOL
from solvers.sandbox.verify.highs import _highs, _read
from solvers.sandbox.verify.linear import _infeasibility, _integer_columns

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


@dataclass(frozen=True)
class Evidence:
    """What re-solving a no-solution claim showed. ``problem``: the claim is refuted (a finite optimum), else ''.
    ``found``: "infeasible" or "unbounded" when HiGHS settled which, else '' (doubtful, or refuted). ``detail``: how,
    in words."""

    problem: str = ""
    found: str = ""
    detail: str = ""


def _check_no_solution(rec: dict[str, Any], check: dict[str, Any]) -> Evidence | None:
    """Re-solve a small model whose solve claimed infeasible / unbounded / infeasible-or-unbounded: ``Evidence``
    (refuted, settled one way or the other, or doubtful), None when not re-solved (no model, too large, not plain
    MPS, solved with a callback, objective sense unclear).

    Settled "infeasible": the solve without the objective (1) is infeasible to HiGHS (an LP's certificate, or a
    MIP's finished search). Settled "unbounded": (1) gives a point that passes the tight re-check (the model is
    feasible) and the continuous relaxation with the objective (2) is unbounded (for a MIP too: a feasible MIP with
    rational data whose relaxation is unbounded is unbounded, Meyer's theorem).

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


def _resolve(rec: dict[str, Any], mps: str) -> Evidence | None:
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
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kInfeasible:
            return Evidence(found="infeasible", detail="HiGHS: no point satisfies the bounds and rows")
        if status != highspy.HighsModelStatus.kOptimal:
            return Evidence()
        x = np.asarray(h.getSolution().col_value, dtype=float)
        if x.size != n or not np.all(np.isfinite(x)) or float(np.abs(x).max()) >= HUGE:
            return Evidence()
        x = np.where(_integer_columns(lp), np.round(x), x) + 0.0  # + 0.0: no -0 in the reason
        names = list(lp.col_names_) if len(lp.col_names_) == n else [f"c{j}" for j in range(n)]
        if _infeasibility(lp, x, names, TIGHT_TOL, 0.0):
            return Evidence()  # HiGHS's point is feasible only to its own tolerance: doubtful
        h.changeColsCost(n, columns, cost)  # (2) the relaxation, with the objective
        h.changeColsIntegrality(n, columns, np.array([highspy.HighsVarType.kContinuous] * n))
        h.clearSolver()
        h.setOptionValue("time_limit", RESOLVE_TIME_S)
        h.run()
        status = h.getModelStatus()
        point = ", ".join(f"{names[j]}={x[j]:.6g}" for j in range(min(n, 4))) + (", ..." if n > 4 else "")
        if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            # the model is feasible (the point above), so "unbounded or infeasible" of the relaxation is unbounded
            return Evidence(found="unbounded", detail=f"HiGHS: a point that satisfies every bound and row to 1e-9 "
                                                      f"({point}) and an unbounded relaxation")
        if status != highspy.HighsModelStatus.kOptimal:
            return Evidence()
        bound = float(h.getInfo().objective_function_value)
        if not math.isfinite(bound) or abs(bound) >= HUGE:
            return Evidence()
        return Evidence(problem=f"claimed {rec['status']}, but its own model has a finite optimum: a point that "
                                f"satisfies every bound and row to 1e-9 ({point}) and a bounded relaxation "
                                f"({bound:.10g}, HiGHS)")
    except Exception:  # HiGHS could not take it: not re-solved
        return None
    finally:
        h.clearModel()
