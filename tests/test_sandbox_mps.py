"""The pure-Python MPS reader (solvers/sandbox/mps.py) against HiGHS's own reader, and the fast check against the
HiGHS + numpy check: the same model field for field, the same verdict string for string.

Two levels:

- constructs: for each tricky MPS construct (OBJSENSE forms, objective constants, RANGES on every row type and sign,
  every bound type, UP < 0, MARKER blocks with and without bounds, infinite bounds, zero entries, ...) the reader's
  model equals ``Highs.getModel()``'s bit for bit (signed zeros included), and every text it is not sure of (SC, Q
  sections, repeated entries, tabs, SIF layouts, fixed format, ...) is left to HiGHS;
- verdicts: real models captured from the shared code samples (a fixed, seeded subset of each API's programs, plus
  small programs for the exporters the samples do not use: pulp, docplex, highspy, OR-Tools' linear solver and
  MathOpt, pyomo) are checked both ways, with the claimed solution and with perturbed ones (a bound broken, a value
  made fractional, rows violated, the objective off, the sense flipped, a value missing or not a number), so that every
  branch of the check is compared. ``MPS_AGREEMENT_ALL=1`` runs every sample instead of the subset (the one-off full
  comparison quoted in solvers/sandbox/README.md).
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import sys
from pathlib import Path
from typing import Any

import pytest

import solvers.sandbox.verify as verify
import solvers.sandbox.verify.linear as linear
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.mps import MpsModel, parse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_sandbox_samples import SAMPLES, load, to_program  # noqa: E402

# ---- constructs ---------------------------------------------------------------------------------------------------

BASE = """NAME t
%SENSE%ROWS
 N obj
 L c1
 E e1
 G g1
COLUMNS
 x obj -1 c1 1
 x e1 1
 MARKER 'MARKER' 'INTORG'
 y obj 2 c1 1
 y g1 1
 z obj 1 e1 2
 MARKER 'MARKER' 'INTEND'
 w c1 -1.5e-3 g1 0
RHS
 RHS obj %OBJRHS% c1 10
 RHS e1 4 g1 1
%RANGES%BOUNDS
%BOUNDS%ENDATA
"""


def variant(sense: str = "", objrhs: str = "3.5", ranges: str = "", bounds: str = "") -> str:
    return (BASE.replace("%SENSE%", sense).replace("%OBJRHS%", objrhs)
            .replace("%RANGES%", f"RANGES\n{ranges}\n" if ranges else "").replace("%BOUNDS%", bounds))


# Each text is read identically by both readers.
CONSTRUCTS = {
    "plain": variant(),
    "objsense max on its line": variant("OBJSENSE MAX\n"),
    "objsense min on its line": variant("OBJSENSE MIN\n"),
    "objsense section max": variant("OBJSENSE\n    MAX\n"),
    "objsense section maximize": variant("OBJSENSE\n  MAXIMIZE\n"),
    "objsense section min": variant("OBJSENSE\n MIN\n"),
    "objective constant zero": variant(objrhs="0"),
    "objective constant negative": variant(objrhs="-2.25"),
    "ranges L G": variant(ranges=" R c1 3 g1 5"),
    "range E negative": variant(ranges=" R e1 -2"),
    "range E positive": variant(ranges=" R e1 2.5"),
    "range E zero": variant(ranges=" R e1 0"),
    "range negative on L": variant(ranges=" R c1 -3"),
    "UP negative continuous": variant(bounds=" UP B x -2\n"),
    "UP negative integer": variant(bounds=" UP B y -2\n"),
    "UP negative after MI": variant(bounds=" MI B x\n UP B x -2\n"),
    "UP negative then LO": variant(bounds=" UP B x -2\n LO B x -5\n"),
    "UP on integer": variant(bounds=" UP B y 7\n"),
    "LO on integer (no longer binary)": variant(bounds=" LO B y 2\n"),
    "fractional UP on integer": variant(bounds=" UP B y 2.5\n"),
    "MI PL FR": variant(bounds=" MI B x\n PL B y\n FR B z\n"),
    "MI on integer": variant(bounds=" MI B y\n"),
    "BV": variant(bounds=" BV B w\n BV B x\n"),
    "LI UI": variant(bounds=" LI B w -3\n UI B w 5\n"),
    "FX": variant(bounds=" FX B y 3\n FX B w -1.25\n"),
    "lower above upper": variant(bounds=" LO B x 5\n UP B x 1\n"),
    "infinite bounds 1e20 1e30": variant(bounds=" UP B x 1e30\n LO B w -1e30\n UP B y 1e20\n LO B z -1e20\n"),
    "large finite bounds": variant(bounds=" UP B x 9.99e14\n LO B w -1e14\n"),
    "infinite RHS on L and G rows": variant().replace("c1 10", "c1 1e30").replace("e1 4 g1 1", "e1 4 g1 -1e20"),
    "numbers in every notation": variant(objrhs="+.5", bounds=" UP B x 1.\n LO B w -2.5E+01\n UP B w 3e0\n"),
    "negative zero": variant(objrhs="-0", bounds=" UP B x -0\n LO B w -0.0\n"),
    "keyword-like names": """NAME
