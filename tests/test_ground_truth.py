"""Ground truth: each registered solver on LP / IP / MILP / QP models with known optima, infeasible and unbounded
models, the agreement rule and dispute detection, and licence-size errors classified as ``license_limit``."""

from __future__ import annotations

import pytest

from flywheel.generators.base import family_names, generate_problem
from solvers.builder import ModelBuilder
from solvers.errors import UnknownNameError
from solvers.ground_truth import (
    SOLVERS,
    fits_gurobi_licence,
    judge,
    second_solvers,
    solve_ground_truth,
    solve_with,
)
from solvers.ir import Model, VarType
from solvers.records import SolverRun, SolveStatus

# Objectives are compared to hand-derived optima at 1e-6 relative: every solver runs with MIP gaps of 1e-9, so
# the only slack left is the solvers' 1e-6 feasibility tolerance.
REL = 1e-6


def close(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) <= REL * (1 + abs(b))


def lp() -> Model:
    """max 3x + 2y + 5 s.t. x + y <= 4, x + 3y <= 6, x <= 3, with y free: optimum x=3, y=1 -> 16."""
    b = ModelBuilder("tiny_lp")
    x = b.add_var("x", ub=3)
    y = b.add_var("y", lb=None)
    b.add_constr("c1", (), [(x, 1), (y, 1)], "<=", 4)
    b.add_constr("c2", (), [(x, 1), (y, 3)], "<=", 6)
    b.set_objective("maximize", [(x, 3), (y, 2)], constant=5)
    return b.build()


def ip() -> Model:
    """A 0/1 knapsack: values 10, 13, 7, 8; weights 5, 6, 3, 4; capacity 10 -> best {2nd, 3rd} or ... = 21."""
    b = ModelBuilder("tiny_ip")
    b.add_set("items", ["a", "b", "c", "d"])
    pick = b.add_vars("pick", ("items",), VarType.BINARY)
    weight = {"a": 5, "b": 6, "c": 3, "d": 4}
    value = {"a": 10, "b": 13, "c": 7, "d": 8}
    b.add_constr("capacity", (), [(pick[(i,)], w) for i, w in weight.items()], "<=", 10)
    b.set_objective("maximize", [(pick[(i,)], v) for i, v in value.items()])
    return b.build()


def milp() -> Model:
    """min 4 open + x, x >= 2.5, x <= 10 open, open binary -> 6.5 (an integer count n>=0 adds nothing)."""
    b = ModelBuilder("tiny_milp")
    x = b.add_var("x")
    y = b.add_var("open", VarType.BINARY)
    n = b.add_var("n", VarType.INTEGER, ub=5)
    b.add_constr("need", (), [(x, 1)], ">=", 2.5)
    b.add_constr("link", (), [(x, 1), (y, -10)], "<=", 0)
    b.add_constr("count", (), [(n, 2), (x, -1)], ">=", -3)
    b.set_objective("minimize", [(y, 4), (x, 1), (n, 1)])
    return b.build()


def qp() -> Model:
    """min x^2 + 2y^2 + xy - x + 1.5 s.t. x + y >= 3 -> x=2.5, y=0.5, objective 7."""
    b = ModelBuilder("tiny_qp")
    x = b.add_var("x", ub=10)
    y = b.add_var("y", ub=10)
    b.add_constr("total", (), [(x, 1), (y, 1)], ">=", 3)
    b.set_objective("minimize", [(x, -1)], quadratic=[(x, x, 1), (y, y, 2), (x, y, 1)], constant=1.5)
    return b.build()


def infeasible() -> Model:
    b = ModelBuilder("tiny_infeasible")
    x = b.add_var("x", VarType.INTEGER, ub=10)
    y = b.add_var("y", VarType.INTEGER, ub=10)
    b.add_constr("low", (), [(x, 1), (y, 1)], ">=", 8)
    b.add_constr("high", (), [(x, 1), (y, 1)], "<=", 5)
    b.set_objective("minimize", [(x, 1), (y, 2)])
    return b.build()


def unbounded() -> Model:
    b = ModelBuilder("tiny_unbounded")
    x = b.add_var("x")
    y = b.add_var("y")
    b.add_constr("c", (), [(x, 1), (y, -1)], "<=", 2)
    b.set_objective("maximize", [(x, 1), (y, 1)])
    return b.build()


