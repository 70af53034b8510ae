"""``flywheel sandbox run`` / ``batch`` as a user runs them: real subprocesses, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FLYWHEEL = [sys.executable, "-m", "flywheel.cli"]
LP = """
import gurobipy as gp
m = gp.Model()
x = m.addVar(ub=4, name="x")
m.setObjective(x, gp.GRB.MAXIMIZE)
m.optimize()
print("Optimal objective: 42")
"""
DATA = """
import json, pyomo.environ as pe
cap = json.load(open("parameters.json"))["cap"]
m = pe.ConcreteModel(); m.x = pe.Var(bounds=(0, cap))
m.o = pe.Objective(expr=2 * m.x, sense=pe.maximize)
pe.SolverFactory("highs").solve(m)
"""
FUNC = """
def solve(cap, price):
    from ortools.linear_solver import pywraplp
    s = pywraplp.Solver.CreateSolver("GLOP")
    x = s.NumVar(0, cap, "x")
    s.Maximize(price * x)
    s.Solve()
    return s.Objective().Value()
"""


def flywheel(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*FLYWHEEL, *args], capture_output=True, text=True, timeout=timeout)


def test_run_json_and_data_dir(tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(DATA)
    data = tmp_path / "data"
    data.mkdir()
    (data / "parameters.json").write_text('{"cap": 7}')
    res = flywheel("sandbox", "run", str(prog), "--data", str(data), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["status"] == "ok" and out["solves"][0]["objective"] == 14.0
    assert {"status", "solves", "stdout", "stderr", "wall_s", "cpu_s", "max_rss_mb"} <= set(out)
    assert {"status", "objective", "bound", "solver"} <= set(out["solves"][0])


def test_batch_keeps_order_and_summarises(tmp_path: Path) -> None:
    rows = [{"id": "lp", "code": LP}, {"id": "bad", "code": "def f(:"},
            {"id": "data", "code": DATA, "files": {"parameters.json": '{"cap": 3}'}},
            {"id": "func", "code": FUNC, "entry": "solve", "args": {"cap": 5, "price": 3}}]
    infile, outfile = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    infile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = flywheel("sandbox", "batch", str(infile), "--out", str(outfile), "--workers", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    out = [json.loads(line) for line in outfile.read_text().splitlines()]
    assert [o["id"] for o in out] == ["lp", "bad", "data", "func"]
    assert [o["status"] for o in out] == ["ok", "syntax_error", "ok", "ok"]
    assert out[0]["objective"] == 4.0 and out[2]["objective"] == 6.0 and out[3]["returned"] == 15.0
    assert json.loads(res.stdout.strip().splitlines()[-1]) == {"ok": 3, "syntax_error": 1}


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    missing = flywheel("sandbox", "run", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "nope.py" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "code": "print(1)"}\n{"code": "no id"}\n')
    res = flywheel("sandbox", "batch", str(bad), "--out", str(tmp_path / "o.jsonl"))
    assert res.returncode == 2 and "bad.jsonl:2" in res.stderr
