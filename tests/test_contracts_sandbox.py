"""The policy suite end to end with the real sandbox: an answer-blind repair makes a broken response run and pass,
and a program that prints a guessed answer without solving is rejected."""

from __future__ import annotations

import pytest

from contracts.engine import ACCEPTED, REJECTED, run_suite
from contracts.suites import load_suite
from contracts.testing import make_sample
from flywheel.generators.testing import problem_with_truth
from solvers.render import render


@pytest.mark.slow
def test_policy_suite_repairs_then_runs_in_the_sandbox() -> None:
    p = problem_with_truth("production_planning", 4)
    code = render(p.ir, "gurobipy")
    # Break the program the way models do: no gurobipy import line, no optimize() call, wrapped in markdown.
    broken = code.replace("import gurobipy as gp\n", "").replace("m.optimize()\n", "")
    assert broken != code and "gp.Model" in broken
    response = (f"We maximise total profit with {len(p.ir.variables)} variables.\n\n```python\n{broken}```\n")
    fixable = make_sample(p, response=response, executed=False, attempt_id="fixable")
    guess = make_sample(p, response="The best plan earns a lot.\n```python\nimport gurobipy as gp\n"
                                    f"print('Optimal objective:', {p.ground_truth.objective + 1})\n```\n",
                        executed=False, attempt_id="guess")
    report = run_suite(load_suite("policy"), [fixable, guess])
    fixed, guessed = report.results
    kinds = [r.kind for r in fixed.repairs]
    # extracting the fenced program is not a repair (every sample's code is its extracted program); the rest are
    assert kinds == ["fix_import_aliases", "add_solve_call", "inject_solver_params"], kinds
    assert fixed.status == ACCEPTED, [(v.contract, v.outcome, v.message) for v in fixed.verdicts]
    obj = next(v for v in fixed.verdicts if v.contract == "objective_matches")
    assert obj.outcome == "pass"
    assert guessed.status == REJECTED and guessed.rejected_by == "solve_called"
    s = report.summary()
    assert s["accepted"] == 1 and s["accepted_without_repairs"] == 0 and s["repaired"] == 1
