"""The parent's re-check of captured solves (solvers/sandbox/verify/), through real forked sandbox runs.

For each check: an honest program passes (never a false ``tampered``), and a program that forges what its solver
concluded -- by poisoning what the capture reads inside its own interpreter -- ends ``tampered`` for the reason that
check gives. Checks: the model each hook promises (OR-Tools' linear solver, linear pyomo, MathOpt, CP-SAT's compact
model), CP-SAT's constraints and objective, and re-solved "infeasible" / "unbounded" claims. Plus exact unit cases of
the CP-SAT checker and the doubt rules, which need no sandbox.
"""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus
from solvers.sandbox import Pool, Program, SandboxConfig
from solvers.sandbox.verify import CP_MAX_ITEMS, _objective_rows, check_cp, verify_solves

CONFIG = SandboxConfig(timeout_s=30, memory_mb=1024, preload=("gurobipy", "highspy"))

LP = """from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("SCIP")
x = s.NumVar(0, 4, "x"); y = s.IntVar(0, 3, "y")
s.Add(x + y <= 5)
s.Maximize(3*x + 2*y)
s.Solve()
"""
CP = """from ortools.sat.python import cp_model
m = cp_model.CpModel()
x = m.NewIntVar(0, 4, "x"); y = m.NewIntVar(0, 3, "y")
m.Add(x + y <= 5)
m.Maximize(3*x + 2*y)
s = cp_model.CpSolver(); s.parameters.num_workers = 1
s.Solve(m)
"""
# all_different, an enforced linear, a Boolean clause and a max equality: the optimum is x, y, z = 0, 1, 2 (8)
CP_GLOBAL = """from ortools.sat.python import cp_model
m = cp_model.CpModel()
x, y, z = (m.NewIntVar(0, 2, n) for n in "xyz")
b = m.NewBoolVar("b")
m.AddAllDifferent([x, y, z])
m.Add(x + y >= 1).OnlyEnforceIf(b)
m.AddBoolOr([b, b.Not()])
t = m.NewIntVar(0, 2, "t")
m.AddMaxEquality(t, [x, y, z])
m.Maximize(x + 2*y + 3*z)
s = cp_model.CpSolver(); s.parameters.num_workers = 1
s.Solve(m)
"""
PYOMO = """import pyomo.environ as pe
m = pe.ConcreteModel()
m.x = pe.Var(bounds=(0, 4)); m.y = pe.Var(within=pe.Integers, bounds=(0, 3))
m.obj = pe.Objective(expr=3*m.x + 2*m.y, sense=pe.maximize)
m.c = pe.Constraint(expr=m.x + m.y <= 5)
pe.SolverFactory("highs").solve(m)
"""
# x["a b"] and x["a_b"] share pyomo's symbolic label x(a_b): pyomo refuses to write that MPS
PYOMO_LABELS = """import pyomo.environ as pe
m = pe.ConcreteModel()
m.x = pe.Var(["a b", "a_b"], bounds=(0, 4)); m.y = pe.Var(within=pe.Integers, bounds=(0, 3))
m.obj = pe.Objective(expr=2*m.x["a b"] + m.x["a_b"] + 2*m.y, sense=pe.maximize)
m.c = pe.Constraint(expr=m.x["a b"] + m.y <= 5)
pe.SolverFactory("highs").solve(m)
"""
MATHOPT = """from ortools.math_opt.python import mathopt
m = mathopt.Model()
x = m.add_variable(lb=0, ub=4, name="x"); y = m.add_integer_variable(lb=0, ub=3, name="y")
m.add_linear_constraint(x + y <= 5)
m.maximize(3*x + 2*y)
mathopt.solve(m, mathopt.SolverType.GSCIP)
"""
MODEL_BUILDER = """from ortools.linear_solver.python import model_builder as mb
m = mb.Model()
x = m.new_num_var(0, 4, "x"); y = m.new_int_var(0, 3, "y")
m.add(x + y <= 5)
m.maximize(3*x + 2*y)
mb.Solver("scip").solve(m)
"""
GUROBI = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=4, name="x"); y = m.addVar(vtype="I", ub=3, name="y")
m.setObjective(3*x + 2*y, gp.GRB.MAXIMIZE)
m.addConstr(x + y <= 5)
m.optimize()
"""
# Swap the hook's describer in the wrapper's closure for one that drops what the parent checks.
SWAP_DESCRIBER = """
cells = [c for c in {target}.__closure__ if getattr(c.cell_contents, '__name__', '') == '{describer}']
real = cells[0].cell_contents
def fake(args, kwargs, result):
    d = real(args, kwargs, result)
    d.objective, d.model_mps, d.check = 42.0, None, None
    return d
