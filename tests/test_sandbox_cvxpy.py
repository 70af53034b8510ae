"""CVXPY in the sandbox: captured like any solver API, never "no solve call". An LP or MILP as written gets a model
built from the program's own expressions (solvers/sandbox/capture/cvxpy_.py), so its point and objective are
checked and its no-solution claims re-solved; anything else (a QP here) is recorded but goes unchecked, never
accused. A program that replaces the wrapped solve, or a method the solve runs through, is tampering."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.mps import read

# max 3x + 2y + 1.5, x + y <= 4, x + 3y <= 6, x <= 3, x, y >= 0: the vertex x = 3, y = 1 gives 11 + 1.5
PLAN = """
import cvxpy as cp
v = cp.Variable(2, name="make", nonneg=True)
prob = cp.Problem(cp.Maximize(3 * v[0] + 2 * v[1] + 1.5), [cp.sum(v) <= 4, v[0] + 3 * v[1] <= 6, v[0] <= 3])
prob.solve(solver=cp.HIGHS)
print("Optimal objective:", prob.value)
"""
PROGRAMS = {
    "plan": PLAN,
    # a knapsack with a boolean vector (weights 4, 6, 3 within 9: items 1 and 2 give 13 + 7) and an integer count
    # (2k <= 7: k = 3), solved by whatever MIP solver CVXPY picks
    "milp": """
import cvxpy as cp
import numpy as np
pick = cp.Variable(3, boolean=True, name="pick")
k = cp.Variable(integer=True, name="k")
prob = cp.Problem(cp.Maximize(np.array([10, 13, 7]) @ pick + k),
                  [np.array([4, 6, 3]) @ pick <= 9, 2 * k <= 7, k >= 0])
prob.solve()
print(prob.value, pick.value, k.value)
""",
    "milp_highs": """
import cvxpy as cp
import numpy as np
pick = cp.Variable(3, boolean=True, name="pick")
k = cp.Variable(integer=True, name="k")
prob = cp.Problem(cp.Maximize(np.array([10, 13, 7]) @ pick + k),
                  [np.array([4, 6, 3]) @ pick <= 9, 2 * k <= 7, k >= 0])
prob.solve(solver=cp.HIGHS)
""",
    # more integer variables than Gurobi's size-limited licence takes, on the solver CVXPY picks first for a MILP:
    # CVXPY reports a bare "Solver 'GUROBI' failed"
    "licence": """
import cvxpy as cp
x = cp.Variable(2500, integer=True)
cp.Problem(cp.Maximize(cp.sum(x)), [x <= 1, x >= 0]).solve(solver=cp.GUROBI)
""",
    # a matrix variable (Fortran order), a parameter, >= and == rows, bounds and the constructor forms:
    # min sum(X) + p . X[:, 0] with X >= 1, X[0, 1] == 2.5, X[1, :] <= 4: X = [[1, 2.5], [1, 1]], 5.5 + 2 + 3 = 10.5
    "matrix_param": """
import cvxpy as cp
p = cp.Parameter(2, value=[2.0, 3.0])
X = cp.Variable((2, 2), name="flow", bounds=[-10, 10])
prob = cp.Problem(cp.Minimize(cp.sum(X) + p @ X[:, 0]), [X >= 1, X[0, 1] == 2.5, 4 >= X[1, :]])
prob.solve(solver=cp.HIGHS)
print(prob.value)
""",
    "infeasible": """
import cvxpy as cp
x = cp.Variable(name="x")
prob = cp.Problem(cp.Minimize(x), [x >= 4, x <= 3])
prob.solve(solver=cp.HIGHS)
print(prob.status)
""",
    "unbounded": """
import cvxpy as cp
x = cp.Variable(2, name="x")
prob = cp.Problem(cp.Maximize(x[0] + x[1]), [x[0] - x[1] <= 1, x >= 0])
prob.solve(solver=cp.HIGHS)
print(prob.status)
""",
    # min ||x - (1, 2)||^2 with x0 + x1 <= 2: the projection (0.5, 1.5), at 0.5; no MPS for a quadratic objective
    "qp": """
