"""Capture fidelity: every solver API x {optimal, infeasible} gives the right normalised record, never stdout's word.

One tiny model everywhere: max 3x + 2y, x + y <= 5, 0 <= x <= 4, y integer in [0, 3] (optimum 14 at x=4, y=1);
the infeasible variant adds x + y >= 8.
"""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Program, SandboxConfig, run_batch

PROGRAMS = {
    "gurobipy": """
import gurobipy as gp
m = gp.Model()
x = m.addVar(ub=4, name="x"); y = m.addVar(vtype=gp.GRB.INTEGER, ub=3, name="y")
m.setObjective(3*x + 2*y, gp.GRB.MAXIMIZE)
m.addConstr(x + y <= 5, name="c")
{infeasible}m.addConstr(x + y >= 8, name="bad")
m.optimize()
""",
    "pyomo": """
import pyomo.environ as pe
m = pe.ConcreteModel()
m.x = pe.Var(bounds=(0, 4)); m.y = pe.Var(within=pe.Integers, bounds=(0, 3))
m.obj = pe.Objective(expr=3*m.x + 2*m.y, sense=pe.maximize)
m.c = pe.Constraint(expr=m.x + m.y <= 5)
{infeasible}m.bad = pe.Constraint(expr=m.x + m.y >= 8)
pe.SolverFactory("highs").solve(m)
""",
    "ortools-scip": """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("SCIP")
x = s.NumVar(0, 4, "x"); y = s.IntVar(0, 3, "y")
s.Add(x + y <= 5)
{infeasible}s.Add(x + y >= 8)
s.Maximize(3*x + 2*y)
s.Solve()
""",
    "ortools-glop": """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, 4, "x"); y = s.NumVar(0, 1, "y")
s.Add(x + y <= 5)
{infeasible}s.Add(x + y >= 8)
s.Maximize(3*x + 2*y)
s.Solve()
""",
    "cp-sat": """
from ortools.sat.python import cp_model
m = cp_model.CpModel()
x = m.NewIntVar(0, 4, "x"); y = m.NewIntVar(0, 3, "y")
m.Add(x + y <= 5)
{infeasible}m.Add(x + y >= 8)
m.Maximize(3*x + 2*y)
cp_model.CpSolver().Solve(m)
""",
    "mathopt": """
from ortools.math_opt.python import mathopt
m = mathopt.Model()
x = m.add_variable(lb=0, ub=4, name="x"); y = m.add_integer_variable(lb=0, ub=3, name="y")
m.add_linear_constraint(x + y <= 5)
{infeasible}m.add_linear_constraint(x + y >= 8)
m.maximize(3*x + 2*y)
mathopt.solve(m, mathopt.SolverType.GSCIP)
""",
    "model_builder": """
from ortools.linear_solver.python import model_builder as mb
m = mb.Model()
x = m.new_num_var(0, 4, "x"); y = m.new_int_var(0, 3, "y")
m.add(x + y <= 5)
{infeasible}m.add(x + y >= 8)
m.maximize(3*x + 2*y)
mb.Solver("scip").solve(m)
""",
    "coptpy": """
import coptpy as cp
env = cp.Envr(); m = env.createModel("t")
x = m.addVar(lb=0, ub=4, name="x"); y = m.addVar(lb=0, ub=3, vtype=cp.COPT.INTEGER, name="y")
m.addConstr(x + y <= 5)
{infeasible}m.addConstr(x + y >= 8)
m.setObjective(3*x + 2*y, cp.COPT.MAXIMIZE)
m.solve()
""",
    "docplex": """
from docplex.mp.model import Model
m = Model()
x = m.continuous_var(0, 4, name="x"); y = m.integer_var(0, 3, name="y")
m.add_constraint(x + y <= 5)
{infeasible}m.add_constraint(x + y >= 8)
m.maximize(3*x + 2*y)
m.solve()
""",
    "highspy": """
import highspy
h = highspy.Highs(); h.setOptionValue("output_flag", False)
x = h.addVariable(0, 4, name="x"); y = h.addIntegral(0, 3, name="y")
h.addConstr(x + y <= 5)
{infeasible}h.addConstr(x + y >= 8)
h.maximize(3*x + 2*y)
""",
    "pulp": """
import pulp
p = pulp.LpProblem("t", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 4); y = pulp.LpVariable("y", 0, 3, cat="Integer")
p += 3*x + 2*y
p += x + y <= 5
{infeasible}p += x + y >= 8
p.solve(pulp.PULP_CBC_CMD(msg=0))
""",
}
# prob.solve() with no solver: PuLP's default CBC object, made when pulp is imported (before the fork, in a warm worker)
PROGRAMS["pulp-default"] = PROGRAMS["pulp"].replace("p.solve(pulp.PULP_CBC_CMD(msg=0))", "p.solve()")
API_OF = {"ortools-scip": "ortools", "ortools-glop": "ortools", "cp-sat": "ortools", "mathopt": "ortools",
          "model_builder": "ortools", "pulp-default": "pulp"}
