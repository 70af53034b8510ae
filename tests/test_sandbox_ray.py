"""The Ray backend on a real local Ray instance (``ray.init(num_cpus=2)``): the same executions as the local pool,
in input order, through each node's isolated sandbox; a dead actor's programs are retried; a clear error without
Ray. One Ray start-up (~12 s on the shared 2-core machine) is shared by the module."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from solvers.records import ExecStatus
from solvers.sandbox import Program, SandboxConfig, run_batch
from solvers.sandbox.pool import process_uids

GUROBI_LP = """
import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(ub={ub}, name="x"); y = m.addVar(ub=3, name="y")
m.addConstr(x + 2 * y <= {cap})
m.setObjective(3 * x + 4 * y, gp.GRB.MAXIMIZE); m.optimize()
print("Optimal objective: 42")  # a spoofed print must change nothing
"""
GUROBI_INFEASIBLE = """
import gurobipy as gp
m = gp.Model(); m.Params.OutputFlag = 0
x = m.addVar(lb=5); m.addConstr(x <= 2); m.optimize()
"""
PYOMO_HIGHS = """
import pyomo.environ as pe
m = pe.ConcreteModel(); m.x = pe.Var(bounds=(0, {ub})); m.y = pe.Var(domain=pe.NonNegativeIntegers, bounds=(0, 9))
m.c = pe.Constraint(expr=m.x + m.y <= {cap})
m.o = pe.Objective(expr=2 * m.x + 3 * m.y, sense=pe.maximize)
pe.SolverFactory("appsi_highs").solve(m)
"""
ORTOOLS_GLOP = """
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP")
x = s.NumVar(0, {ub}, "x"); y = s.NumVar(0, 10, "y")
s.Add(x + y <= {cap}); s.Maximize(5 * x + 2 * y); s.Solve()
"""
CP_SAT = """
from ortools.sat.python import cp_model
m = cp_model.CpModel()
xs = [m.NewIntVar(0, {ub}, f"x{{i}}") for i in range(4)]
m.Add(sum(xs) <= {cap}); m.AddAllDifferent(xs); m.Maximize(sum((i + 1) * x for i, x in enumerate(xs)))
cp_model.CpSolver().Solve(m)
"""
SLOW_FIRST = """
import time
time.sleep(1.0)  # finishes after the programs behind it: the output must still come first
from ortools.linear_solver import pywraplp
s = pywraplp.Solver.CreateSolver("GLOP"); x = s.NumVar(0, 1, "x"); s.Maximize(x); s.Solve()
"""
FUNCTION_STYLE = """
def solve(cap, price):
    from ortools.linear_solver import pywraplp
    s = pywraplp.Solver.CreateSolver("GLOP")
    x = s.NumVar(0, cap, "x"); s.Maximize(price * x); s.Solve()
    return s.Objective().Value()
"""


def corpus() -> list[Program]:
    """Real programs of every shape and outcome the flywheel sees, with distinct parameters per copy."""
    programs = [Program(program_id="slow-first", code=SLOW_FIRST)]
    for i in range(2):
        ub, cap = 4 + i, 9 + 2 * i
        programs += [Program(program_id=f"grb-{i}", code=GUROBI_LP.format(ub=ub, cap=cap)),
                     Program(program_id=f"pyomo-{i}", code=PYOMO_HIGHS.format(ub=ub, cap=cap)),
                     Program(program_id=f"glop-{i}", code=ORTOOLS_GLOP.format(ub=ub, cap=cap)),
                     Program(program_id=f"cpsat-{i}", code=CP_SAT.format(ub=ub, cap=cap))]
    programs += [Program(program_id="infeasible", code=GUROBI_INFEASIBLE),
                 Program(program_id="syntax", code="def f(:\n"),
                 Program(program_id="runtime", code=ORTOOLS_GLOP.format(ub=1, cap=1) + "raise ValueError('bad data')\n"),
                 Program(program_id="no-solve", code="print('hello')\n"),
                 Program(program_id="func", code=FUNCTION_STYLE, entry="solve", args={"cap": 5, "price": 3})]
    return programs


CONFIG = SandboxConfig(timeout_s=30, preload=("gurobipy", "pyomo.environ", "ortools.linear_solver.pywraplp",
                                              "ortools.sat.python.cp_model"))


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (make test installs it)")
    from solvers.sandbox import ray_backend

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray_backend.close()
        ray.shutdown()


@pytest.fixture(scope="module")
def local_baseline():
    """The local pool's executions of the corpus, computed while Ray starts (its start-up mostly waits)."""
    box: dict[str, list] = {}
    thread = threading.Thread(target=lambda: box.setdefault("local", list(run_batch(corpus(), CONFIG, workers=2))))
    thread.start()
    yield box, thread