KNOWN = {"lp": (lp, 16.0), "ip": (ip, 21.0), "milp": (milp, 6.5), "qp": (qp, 7.0)}
# Which solver handles which model: CP-SAT only pure-integer models with integer data (the LP's y is free).
APPLIES = {"highs": {"lp", "ip", "milp", "qp"}, "gurobi": {"lp", "ip", "milp", "qp"},
           "scip": {"lp", "ip", "milp", "qp"}, "cp-sat": {"ip"}}


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_each_solver_finds_the_known_optimum(solver: str, kind: str) -> None:
    build, optimum = KNOWN[kind]
    model = build()
    run = solve_with(model, solver)
    if kind not in APPLIES[solver]:
        assert run.status == SolveStatus.ERROR and run.message
        return
    assert run.status == SolveStatus.OPTIMAL, run
    assert close(run.objective, optimum), (run.objective, optimum)
    assert run.version and run.solver == solver and run.solve_time_s >= 0
    # The reported solution is feasible and evaluates to the reported objective.
    # (QP through SCIP: the quadratic objective is a nonlinear constraint with 1e-6 feasibility.)
    assert model.violations(run.solution) == []
    assert close(model.evaluate(run.solution), run.objective)


@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_ground_truth_agrees(kind: str) -> None:
    build, optimum = KNOWN[kind]
    truth = solve_ground_truth(build())
    assert not truth.disputed, truth.dispute_reason
    assert truth.status == SolveStatus.OPTIMAL and close(truth.objective, optimum)
    assert len(truth.runs) == 2 and truth.runs[0].solver == "highs" and truth.runs[1].solver == "gurobi"
    assert truth.solution == truth.runs[0].solution


@pytest.mark.parametrize("solver", ["highs", "gurobi", "scip", "cp-sat"])
def test_infeasible_is_infeasible(solver: str) -> None:
    assert solve_with(infeasible(), solver).status == SolveStatus.INFEASIBLE


def test_ground_truth_of_infeasible_model() -> None:
    truth = solve_ground_truth(infeasible())
    assert truth.status == SolveStatus.INFEASIBLE and not truth.disputed and truth.objective is None


@pytest.mark.parametrize("solver", ["highs", "gurobi", "scip"])
def test_unbounded_is_unbounded(solver: str) -> None:
    run = solve_with(unbounded(), solver)
    assert run.status == SolveStatus.UNBOUNDED, run


def test_ground_truth_of_unbounded_model() -> None:
    truth = solve_ground_truth(unbounded())
    assert truth.status == SolveStatus.UNBOUNDED and not truth.disputed


def _run(solver: str, status: SolveStatus, objective: float | None) -> SolverRun:
    return SolverRun(solver=solver, version="test", status=status, objective=objective)


def test_dispute_on_objective_difference() -> None:
    a = solve_with(ip(), "highs")
    wrong = a.model_copy(update={"solver": "gurobi", "objective": a.objective + 1})
    truth = judge(a, wrong)
    assert truth.disputed and "objective differs" in truth.dispute_reason


def test_agreement_rule_is_relative_plus_absolute() -> None:
    # |a - b| <= 1e-6 + 1e-6 * max(|a|, |b|): 1e6 vs 1e6 + 0.5 agree (tolerance ~1.000001), + 2 does not.
    base = _run("highs", SolveStatus.OPTIMAL, 1e6)
    assert not judge(base, _run("gurobi", SolveStatus.OPTIMAL, 1e6 + 0.5)).disputed
    assert judge(base, _run("gurobi", SolveStatus.OPTIMAL, 1e6 + 2)).disputed
    zero = _run("highs", SolveStatus.OPTIMAL, 0.0)
    assert not judge(zero, _run("gurobi", SolveStatus.OPTIMAL, 5e-7)).disputed
    assert judge(zero, _run("gurobi", SolveStatus.OPTIMAL, 5e-6)).disputed


def test_dispute_on_status_and_inconclusive_runs() -> None:
    a = _run("highs", SolveStatus.OPTIMAL, 3.0)
    truth = judge(a, _run("gurobi", SolveStatus.INFEASIBLE, None))
    assert truth.disputed and "status differs" in truth.dispute_reason
    truth = judge(a, _run("gurobi", SolveStatus.TIME_LIMIT_WITH_SOLUTION, 3.0))
    assert truth.disputed and "did not conclude" in truth.dispute_reason


def big_lp(n: int = 2100) -> Model:
    """More variables than the size-limited Gurobi licence allows (2,000): max sum (1 + i%7) x_i, sum x <= 10."""
    b = ModelBuilder("big_lp")
    b.add_set("items", [f"i{k}" for k in range(n)])
    x = b.add_vars("x", ("items",), ub=1)
    b.add_constr("budget", (), [(v, 1) for v in x.values()], "<=", 10)
    b.set_objective("maximize", [(v, 1 + k % 7) for k, v in enumerate(x.values())])
    return b.build()