ROWS
 N COST
 L RHS1
 G MAXIMUM
COLUMNS
 BOUNDS COST 1 RHS1 2
 rows MAXIMUM 1
RHS
 rhs RHS1 4 MAXIMUM 1
BOUNDS
 UP bnd BOUNDS 3
ENDATA
""",
    "lower-case section names": """name
rows
 N obj
 L c
columns
 x obj 1 c 1
rhs
 r c 2
endata
""",
    "comments and blank lines": """* a comment
NAME  with words after it
*another

ROWS
 N obj
  L c
COLUMNS
* between columns
 x obj 1
 x c 1
RHS
 r c 2
ENDATA

""",
    "no RHS no BOUNDS": "NAME\nROWS\n N o\n G c\nCOLUMNS\n x o 1 c 1\nENDATA\n",
    "empty row and empty column": "ROWS\n N o\n L c\n L d\nCOLUMNS\n x o 1 c 1\n y o 0\nRHS\n r c 1\nENDATA\n",
    "integer column with no bounds after BOUNDS of others": variant(bounds=" UP B x 4\n"),
    "repeated matrix entry": variant().replace(" x e1 1\n", " x e1 1\n x c1 3\n"),
    "repeated cost": variant().replace(" x e1 1\n", " x e1 1 obj 4\n"),
    "repeated bound": variant(bounds=" UP B x 3\n UP B x 4\n"),
    "FX after UP": variant(bounds=" UP B x 3\n FX B x 4\n"),
    "repeated RHS": variant().replace(" RHS e1 4 g1 1", " RHS e1 4 c1 1"),
    "FX then BV (gurobipy's fixed binary)": variant(bounds=" FX B w 0\n BV B w\n"),
    "BV then UP": variant(bounds=" BV B w\n UP B w 4\n"),
    "repeated range": variant(ranges=" R c1 3 c1 5"),
    "repeated zero then nonzero entry": variant().replace(" x e1 1\n", " x e1 0\n x e1 3\n"),
    "zero entries skipped": "ROWS\n N o\n L c\nCOLUMNS\n x o 0 c 0\n x c 2\n y o 0\n y c 1\nENDATA\n",
}

# Each text is left to HiGHS.
FALLBACKS = {
    "semi-continuous": variant(bounds=" SC B x 4\n"),
    "semi-integer": variant(bounds=" SI B y 4\n"),
    "quadratic objective": variant().replace("ENDATA", "QUADOBJ\n x x 2\nENDATA"),
    "quadratic constraint": variant().replace("ENDATA", "QCMATRIX c1\n x x 1\nENDATA"),
    "indicators": variant().replace("ENDATA", "INDICATORS\n IF c1 y 1\nENDATA"),
    "OBJSENS spelling": variant("OBJSENS\n    MAX\n"),
    "OBJSENSE MAXIMIZE on its line": variant("OBJSENSE MAXIMIZE\n"),
    "second N row": variant().replace(" L c1\n", " L c1\n N free\n"),
    "no N row": "ROWS\n L c\nCOLUMNS\n x c 1\nENDATA\n",
    "column reappears": variant().replace(" w c1", " x g1 1\n w c1"),
    "RANGES before RHS": variant().replace("RHS\n RHS obj", "RANGES\n R c1 1\nRHS\n RHS obj"),
    "range on the objective": variant(ranges=" R obj 1"),
    "unknown row in COLUMNS": variant().replace(" x e1 1", " x nope 1"),
    "unknown column in BOUNDS": variant(bounds=" UP B nope 1\n"),
    "SIF bound (no set name)": variant(bounds=" UP x 1\n"),
    "SIF RHS (no set name)": variant().replace(" RHS e1 4 g1 1", " e1 4"),
    "duplicate row name": variant().replace(" G g1\n", " G g1\n L c1\n"),
    "tab separated": variant().replace(" x obj -1 c1 1", "\tx\tobj\t-1\tc1\t1"),
    "CRLF": variant().replace("\n", "\r\n"),
    "non-ASCII name": variant().replace("w c1", "\u00e9 c1"),
    "fixed-format name with a space": variant().replace(" E e1\n", " E e 1\n"),
    "Fortran D exponent": variant(bounds=" UP B x 1D2\n"),
    "infinity word": variant(bounds=" UP B x Infinity\n"),
    "nan": variant(bounds=" UP B x nan\n"),
    "digit separator": variant(bounds=" UP B x 1_000\n"),
    "hexadecimal": variant(bounds=" UP B x 0x10\n"),
    "trailing garbage": variant(bounds=" UP B x 1.5e\n"),
    "tiny coefficient": variant().replace("-1.5e-3", "1e-10"),
    "huge coefficient": variant().replace("-1.5e-3", "1e16"),
    "huge finite bound": variant(bounds=" UP B x 1e16\n"),
    "bound just short of infinite": variant(bounds=" UP B x 9.99e19\n"),
    "huge lower bound": variant(bounds=" LO B x 1e30\n"),
    "huge RHS on an E row": variant().replace("e1 4", "e1 1e30"),
    "no ENDATA": variant().replace("ENDATA\n", ""),
    "text after ENDATA": variant() + "ROWS\n",
    "open MARKER block": variant().replace(" MARKER 'MARKER' 'INTEND'\n", ""),
    "MARKER out of order": variant().replace("'INTORG'", "'INTEND'"),
    "BV with a value": variant(bounds=" BV B w 1\n"),
    "lower-case bound type": variant(bounds=" up B x 1\n"),
}


def bits(values: Any) -> list[bytes]:
    """Exact comparison keys: the IEEE bytes, so that -0.0 != 0.0 and nothing is compared to a tolerance."""
    return [struct.pack("<d", float(v)) for v in values]


def highs_fields(text: str) -> dict[str, Any] | None:
    lp = verify._read(text)
    if lp is None:
        return None
    n = int(lp.num_col_)
    integrality = [int(v) == 1 for v in lp.integrality_] if len(lp.integrality_) else [False] * n
    a = lp.a_matrix_
    assert int(a.format_) == 1  # column-wise, as the MPS reader gives
    return {"col_names": list(lp.col_names_), "col_lower": bits(lp.col_lower_), "col_upper": bits(lp.col_upper_),
            "col_cost": bits(lp.col_cost_), "integer": integrality, "row_names": list(lp.row_names_),
            "row_lower": bits(lp.row_lower_), "row_upper": bits(lp.row_upper_), "start": [int(v) for v in a.start_],
            "index": [int(v) for v in a.index_], "value": bits(a.value_), "offset": bits([lp.offset_]),
            "maximize": int(lp.sense_) == -1}


def fast_fields(model: MpsModel) -> dict[str, Any]:
    return {"col_names": model.col_names, "col_lower": bits(model.col_lower), "col_upper": bits(model.col_upper),
            "col_cost": bits(model.col_cost), "integer": model.integer, "row_names": model.row_names,
            "row_lower": bits(model.row_lower), "row_upper": bits(model.row_upper), "start": model.start,
            "index": model.index, "value": bits(model.value), "offset": bits([model.offset]),
            "maximize": model.maximize}


@pytest.mark.parametrize("name", list(CONSTRUCTS))
def test_reader_matches_highs_on_construct(name: str) -> None:
    text = CONSTRUCTS[name]
    model = parse(text)
    assert model is not None, f"{name}: the reader should take this text"
    expected = highs_fields(text)
    assert expected is not None, f"{name}: HiGHS cannot read this text"
    assert fast_fields(model) == expected


@pytest.mark.parametrize("name", list(FALLBACKS))
def test_reader_leaves_unsure_text_to_highs(name: str) -> None:
    assert parse(FALLBACKS[name]) is None


def test_construct_semantics_pinned() -> None:
    """The HiGHS rules the constructs above exercise, stated once in numbers (what both readers give)."""
    m = parse(CONSTRUCTS["plain"])
    assert m is not None
    assert m.offset == -3.5  # RHS on the objective row is minus the constant
    assert (m.col_lower[1], m.col_upper[1]) == (0.0, 1.0)  # integer in a MARKER block with no bounds: binary
    assert m.col_names == ["x", "y", "z", "w"] and m.start == [0, 2, 4, 5, 6]  # w's zero entry in g1 is dropped
    m = parse(CONSTRUCTS["range E negative"])
    assert m is not None and (m.row_lower[1], m.row_upper[1]) == (2.0, 4.0)
    m = parse(CONSTRUCTS["range E positive"])
    assert m is not None and (m.row_lower[1], m.row_upper[1]) == (4.0, 6.5)
    m = parse(CONSTRUCTS["UP negative continuous"])
    assert m is not None and (m.col_lower[0], m.col_upper[0]) == (0.0, -2.0)  # lower stays 0: an empty range
    m = parse(CONSTRUCTS["LO on integer (no longer binary)"])
    assert m is not None and (m.col_lower[1], m.col_upper[1]) == (2.0, math.inf)
    m = parse(CONSTRUCTS["infinite bounds 1e20 1e30"])
    assert m is not None and m.col_upper[:2] == [math.inf, math.inf] and m.col_lower[2:] == [-math.inf] * 2


# ---- verdicts on captured models ----------------------------------------------------------------------------------

# Small programs for the exporters the shared samples do not use, each with the constructs its writer spells its own
# way: maximisation, objective constants, negative / free / fixed bounds, integers with and without bounds, ranged
# and equality rows.
EXPORTERS = {
    "pulp": """import pulp
