"""Every ExecStatus is reachable by a real program (or, for sandbox_error, a real set-up failure), and the
classification does not depend on anything the program prints."""

from __future__ import annotations

import pytest

from solvers.records import ExecStatus, SolveStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.classify import Observed, classify

LP = """
import gurobipy as gp
m = gp.Model()
x = m.addVar(ub=4, name="x")
m.setObjective(x, gp.GRB.MAXIMIZE)
"""
CASES: dict[ExecStatus, str] = {
    ExecStatus.OK: LP + "m.optimize()\nprint('infeasible!')\n",
    ExecStatus.NO_CODE: "# a response with no code in it\n\n",
    ExecStatus.SYNTAX_ERROR: "def f(:\n    pass\n",
    ExecStatus.IMPORT_ERROR: "import gurobipy\nimport not_a_real_solver_module\n",
    ExecStatus.LICENSE_LIMIT: LP + "y = m.addVars(2500)\nm.optimize()\n",  # bundled licence: 2,000 variables
    ExecStatus.MODEL_BUILD_ERROR: LP + "m.addConstr(x <= capacity)\nm.optimize()\n",
    ExecStatus.RUNTIME_ERROR: LP + "m.optimize()\nprint(x.X / 0)\n",
    ExecStatus.NO_SOLVE_CALL: LP + "print('Optimal objective: 4')\n",
    ExecStatus.SOLVER_INFEASIBLE: LP + "m.addConstr(x >= 5)\nm.optimize()\nprint(m.ObjVal)\n",
    # DualReductions=0 makes Gurobi tell unbounded from infeasible (else presolve says "inf_or_unbd").
    ExecStatus.SOLVER_UNBOUNDED: "import gurobipy as gp\nm = gp.Model()\nm.Params.DualReductions = 0\n"
                                 "x = m.addVar(name='x')\nm.setObjective(x, gp.GRB.MAXIMIZE)\nm.optimize()\n",
    # GLOP reports ABNORMAL for a NaN coefficient: a real numeric failure reported by the solver itself.
    ExecStatus.SOLVER_NUMERIC: """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, 1, "x")
c = s.Constraint(0, 1)
c.SetCoefficient(x, float("nan"))
s.Maximize(x)
s.Solve()
""",
    ExecStatus.TIMEOUT_WALL: "import time\ntime.sleep(60)\n",
    ExecStatus.MEMORY_LIMIT: "blocks = []\nwhile True:\n    blocks.append(b'x' * (64 * 2**20))\n",
    ExecStatus.OUTPUT_LIMIT: "while True:\n    print('spam' * 256)\n",
    ExecStatus.TAMPERED: LP + "gp.Model.optimize = lambda self: None\nm.optimize()\n",
    # More threads than the processes cap (64): CPython's "can't start new thread" (tests/test_sandbox_limits.py)
    ExecStatus.PROCESS_LIMIT: "import threading, time\nfor _ in range(200):\n"
                              "    threading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n",
    ExecStatus.DENIED: "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\n",
}
# Short limits keep the suite fast: wall 6 s, 384 MiB, 1 MiB of output.
CONFIG = SandboxConfig(timeout_s=6, memory_mb=384, output_limit_bytes=2**20, preload=("gurobipy",))


@pytest.fixture(scope="module")
def executions() -> dict[ExecStatus, object]:
    progs = [Program(program_id=str(status), code=code) for status, code in CASES.items()]
    return {ExecStatus(e.program_id): e for e in run_batch(progs, CONFIG)}


@pytest.mark.parametrize("expected", list(CASES))
def test_status_is_reachable(executions: dict, expected: ExecStatus) -> None:
    e = executions[expected]
    assert e.status == expected, (e.error, e.stderr[-600:])
    assert e.program_id == str(expected)
    if expected != ExecStatus.OK:
        assert e.error  # every non-ok status says why in one line


def test_license_limit_is_not_a_model_error(executions: dict) -> None:
    e = executions[ExecStatus.LICENSE_LIMIT]
    assert e.solves and e.solves[-1].status == SolveStatus.LICENSE_LIMIT
    assert "size-limited" in e.error


def test_output_flood_is_capped_and_flagged(executions: dict) -> None:
    e = executions[ExecStatus.OUTPUT_LIMIT]
    assert e.stdout_truncated and len(e.stdout.encode()) <= CONFIG.output_cap_bytes + 4  # + one split UTF-8 char


def test_timeouts_are_bounded(executions: dict) -> None:
    # wall: the 6 s limit plus kill/reap latency (generous 10 s on a loaded 2-core machine)
    assert executions[ExecStatus.TIMEOUT_WALL].wall_s < CONFIG.timeout_s + 10


def test_timeout_cpu_even_when_sigxcpu_is_ignored() -> None:
    # CPU 1 s against a 60 s wall limit: other jobs on this shared 2-core machine may leave a program only a
    # small share of a core, and the CPU limit must still be the one that fires. Ignoring SIGXCPU does not help:
    # the hard limit (soft + 1 s) is a SIGKILL.
    config = SandboxConfig(timeout_s=60, cpu_s=1, preload=("gurobipy",))
    code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n"
    [e] = list(run_batch([Program(program_id="cpu", code=code)], config))
    assert e.status == ExecStatus.TIMEOUT_CPU, e.error
    assert e.cpu_s >= config.cpu_limit


def test_every_status_is_covered() -> None:
    assert set(CASES) | {ExecStatus.SANDBOX_ERROR, ExecStatus.TIMEOUT_CPU} == set(ExecStatus)


def test_sandbox_error_from_a_failed_setup_is_retried_and_reported() -> None:
    # An open-files limit of 3 leaves the child no descriptor to write its program: the set-up fails, which is
    # infrastructure (sandbox_error), never the program's fault.
    config = SandboxConfig(timeout_s=10, max_open_files=3, retries=1, preload=())
    [e] = list(run_batch([Program(program_id="p", code="print(1)\n")], config))
    assert e.status == ExecStatus.SANDBOX_ERROR, (e.error, e.stderr)


def test_classifier_precedence() -> None:
    """Tampering evidence beats a claimed optimal solve; a missing 'ready' is the sandbox's fault."""
    ok_solve = {"type": "solve", "record": {"status": "optimal"}}
    base = dict(exit_code=0, term_signal=None, timed_out=False, output_flood=False, oom_kills=0, cpu_s=0.1,
                cpu_limit=5)
    assert classify(Observed(messages=[{"type": "ready"}, ok_solve, {"type": "done", "outcome": "finished"}],
                             channel_error="unauthenticated bytes on the result channel", **base))[0] == \
        ExecStatus.TAMPERED
    assert classify(Observed(messages=[], channel_error=None, **base))[0] == ExecStatus.SANDBOX_ERROR


def test_cplex_community_size_limit_is_license_limit() -> None:
    # CPLEX community edition: 1,000 variables; docplex raises DOcplexLimitsExceeded (CPLEX code 1016).
    code = """
from docplex.mp.model import Model
m = Model()
x = m.continuous_var_list(1500, ub=1)
m.add_constraint(m.sum(x) <= 10)
m.maximize(m.sum(x))
m.solve()
"""
    [e] = list(run_batch([Program(program_id="cplex", code=code)], CONFIG.model_copy(update={"preload": ()})))
    assert e.status == ExecStatus.LICENSE_LIMIT, e.error
    assert e.solves[-1].status == SolveStatus.LICENSE_LIMIT and e.solves[-1].api == "docplex"
