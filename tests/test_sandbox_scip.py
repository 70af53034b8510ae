"""PySCIPOpt (SCIP) in the sandbox: captured like any solver API (the original problem written with every digit,
the solution checked against it), never "no solve call". The hook replaces the immutable ``pyscipopt.Model`` with
a subclass whose solve methods are wrapped (solvers/sandbox/capture/scip.py)."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.mps import read

PLAN = """
from pyscipopt import Model, quicksum
m = Model("plan")
x = {i: m.addVar(f"make[{i}]", lb=0) for i in range(3)}
y = m.addVar("open site", vtype="B")
profit = [123.45678912, 7.0 / 12, 5.5]
m.addCons(quicksum(x[i] for i in range(3)) <= 10 * y, name="cap")
m.addCons(x[0] + 2 * x[1] <= 8.123456789012, name="hours used")
m.setObjective(quicksum(profit[i] * x[i] for i in range(3)) - 3 * y + 1.5, "maximize")
m.optimize()
print("Optimal:", m.getObjVal())
"""
PROGRAMS = {
    "plan": PLAN,
    # the module-style import, a minimisation with an equality and a ranged row
    "module_import": """
import pyscipopt as scip
m = scip.Model()
m.hideOutput()
a, b = m.addVar("a", lb=1), m.addVar("b", lb=0, ub=4, vtype="I")
m.addCons(a + b == 5.5)
m.addCons(scip.quicksum([a, -b]) <= 2)
m.addCons(-3 <= a - 3 * b)
m.setObjective(2 * a + 3.25 * b)
m.optimize()
""",
    "infeasible": """
from pyscipopt import Model
m = Model()
x = m.addVar("x", lb=0, ub=3)
m.addCons(x >= 4)
m.setObjective(x)
m.optimize()
print(m.getStatus())
""",
    # a quadratic constraint: no MPS here, so the solve is recorded but never checked (and never accused)
    "quadratic": """
from pyscipopt import Model
m = Model()
x, y = m.addVar("x", lb=0), m.addVar("y", lb=0)
m.addCons(x * x + y * y <= 8)
m.setObjective(x + y, "maximize")
m.optimize()
""",
    # an objective limit that no solution meets: SCIP says infeasible about the limit, not the model, so the parent
    # must not re-solve the claim and call it refuted
    "objective_limit": """
from pyscipopt import Model
m = Model()
x = m.addVar("x", lb=0, ub=3)
m.setObjective(x, "maximize")
m.setObjlimit(5.0)
m.optimize()
print(m.getStatus())
""",
    # the program forges what SCIP reports through the class the hook put in place: the describer reads through
    # SCIP's own (immutable) class, so the record holds the real optimum
    "forged_getter": PLAN.replace("m.optimize()", "Model.getObjVal = lambda self: 1e6\nm.optimize()"),
    # ... or replaces the wrapped solve method on it
    "replaced_method": PLAN.replace("m.optimize()", "Model.optimize = Model.__mro__[1].optimize\nm.optimize()"),
    # the program puts the unwrapped class back and solves with it
    "swapped": PLAN.replace("from pyscipopt import Model, quicksum",
                            "import pyscipopt\nfrom pyscipopt import quicksum\nModel = pyscipopt.Model.__mro__[1]\n"
                            "pyscipopt.Model = Model"),
}


@pytest.fixture(scope="module")
def executions() -> dict:
    progs = [Program(program_id=name, code=code) for name, code in PROGRAMS.items()]
    return {p.program_id: e for p, e in zip(progs, run_batch(progs, SandboxConfig(timeout_s=60)), strict=True)}


def test_a_scip_milp_is_captured_with_every_digit_and_verified(executions: dict) -> None:
    e = executions["plan"]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.api == "pyscipopt" and s.solver == "scip" and s.status == SolveStatus.OPTIMAL and s.sense == "maximize"
    # y = 1, x0 = 8.123456789012 (the best profit per hour), x2 fills the capacity: SCIP exact to 1e-9
    assert s.objective == pytest.approx(123.45678912 * 8.123456789012 + 5.5 * (10 - 8.123456789012) - 1.5, rel=1e-9)
    assert s.n_vars == 4 and s.n_int_vars == 1 and s.n_bin_vars == 1 and s.n_constraints == 2
    assert s.solution["make[0]"] == pytest.approx(8.123456789012) and s.solution["open site"] == pytest.approx(1)
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)
    assert model is not None and sorted(model.col_cost) == sorted([123.45678912, 7.0 / 12, 5.5, -3.0])
    assert 8.123456789012 in model.row_upper  # SCIP's own writer prints 15 digits; every digit is kept here


def test_module_import_equalities_and_ranges(executions: dict) -> None:
    e = executions["module_import"]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    # a + b = 5.5, a - b <= 2, a - 3b >= -3, b integer in [0, 4]: b = 2 (a = 3.5) is the only feasible integer
    assert s.sense == "minimize" and s.objective == pytest.approx(2 * 3.5 + 3.25 * 2, rel=1e-9)
    assert s.verification == "verified", s.verification


def test_an_infeasible_scip_model_is_solver_infeasible(executions: dict) -> None:
    e = executions["infeasible"]
    assert e.status == ExecStatus.SOLVER_INFEASIBLE, (e.error, e.stderr[-500:])
    assert e.solves[-1].status == SolveStatus.INFEASIBLE


def test_a_nonlinear_scip_model_is_recorded_unchecked(executions: dict) -> None:
    e = executions["quadratic"]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.objective == pytest.approx(4.0, rel=1e-6) and s.model_mps is None
    assert s.verification not in ("verified", "refuted"), s.verification


def test_a_program_that_unwraps_scip_is_tampering(executions: dict) -> None:
    e = executions["swapped"]
    assert e.status == ExecStatus.TAMPERED, (e.status, e.error)


def test_an_objective_limit_is_marked_and_not_refuted(executions: dict) -> None:
    e = executions["objective_limit"]
    (s,) = e.solves
    assert s.status in (SolveStatus.INFEASIBLE, SolveStatus.TIME_LIMIT_NO_SOLUTION), s.status
    assert s.verification != "refuted" and e.status != ExecStatus.TAMPERED, (e.status, s.verification)


def test_a_forged_getter_on_the_hooked_class_changes_nothing(executions: dict) -> None:
    e = executions["forged_getter"]
    assert e.status == ExecStatus.OK, (e.status, e.error)
    assert e.solves[-1].objective == pytest.approx(123.45678912 * 8.123456789012 + 5.5 * (10 - 8.123456789012) - 1.5)
    assert "1000000" in e.stdout  # what the program prints is its own business


def test_replacing_the_wrapped_solve_method_is_tampering(executions: dict) -> None:
    e = executions["replaced_method"]
    assert e.status == ExecStatus.TAMPERED, (e.status, e.error)