def outcome(e) -> tuple:
    return (e.program_id, str(e.status), e.objective, [str(s.status) for s in e.solves], e.returned)


def test_ray_matches_local_pool_in_order(local_baseline, cluster) -> None:
    programs = corpus()
    remote = list(run_batch(programs, CONFIG.model_copy(update={"backend": "ray"}), progress=True))
    box, thread = local_baseline
    thread.join()
    local = box["local"]
    assert [e.program_id for e in remote] == [p.program_id for p in programs]
    # Same code, same solver builds, one solver thread each: the solvers are deterministic, so objectives are
    # compared exactly.
    assert [outcome(e) for e in remote] == [outcome(e) for e in local]
    by_id = {e.program_id: e for e in remote}
    assert by_id["grb-0"].status == ExecStatus.OK and by_id["grb-0"].objective == 22.0  # x=4, y=2.5: 12 + 10
    assert by_id["infeasible"].status == ExecStatus.SOLVER_INFEASIBLE
    assert by_id["syntax"].status == ExecStatus.SYNTAX_ERROR
    assert by_id["runtime"].status == ExecStatus.RUNTIME_ERROR
    assert by_id["no-solve"].status == ExecStatus.NO_SOLVE_CALL
    assert by_id["func"].returned == 15.0
    assert {e.solves[0].api for e in remote if e.solves} >= {"gurobipy", "pyomo", "ortools"}
    # Every program ran inside the node's full sandbox, exactly as locally (Ray never runs user code itself).
    assert {e.isolation for e in remote} == {e.isolation for e in local}
    assert all("seccomp" in e.isolation and "rlimits" in e.isolation for e in remote)


