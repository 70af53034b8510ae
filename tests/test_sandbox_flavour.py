"""Flavoured warm workers: each program is forked from a worker that preloaded the modules it imports (and not the
others), the pool keeps a bounded number of workers, and an evicted flavour comes back correctly."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus
from solvers.sandbox import Pool, Program, SandboxConfig
from solvers.sandbox.flavour import flavour

# Standard-library modules no sandbox worker imports on its own: cheap stand-ins for solver libraries.
MODULES = ("mailbox", "ftplib", "wave", "plistlib", "imaplib")
CONFIG = SandboxConfig(timeout_s=20, preload=MODULES)
RAN = ExecStatus.NO_SOLVE_CALL  # the probes ran to the end; they call no solver


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
