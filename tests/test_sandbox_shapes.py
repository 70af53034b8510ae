"""Programs come in the shapes seen in the wild: plain scripts, ``if __name__ == "__main__":``, function-style
``solve(...)`` called with given inputs (ComplexOR's convention), and a ``main()`` that is defined but never
called. Plus the data-file and licence-file plumbing."""

from __future__ import annotations

from pathlib import Path

from solvers.records import ExecStatus
from solvers.sandbox import Program, SandboxConfig, run_batch

BODY = """
import gurobipy as gp
def build(cap, price):
    m = gp.Model()
    x = m.addVar(ub=cap, name="x")
    m.setObjective(price * x, gp.GRB.MAXIMIZE)
    m.optimize()
    return m.ObjVal
"""
SHAPES = {
    "script": BODY + "print(build(4, 2))\n",
    "main_guard": BODY + "if __name__ == '__main__':\n    print(build(4, 2))\n",
    "function_args_dict": BODY + "def solve(cap, price):\n    return build(cap, price)\n",
    "function_args_list": BODY + "def solve(cap, price):\n    return build(cap, price)\n",
    "uncalled_main": BODY + "def main():\n    print(build(4, 2))\n",
    "data_file": BODY + "import json\nd = json.load(open('data/params.json'))\nprint(build(d['cap'], d['price']))\n",
}
CONFIG = SandboxConfig(timeout_s=30, preload=("gurobipy",))


def test_every_shape_runs_and_is_captured() -> None:
    programs = [
        Program(program_id="script", code=SHAPES["script"]),
        Program(program_id="main_guard", code=SHAPES["main_guard"]),
        Program(program_id="function_args_dict", code=SHAPES["function_args_dict"], entry="solve",
                args={"cap": 4, "price": 2}),
        Program(program_id="function_args_list", code=SHAPES["function_args_list"], entry="solve", args=[4, 2]),
        Program(program_id="uncalled_main", code=SHAPES["uncalled_main"]),
        Program(program_id="data_file", code=SHAPES["data_file"], files={"data/params.json": '{"cap": 4, "price": 2}'}),
        Program(program_id="missing_entry", code=BODY, entry="solve"),
    ]
    results = {e.program_id: e for e in run_batch(programs, CONFIG)}
    for pid in ("script", "main_guard", "function_args_dict", "function_args_list", "uncalled_main", "data_file"):
        e = results[pid]
        assert e.status == ExecStatus.OK, (pid, e.error, e.stderr[-300:])
        assert e.objective == 8.0 and len(e.solves) == 1, pid
    assert results["function_args_dict"].returned == 8.0 and results["function_args_list"].returned == 8.0
    # an entry the program does not define is a clear error, not a silent no-op
    assert results["missing_entry"].status == ExecStatus.MODEL_BUILD_ERROR
    assert "entry function 'solve'" in results["missing_entry"].error


def test_licence_file_is_mounted_read_only(tmp_path: Path) -> None:
    lic = tmp_path / "gurobi.lic"
    lic.write_text("# a licence file the user owns\nLICENSEID=0\n")
    lic.chmod(0o644)
    code = """
import os
path = os.environ["GRB_LICENSE_FILE"]
print(path, open(path).read().splitlines()[0])
try:
    open(path, "a").write("tamper")
    print("WRITABLE")
except OSError:
    print("read-only")
"""
    config = CONFIG.model_copy(update={"license_files": {"GRB_LICENSE_FILE": str(lic)}, "preload": ()})
    [e] = list(run_batch([Program(program_id="lic", code=code)], config))
    assert "# a licence file the user owns" in e.stdout and "read-only" in e.stdout, (e.stdout, e.stderr)
    assert lic.read_text().count("tamper") == 0


def test_checkout_under_tmp_stays_visible_over_the_private_tmp():
    """A CI clone (or venv) under /tmp must be bound after the private tmpfs, or the worker cannot start."""
    from solvers.sandbox.pool import _repo_paths, bwrap_command

    cmd = bwrap_command([], {}, caps=False)
    tmpfs_at = cmd.index("--tmpfs")
    for path in _repo_paths():
        binds = [i for i in range(len(cmd) - 2) if cmd[i] == "--ro-bind" and cmd[i + 2] == path]
        assert binds and all(i > tmpfs_at for i in binds), path


def test_programs_compile_as_python_prog_py_compiles_them() -> None:
    """The child compiles each program without the sandbox's own ``from __future__`` flags, so annotations are
    evaluated as under ``python prog.py``; a compiler warning reaches the program's stderr, and tracebacks name the
    program's file."""
    programs = [
        Program(program_id="annotations", code="def f(x: int) -> int:\n    return x\nprint(f.__annotations__)\n"),
        Program(program_id="warning", code="x = 1\nif x is 1:\n    print('one')\n"),
        Program(program_id="traceback", code="import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
                                            "    traceback.print_exc()\n"),
    ]
    got = {e.program_id: e for e in run_batch(programs, SandboxConfig(timeout_s=30, preload=()), workers=1)}
    assert got["annotations"].stdout == "{'x': <class 'int'>, 'return': <class 'int'>}\n"
    assert got["warning"].stdout == "one\n" and "SyntaxWarning" in got["warning"].stderr
    assert 'program.py", line 3' in got["traceback"].stderr and "1 / 0" in got["traceback"].stderr


MULTIPROCESSING = """
import concurrent.futures as cf
import multiprocessing as mp
import __main__
def square(x):
    return x * x
with mp.Pool(2) as pool:
    a = sum(pool.map(square, range(10)))
with cf.ProcessPoolExecutor(2) as ex:
    b = sum(ex.map(square, range(5)))
print(a, b, __main__.square is square)
"""
SHM_WRITE = "import os\nfd = os.open('/dev/shm/left-behind', os.O_CREAT | os.O_WRONLY, 0o666)\nos.write(fd, b'x')\n"
SHM_READ = "import os\nprint(sorted(os.listdir('/dev/shm')))\n"


def test_multiprocessing_programs_run_and_leave_nothing_in_dev_shm() -> None:
    """Programs that use multiprocessing (its locks are POSIX semaphores in /dev/shm; its pickles find functions
    in ``__main__``) run as under ``python prog.py``; what a program leaves in /dev/shm is gone before the next
    program on that worker (same uid every other program)."""
    programs = [Program(program_id="mp", code=MULTIPROCESSING)]
    programs += [Program(program_id=f"shm-{i}", code=SHM_WRITE if i % 2 == 0 else SHM_READ) for i in range(4)]
    got = {e.program_id: e for e in run_batch(programs, SandboxConfig(timeout_s=60, preload=()), workers=1)}
    assert got["mp"].stdout.split() == ["285", "30", "True"], got["mp"].stderr
    if "bwrap" in got["mp"].isolation:  # /dev/shm is the worker's own tmpfs only under bubblewrap
        assert got["shm-1"].stdout == got["shm-3"].stdout == "[]\n"
