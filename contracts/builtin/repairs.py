"""Answer-blind repairs: fix the form of a program, never its meaning.

They receive a ``BlindSample`` (question and attempt only), so none of them can peek at the ground truth: unlike
the evaluators that flip integrality or min/max until the answer matches, nothing here can steer a program
towards a known answer. Each returns ``Repair(code, kind, message)`` or ``None``.
"""

from __future__ import annotations

import ast
import re

from contracts.api import Repair, contract
from contracts.codefacts import imported_modules
from contracts.extract import code_blocks, extract_code
from contracts.sample import BlindSample


@contract(stage="before_execution", severity="repair", cost=0.01)
def strip_fences(sample: BlindSample) -> Repair | None:
    """Code that still holds markdown (fences, prose around them) becomes the bare program."""
    code = sample.attempt.code
    if not code:
        extracted = extract_code(sample.attempt.response)
        return Repair(code=extracted, kind="extract_from_response") if extracted else None
    if not code_blocks(code):
        return None
    bare = extract_code(code)
    return Repair(code=bare, kind="strip_fences", message="removed markdown fences") if bare else None


# Name a program uses -> the import that defines it, for the aliases every solver's documentation uses.
KNOWN_ALIASES = {
    "gp": "import gurobipy as gp", "GRB": "from gurobipy import GRB", "quicksum": "from gurobipy import quicksum",
    "pyo": "import pyomo.environ as pyo", "pe": "import pyomo.environ as pe",
    "pywraplp": "from ortools.linear_solver import pywraplp", "cp_model": "from ortools.sat.python import cp_model",
    "cp": "import coptpy as cp", "COPT": "from coptpy import COPT", "Envr": "from coptpy import Envr",
    "np": "import numpy as np", "pulp": "import pulp", "math": "import math", "itertools": "import itertools",
}
# Wrong module names models write -> the real ones.
MODULE_FIXES = [
    (re.compile(r"^(\s*)import gurobi\s+as\s+(\w+)", re.MULTILINE), r"\1import gurobipy as \2"),
    (re.compile(r"^(\s*)from gurobi import", re.MULTILINE), r"\1from gurobipy import"),
    (re.compile(r"^(\s*)import pyomo\s+as\s+(\w+)\s*$", re.MULTILINE), r"\1import pyomo.environ as \2"),
    (re.compile(r"^(\s*)import copt\s+as\s+(\w+)", re.MULTILINE), r"\1import coptpy as \2"),
    (re.compile(r"^(\s*)from ortools\.linear_solver\.pywraplp import pywraplp", re.MULTILINE),
     r"\1from ortools.linear_solver import pywraplp"),
]


@contract(stage="before_execution", severity="repair", cost=0.02)
def fix_import_aliases(sample: BlindSample) -> Repair | None:
    """Fix misspelt solver modules and add the import for a well-known alias used but never imported."""
    code = sample.code
    if not code:
        return None
    fixed = code
    for pattern, repl in MODULE_FIXES:
        fixed = pattern.sub(repl, fixed)
    try:
        tree = ast.parse(fixed)
    except SyntaxError:
        return Repair(code=fixed, kind="fix_import_aliases") if fixed != code else None
    defined: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else defined).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    missing = sorted(n for n in used - defined if n in KNOWN_ALIASES)
    if "*" in defined:  # a star import may define anything
        missing = []
    if not missing and fixed == code:
        return None
    header = "".join(KNOWN_ALIASES[n] + "\n" for n in missing)
    return Repair(code=header + fixed, kind="fix_import_aliases",
                  message=f"added imports for {missing}" if missing else "fixed module names")