p = pulp.LpProblem("t", pulp.LpMaximize)
x = pulp.LpVariable("x", 0, 4); y = pulp.LpVariable("y", -2, 3, cat="Integer"); z = pulp.LpVariable("z", None, 2)
b = pulp.LpVariable("b", cat="Binary"); f = pulp.LpVariable("f", -1, -1)
p += 3*x + 2*y - z + 5*b + f + 7
p += x + y + b <= 5
p += x - z >= 1
p += x - z <= 6
p += x + y == 4
p.solve(pulp.PULP_CBC_CMD(msg=0))
""",
    "docplex": """from docplex.mp.model import Model
m = Model("t")
x = m.continuous_var(lb=0, ub=4, name="x"); y = m.integer_var(lb=-2, ub=3, name="y")
z = m.continuous_var(lb=-m.infinity, ub=2, name="z"); b = m.binary_var(name="b")
m.add_constraint(x + y + b <= 5); m.add_range(1, x - z, 6); m.add_constraint(x + y == 4)
m.maximize(3*x + 2*y - z + 5*b + 7)
m.solve()
""",
    "highspy": """import highspy
h = highspy.Highs(); h.setOptionValue("output_flag", False)
x = h.addVariable(0, 4, name="x"); y = h.addIntegral(lb=-2, ub=3, name="y"); z = h.addVariable(-highspy.kHighsInf, 2, name="z")
h.addConstr(x + y <= 5); h.addConstr(x - z >= 1); h.addConstr(x - z <= 6); h.addConstr(x + y == 4)
h.maximize(3*x + 2*y - z + 7)
""",
    "pywraplp": """from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("SCIP")
