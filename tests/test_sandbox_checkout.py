"""The sandbox worker imports the ``solvers`` package its parent imported, not whatever the interpreter's install
points at: a second checkout run with ``PYTHONPATH`` (a git worktree beside the installed one) once had every program
end in "sandbox worker failed to start" (bubblewrap mounts the parent's package; the worker looked for the
installed one) or, without bubblewrap, run under the other checkout's code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import solvers

SCRIPT = """
import solvers
from solvers.sandbox import Program, SandboxConfig, run_batch
code = "import solvers\\nprint(solvers.__file__)"
ex = list(run_batch([Program(program_id="p", code=code)], SandboxConfig()))[0]
print(solvers.__file__)
print(ex.status.value)
print(ex.stdout.strip())
"""


def test_the_worker_runs_the_parents_copy_of_the_package(tmp_path: Path) -> None:
    checkout = tmp_path / "other-checkout"
    shutil.copytree(Path(solvers.__file__).parent, checkout / "solvers",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    parent, status, child = out.stdout.strip().splitlines()[-3:]
    copy = str(checkout / "solvers" / "__init__.py")
    assert parent == copy
    assert status == "no_solve_call"  # the program ran (and called no solver), the worker started
    assert child == copy  # the program saw the parent's copy, not the installed package
