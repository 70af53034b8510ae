"""Every registered family x every solver API: the rendered reference program, run in the sandbox, must reproduce
the IR's ground truth (captured from the solver call, not parsed from stdout), and an infeasible instance must be
reported as infeasible without crashing.

All programs run in one ``run_batch`` (warm workers, order-preserving), so the matrix costs one pass.
"""

from __future__ import annotations

import os

import pytest

from flywheel.generators.base import family_names, generate_problem
from solvers.errors import FlywheelError
from solvers.ground_truth import solve_ground_truth
from solvers.records import ExecStatus, SolveStatus
from solvers.render import APIS, render, supports
from solvers.sandbox import Program, SandboxConfig, run_batch

# FLYWHEEL_MATRIX_FAMILIES=a,b limits the matrix to those families (a family author's quick check; CI runs all).
_ONLY = [f for f in os.environ.get("FLYWHEEL_MATRIX_FAMILIES", "").split(",") if f]
FAMILIES = [f for f in family_names() if not _ONLY or f in _ONLY]
SEED, DIFFICULTY = 7, 2
# SCIP on a QP (ortools -> MathOpt GSCIP) can take ~10 s on a loaded 2-core machine; the default 30 s is tight.
CONFIG = SandboxConfig(timeout_s=120.0)
# The infeasible check: one family per API, rotating so that different model shapes are covered.
INFEASIBLE = {api: FAMILIES[(3 * i) % len(FAMILIES)] for i, api in enumerate(APIS)}


@pytest.fixture(scope="module")
def matrix():
    """(family, api) -> (ground truth, execution) for feasible instances; ("infeasible", api) likewise."""
    jobs, programs = [], []
    for family in FAMILIES:
        problem = generate_problem(family, SEED, DIFFICULTY)
        truth = solve_ground_truth(problem.ir)
        for api in APIS:
            if not supports(problem.ir, api):
                continue  # checked by test_unsupported_pairs_raise_a_clear_error
            jobs.append(((family, api), truth))
            programs.append(Program(program_id=f"{family}-{api}", code=render(problem.ir, api, problem.question)))
    for api, family in INFEASIBLE.items():
        problem = generate_problem(family, SEED, DIFFICULTY, infeasible_share=1.0)
        if not supports(problem.ir, api):
            continue  # a matrix limited to QP families has no instance ortools renders
        truth = solve_ground_truth(problem.ir)
        jobs.append((("infeasible", api), truth))
        programs.append(Program(program_id=f"infeasible-{family}-{api}",
                                code=render(problem.ir, api, problem.question)))
    executions = list(run_batch(programs, CONFIG))
    return {key: (truth, execution) for (key, truth), execution in zip(jobs, executions, strict=True)}


@pytest.mark.slow
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("family", FAMILIES)
def test_reference_program_reproduces_ground_truth(matrix, family: str, api: str) -> None:
    if (family, api) not in matrix:
        pytest.skip(f"{api} does not render {family} (see test_unsupported_pairs_raise_a_clear_error)")
    truth, execution = matrix[(family, api)]
    assert not truth.disputed, truth.dispute_reason
    assert truth.status == SolveStatus.OPTIMAL
    assert execution.status == ExecStatus.OK, f"{execution.status}: {execution.error}\n{execution.stderr[-2000:]}"
    final = execution.final_solve
    assert final is not None and final.status == SolveStatus.OPTIMAL, final
    assert final.objective is not None
    # 1e-6 relative (+1e-6 absolute near zero): the programs close MIP gaps to 1e-9, so what remains is solver
    # feasibility tolerance (1e-6 primal in SCIP's QP handling is the loosest of the five).
    assert abs(final.objective - truth.objective) <= 1e-6 * (abs(truth.objective) + 1), (
        final.objective, truth.objective)
    assert "Optimal objective:" in execution.stdout


@pytest.mark.slow
@pytest.mark.parametrize("api", APIS)
def test_infeasible_instance_is_reported(matrix, api: str) -> None:
    if ("infeasible", api) not in matrix:
        pytest.skip(f"{api} renders none of the families {FAMILIES}")
    truth, execution = matrix[("infeasible", api)]
    assert truth.status == SolveStatus.INFEASIBLE and not truth.disputed, truth
    final = execution.final_solve
    assert final is not None, f"{execution.status}: {execution.error}\n{execution.stderr[-2000:]}"
    # Gurobi and CPLEX presolve may only prove "infeasible or unbounded"; both are a correct report here.
    assert final.status in (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD), final.status
    assert execution.status in (ExecStatus.SOLVER_INFEASIBLE, ExecStatus.OK), execution.status
    assert "Traceback" not in execution.stderr
    assert "infeasible" in execution.stdout.lower()


def test_unsupported_pairs_raise_a_clear_error() -> None:
    """The only refusal: ortools for quadratic objectives (pywraplp is linear; MathOpt's SCIP is too slow)."""
    unsupported = []
    for family in FAMILIES:
        model = generate_problem(family, SEED, DIFFICULTY).ir
        for api in APIS:
            if not supports(model, api):
                unsupported.append((family, api))
                with pytest.raises(FlywheelError, match="quadratic objective"):
                    render(model, api)
    assert all(api == "ortools" for _, api in unsupported)
    assert all(generate_problem(f, SEED, DIFFICULTY).ir.objective.quadratic for f, _ in unsupported)


def test_a_row_whose_terms_all_drop_out_reports_infeasible_in_every_api() -> None:
    """ambulance_location's deliberately infeasible instance leaves a district no site in range: its coverage row
    has no variable, ``0 >= 2``. pyomo and docplex refuse a bare bool at build time (a model_build_error, not an
    infeasible verdict), so they write their own constant rows; every API must report the model infeasible."""
    problem = generate_problem("ambulance_location", 7, 2, infeasible_share=1.0)
    assert solve_ground_truth(problem.ir).status == SolveStatus.INFEASIBLE
    apis = [api for api in APIS if supports(problem.ir, api)]
    codes = {api: render(problem.ir, api, problem.question) for api in apis}
    assert "pyo.Constraint.Infeasible" in codes.get("pyomo", "pyo.Constraint.Infeasible")
    programs = [Program(program_id=api, code=code) for api, code in codes.items()]
    for api, execution in zip(apis, run_batch(programs, CONFIG), strict=True):
        assert execution.status == ExecStatus.SOLVER_INFEASIBLE, (api, execution.status, execution.error)
        assert [s.status for s in execution.solves] == [SolveStatus.INFEASIBLE], api