x = s.NumVar(0, 4, "x"); y = s.IntVar(-2, 3, "y"); z = s.NumVar(-s.infinity(), 2, "z"); b = s.BoolVar("b")
s.Add(x + y + b <= 5); s.Add(x + y == 4); c = s.Constraint(1, 6, "ranged"); c.SetCoefficient(x, 1); c.SetCoefficient(z, -1)
s.Maximize(3*x + 2*y - z + 5*b + 7)
s.Solve()
""",
    "mathopt": """from ortools.math_opt.python import mathopt
m = mathopt.Model()
x = m.add_variable(lb=0, ub=4, name="x"); y = m.add_integer_variable(lb=-2, ub=3, name="y")
z = m.add_variable(ub=2, name="z"); b = m.add_binary_variable(name="b")
m.add_linear_constraint(x + y + b <= 5); m.add_linear_constraint(x + y == 4)
m.add_linear_constraint(lb=1, ub=6, expr=x - z, name="ranged"); m.maximize(3*x + 2*y - z + 5*b + 7)
mathopt.solve(m, mathopt.SolverType.GSCIP)
""",
    "pyomo": """import pyomo.environ as pe
m = pe.ConcreteModel()
m.x = pe.Var(bounds=(0, 4)); m.y = pe.Var(within=pe.Integers, bounds=(-2, 3)); m.z = pe.Var(bounds=(None, 2))
m.b = pe.Var(within=pe.Binary); m.n = pe.Var(within=pe.NonNegativeIntegers, bounds=(0, 9))
m.obj = pe.Objective(expr=3*m.x + 2*m.y - m.z + 5*m.b + m.n + 7, sense=pe.maximize)
m.c = pe.Constraint(expr=m.x + m.y + m.b + m.n <= 5)
m.r = pe.Constraint(expr=pe.inequality(1, m.x - m.z, 6))
m.e = pe.Constraint(expr=m.x + m.y == 4)
pe.SolverFactory("highs").solve(m)
""",
    "gurobipy": """import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub=4, name="x"); y = m.addVar(vtype="I", lb=-2, ub=3, name="y"); z = m.addVar(lb=-gp.GRB.INFINITY, ub=2, name="z")
