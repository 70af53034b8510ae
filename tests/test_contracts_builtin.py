"""Every built-in contract against a real problem with solver-verified ground truth: one passing and at least one
failing case each. Executions are built from the reference model's real solve (contracts.testing), then bent."""

from __future__ import annotations

import pytest

from contracts import Outcome, Sample, Verdict, get_contract
from contracts.engine import DISPUTED, run_suite
from contracts.suites import Suite
from contracts.testing import make_sample, reference_solve
from flywheel.generators.testing import problem_with_truth
from solvers.records import ExecStatus, SolveStatus
from solvers.render import render

FENCED = "We maximise the total profit of the bakery over its products.\n\n```python\nimport gurobipy as gp\nm = gp.Model()\nm.optimize()\n```\n"


@pytest.fixture(scope="module")
def problem():  # noqa: ANN201
    return problem_with_truth("production_planning", 0)


def check(name: str, sample: Sample, **params: object) -> Verdict:
    c = get_contract(name)
    c = c.with_params(**params) if params else c
    out = c(sample)
    assert isinstance(out, Verdict)
    return out


def test_has_code(problem) -> None:  # noqa: ANN001
    assert check("has_code", make_sample(problem, response=FENCED)).outcome == Outcome.PASS
    assert check("has_code", make_sample(problem, response="I think the answer is 42.")).outcome == Outcome.FAIL


def test_executes(problem) -> None:  # noqa: ANN001
    assert check("executes", make_sample(problem)).outcome == Outcome.PASS
    bad = check("executes", make_sample(problem, status=ExecStatus.RUNTIME_ERROR))
    assert bad.outcome == Outcome.FAIL and bad.evidence["status"] == "runtime_error"
    assert check("executes", make_sample(problem, status=ExecStatus.SANDBOX_ERROR)).outcome == Outcome.SKIP


def test_solve_called(problem) -> None:  # noqa: ANN001
    assert check("solve_called", make_sample(problem)).outcome == Outcome.PASS
    assert check("solve_called", make_sample(problem, solves=())).outcome == Outcome.FAIL


def test_status_matches_ground_truth_is_infeasible_aware(problem) -> None:  # noqa: ANN001
    assert check("status_matches_ground_truth", make_sample(problem)).outcome == Outcome.PASS
    infeasible = problem_with_truth("production_planning", 0, infeasible=True)
    assert infeasible.ground_truth.status == SolveStatus.INFEASIBLE
    said_infeasible = reference_solve(problem, status=SolveStatus.INFEASIBLE, objective=None, solution={})
    ok = check("status_matches_ground_truth", make_sample(infeasible, solves=(said_infeasible,)))
    assert ok.outcome == Outcome.PASS and ok.evidence["infeasible_by_design"] is True
    claims_optimum = check("status_matches_ground_truth", make_sample(infeasible, solves=(reference_solve(problem),)))
    assert claims_optimum.outcome == Outcome.FAIL
    assert check("status_matches_ground_truth", make_sample(problem, solves=(said_infeasible,))).outcome == Outcome.FAIL


def test_objective_matches_rules_and_gap(problem) -> None:  # noqa: ANN001
    g = problem.ground_truth.objective
    ok = check("objective_matches", make_sample(problem))
    assert ok.outcome == Outcome.PASS and ok.evidence["rule"] == "strict"
    # 1% off: rejected by strict (1e-6 relative) ...
    off = make_sample(problem, solves=(reference_solve(problem, objective=g * 0.99, solution={}),))
    bad = check("objective_matches", off)
    assert bad.outcome == Outcome.FAIL and bad.evidence["tolerance"] == pytest.approx(1e-6 * (abs(g) + 1))
    # ... accepted by orlm_lenient (5% after rounding), which is stored on the verdict
    lenient = check("objective_matches", off, rule="orlm_lenient")
    assert lenient.outcome == Outcome.PASS and lenient.evidence["rule"] == "orlm_lenient"
    assert check("objective_matches", make_sample(problem, solves=(reference_solve(
        problem, objective=g * 0.9, solution={}),)), rule="orlm_lenient").outcome == Outcome.FAIL
    # a MIP stopped at a 2% gap may be 1% off: strict widened by the gap accepts it
    gapped = make_sample(problem, solves=(reference_solve(problem, objective=g * 0.99, solution={}, mip_gap=0.02),))
    assert check("objective_matches", gapped).outcome == Outcome.PASS