# The LP variant (glop) has y continuous in [0, 1]: optimum 3*4 + 2*1 = 14 as well.
OPTIMUM = 14.0
# Exports we can read back as MPS: every API with a writer (CP-SAT has none; MathOpt's columns are named by id,
# checked in test_captured_models_keep_every_digit).
HAS_MPS = {"gurobipy", "pyomo", "ortools-scip", "ortools-glop", "model_builder", "coptpy", "docplex", "highspy",
           "pulp"}


@pytest.fixture(scope="module")
def executions() -> dict[tuple[str, bool], object]:
    progs = []
    for name, template in PROGRAMS.items():
        for infeasible in (False, True):
            code = template.replace("{infeasible}", "" if infeasible else "# ") + "print('Optimal objective: 42')\n"
            progs.append(Program(program_id=f"{name}-{infeasible}", code=code))
    results = list(run_batch(progs, SandboxConfig(timeout_s=60)))
    return {(p.program_id.rsplit("-", 1)[0], p.program_id.endswith("True")): e for p, e in
            zip(progs, results, strict=True)}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_optimal_solve_is_captured(executions: dict, name: str) -> None:
    e = executions[(name, False)]
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    assert len(e.solves) == 1  # nested solver calls (pyomo -> highspy) are recorded once
    s = e.solves[0]
    assert s.api == API_OF.get(name, name)
    assert s.status == SolveStatus.OPTIMAL
    # 1e-6: a 2-variable model solved to optimality; any solver returns 14 up to its feasibility tolerance.
    assert s.objective == pytest.approx(OPTIMUM, rel=1e-6)
    assert s.bound == pytest.approx(OPTIMUM, rel=1e-6) or s.bound is None
    assert s.sense == "maximize"
    assert s.n_vars == 2 and s.n_constraints == 1
    assert s.n_int_vars == (0 if name == "ortools-glop" else 2 if name == "cp-sat" else 1)
    assert sorted(s.solution) == ["x", "y"] or name == "pyomo" and sorted(s.solution) == ["x", "y"]
    assert s.solution["x"] == pytest.approx(4.0, abs=1e-6)
    assert s.solver and s.solver_version
    if name in HAS_MPS:
        assert s.model_mps and "ROWS" in s.model_mps and "COLUMNS" in s.model_mps
    assert "Optimal objective: 42" in e.stdout  # printed, and ignored


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_infeasible_solve_is_captured(executions: dict, name: str) -> None:
    e = executions[(name, True)]
    assert e.status == ExecStatus.SOLVER_INFEASIBLE, (e.error, e.stderr[-500:])
    s = e.solves[-1]
    assert s.status in (SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD)
    assert s.objective is None and s.solution == {}


def test_mps_round_trips_through_highs(executions: dict) -> None:
    """The captured MPS is the model the program built: HiGHS re-solves it to the same optimum."""
    import tempfile

    import highspy

    for name in sorted(HAS_MPS):
        mps = executions[(name, False)].solves[0].model_mps
        with tempfile.NamedTemporaryFile("w", suffix=".mps", delete=False) as fh:
            fh.write(mps)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)  # HiGHS's thread pool is per process: the project's other runs use one thread
        h.readModel(fh.name)
        h.run()
        # Some writers store max as min of the negation; compare magnitudes. 1e-6: as above.
        assert abs(h.getInfo().objective_function_value) == pytest.approx(OPTIMUM, rel=1e-6), name


def test_mps_export_keeps_only_what_a_writer_finished(tmp_path) -> None:
    """A writer that raises half way leaves no model and no file; a writer that names its own file is read."""
    from solvers.sandbox import capture

    def half_written(path: str) -> None:
        with open(path, "w") as fh:
            fh.write("NAME broken\nROWS\n")
        raise RuntimeError("general constraints cannot be written as MPS")

    def own_name(path: str) -> str:  # docplex appends its own suffix and returns the path it wrote
        with open(path + ".x.mps", "w") as fh:
            fh.write("NAME m\n")
        return path + ".x.mps"

    capture.configure(None, str(tmp_path), True, 100)
    try:
        assert capture.export_mps(half_written) is None
        assert capture.export_mps(own_name) == "NAME m\n"
        assert list(tmp_path.iterdir()) == []  # scratch files are removed either way
        capture.configure(None, str(tmp_path), False, 100)
        assert capture.export_mps(own_name) is None and list(tmp_path.iterdir()) == []  # export disabled
    finally:
        capture.configure(None, None, True, 100_000)


