"""No-solution claims re-checked both ways (solvers/sandbox/verify/nosolution.py): where HiGHS's re-solve settles
infeasible vs unbounded against the solver's claim, the disagreement is recorded, the record's and the execution's
status follow the evidence and the solver's own claim is kept beside it (``SolveCall.claimed_status``, stored)."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Pool, Program, SandboxConfig
from solvers.sandbox.verify import verify_solves

CONFIG = SandboxConfig(timeout_s=30, memory_mb=1024, preload=("ortools",))

# GLOP answers INFEASIBLE for an LP that is feasible and unbounded (no constraints at all)
GLOP_UNBOUNDED = """from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, s.infinity(), "x")
s.Maximize(x)
print(s.Solve())
"""
# The reverse: CBC answers UNBOUNDED for a MIP with no integer point (2y = 1), whose relaxation is unbounded in x
CBC_INFEASIBLE = """from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("CBC")
x = s.NumVar(0, s.infinity(), "x")
y = s.IntVar(0, 10, "y")
s.Add(2 * y == 1)
s.Maximize(x)
print(s.Solve())
"""
# Agreement: an infeasible LP claimed infeasible stays as it is
GLOP_INFEASIBLE = """from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, 1, "x")
s.Add(x >= 2)
s.Maximize(x)
print(s.Solve())
"""
CASES = {  # program -> (the solver's claim, the evidence, the execution's status)
    "glop-unbounded": (GLOP_UNBOUNDED, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED, ExecStatus.SOLVER_UNBOUNDED),
    "cbc-infeasible": (CBC_INFEASIBLE, SolveStatus.UNBOUNDED, SolveStatus.INFEASIBLE, ExecStatus.SOLVER_INFEASIBLE),
    "glop-infeasible": (GLOP_INFEASIBLE, SolveStatus.INFEASIBLE, SolveStatus.INFEASIBLE,
                        ExecStatus.SOLVER_INFEASIBLE),
}


@pytest.fixture(scope="module")
def runs() -> dict:
    pool = Pool(CONFIG, 1)
    try:
        return {name: pool.run(Program(program_id=name, code=code)) for name, (code, *_) in CASES.items()}
    finally:
        pool.close()


@pytest.mark.parametrize("name", list(CASES))
def test_the_status_follows_the_evidence_and_keeps_the_claim(runs: dict, name: str) -> None:
    _, claim, evidence, status = CASES[name]
    e = runs[name]
    assert e.status == status, (name, e.error, e.stderr[-400:])
    [solve] = e.solves
    assert solve.status == evidence and solve.verification == "re-solved", name
    # the claim is kept beside the evidence where they differ, and only there
    assert solve.claimed_status == (claim if claim != evidence else None), name
    if claim != evidence:
        assert f"the solver claimed {claim.value}" in e.error, e.error


def test_a_forged_claimed_status_is_dropped() -> None:
    """``claimed_status`` is set by the parent's re-solve only: a record that brings its own loses it."""
    record = {"status": "optimal", "objective": 1.0, "bound": None, "solution": {}, "model_mps": None,
              "solver": "x", "api": "highspy", "claimed_status": "infeasible"}
    verify_solves([record])
    assert "claimed_status" not in record


def test_the_claim_survives_the_store(runs: dict, tmp_path) -> None:  # noqa: ANN001
    from flywheel.store import Store
    from flywheel.store.rows import execution_from_rows, execution_row, solve_rows

    got = runs
    with Store.open(tmp_path / "store") as st:
        st.write("executions", 0, [execution_row(k, e) for k, e in got.items()])
        st.write("solves", 0, [r for k, e in got.items() for r in solve_rows(k, e)])
        rows = {r["attempt_id"]: r for r in st.query("SELECT * FROM executions").to_pylist()}
        solves = st.query("SELECT * FROM solves").to_pylist()
    back = {k: execution_from_rows(rows[k], [s for s in solves if s["attempt_id"] == k]) for k in got}
    for k, e in got.items():
        assert [(s.status, s.claimed_status) for s in back[k].solves] == [(s.status, s.claimed_status)
                                                                          for s in e.solves]
    old = {key: value for key, value in solves[0].items() if key != "claimed_status"}  # a part from before the column
    assert execution_from_rows(rows[old["attempt_id"]], [old]).solves[0].claimed_status is None