def test_gurobi_size_limit_is_license_limit() -> None:
    model = big_lp()
    run = solve_with(model, "gurobi")
    assert run.status == SolveStatus.LICENSE_LIMIT, run
    assert "10010" in run.message


def test_ground_truth_beyond_gurobi_licence_uses_another_solver() -> None:
    model = big_lp()
    assert not fits_gurobi_licence(model) and second_solvers(model) == ["scip"]
    truth = solve_ground_truth(model)
    assert not truth.disputed, truth.dispute_reason
    assert [r.solver for r in truth.runs] == ["highs", "scip"]
    assert close(truth.objective, 70.0)  # ten variables with coefficient 7


def test_quadratic_size_limit() -> None:
    # 201 variables with quadratic terms: over the 200 the size-limited licence allows.
    b = ModelBuilder("wide_qp")
    b.add_set("assets", [f"a{k}" for k in range(201)])
    w = b.add_vars("w", ("assets",), ub=1)
    b.add_constr("budget", (), [(v, 1) for v in w.values()], "==", 1)
    b.set_objective("minimize", [], quadratic=[(v, v, 1) for v in w.values()])
    model = b.build()
    assert not fits_gurobi_licence(model)
    assert solve_with(model, "gurobi").status == SolveStatus.LICENSE_LIMIT
    run = solve_with(model, "highs")
    assert run.status == SolveStatus.OPTIMAL and close(run.objective, 1 / 201)


def test_cp_sat_is_second_for_integer_models_beyond_gurobi() -> None:
    b = ModelBuilder("big_ip")
    b.add_set("items", [f"i{k}" for k in range(2001)])
    x = b.add_vars("x", ("items",), VarType.BINARY)
    b.add_constr("budget", (), [(v, 1 + k % 3) for k, v in enumerate(x.values())], "<=", 7)
    b.set_objective("maximize", [(v, 2 + k % 5) for k, v in enumerate(x.values())])
    model = b.build()
    assert second_solvers(model) == ["cp-sat"]
    truth = solve_ground_truth(model)
    assert not truth.disputed and [r.solver for r in truth.runs] == ["highs", "cp-sat"]
    assert close(truth.objective, 42.0)  # seven weight-1 items of value 6 (k % 3 == 0 and k % 5 == 4)


def test_mixed_integer_qp_is_an_error_for_highs_not_a_crash() -> None:
    b = ModelBuilder("miqp")
    x = b.add_var("x", VarType.INTEGER, ub=5)
    b.set_objective("minimize", [(x, -3)], quadratic=[(x, x, 1)])
    run = solve_with(b.build(), "highs")
    assert run.status == SolveStatus.ERROR and "quadratic" in run.message
    assert solve_with(b.build(), "gurobi").objective == pytest.approx(-2.0)  # x=1 or 2 -> 1-3 = 4-6 = -2


def test_unknown_solver_names_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="highs"):
        solve_with(lp(), "glpk")


@pytest.mark.parametrize("family", family_names())
def test_every_family_two_solver_ground_truth_agrees_fast(family: str) -> None:
    """Each registered family (new ones included, automatically): the two ground-truth solvers agree on a
    feasible and on a broken instance, and a difficulty-3 instance is solved well under a second."""
    for infeasible in (0.0, 1.0):
        p = generate_problem(family, 21, 3, infeasible_share=infeasible)
        truth = solve_ground_truth(p.ir)
        assert not truth.disputed, truth.dispute_reason
        assert len(truth.runs) == 2, [r.solver for r in truth.runs]
        assert truth.status == (SolveStatus.INFEASIBLE if infeasible else SolveStatus.OPTIMAL), truth.status
        # 1 s per solver, not the 0.3 s seen quiet: this machine's 2 cores are shared with other test runs.
        assert max(r.solve_time_s for r in truth.runs) < 1.0, [(r.solver, r.solve_time_s) for r in truth.runs]


def test_highs_concludes_the_convex_qps_its_default_regularisation_stalled_on() -> None:
    """Two economic_dispatch instances (generator v2, difficulty 1) on which HiGHS 1.16's QP solver, with its
    default regularisation, held the optimum and ran to the time limit (2-3% of the family's instances); the ground
    truth turns the regularisation off, so they end optimal, in agreement with the second solver."""
    from flywheel.generators.base import derive_seed

    for i in (6, 10):
        problem = generate_problem("economic_dispatch", derive_seed(5, i), 1)
        run = solve_with(problem.ir, "highs", 10.0)
        assert run.status == SolveStatus.OPTIMAL, (i, run.status)
        assert run.solve_time_s < 5.0, (i, run.solve_time_s)
        truth = solve_ground_truth(problem.ir)
        assert not truth.disputed, (i, truth.dispute_reason)