# Names with spaces ("Old Mill", a real site name in ambulance_location): free-format MPS splits such a name into two
# fields. HiGHS, OR-Tools and COPT write each space as "_", Gurobi drops every name, docplex wrote the space as it is
# (the capture now rewrites it, and a name that then collides gets "~2"). Either way the parent must read the model the
# program built, and check the captured solution against it where the names allow (Gurobi's generic names do not:
# "unverified", never "refuted"). min 94 a + 115 b + 156 c, pairwise covers: optimum 209 (a and b).
SPACED = {
    "docplex": """
from docplex.mp.model import Model
m = Model()
a = m.binary_var(name="open Old Mill"); b = m.binary_var(name="open  Hill top"); c = m.binary_var(name="open_Old_Mill")
m.add_constraint(a + b >= 1, ctname="cover Abbey"); m.add_constraint(b + c >= 1, ctname="cover Old Town")
m.add_constraint(a + c >= 1, ctname="cover_Abbey")
m.minimize(94 * a + 115 * b + 156 * c)
m.solve()
""",
    "highspy": """
import highspy
h = highspy.Highs(); h.setOptionValue("output_flag", False)
a = h.addBinary(obj=94, name="open Old Mill"); b = h.addBinary(obj=115, name="open  Hill top")
c = h.addBinary(obj=156, name="open Cedars")
h.addConstr(a + b >= 1, name="cover Abbey"); h.addConstr(b + c >= 1, name="cover Old Town")
h.addConstr(a + c >= 1, name="cover_Abbey")
h.run()
""",
    "gurobipy": """
import gurobipy as gp
m = gp.Model()
a = m.addVar(vtype="B", obj=94, name="open Old Mill"); b = m.addVar(vtype="B", obj=115, name="open  Hill top")
c = m.addVar(vtype="B", obj=156, name="open Cedars")
m.addConstr(a + b >= 1, name="cover Abbey"); m.addConstr(b + c >= 1, name="cover Old Town")
m.addConstr(a + c >= 1, name="cover_Abbey")
m.optimize()
""",
    "ortools-scip": """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("SCIP")
a = s.BoolVar("open Old Mill"); b = s.BoolVar("open  Hill top"); c = s.BoolVar("open Cedars")
s.Add(a + b >= 1, "cover Abbey"); s.Add(b + c >= 1, "cover Old Town"); s.Add(a + c >= 1, "cover_Abbey")
s.Minimize(94 * a + 115 * b + 156 * c)
s.Solve()
""",
}


def test_names_with_spaces_are_read_and_verified() -> None:
    from solvers.sandbox.mps import read

    progs = [Program(program_id=name, code=code) for name, code in SPACED.items()]
    for p, e in zip(progs, run_batch(progs, SandboxConfig(timeout_s=60)), strict=True):
        assert e.status == ExecStatus.OK, (p.program_id, e.error, e.stderr[-500:])
        s = e.solves[0]
        assert s.objective == pytest.approx(209.0, rel=1e-9), p.program_id
        model = read(s.model_mps)
        assert model is not None and len(model.col_names) == 3 and len(model.row_names) == 3, p.program_id
        assert len(set(model.col_names)) == 3 and not any(" " in n for n in model.col_names), model.col_names
        # the parent checked the program's own solution (named with spaces) against the model it read
        want = "unverified" if p.program_id == "gurobipy" else "verified"
        assert s.verification == want, (p.program_id, s.verification, model.col_names)


def test_respace_rewrites_every_spaced_name_one_way() -> None:
    from solvers.mps_names import respace

    text = "ROWS\n N  obj\n G  a b\nCOLUMNS\n    a b  obj  1\n    a b  a b  1\n"
    # "a b" as a column and as a row: one name wherever it stands
    assert respace(text, ["a b"], ["a b"]) == text.replace("a b", "a_b")
    # another name already written "a_b": "a b" becomes "a_b~2", as a column and as a row alike
    assert respace(text, ["a b", "a_b"], ["a b"]) == text.replace("a b", "a_b~2")
    long = "    Old Mill East  obj  1\n    Old Mill  obj  2\n"
    assert respace(long, ["Old Mill East", "Old Mill"], []) == "    Old_Mill_East  obj  1\n    Old_Mill  obj  2\n"


# Numbers a program states with more digits than 6: the captured model must carry them as the program built them.
# OR-Tools' own MPS writers print 6 significant digits (1/12 -> 0.0833333), so the parent read a different model and
# called an honest program with a cost of 123.45678912345 tampered (its objective re-check is relative 1e-6).
COST, COEF, RHS = 123.45678912345, 1.0000051, 5.00000123456789