b = m.addVar(vtype="B", name="b"); n = m.addVar(vtype="I", name="n"); u = m.addVar(lb=-5, ub=-1, name="u")
m.setObjective(3*x + 2*y - z + 5*b - n + u + 7, gp.GRB.MAXIMIZE)
m.addConstr(x + y + b <= 5); m.addRange(x - z, 1, 6, "ranged"); m.addConstr(x + y == 4)
m.optimize()
""",
    "coptpy": """import coptpy as cp
env = cp.Envr(); m = env.createModel("t"); m.setParam("Logging", 0)
x = m.addVar(ub=4, name="x"); y = m.addVar(vtype=cp.COPT.INTEGER, lb=-2, ub=3, name="y")
z = m.addVar(lb=-cp.COPT.INFINITY, ub=2, name="z"); b = m.addVar(vtype=cp.COPT.BINARY, name="b")
m.setObjective(3*x + 2*y - z + 5*b + 7, cp.COPT.MAXIMIZE)
m.addConstr(x + y + b <= 5); m.addBoundConstr(x - z, 1, 6); m.addConstr(x + y == 4)
m.solve()
""",
}
SAMPLE_APIS = {  # set -> API; a fixed, seeded subset of each API's programs
    "orthought_reference_code": "gurobipy", "nlp4lp_optimus_reference_code": "gurobipy",
    "complexor_reference_code": "gurobipy", "or_instruct_samples": "coptpy", "pyomo_examples_llmopt_miniopt": "pyomo",
}
PER_API = 100
SEED = 20261130


def sample_programs() -> list[Program]:
    everything = os.environ.get("MPS_AGREEMENT_ALL") == "1"
    by_api: dict[str, list[Program]] = {}
    for set_name, api in SAMPLE_APIS.items():
        by_api.setdefault(api, []).extend(to_program(set_name, row) for row in load(set_name))
    programs = []
    for _api, progs in sorted(by_api.items()):
        programs.extend(progs if everything or len(progs) <= PER_API else random.Random(SEED).sample(progs, PER_API))
    return programs + [Program(program_id=f"exporter-{api}", code=code) for api, code in EXPORTERS.items()]


def captured_checks(programs: list[Program], config: SandboxConfig) -> list[tuple[str, dict[str, Any], float, Any]]:
    """Every ``check_record`` call the parent makes while classifying ``programs``: the real inputs, labels mapped."""
    calls: list[tuple[str, dict[str, Any], float, Any]] = []
    real = verify.check_record

    def spy(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
        calls.append((mps, dict(solution), objective, sense))
        return real(mps, solution, objective, sense)

    verify.check_record = spy  # type: ignore[assignment]
    try:
        for _ in run_batch(programs, config):
            pass
    finally:
        verify.check_record = real  # type: ignore[assignment]
    return calls


def perturbations(model: MpsModel, solution: dict[str, Any], objective: float, sense: Any,
                  rng: random.Random) -> list[tuple[dict[str, Any], float, Any]]:
    """The claimed record, and records that take each branch of the check: objective off (and just inside / outside
    the tolerance), sense flipped, a bound broken on each side, a value made fractional, every value shifted (rows
    violated), a tiny relative nudge (row slack near its tolerance), a value missing, not a number, infinite. Each
    changed point comes twice: with the claimed objective (the objective check fails first) and with the objective
    it really has (so that the bound, integrality and row checks are reached)."""
    flipped = "minimize" if (sense or "").startswith("max") else "maximize"
    out = [(solution, objective, sense), (solution, objective, flipped), (solution, objective, None),
           (solution, objective + 1 + 1e-3 * abs(objective), sense), (solution, -objective, sense),
           (solution, objective * (1 + 0.9e-6), sense), (solution, objective * (1 + 1.1e-6) + 2e-9, sense)]
    if not solution:
        return out
    names = sorted(solution)
    points = []
    for _ in range(3):
        k = rng.choice(names)
        v = solution[k]
        if not isinstance(v, int | float):
            continue
        points += [{**solution, k: new} for new in (v + 0.5, v + 1e6, v - 1e6, -abs(v) - 1, v * (1 + 2e-4), v + 1e-4,
                                                    math.floor(v) + 0.3)]
        points.append({key: val for key, val in solution.items() if key != k})
    for shift in (1.0, -1.0, 0.37):
        points.append({k: (v + shift if isinstance(v, int | float) else v) for k, v in solution.items()})
    points.append({k: (v * (1 + 1e-7) if isinstance(v, int | float) else v) for k, v in solution.items()})
    k = rng.choice(names)
    points += [{**solution, k: "x"}, {**solution, k: math.inf}]
    for point in points:
        out.append((point, objective, sense))
        value = objective_of(model, point)
        if value is not None:
            out.append((point, value, sense))
    return out


def objective_of(model: MpsModel, point: dict[str, Any]) -> float | None:
    """c·x + constant of ``point`` on ``model`` (None when the point does not name every column with a number)."""
    values = verify._values_by_column(model.col_names, point, model.col_lower, model.col_upper)
    if values is None or not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
        return None
    return model.offset + math.fsum(c * float(v) for c, v in zip(model.col_cost, values, strict=True))


def compare(calls: list[tuple[str, dict[str, Any], float, Any]]) -> dict[str, Any]:
    """Both paths on every call and its perturbations: counts, and the first disagreements."""
    rng = random.Random(SEED)
    taken = fallback = compared = 0
    verdicts: dict[str, int] = {}
    differences: list[tuple[Any, ...]] = []
    for mps, solution, objective, sense in calls:
        model = parse(mps)
        if model is None:
            fallback += 1
            continue
        taken += 1
        for record in perturbations(model, solution, objective, sense, rng):
            fast = verify._check_parsed(model, *record)
            slow = verify._check_highs(mps, *record)
            compared += 1
            kind = "None" if slow is None else ("ok" if not slow else slow.split(" ")[0])
            verdicts[kind] = verdicts.get(kind, 0) + 1
            if fast != slow:
                differences.append((mps[:200], record, fast, slow))
    return {"records": len(calls), "fast_reader": taken, "highs_only": fallback, "verdicts_compared": compared,
            "by_verdict": verdicts, "differences": len(differences), "first_differences": differences[:3]}


@pytest.mark.timeout(1200)  # the subset takes ~30 s; MPS_AGREEMENT_ALL=1 (every sample) ~5 min
def test_fast_check_gives_highs_verdicts_on_captured_models() -> None:
    assert SAMPLES.is_dir(), "the shared code samples are needed"
    # 4 s: enough for all but the few hard MIPs among the sampled programs (those add time, not constructs); the full
    # comparison gives them 10 s
    timeout = 10.0 if os.environ.get("MPS_AGREEMENT_ALL") == "1" else 4.0
    config = SandboxConfig(timeout_s=timeout, memory_mb=2048, capture_mps=True,
                           preload=("numpy", "gurobipy", "coptpy"))
    calls = captured_checks(sample_programs(), config)
    summary = compare(calls)
    print(json.dumps({k: v for k, v in summary.items() if k != "first_differences"}))
    assert summary["differences"] == 0, summary["first_differences"]
    # The comparison is only as good as its coverage: most captured models must take the fast reader, every exporter
    # must have produced one, and every branch of the check must have been reached.
    assert summary["fast_reader"] >= 0.9 * summary["records"]
    exported = {mps.split("\n", 1)[0] for mps, *_ in calls}
    assert len(calls) >= 100 and len(exported) > 1
    assert {"ok", "None", "claimed", "variable", "integer", "constraint", "solution"} <= set(summary["by_verdict"])


def test_check_record_takes_the_fast_path_only_where_it_may() -> None:
    """check_record: a small model the reader takes is checked without HiGHS; a model it leaves (quadratic here) or
    one over FAST_MPS_CHARS goes through HiGHS, and every route gives the verdict HiGHS gives."""
    text = CONSTRUCTS["plain"]  # x + y + w <= 10 (w's coefficient -1.5e-3), x + 2z = 4, y >= 1; y, z binary
    point = {"x": 2.0, "y": 1.0, "z": 1.0, "w": 0.0}
    objective = -2.0 + 2.0 + 1.0 - 3.5  # -x + 2y + z, then the constant: minus the objective row's RHS (3.5)
    calls: list[str] = []
    real = linear._check_highs

    def counted(*args: Any) -> str | None:
        calls.append(args[0])
        return real(*args)

    linear._check_highs = counted  # type: ignore[assignment]  # check_record's own module (verify/linear.py)
    try:
        assert verify.check_record(text, point, objective, "minimize") == ""
        assert calls == []
        assert verify.check_record(text, {**point, "z": 0.5}, objective - 0.5, None).startswith("integer variable z")
        assert calls == []
        quadratic = FALLBACKS["quadratic objective"]
        assert verify.check_record(quadratic, point, objective, "minimize") is None  # HiGHS: quadratic, unchecked
        assert calls == [quadratic]
        padded = "* padding\n" * (verify.FAST_MPS_CHARS // 10) + text
        assert len(padded) > verify.FAST_MPS_CHARS and parse(padded) is not None
        assert verify.check_record(padded, point, objective + 1, "minimize").startswith("claimed objective")
        assert calls == [quadratic, padded]
    finally:
        linear._check_highs = real  # type: ignore[assignment]