def _processes_with_uids(uids: set[int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    if next(int(line.split()[1]) for line in fh if line.startswith("Uid:")) in uids:
                        found.append(int(entry))
            except (OSError, StopIteration):
                continue
    return found


def test_dead_actor_is_replaced_and_its_programs_retried(cluster) -> None:
    from solvers.sandbox import ray_backend

    # Each program takes >= 0.3 s, so the victim is certainly running one (and has another queued) when killed.
    slow = "import time\ntime.sleep(0.3)\n"
    programs = [Program(program_id=f"glop-{i}", code=slow + ORTOOLS_GLOP.format(ub=i, cap=2 * i)) for i in range(8)]
    config = CONFIG.model_copy(update={"backend": "ray"})
    fleet = ray_backend.actors(config, 2)
    victim = fleet.handles[0]
    victim_pid = cluster.get(victim.pid.remote())
    # Every uid the victim's pools can hand out (pool.process_uids, for the actor's pid).
    victim_uids = set(process_uids(CONFIG, victim_pid))
    seen = []
    for n, execution in enumerate(run_batch(programs, config, workers=2)):
        seen.append(execution)
        if n == 1:
            cluster.kill(victim, no_restart=True)
    assert [e.program_id for e in seen] == [p.program_id for p in programs]
    assert [e.status for e in seen] == [ExecStatus.OK] * len(programs)  # nothing reached the caller as an error
    assert [e.objective for e in seen] == [7.0 * i for i in range(8)]  # x = ub = i, y = cap - x = i
    assert fleet.handles[0] is not victim
    # The killed actor's sandbox went with it: no process of its programs is left on the host (bubblewrap dies with
    # its parent, the program's group with bubblewrap). Its cgroup directories outlive it (nobody was left to
    # remove them); they must be empty, so removing them succeeds.
    deadline = time.monotonic() + 10
    while _processes_with_uids(victim_uids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with_uids(victim_uids) == []
    for path in glob.glob(f"/sys/fs/cgroup/**/flywheel-{victim_pid}-*", recursive=True):
        os.rmdir(path)


def test_sandbox_error_on_every_node_is_reported_not_raised(cluster) -> None:
    """A node whose sandbox cannot start (here: a licence file to mount that does not exist) answers sandbox_error
    after its local retries; the driver re-sends to the other actor, and the caller gets sandbox_error in order
    (infrastructure, never counted against the program), as from the local pool."""
    broken = SandboxConfig(preload=(), license_files={"GRB_LICENSE_FILE": "/nonexistent/gurobi.lic"},
                           backend="ray")
    programs = [Program(program_id=f"p{i}", code="print(1)") for i in range(3)]
    remote = list(run_batch(programs, broken))
    assert [e.program_id for e in remote] == ["p0", "p1", "p2"]
    assert [e.status for e in remote] == [ExecStatus.SANDBOX_ERROR] * 3
    assert all(e.error for e in remote)


def test_cli_batch_backend_ray(cluster, tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_here import flywheel_here

    # The CLI preloads what the programs import: these import what CONFIG preloads, so the actors' warm pools serve.
    rows = [{"id": "lp", "code": GUROBI_LP.format(ub=4, cap=9)}, {"id": "bad", "code": "def f(:"},
            {"id": "func", "code": FUNCTION_STYLE, "entry": "solve", "args": {"cap": 5, "price": 3}},
            {"id": "pyomo", "code": PYOMO_HIGHS.format(ub=4, cap=9)}]
    infile, outfile = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    infile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = flywheel_here(capsys, monkeypatch, "sandbox", "batch", str(infile), "--out", str(outfile),
                                   "--backend", "ray", "--format", "json")
    assert code == 0, err
    lines = [json.loads(line) for line in outfile.read_text().splitlines()]
    assert [r["id"] for r in lines] == ["lp", "bad", "func", "pyomo"]
    assert [r["status"] for r in lines] == ["ok", "syntax_error", "ok", "ok"]
    assert lines[0]["objective"] == 22.0 and lines[2]["returned"] == 15.0
    assert lines[3]["objective"] == 27.0  # x + y <= 9 with y worth more: y = 9, x = 0
    assert json.loads(out.strip().splitlines()[-1]) == {"ok": 3, "syntax_error": 1}


def test_clear_error_without_ray(tmp_path: Path) -> None:
    """With ``ray`` unimportable (as when the extra is not installed): the API raises a SandboxError naming the
    extra, and the CLI prints that one line and exits 2 before opening the output file."""
    infile = tmp_path / "in.jsonl"
    infile.write_text(json.dumps({"id": "a", "code": "print(1)"}) + "\n")
    # sys.modules["ray"] = None makes `import ray` raise ImportError, exactly as a missing package does.
    script = ("import sys; sys.modules['ray'] = None\n"
              "from solvers.errors import SandboxError\n"
              "from solvers.sandbox import Program, SandboxConfig, run_batch\n"
              "try:\n"
              "    list(run_batch([Program(program_id='a', code='print(1)')], SandboxConfig(backend='ray')))\n"
              "except SandboxError as exc:\n"
              "    print('API', exc, flush=True)\n"
              "sys.argv = ['flywheel'] + sys.argv[1:]\n"
              "from flywheel.cli import main; main()\n")
    res = subprocess.run([sys.executable, "-c", script, "sandbox", "batch", str(infile), "--out",
                          str(tmp_path / "out.jsonl"), "--backend", "ray"], capture_output=True, text=True,
                         timeout=120)
    message = "sandbox.backend=ray: the ray backend needs Ray, which is not installed: pip install ray"
    assert res.stdout.startswith(f"API {message}"), res.stdout + res.stderr
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_config_file_selects_the_backend(tmp_path: Path) -> None:
    """``[sandbox] backend = "ray"`` and ``address`` reach the sandbox config of a round; at their defaults they are
    left out of the plan, so a local round's config hash is what it was before the keys existed."""
    from flywheel.config import load_config
    from flywheel.round.execute import sandbox_config
    from flywheel.round.plan import RoundPlan
    from solvers.errors import ConfigError

    toml = tmp_path / "flywheel.toml"
    toml.write_text('[sandbox]\nbackend = "ray"\naddress = "10.0.0.5:6379"\ntimeout_s = 5\n')
    config = sandbox_config(RoundPlan.from_config(load_config(toml)))
    assert (config.backend, config.ray_address, config.timeout_s) == ("ray", "10.0.0.5:6379", 5.0)
    local = RoundPlan.from_config(load_config())
    assert sandbox_config(local).backend == "local"
    assert set(local.sandbox) == {"timeout_s", "cpu_s", "memory_mb", "license_file"}
    toml.write_text('[sandbox]\nbackend = "spark"\n')
    with pytest.raises(ConfigError, match="sandbox.backend"):
        load_config(toml)