# (API module, pattern of the model/solver object creation, the solve call to append for that object)
_SOLVE_CALLS = [
    ("gurobipy", re.compile(r"^(\w+)\s*=\s*(?:gp\.|gurobipy\.)?Model\(", re.MULTILINE), r"\.optimize\(", "{m}.optimize()"),
    ("coptpy", re.compile(r"^(\w+)\s*=\s*\w+\.createModel\(", re.MULTILINE), r"\.solve\(|\.solveLP\(", "{m}.solve()"),
    ("docplex", re.compile(r"^(\w+)\s*=\s*(?:\w+\.)?Model\(", re.MULTILINE), r"\.solve\(", "{m}.solve()"),
    ("ortools", re.compile(r"^(\w+)\s*=\s*pywraplp\.Solver(?:\.CreateSolver)?\(", re.MULTILINE), r"\.Solve\(",
     "{m}.Solve()"),
    ("pyomo", re.compile(r"^(\w+)\s*=\s*(?:pyo\.|pe\.|pyomo\.environ\.)?ConcreteModel\(", re.MULTILINE),
     r"\.solve\(", 'pyo.SolverFactory("appsi_highs").solve({m})'),
]


@contract(stage="before_execution", severity="repair", cost=0.02)
def add_solve_call(sample: BlindSample) -> Repair | None:
    """A program that builds a model but never solves it gets the API's solve call appended."""
    code = sample.code
    mods = imported_modules(code)
    for module, creation, solved, call in _SOLVE_CALLS:
        if module not in mods:
            continue
        m = creation.search(code)
        if m is None or re.search(solved, code):
            continue
        line = call.format(m=m.group(1))
        if module == "pyomo" and "pyo" not in code.split("SolverFactory")[0]:
            line = "import pyomo.environ as pyo\n" + line
        return Repair(code=code.rstrip() + "\n" + line + "\n", kind="add_solve_call", message=f"appended {line!r}")
    return None


# (API module, creation pattern, "already set" pattern, lines to insert after creation)
_PARAMS = [
    ("gurobipy", re.compile(r"^([ \t]*)(\w+)\s*=\s*(?:gp\.|gurobipy\.)?Model\([^\n]*\)[ \t]*$", re.MULTILINE),
     r"TimeLimit|Threads", "{i}{m}.Params.TimeLimit = {t}\n{i}{m}.Params.Threads = {n}"),
    ("coptpy", re.compile(r"^([ \t]*)(\w+)\s*=\s*\w+\.createModel\([^\n]*\)[ \t]*$", re.MULTILINE),
     r"TimeLimit|Threads", '{i}{m}.setParam("TimeLimit", {t})\n{i}{m}.setParam("Threads", {n})'),
    ("docplex", re.compile(r"^([ \t]*)(\w+)\s*=\s*(?:\w+\.)?Model\([^\n]*\)[ \t]*$", re.MULTILINE),
     r"timelimit|threads", "{i}{m}.parameters.timelimit = {t}\n{i}{m}.parameters.threads = {n}"),
    ("ortools", re.compile(r"^([ \t]*)(\w+)\s*=\s*pywraplp\.Solver(?:\.CreateSolver)?\([^\n]*\)[ \t]*$", re.MULTILINE),
     r"SetTimeLimit|SetNumThreads", "{i}{m}.SetTimeLimit({ms})\n{i}{m}.SetNumThreads({n})"),
]


@contract(stage="before_execution", severity="repair", cost=0.02, time_limit_s=60, threads=1)
def inject_solver_params(sample: BlindSample, time_limit_s: int, threads: int) -> Repair | None:
    """Set a time limit and a thread count right after the model is created, unless the program sets them."""
    code = sample.code
    mods = imported_modules(code)
    for module, creation, already, template in _PARAMS:
        if module not in mods or re.search(already, code):
            continue
        m = creation.search(code)
        if m is None:
            continue
        lines = template.format(i=m.group(1), m=m.group(2), t=time_limit_s, n=threads, ms=int(time_limit_s * 1000))
        new = code[: m.end()] + "\n" + lines + code[m.end():]
        return Repair(code=new, kind="inject_solver_params", message=f"time limit {time_limit_s}s, {threads} thread(s)")
    return None