def _precise(template: str) -> str:
    import re

    code = template.replace("{infeasible}", "# ")
    code = re.sub(r"(?<![\d.])3\*", f"{COST!r}*", code, count=1)  # the objective's 3*x
    return re.sub(r"\+ (m\.)?y <= 5\b", rf"+ {COEF!r}*\1y <= {RHS!r}", code, count=1)  # x + y <= 5


@pytest.mark.parametrize("name", sorted(HAS_MPS | {"mathopt"}))
def test_captured_models_keep_every_digit(name: str) -> None:
    from solvers.sandbox.mps import read

    code = _precise(PROGRAMS[name])
    assert repr(COST) in code and repr(COEF) in code and repr(RHS) in code, code
    (e,) = run_batch([Program(program_id=name, code=code)], SandboxConfig(timeout_s=60))
    assert e.status == ExecStatus.OK, (e.error, e.stderr[-500:])
    s = e.solves[0]
    assert s.verification == "verified", s.verification
    model = read(s.model_mps)
    assert model is not None
    # Exact: a writer that keeps every digit writes the shortest repr (or 17 digits), which reads back bit for bit.
    # PuLP writes 12 significant digits, but CBC solves the file PuLP wrote, so that file is the model solved: 1e-11.
    # The sign of the costs follows the writer's sense (some write a maximisation as a minimisation of -c).
    rel = 1e-11 if name == "pulp" else 0.0
    assert [abs(c) for c in model.col_cost] == pytest.approx([COST, 2.0], rel=rel), model.col_cost
    assert COEF == pytest.approx(max(a for col in model.columns for _, a in col), rel=rel), model.columns
    assert RHS == pytest.approx(model.row_upper[0], rel=rel), model.row_upper


def test_ortools_mps_writer_constructs_read_back_by_highs() -> None:
    """Every bound and row kind ``_write_mps`` writes means what the model said, read by HiGHS and by the fast
    reader alike: ranged, free, equality rows; fixed, free, minus-infinity, negative-upper and unbounded integer
    columns; names with spaces and repeated names; a column in no row."""
    from solvers.sandbox.capture import write_mps as _write_mps
    from solvers.sandbox.mps import from_highs, parse

    inf = float("inf")
    columns = [("x y", -inf, inf, False, 1 / 3), ("x", 2.5, 2.5, False, 0.0), ("x", -inf, -1 / 7, False, 0.0),
               ("n", 0.0, inf, True, -2.0), ("k", -3.0, 5.0, True, 0.0), ("z", 0.0, -1.0, False, 0.0),
               ("lonely", 1.0, inf, False, 0.0)]
    rows = [("r a", 1.0, 4.0), ("free", -inf, inf), ("eq", 0.1, 0.1), ("le", -inf, 1e-7), ("COST", 2.0, inf)]
    by_column = {0: [(0, 1.0), (1, 2.0), (2, 1 / 12)], 1: [(2, -1.0)], 2: [(3, 3.0)], 3: [(0, 1.0), (4, 1.0)],
                 4: [(3, -1.0), (4, 2.0)], 5: [(2, 1.0)]}
    entries = sorted((i, j, a) for j, e in by_column.items() for i, a in e)  # (row, column, coefficient)
    text = _write_mps(True, 0.25, columns, entries, rows)
    # a free row is an N row (OR-Tools writes it so): HiGHS drops it; the fast reader leaves such a file to HiGHS
    assert parse(text) is None
    dropped = _write_mps(True, 0.25, columns, [(i - (i > 1), j, a) for i, j, a in entries if i != 1],
                         [r for r in rows if r[0] != "free"])
    kept = [r for r in rows if r[0] != "free"]
    for m in (from_highs(text), parse(dropped), from_highs(dropped)):
        assert m is not None
        assert m.maximize and m.offset == 0.25
        assert m.col_names == ["x_y", "x", "x~2", "n", "k", "z", "lonely"]
        assert m.col_lower == [-inf, 2.5, -inf, 0.0, -3.0, 0.0, 1.0]
        assert m.col_upper == [inf, 2.5, -1 / 7, inf, 5.0, -1.0, inf]
        assert m.integer == [False, False, False, True, True, False, False]
        assert m.col_cost == [1 / 3, 0.0, 0.0, -2.0, 0.0, 0.0, 0.0]
        assert m.row_names == ["r_a", "eq", "le", "COST~2"]
        assert m.row_lower == [r[1] for r in kept] and m.row_upper == [r[2] for r in kept]
        assert m.columns[0] == [(0, 1.0), (1, 1 / 12)] and m.columns[6] == []