def test_better_than_ground_truth_is_a_dispute_not_a_failure(problem) -> None:  # noqa: ANN001
    gt = problem.ground_truth
    # Pretend the ground truth under-reports the optimum of this maximisation by 10.
    wrong = problem.model_copy(update={"ground_truth": gt.model_copy(update={"objective": gt.objective - 10})})
    truthful = (reference_solve(problem),)  # the real optimum, from the correct ground truth
    v = check("objective_matches", make_sample(wrong, solves=truthful))
    assert v.outcome == Outcome.SKIP and v.dispute == "beats_ground_truth"
    report = run_suite(Suite.of("s", "objective_matches"), [make_sample(wrong, solves=truthful)])
    assert report.results[0].status == DISPUTED
    (d,) = report.disputes
    assert d.kind == "beats_ground_truth" and d.problem_id == problem.problem_id
    # An infeasible candidate that "beats" the ground truth is an ordinary failure.
    cheat = {k: v * 10 for k, v in gt.solution.items()}
    bad = make_sample(wrong, solves=(reference_solve(problem, objective=gt.objective * 10, solution=cheat),))
    assert check("objective_matches", bad).outcome == Outcome.FAIL


def test_feasible_on_reference(problem) -> None:  # noqa: ANN001
    # Bracketed names, as gurobipy writes them, map onto the reference's make_Bread style.
    sol = {k.replace("make_", "make[") + "]": v for k, v in problem.ground_truth.solution.items()}
    ok = check("feasible_on_reference", make_sample(problem, solves=(reference_solve(problem, solution=sol),)))
    assert ok.outcome == Outcome.PASS and ok.evidence["objective_consistent"] is True
    assert ok.evidence["recomputed_objective"] == pytest.approx(problem.ground_truth.objective, rel=1e-9)
    too_much = {k: v * 3 + 50 for k, v in problem.ground_truth.solution.items()}
    bad = check("feasible_on_reference", make_sample(problem, solves=(reference_solve(problem, solution=too_much),)))
    assert bad.outcome == Outcome.FAIL and any(n.startswith("capacity") for n in bad.evidence["violations"])


@pytest.mark.parametrize("first_solver", ["gurobi", "highs"])
def test_cross_solver(problem, first_solver: str) -> None:  # noqa: ANN001
    ok = check("cross_solver", make_sample(problem, solves=(reference_solve(problem, solver=first_solver),)))
    assert ok.outcome == Outcome.PASS
    assert ok.evidence["second_solver"] == ("gurobi" if first_solver == "highs" else "highs")
    wrong = reference_solve(problem, solver=first_solver, objective=problem.ground_truth.objective + 50)
    disagree = check("cross_solver", make_sample(problem, solves=(wrong,)))
    assert disagree.outcome == Outcome.SKIP and disagree.dispute == "solver_disagreement"


def test_structurally_equivalent(problem) -> None:  # noqa: ANN001
    ok = check("structurally_equivalent", make_sample(problem))
    assert ok.outcome == Outcome.PASS and ok.evidence["layer"] == "exact"
    ir = problem.ir
    dropped = ir.model_copy(update={"constraints": ir.constraints[1:]})
    bad = check("structurally_equivalent", make_sample(problem, solves=(reference_solve(
        problem, model_mps=dropped.to_mps()),)))
    assert bad.outcome == Outcome.FAIL and bad.evidence["layer"] == "semantic"


def test_numeric_coverage(problem) -> None:  # noqa: ANN001
    code = render(problem.ir, "gurobipy")
    ok = check("numeric_coverage", make_sample(problem, code=code))
    assert ok.outcome == Outcome.PASS and ok.score == 1.0
    invented = check("numeric_coverage", make_sample(problem, code=code + "\nbonus = 4321.5\n"))
    assert invented.outcome == Outcome.FAIL and invented.evidence["invented"] == [4321.5]
    first = problem.ir.param("capacity").numbers()[0]
    dropped = code.replace(f": {int(first)},", ": 0,", 1).replace(f": {int(first)}}}", ": 0}", 1)
    assert dropped != code
    low = check("numeric_coverage", make_sample(problem, code=dropped), min_coverage=1.0)
    assert low.outcome == Outcome.FAIL and first in low.evidence["not_in_code"]


