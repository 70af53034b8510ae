"""Flavoured warm workers: each program is forked from a worker that preloaded the modules it imports (and not the
others), the pool keeps a bounded number of workers, and an evicted flavour comes back correctly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from solvers.records import ExecStatus
from solvers.sandbox import Pool, Program, SandboxConfig
from solvers.sandbox.flavour import flavour

# Standard-library modules no sandbox worker imports on its own: cheap stand-ins for solver libraries.
MODULES = ("mailbox", "ftplib", "wave", "plistlib", "imaplib")
CONFIG = SandboxConfig(timeout_s=20, preload=MODULES)
RAN = ExecStatus.NO_SOLVE_CALL  # the probes ran to the end; they call no solver
ROOT = Path(__file__).resolve().parents[1]


def test_flavour_rules() -> None:
    preload = ("numpy", "gurobipy", "pyomo.environ", "ortools.linear_solver.pywraplp",
               "ortools.sat.python.cp_model", "highspy")
    assert flavour(preload, "import gurobipy as gp\nm = gp.Model()") == ("gurobipy",)
    assert flavour(preload, "from ortools.linear_solver import pywraplp") == ("ortools.linear_solver.pywraplp",)
    assert flavour(preload, "from ortools.sat.python import cp_model") == ("ortools.sat.python.cp_model",)
    # a library reached through a module no entry names needs all of its entries; pyomo brings highspy along
    assert flavour(preload, "from pyomo.opt import SolverFactory") == ("pyomo.environ", "highspy")
    assert flavour(preload, "import ortools") == ("ortools.linear_solver.pywraplp", "ortools.sat.python.cp_model")
    assert flavour(preload, "import numpy as np\nimport gurobipy") == ("numpy", "gurobipy")
    assert flavour(preload, "print(1)") == ()
    assert flavour(preload, "def f(:\n") == ()  # fails before importing anything
    assert flavour(("gurobipy",), "import pyomo.environ") == ()  # not preloaded: the child imports it


def _probe(module: str) -> Program:
    """Reports which of MODULES were already loaded when the program started, then imports ``module``."""
    code = (f"import sys\nprint(sorted(m for m in {MODULES!r} if m in sys.modules))\n"
            f"import {module}\n")
    return Program(program_id=f"probe-{module}", code=code)


@pytest.fixture(scope="module")
def pool():
    p = Pool(CONFIG, workers=1)
    yield p
    p.close()


def test_each_program_runs_on_its_flavour(pool: Pool) -> None:
    for module in MODULES[:2]:
        e = pool.run(_probe(module))
        assert e.status == RAN, e.error
        assert e.stdout.strip() == repr([module])  # its own module preloaded, none of the others
    plain = pool.run(Program(program_id="plain", code="import sys\nprint(sum(m in sys.modules for m in "
                                                          f"{MODULES!r}))\n"))
    assert plain.status == RAN and plain.stdout.strip() == "0"


def test_worker_count_is_bounded_and_evicted_flavours_return(pool: Pool) -> None:
    assert pool.max_workers == 4  # one slot
    for module in MODULES:  # five flavours through four worker indices
        e = pool.run(_probe(module))
        assert e.status == RAN and e.stdout.strip() == repr([module])
    assert len(pool._idle) <= pool.max_workers
    assert sorted(w.index for w in pool._idle) == sorted({w.index for w in pool._idle})  # no index shared
    again = pool.run(_probe(MODULES[0]))  # its worker was the least recently used: evicted, started afresh
    assert again.status == RAN and again.stdout.strip() == repr([MODULES[0]])
    assert all(w.proc.poll() is None for w in pool._idle)


CPSAT = """
import sys
preloaded_pandas = 'pandas' in sys.modules
from ortools.sat.python import cp_model
m = cp_model.CpModel()
x = [m.NewIntVar(0, 2, f"x{i}") for i in range(3)]
m.Add(sum(x) <= 4)
m.Maximize(3 * x[0] + 2 * x[1] + x[2])
s = cp_model.CpSolver(); s.parameters.num_workers = 1
s.Solve(m)
print(preloaded_pandas, 'pandas' in sys.modules)
"""
CPSAT_PANDAS = """
import sys
preloaded_pandas = 'pandas' in sys.modules
import pandas as pd
from ortools.sat.python import cp_model
m = cp_model.CpModel()
x = m.new_int_var_series(name="x", index=pd.Index(range(3)), lower_bounds=0, upper_bounds=2)
m.Add(x.sum() <= 4)
m.Maximize(3 * x[0] + 2 * x[1] + x[2])
s = cp_model.CpSolver(); s.parameters.num_workers = 1
s.Solve(m)
print(preloaded_pandas, type(s.values(x)).__name__)
"""


def test_cp_sat_worker_defers_pandas_unless_the_program_imports_it() -> None:
    """cp_model imports pandas for its pandas helpers only; a CP-SAT program that never names pandas runs on a
    worker that deferred it (deferred.py: ~40 MB and ~500 mappings less for each fork and exit), one that imports
    pandas on a worker that preloaded it, and both solve."""
    pool = Pool(SandboxConfig(timeout_s=30), 1)  # the default preload: every library, pandas included
    try:
        plain = pool.run(Program(program_id="plain", code=CPSAT))
        with_pandas = pool.run(Program(program_id="pandas", code=CPSAT_PANDAS))
    finally:
        pool.close()
    assert plain.status == ExecStatus.OK and plain.objective == 10.0 and plain.stdout.split() == ["False", "False"]
    assert with_pandas.status == ExecStatus.OK and with_pandas.objective == 10.0
    assert with_pandas.stdout.split() == ["True", "Series"]


def test_deferred_module_becomes_the_real_one_on_first_use() -> None:
    code = ("import sys\nfrom solvers.sandbox import deferred\n"
            "cp_model = deferred.import_module('ortools.sat.python.cp_model')\n"
            "before = 'pandas' in sys.modules\n"
            "total = int(cp_model.pd.Series([1, 2]).sum())\n"  # any real use loads pandas
            "import pandas\n"
            "print(before, total, cp_model.pd.Series is pandas.Series, type(sys.modules['pandas']).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "3", "True", "module"]


def test_the_default_preload_serves_the_rarer_libraries_warm_but_warms_them_only_on_demand() -> None:
    """cvxpy, scipy.optimize and pyscipopt are in the default preload (a cvxpy program would otherwise pay ~0.6 s
    of imports per run), each as its own flavour, and the service does not start their workers ahead of use."""
    from solvers.sandbox.program import DEFAULT_PRELOAD, ON_DEMAND
    from solvers.sandbox.service import default_warm

    assert set(ON_DEMAND) <= set(DEFAULT_PRELOAD) and not set(ON_DEMAND) & set(default_warm())
    assert flavour(DEFAULT_PRELOAD, "import cvxpy as cp") == ("cvxpy",)
    assert flavour(DEFAULT_PRELOAD, "from scipy.optimize import linprog") == ("scipy.optimize",)
    assert flavour(DEFAULT_PRELOAD, "from pyscipopt import Model, quicksum") == ("pyscipopt",)
    p = Pool(SandboxConfig(preload=DEFAULT_PRELOAD, timeout_s=60), workers=1)
    try:
        e = p.run(Program(program_id="cvx", code="import sys\nprint('cvxpy' in sys.modules)\nimport cvxpy as cp\n"
                                                   "x = cp.Variable(nonneg=True)\ncp.Problem(cp.Maximize(x), [x <= 2])"
                                                   ".solve()\n"))
    finally:
        p.close()
    assert e.status == ExecStatus.OK and e.stdout.splitlines()[0] == "True" and e.objective == pytest.approx(2.0)