import cvxpy as cp
import numpy as np
x = cp.Variable(2, name="x")
prob = cp.Problem(cp.Minimize(cp.sum_squares(x - np.array([1.0, 2.0]))), [cp.sum(x) <= 2])
prob.solve()
print(prob.value)
""",
    # an LP through a piecewise-linear atom: CVXPY's reformulation adds columns the solution does not name
    "abs_lp": """
import cvxpy as cp
x = cp.Variable(name="x")
prob = cp.Problem(cp.Minimize(cp.abs(x - 2) + x), [x >= 0])
prob.solve(solver=cp.HIGHS)
""",
    # a first-order solver's "optimal" holds to ~1e-4: recorded, unchecked
    "scs": PLAN.replace("solver=cp.HIGHS", "solver=cp.SCS"),
    # what the program prints is its own business: the record keeps the solver's value
    "false_print": PLAN.replace('print("Optimal objective:", prob.value)', 'print("Optimal objective: 1000000")'),
    # a subclass that forges the value it reports: the describer reads through CVXPY's own class
    "forged_subclass": PLAN.replace("prob = cp.Problem(", """class Forged(cp.Problem):
    value = property(lambda self: 1e6)
    status = property(lambda self: "optimal")
prob = Forged(""").replace("cp.HIGHS)", "cp.HIGHS)\nassert prob.value == 1e6"),
    # the program puts the unwrapped solve back
    "unwrapped": PLAN.replace("prob.solve(", "cp.Problem.solve = cp.Problem.solve.__wrapped__\nprob.solve("),
    # ... or replaces the solve method it runs through with its own
    "replaced_solve_path": PLAN.replace("prob.solve(", """def fake(self, *a, **k):
    self._status, self._value = "optimal", 1e6
    return 1e6
cp.Problem._solve = fake
prob.solve("""),
    # ... or replaces the value the problem reports on CVXPY's own class
    "replaced_property": PLAN.replace("prob.solve(", "cp.Problem.value = property(lambda self: 1e6)\nprob.solve("),
}
TAMPERING = ("unwrapped", "replaced_solve_path", "replaced_property")


@pytest.fixture(scope="module")
def executions() -> dict:
    progs = [Program(program_id=name, code=code) for name, code in PROGRAMS.items()]
    return {p.program_id: e for p, e in zip(progs, run_batch(progs, SandboxConfig(timeout_s=60)), strict=True)}


def test_an_lp_maximisation_is_captured_and_verified(executions: dict) -> None:
    e = executions["plan"]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.api == "cvxpy" and s.solver == "highs" and s.status == SolveStatus.OPTIMAL and s.sense == "maximize"
    assert "cvxpy" in s.solver_version
    # 1e-9: HiGHS's simplex lands on the vertex exactly up to its feasibility tolerance
    assert s.objective == pytest.approx(12.5, rel=1e-9)
    assert s.solution["make[0]"] == pytest.approx(3.0, abs=1e-9) and s.solution["make[1]"] == pytest.approx(1.0)
    assert s.n_vars == 2 and s.n_int_vars == 0 and s.n_constraints == 3
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)  # the program's sense and constant, columns named as the solution is
    assert model is not None and model.maximize and model.col_cost == [3.0, 2.0] and model.offset == 1.5
    assert model.col_names == ["make[0]", "make[1]"] and model.col_lower == [0.0, 0.0]


@pytest.mark.parametrize("name", ["milp", "milp_highs"])
def test_a_milp_is_captured_and_verified(executions: dict, name: str) -> None:
    e = executions[name]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.solver == "highs" or name == "milp"
    assert s.status == SolveStatus.OPTIMAL and s.objective == pytest.approx(23.0, rel=1e-9), s
    assert s.n_vars == 4 and s.n_int_vars == 4 and s.n_bin_vars == 3
    assert [round(s.solution[f"pick[{i}]"]) for i in range(3)] == [0, 1, 1] and round(s.solution["k"]) == 3
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)
    assert model is not None and model.integer == [True] * 4 and model.col_upper[:3] == [1.0, 1.0, 1.0]


def test_a_matrix_variable_with_a_parameter_is_verified_in_fortran_order(executions: dict) -> None:
    e = executions["matrix_param"]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.objective == pytest.approx(10.5, rel=1e-9) and s.solution["flow[0,1]"] == pytest.approx(2.5)
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)
    # column order flow[0,0], flow[1,0], flow[0,1], flow[1,1]: the parameter's 2 and 3 on the first column
    assert model is not None and model.col_cost == [3.0, 4.0, 1.0, 1.0]
    assert model.col_lower == [-10.0] * 4 and model.col_upper == [10.0] * 4


@pytest.mark.parametrize(("name", "exec_status", "status"), [
    ("infeasible", ExecStatus.SOLVER_INFEASIBLE, SolveStatus.INFEASIBLE),
    ("unbounded", ExecStatus.SOLVER_UNBOUNDED, SolveStatus.UNBOUNDED),
])
def test_no_solution_claims_are_re_solved_and_not_accused(executions: dict, name: str, exec_status: ExecStatus,
                                                          status: SolveStatus) -> None:
    e = executions[name]
    assert e.status == exec_status, (e.status, e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.status == status and s.objective is None and s.model_mps is not None
    assert s.verification == "re-solved", s.verification


@pytest.mark.parametrize("name", ["qp", "abs_lp", "scs"])
def test_what_has_no_exact_lp_model_is_recorded_unchecked(executions: dict, name: str) -> None:
    e = executions[name]
    assert e.status in (ExecStatus.OK, ExecStatus.SOLVER_NUMERIC), (e.status, e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.api == "cvxpy" and s.model_mps is None
    assert s.verification not in ("verified", "refuted"), s.verification
    if name == "qp":
        # 1e-6: Clarabel / OSQP-class accuracy on a 2-variable QP
        assert s.status == SolveStatus.OPTIMAL and s.objective == pytest.approx(0.5, abs=1e-6)
        assert s.solution["x[0]"] == pytest.approx(0.5, abs=1e-4)
    if name == "abs_lp":  # min |x - 2| + x over x >= 0: 2 at any x in [0, 2]
        assert s.objective == pytest.approx(2.0, rel=1e-9)


def test_a_false_printed_objective_changes_nothing(executions: dict) -> None:
    e = executions["false_print"]
    assert e.status == ExecStatus.OK, (e.status, e.error)
    assert e.solves[-1].objective == pytest.approx(12.5, rel=1e-9) and e.solves[-1].verification == "verified"
    assert "1000000" in e.stdout


def test_a_subclass_that_forges_the_value_changes_nothing(executions: dict) -> None:
    e = executions["forged_subclass"]
    assert e.status == ExecStatus.OK, (e.status, e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.objective == pytest.approx(12.5, rel=1e-9) and s.verification == "verified"


@pytest.mark.parametrize("name", TAMPERING)
def test_replacing_the_wrapped_solve_or_its_path_is_tampering(executions: dict, name: str) -> None:
    e = executions[name]
    assert e.status == ExecStatus.TAMPERED, (e.status, e.error, e.stderr[-500:])


def test_a_licence_size_refusal_is_license_limit(executions: dict) -> None:
    e = executions["licence"]
    assert e.status == ExecStatus.LICENSE_LIMIT, (e.status, e.error, e.stderr[-500:])
    (s,) = e.solves
    assert s.status == SolveStatus.LICENSE_LIMIT and s.solver == "gurobi" and s.n_vars == 2500


def test_the_doctor_lists_cvxpy_with_its_version() -> None:
    import importlib.metadata as md

    from solvers.sandbox.doctor import solver_apis

    rows = {r["api"]: r for r in solver_apis()}
    assert rows["cvxpy"]["installed"] and rows["cvxpy"]["version"] == md.version("cvxpy")


def test_flywheel_eval_scores_a_cvxpy_program_by_what_the_solver_did() -> None:
    from flywheel.evaluate.runner import score_completions
    from flywheel.evaluate.score import Completion

    items = [Completion(id="right", answer=12.5, code=PLAN), Completion(id="wrong", answer=13, code=PLAN),
             Completion(id="printed", answer=1e6, code=PROGRAMS["false_print"])]
    verdicts, _ = score_completions(items, timeout_s=60)
    by_id = {v.id: v for v in verdicts}
    assert by_id["right"].exec_status == "ok" and by_id["right"].objective == pytest.approx(12.5)
    assert by_id["right"].passed["strict"] is True
    assert by_id["wrong"].passed["strict"] is False and by_id["printed"].passed["strict"] is False