def test_no_hardcoded_answer(problem) -> None:  # noqa: ANN001
    g = problem.ground_truth.objective
    ok = check("no_hardcoded_answer", make_sample(problem, code="m.optimize()\nprint('Optimal objective:', m.ObjVal)",
                                                  stdout=f"Optimal objective: {g}\n"))
    assert ok.outcome == Outcome.PASS
    literal = check("no_hardcoded_answer", make_sample(problem, code=f"print('Optimal objective:', {g})",
                                                       stdout=f"Optimal objective: {g}\n"))
    assert literal.outcome == Outcome.FAIL and literal.evidence["printed_literals"] == [g]
    unsolved = check("no_hardcoded_answer", make_sample(problem, solves=(), code="x = 1",
                                                        stdout=f"Optimal objective: {g}\n"))
    assert unsolved.outcome == Outcome.FAIL
    mismatch = check("no_hardcoded_answer", make_sample(problem, code="print(best)",
                                                        stdout=f"Optimal objective: {g + 100}\n"))
    assert mismatch.outcome == Outcome.FAIL


def test_uses_requested_api(problem) -> None:  # noqa: ANN001
    code = render(problem.ir, "gurobipy")
    assert check("uses_requested_api", make_sample(problem, code=code, api="gurobipy")).outcome == Outcome.PASS
    bad = check("uses_requested_api", make_sample(problem, code=code, api="pyomo"))
    assert bad.outcome == Outcome.FAIL and bad.evidence["solver_imports"] == ["gurobipy"]
    assert check("uses_requested_api", make_sample(problem, code=code, api="")).outcome == Outcome.SKIP


def test_response_format(problem) -> None:  # noqa: ANN001
    assert check("response_format", make_sample(problem, response=FENCED, code="")).outcome == Outcome.PASS
    bare = check("response_format", make_sample(problem, response="```python\nimport gurobipy\n```\n"))
    assert bare.outcome == Outcome.FAIL and "reasoning" in bare.message
    needs = check("response_format", make_sample(problem, response=FENCED), headings=["## Variables"])
    assert needs.outcome == Outcome.FAIL


def test_cot_consistent(problem) -> None:  # noqa: ANN001
    n = len(problem.ir.variables)
    agree = f"We maximize total profit using {n} variables.\n```python\nimport gurobipy\n```"
    assert check("cot_consistent", make_sample(problem, response=agree)).outcome == Outcome.PASS
    wrong_sense = check("cot_consistent", make_sample(problem, response="We minimize the total cost."))
    assert wrong_sense.outcome == Outcome.FAIL and "minimize" in wrong_sense.message
    wrong_count = check("cot_consistent", make_sample(problem, response=f"We maximise with {n + 3} variables."))
    assert wrong_count.outcome == Outcome.FAIL
    integer = check("cot_consistent", make_sample(problem, response="Each quantity is a binary choice."))
    assert integer.outcome == Outcome.FAIL  # the LP has no integer variables


def test_sanity(problem) -> None:  # noqa: ANN001
    assert check("sanity", make_sample(problem, response=FENCED)).outcome == Outcome.PASS
    for bad in (FENCED + "<|im_end|>", FENCED.replace("m.optimize()", "# TODO: solve"), "短" * 200 + FENCED, "x"):
        assert check("sanity", make_sample(problem, response=bad)).outcome == Outcome.FAIL, bad[:30]


def test_partial_or_unreadable_captured_models_are_skipped_not_judged(problem) -> None:  # noqa: ANN001
    """Lazy constraints from callbacks never reach the captured model, and indicator / quadratic-constraint
    sections are beyond the reader: comparing such a model would accuse a correct program, so both skip."""
    callback_code = "m.Params.LazyConstraints = 1\nm.optimize(subtour_cb)\n"
    for name in ("cross_solver", "structurally_equivalent"):
        v = check(name, make_sample(problem, code=callback_code))
        assert v.outcome == Outcome.SKIP and "callbacks" in v.message
    mps = problem.ir.to_mps().replace("ENDATA", "INDICATORS\n IF capacity_Flour make_Bread 1\nENDATA")
    with_ind = make_sample(problem, solves=(reference_solve(problem, model_mps=mps),))
    for name in ("cross_solver", "structurally_equivalent"):
        v = check(name, with_ind)
        assert v.outcome == Outcome.SKIP and "INDICATORS" in v.message


def test_licence_limits_are_not_held_against_the_program(problem) -> None:  # noqa: ANN001
    from contracts.engine import INFRA_ERROR

    s = make_sample(problem, code="import gurobipy\n", solves=(), status=ExecStatus.LICENSE_LIMIT)
    assert check("executes", s).outcome == Outcome.SKIP
    report = run_suite(Suite.of("s", "executes", "solve_called"), [s])
    assert report.results[0].status == INFRA_ERROR and report.summary()["rejected"] == 0
