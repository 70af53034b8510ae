"""SciPy's linprog and milp in the sandbox: captured like any solver API (the model from the call's arrays, the
solution checked against it), never "no solve call". max 3x + 2y, x + y <= 5, 0 <= x <= 4, 0 <= y <= 3 (y integer
for milp): both minimise, so the program passes -c and the solver's optimum is -14."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.mps import read

PROGRAMS = {
    "linprog": """
from scipy.optimize import linprog
res = linprog(c=[-3, -2], A_ub=[[1, 1]], b_ub=[5], bounds=[(0, 4), (0, 3)], method="highs")
print(-res.fun)
""",
    # a sparse matrix, an equality row (x - y == 3/7 with x + y <= 5: x = 19/7, y = 16/7, 3x + 2y = 89/7), one bounds
    # pair for every column
    "linprog_sparse_eq": """
import numpy as np, scipy.sparse as sp
from scipy.optimize import linprog
res = linprog(c=np.array([-3.0, -2.0]), A_ub=sp.csr_matrix([[1.0, 1.0]]), b_ub=[5.0], A_eq=[[1, -1]], b_eq=[3 / 7],
              bounds=(0, 4))
print(-res.fun)
""",
    "milp": """
import numpy as np
from scipy.optimize import milp, LinearConstraint, Bounds
res = milp(c=-np.array([3.0, 2.0]), constraints=[LinearConstraint(np.array([[1.0, 1.0]]), -np.inf, 5)],
           integrality=np.array([0, 1]), bounds=Bounds([0, 0], [4, 3]))
print(-res.fun)
""",
    "milp_tuple": """
import numpy as np
import scipy.optimize
res = scipy.optimize.milp(-np.array([3.0, 2.0]), integrality=[0, 1], bounds=scipy.optimize.Bounds(0, [4, 3]),
                          constraints=(np.array([[1.0, 1.0]]), -np.inf, 5.0))
print(-res.fun)
""",
    "linprog_infeasible": """
from scipy.optimize import linprog
res = linprog(c=[-3, -2], A_ub=[[1, 1], [-1, -1]], b_ub=[5, -8], bounds=[(0, 4), (0, 3)])
print(res.status)
""",
    # a program that swaps the solver for its own function after the capture wrapped it
    "linprog_swapped": """
import scipy.optimize
from types import SimpleNamespace
scipy.optimize.linprog = lambda *a, **k: SimpleNamespace(fun=-99.0, status=0, x=[9, 9])
print(scipy.optimize.linprog([-3, -2]).fun)
""",
}
OPTIMUM = {"linprog": -14.0, "linprog_sparse_eq": -89 / 7, "milp": -14.0, "milp_tuple": -14.0}


@pytest.fixture(scope="module")
def executions() -> dict:
    progs = [Program(program_id=name, code=code) for name, code in PROGRAMS.items()]
    return {p.program_id: e for p, e in zip(progs, run_batch(progs, SandboxConfig(timeout_s=60)), strict=True)}


@pytest.mark.parametrize("name", sorted(OPTIMUM))
def test_linprog_and_milp_are_captured_and_verified(executions: dict, name: str) -> None:
    e = executions[name]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.api == "scipy" and s.status == SolveStatus.OPTIMAL and s.sense == "minimize"
    # 1e-9: HiGHS solves a 2-column model exactly up to its feasibility tolerance
    assert s.objective == pytest.approx(OPTIMUM[name], rel=1e-9)
    assert s.solution["x0"] == pytest.approx(19 / 7 if name == "linprog_sparse_eq" else 4.0, abs=1e-9)
    assert s.n_int_vars == (1 if name.startswith("milp") else 0)
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)  # the call's arrays, digit for digit
    assert model is not None and model.col_cost == [-3.0, -2.0]
    assert len(model.row_names) == (2 if name == "linprog_sparse_eq" else 1)
    if name == "linprog_sparse_eq":
        assert 3 / 7 in model.row_lower and model.col_upper == [4.0, 4.0]


def test_an_infeasible_linprog_is_solver_infeasible(executions: dict) -> None:
    e = executions["linprog_infeasible"]
    assert e.status == ExecStatus.SOLVER_INFEASIBLE, (e.error, e.stderr[-500:])
    assert e.solves[-1].status == SolveStatus.INFEASIBLE


def test_a_swapped_solver_is_tampering(executions: dict) -> None:
    e = executions["linprog_swapped"]
    assert e.status == ExecStatus.TAMPERED, (e.status, e.error)