cells[0].cell_contents = fake
"""

# name -> (program, expected status, a phrase the reason must contain ('' for a non-tampered status))
CASES = {
    # OR-Tools' linear solver always exports its model
    "lp_honest": (LP, ExecStatus.OK, ""),
    # ... from exporters bound before the program runs (replacing them changes nothing)
    "lp_export_poisoned": ("from ortools.linear_solver import pywraplp\n"
                           "pywraplp.Solver.ExportModelAsMpsFormat = lambda self, *a: ''\n"
                           "pywraplp.Solver.ExportModelToProto = lambda self, *a: None\n"
                           "pywraplp.Objective.Value = lambda self: 42.0\n" + LP, ExecStatus.TAMPERED,
                           "claimed objective 42"),
    # CP-SAT: the compact model, its constraints, its objective
    "cp_honest": (CP, ExecStatus.OK, ""),
    "cp_global_honest": (CP_GLOBAL, ExecStatus.OK, ""),
    "cp_objective_forged": ("from ortools.sat.python import cp_model\n"
                            "cp_model.CpSolver.ObjectiveValue = lambda self: 42.0\n" + CP, ExecStatus.TAMPERED,
                            "claimed objective 42"),
    # a point that breaks x + y <= 5, with the objective it would give (3*4 + 2*3 = 18)
    "cp_point_forged": ("from ortools.sat.python import cp_model\n"
                        "class R:\n    solution = [4, 3]\n"
                        "cp_model.CpSolver.ResponseProto = lambda self: R()\n"
                        "cp_model.CpSolver.ObjectiveValue = lambda self: 18.0\n" + CP, ExecStatus.TAMPERED,
                        "(lin) activity 7"),
    # a point that keeps every linear constraint but repeats a value (x = y = z = 2: 12), against all_different
    "cp_alldiff_forged": ("from ortools.sat.python import cp_model\n"
                          "class R:\n    solution = [2, 2, 2, 1, 2]\n"
                          "cp_model.CpSolver.ResponseProto = lambda self: R()\n"
                          "cp_model.CpSolver.ObjectiveValue = lambda self: 12.0\n" + CP_GLOBAL, ExecStatus.TAMPERED,
                          "(alldiff)"),
    "cp_model_dropped": ("from ortools.sat.python import cp_model\n"
                         + SWAP_DESCRIBER.format(target="cp_model.CpSolver.Solve", describer="_describe_cp") + CP,
                         ExecStatus.TAMPERED, "without the model its capture sends"),
    # pyomo: a linear model always exports (numeric labels when symbolic ones collide)
    "pyomo_honest": (PYOMO, ExecStatus.OK, ""),
    "pyomo_labels_honest": (PYOMO_LABELS, ExecStatus.OK, ""),
    # a persistent solver: solve() takes no model (set_instance gave it); the capture found none and failed
    "pyomo_persistent_honest": (PYOMO.replace('pe.SolverFactory("highs").solve(m)',
                                              's = pe.SolverFactory("gurobi_persistent"); s.set_instance(m); s.solve()'),
                                ExecStatus.OK, ""),
    "pyomo_persistent_forged": ("import pyomo.environ\npyomo.environ.value = lambda *a, **k: 42.0\n" + PYOMO.replace(
        'pe.SolverFactory("highs").solve(m)', 's = pe.SolverFactory("gurobi_persistent"); s.set_instance(m); s.solve()'),
        ExecStatus.TAMPERED, "claimed objective 42"),
    "pyomo_labels_forged": ("import pyomo.environ\npyomo.environ.value = lambda *a, **k: 42.0\n" + PYOMO_LABELS,
                            ExecStatus.TAMPERED, "claimed objective 42"),
    "pyomo_writer_poisoned": ("import pyomo.environ\nimport pyomo.repn.plugins.mps as mps\n"
                              "mps.ProblemWriter_mps.__call__ = lambda *a, **k: 1 / 0\n"
                              "pyomo.environ.value = lambda *a, **k: 42.0\n" + PYOMO, ExecStatus.TAMPERED,
                              "without the model its capture always exports"),
    # MathOpt: written from its proto, exported by a method bound before the program runs
    "mathopt_honest": (MATHOPT, ExecStatus.OK, ""),
    "mathopt_objective_forged": ("from ortools.math_opt.python import mathopt\n"
                                 "mathopt.SolveResult.objective_value = lambda self: 42.0\n" + MATHOPT,
                                 ExecStatus.TAMPERED, "claimed objective 42"),
    "mathopt_model_dropped": ("import ortools.math_opt.python.mathopt as mo\n"
                              + SWAP_DESCRIBER.format(target="mo.solve", describer="_describe_mathopt") + MATHOPT,
                              ExecStatus.TAMPERED, "without the model its capture always exports"),
    # model_builder: written from its proto (exported by a method bound before the program runs); a model with an
    # indicator constraint has no MPS and says so ("linear": false), which is no forgery
    "model_builder_honest": (MODEL_BUILDER, ExecStatus.OK, ""),
    "model_builder_indicator_honest": (MODEL_BUILDER.replace("m.add(x + y <= 5)", "m.add(x + y <= 5)\n"
                                                             "z = m.new_bool_var('z'); m.add_enforced(y >= 1, z, True)"),
                                       ExecStatus.OK, ""),
    "model_builder_objective_forged": ("from ortools.linear_solver.python import model_builder as mb\n"
                                       "mb.Model.export_to_proto = lambda self: None\n"
                                       "mb.Solver.objective_value = property(lambda self: 42.0)\n" + MODEL_BUILDER,
                                       ExecStatus.TAMPERED, "claimed objective 42"),
    # no-solution claims re-solved by HiGHS: a feasible, bounded model said to be infeasible / unbounded
    "claims_infeasible": (GUROBI.replace("m = gp.Model()", "class M(gp.Model):\n    Status = 3\nm = M()"),
                          ExecStatus.TAMPERED, "claimed infeasible, but its own model has a finite optimum"),
    "claims_unbounded": (GUROBI.replace("m = gp.Model()", "class M(gp.Model):\n    Status = 5\nm = M()"),
                         ExecStatus.TAMPERED, "claimed unbounded, but its own model has a finite optimum"),
    "claims_inf_or_unbd": (GUROBI.replace("m = gp.Model()", "class M(gp.Model):\n    Status = 4\nm = M()"),
                           ExecStatus.TAMPERED, "claimed inf_or_unbd, but its own model has a finite optimum"),
    # honest no-solution claims: integer-infeasible only, unbounded, and one whose exported model is feasible
    "honest_integer_infeasible": (GUROBI.replace("m.optimize()", "m.addConstr(2*y == 1)\nm.optimize()"),
                                  ExecStatus.SOLVER_INFEASIBLE, ""),
    "honest_unbounded": (GUROBI.replace("ub=4, ", "").replace("m.addConstr(x + y <= 5)", "m.Params.DualReductions = 0"),
                         ExecStatus.SOLVER_UNBOUNDED, ""),
    # GLOP reports an unbounded LP as INFEASIBLE: feasible, but no finite optimum -- not a contradiction (never
    # tampered); the re-solve shows it unbounded, and the status follows that (tests/test_sandbox_resolve.py)
    "honest_glop_unbounded": (LP.replace('"SCIP"', '"GLOP"').replace("NumVar(0, 4,", "NumVar(0, s.infinity(),")
                              .replace("IntVar", "NumVar").replace("s.Add(x + y <= 5)", "s.Add(x - y >= 0)"),
                              ExecStatus.SOLVER_UNBOUNDED, "the solver claimed infeasible"),
    # lb 0 > ub -1: written as a negative UP bound, which MPS readers disagree on -- not re-solved
    "honest_negative_upper_bound": (GUROBI.replace("ub=4, ", "ub=-1, "), ExecStatus.SOLVER_INFEASIBLE, ""),
    # infeasible only through a lazy constraint the callback adds: the exported model is feasible -- not re-solved
    "honest_callback_infeasible": (GUROBI.replace("m.optimize()", """m.Params.LazyConstraints = 1
def cb(model, where):
    if where == gp.GRB.Callback.MIPSOL:
        model.cbLazy(x + y >= 8)
m.optimize(cb)"""), ExecStatus.SOLVER_INFEASIBLE, ""),
    # CPLEX told to cut off everything above -20 says "integer infeasible" for a model whose optimum is -14: the
    # capture marks the cutoff, so the claim is not re-solved (a minimisation: docplex writes a maximisation as
    # "minimise the negation" without OBJSENSE, which the re-solve leaves alone as ambiguous)
    "honest_cutoff_infeasible": ("""from docplex.mp.model import Model
m = Model()
x = m.continuous_var(0, 4, name="x"); y = m.integer_var(0, 3, name="y")
m.add_constraint(x + y <= 5)
m.minimize(-3*x - 2*y)
m.parameters.mip.tolerances.uppercutoff = -20
m.solve()
""", ExecStatus.SOLVER_INFEASIBLE, ""),
}


@pytest.fixture(scope="module")
def executions() -> dict[str, object]:
    pool = Pool(CONFIG, workers=2)
    try:
        names = sorted(CASES)
        results = pool.map([Program(program_id=n, code=CASES[n][0]) for n in names])
        return dict(zip(names, results, strict=True))
    finally:
        pool.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_check_passes_honest_programs_and_catches_its_forgery(executions: dict, case: str) -> None:
    _, status, phrase = CASES[case]
    e = executions[case]
    assert e.status == status, (case, e.status, e.error, e.stderr[-400:])
    assert phrase in e.error, (case, e.error)
    if status == ExecStatus.OK:
        assert e.objective == (8.0 if case == "cp_global_honest" else 14.0), (case, e.objective)
        assert len(e.solves) == 1  # the parent removed its check data: the record still validates


# ---- the CP-SAT checker, exactly -----------------------------------------------------------------------------

def _cp(cons: list, dom: list | None = None, obj: list | None = None, n: int = 3) -> dict:
    return {"names": ["a", "b", "c"][:n], "dom": dom or [[-10, 10]] * n, "cons": cons, "unchecked": {}, "obj": obj}


def _sol(*values: int) -> dict:
    return {name: float(v) for name, v in zip("abc", values, strict=False)}


def test_cp_checker_semantics() -> None:
    # enforcement: a violated linear only counts when every enforcement literal is true (c is the literal)
    enforced = _cp([["lin", [2], [0, 1], [1, 1], [0, 3]]], dom=[[-10, 10], [-10, 10], [0, 1]])
    assert check_cp(enforced, _sol(4, 4, 0), None)[0] == ""
    assert "activity 8" in check_cp(enforced, _sol(4, 4, 1), None)[0]
    negated = _cp([["lin", [-3], [0, 1], [1, 1], [0, 3]]], dom=[[-10, 10], [-10, 10], [0, 1]])  # NOT c
    assert check_cp(negated, _sol(4, 4, 1), None)[0] == "" and check_cp(negated, _sol(4, 4, 0), None)[0]
    # a domain with a hole: 0..2 or 5..6
    holes = _cp([], dom=[[0, 2, 5, 6]], n=1)
    assert check_cp(holes, _sol(5), None)[0] == "" and "outside its domain" in check_cp(holes, _sol(3), None)[0]
    # int_div rounds towards zero and int_mod takes the sign of the numerator (C++), unlike Python's // and %
    e = [[0], [1], 0]
    div = _cp([["div", [], [[2], [1], 0], [e, [[1], [1], 0]]]])
    assert check_cp(div, _sol(-7, 2, -3), None)[0] == ""  # -7 / 2 = -3 (Python: -4)
    mod = _cp([["mod", [], [[2], [1], 0], [e, [[1], [1], 0]]]])
    assert check_cp(mod, _sol(-7, 2, -1), None)[0] == ""  # -7 % 2 = -1 (Python: 1)
    assert check_cp(mod, _sol(-7, 2, 1), None)[0]
    # xor wants an odd count, exactly_one one true literal; element picks by index
    xor = _cp([["xor", [], [0, 1, 2]]], dom=[[0, 1]] * 3)
    assert check_cp(xor, _sol(1, 1, 1), None)[0] == "" and check_cp(xor, _sol(1, 1, 0), None)[0]
    one = _cp([["eo", [], [0, -2, 2]]], dom=[[0, 1]] * 3)  # a, NOT b, c
    assert check_cp(one, _sol(0, 1, 1), None)[0] == "" and check_cp(one, _sol(1, 0, 0), None)[0]
    elem = _cp([["elem", [], [[0], [1], 0], [[1], [1], 0], [[[], [], 7], [[], [], 9]]]], n=2)
    assert check_cp(elem, _sol(1, 9), None)[0] == "" and check_cp(elem, _sol(0, 9), None)[0]
    # the integer objective is scaling * (sum + offset): maximisation is stored negated with scaling -1
    objective = _cp([], obj=["int", [0, 1], [-3, -2], -5.0, -1.0], n=2)
    assert check_cp(objective, _sol(4, 1), 19.0)[0] == "" and "claimed objective 20" in check_cp(
        objective, _sol(4, 1), 20.0)[0]
    # a non-integer value cannot come from CP-SAT; a value the solution lacks (capped) makes it unverifiable
    assert "not an integer" in check_cp(holes, _sol(0.5), None)[0]
    assert check_cp(_cp([], n=2), {"a": 1.0}, None)[0] is None


def test_cp_checker_with_repeated_names_uses_positions() -> None:
    cp = {"names": ["v", "v"], "dom": [[0, 5], [0, 5]], "cons": [["lin", [], [0, 1], [1, 1], [0, 5]]],
          "unchecked": {"no_overlap": 1}, "x": [1, 4], "obj": None}
    assert check_cp(cp, {"v": 4.0}, None) == ("", 1)  # the name keeps the last value, as the capture's dict does
    assert "disagrees" in (check_cp(cp, {"v": 1.0}, None)[0] or "")
    assert "activity 6" in (check_cp(cp | {"x": [2, 4]}, {"v": 4.0}, None)[0] or "")


def test_cp_records_need_their_model_and_count_what_was_not_checked() -> None:
    base = {"api": "ortools", "solver": "cp-sat", "status": "optimal", "objective": 3.0, "bound": 3.0,
            "solution": {"a": 1.0, "b": 1.0}, "model_mps": None, "n_vars": 2, "n_constraints": 1}
    cp = _cp([["lin", [], [0, 1], [1, 1], [0, 2]]], obj=["int", [0, 1], [1, 2], 0.0, 1.0], n=2)
    partial = verify_solves([base | {"verify": {"kind": "ortools.cp_sat", "cp": cp | {"unchecked": {"circuit": 1}}}}],
                            models_expected=True)
    assert partial.checked == 1 and partial.partial == 1 and not partial.problems
    assert verify_solves([base | {"verify": {"kind": "ortools.cp_sat"}}], models_expected=True).problems
    assert not verify_solves([base | {"verify": {"kind": "ortools.cp_sat"}}]).problems  # capture off: unverifiable
    too_large = {"kind": "ortools.cp_sat", "cp": {"too_large": True}}
    assert verify_solves([base | {"verify": too_large}], models_expected=True).problems  # 3 items is not too large
    big = base | {"n_vars": CP_MAX_ITEMS, "n_constraints": 1, "verify": too_large}
    assert verify_solves([big], models_expected=True).skipped == 1


def test_pyomo_and_mathopt_without_a_writable_model_are_unverified_not_tampered() -> None:
    base = {"api": "pyomo", "solver": "ipopt", "status": "optimal", "objective": 3.0, "bound": 3.0,
            "solution": {"x": 1.0}, "model_mps": None}
    assert not verify_solves([base | {"verify": {"kind": "pyomo", "linear": False}}], models_expected=True).problems
    assert verify_solves([base | {"verify": {"kind": "pyomo", "linear": True}}], models_expected=True).problems
    assert verify_solves([base | {"verify": {"kind": "pyomo"}}], models_expected=True).problems
    mathopt = base | {"api": "ortools", "verify": {"kind": "ortools.mathopt", "linear": False}}
    assert not verify_solves([mathopt], models_expected=True).problems


def test_pyomo_capture_decides_linearity_when_the_writer_fails(tmp_path, monkeypatch) -> None:
    """The capture's own verdict on a model it could not export: a nonlinear model is 'linear': false (unverified),
    a linear one is exported (and were its export to fail, ``_is_linear`` makes the parent require it)."""
    import pyomo.environ as pe

    from solvers.sandbox import capture
    from solvers.sandbox.capture import pyomo_

    pyomo_.bind()  # the writer and polynomial_degree, as the hook binds them before user code in the sandbox
    monkeypatch.setitem(capture._state, "mps_dir", str(tmp_path))
    monkeypatch.setitem(capture._state, "capture_mps", True)
    m = pe.ConcreteModel()
    m.x = pe.Var(bounds=(0, 4))
    m.obj = pe.Objective(expr=m.x, sense=pe.maximize)
    m.c = pe.Constraint(expr=pe.exp(m.x) <= 3)
    assert pyomo_._export(m) == (None, {"linear": False})  # MPS cannot hold exp(): the writer refuses it
    m.c.deactivate()
    mps, check = pyomo_._export(m)
    assert mps and check is None
    assert pyomo_._is_linear(m)


def test_only_plain_mps_is_re_solved() -> None:
    plain = "NAME t\nOBJSENSE\n    MAX\nROWS\n N obj\n L c\nCOLUMNS\n x obj 1 c 1\nRHS\n rhs c 4\nBOUNDS\n UP b x 4\nENDATA\n"
    assert _objective_rows(plain) == 1
    assert _objective_rows(plain.replace("ENDATA", "INDICATORS\n IF c y 1\nENDATA")) == -1  # HiGHS drops these
    assert _objective_rows(plain.replace("UP b x 4", "UP b x -4")) == -1  # readers disagree on lb then
    assert _objective_rows(plain.replace("UP b x 4", "SC b x 4")) == -1


PULP = """import pulp
p = pulp.LpProblem("t", pulp.{sense})
x = pulp.LpVariable("x", 0, 3, cat="{cat}")
p += 2 * x + ({constant})
p += 2 * x <= 5
p.solve(pulp.PULP_CBC_CMD(msg=0))
"""
DOCPLEX = """from docplex.mp.model import Model
m = Model()
y = m.{var}(0, 3, "y")
m.{sense}(2 * y + ({constant}))
m.add_constraint(2 * y {op} {rhs})
m.solve()
"""
# (program, claimed optimum): objective constants of both signs, both senses, LP and MIP. PuLP's MPS writer drops
# the constant; docplex writes a maximisation negated but keeps the constant's sign: the capture restores both.
CONSTANTS = {
    "pulp-max-lp": (PULP.format(sense="LpMaximize", cat="Continuous", constant=5), 10.0),
    "pulp-max-mip": (PULP.format(sense="LpMaximize", cat="Integer", constant=-5.5), -1.5),
    "pulp-min-lp": (PULP.format(sense="LpMinimize", cat="Continuous", constant=-7), -7.0),
    "docplex-max-lp": (DOCPLEX.format(var="continuous_var", sense="maximize", constant=5, op="<=", rhs=5), 10.0),
    "docplex-max-mip": (DOCPLEX.format(var="integer_var", sense="maximize", constant=-7, op="<=", rhs=5), -3.0),
    "docplex-min-lp": (DOCPLEX.format(var="continuous_var", sense="minimize", constant=5, op=">=", rhs=2), 7.0),
}


def test_objective_constants_survive_every_exporter() -> None:
    """A constant in the objective is part of the claimed objective: the exported model must carry it with the
    sign the MPS reader expects, or an honest program is called tampered (no false ``tampered``, ever)."""
    pool = Pool(SandboxConfig(timeout_s=30, preload=()), 1)
    try:
        got = {name: pool.run(Program(program_id=name, code=code)) for name, (code, _) in CONSTANTS.items()}
    finally:
        pool.close()
    for name, (_, optimum) in CONSTANTS.items():
        e = got[name]
        assert e.status == ExecStatus.OK and e.objective == pytest.approx(optimum), (name, e.status, e.error)
        assert e.solves[0].model_mps, name  # checked against its model, not waved through unverified


def test_with_objective_constant_replaces_or_adds_the_objective_rhs() -> None:
    from solvers.sandbox.capture import with_objective_constant
    from solvers.sandbox.mps import parse

    with_rhs = "NAME t\nROWS\n N  obj\n L  c1\nCOLUMNS\n    x  obj  2\n    x  c1  1\nRHS\n    rhs  obj  -5\n" \
               "    rhs  c1  2\nBOUNDS\n UP bnd  x  3\nENDATA\n"
    without = "NAME t\nROWS\n N  obj\nCOLUMNS\n    x  obj  2\nBOUNDS\n UP bnd  x  3\nENDATA\n"
    for text in (with_rhs, without):
        fixed = with_objective_constant(text, 4.0)
        assert fixed.count(" obj  4.0") == 1 and " obj  -5" not in fixed
        model = parse(fixed)
        assert model is not None and model.offset == -4.0  # constant = -RHS, as HiGHS reads it
    assert with_objective_constant(with_rhs, 0.0).count("obj") == 2  # no constant: the objective row's RHS goes


TABLE = """from ortools.sat.python import cp_model
m = cp_model.CpModel()
x = m.NewIntVar(0, 4, "x"); y = m.NewIntVar(0, 3, "y")
m.AddAllowedAssignments([x, y], [(1, 3), (4, 0), (2, 2)])
m.Maximize(3*x + 2*y)
s = cp_model.CpSolver(); s.parameters.num_workers = 1
s.Solve(m)
"""
INFEASIBLE = """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=1, name="x")
m.addConstr(x >= 2)
m.optimize()
"""


def test_each_solve_carries_the_parents_verdict_into_the_store(tmp_path) -> None:  # noqa: ANN001
    """``SolveCall.verification`` says how far the parent could check the call (a contract or a consumer that needs
    certainty filters on it), and the store keeps it."""
    from flywheel.store import Store
    from flywheel.store.rows import execution_from_rows, execution_row, solve_rows

    runs = {"verified": (LP, CONFIG), "partial": (TABLE, CONFIG), "re-solved": (INFEASIBLE, CONFIG),
            "unverified": (LP, CONFIG.model_copy(update={"capture_mps": False}))}
    got = {}
    for want, (code, config) in runs.items():
        pool = Pool(config, 1)
        try:
            got[want] = pool.run(Program(program_id=want, code=code))
        finally:
            pool.close()
    for want, e in got.items():
        assert [s.verification for s in e.solves] == [want], (want, e.status, e.error)
    with Store.open(tmp_path / "store") as st:
        st.write("executions", 0, [execution_row(k, e) for k, e in got.items()])
        st.write("solves", 0, [r for k, e in got.items() for r in solve_rows(k, e)])
        rows = {r["attempt_id"]: r for r in st.query("SELECT * FROM executions").to_pylist()}
        solves = st.query("SELECT * FROM solves").to_pylist()
    back = {k: execution_from_rows(rows[k], [s for s in solves if s["attempt_id"] == k]) for k in got}
    assert {k: [s.verification for s in e.solves] for k, e in back.items()} == {k: [k] for k in got}
    old = {key: value for key, value in solves[0].items() if key != "verification"}  # a part from before the column
    assert execution_from_rows(rows[old["attempt_id"]], [old]).solves[0].verification == ""
