"""The blind contract process imports the ``contracts`` and ``solvers`` packages its parent imported, not whatever the
interpreter's install points at: run from a second checkout with ``PYTHONPATH`` (a git worktree beside the installed
one), every user contract once ended as a contract error, because bubblewrap had mounted the second checkout's
``contracts`` and the child looked for the installed one. The variable that tells the child where they are is gone
before user code runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import contracts
import solvers

USER_FILE = '''
import os
import contracts
from contracts import Verdict, contract

@contract(stage="after_execution")
def where_am_i(sample) -> Verdict:
    return Verdict.passed(contracts.__file__, env=os.environ.get("PYTHONPATH", "<unset>"))
'''

SCRIPT = """
import json
import sys
import contracts
from contracts.engine import run_suite
from contracts.suites import load_suite
from contracts.testing import make_sample
from flywheel.generators.testing import problem_with_truth
sample = make_sample(problem_with_truth(), code="import gurobipy as gp\\nm = gp.Model()\\nm.optimize()\\n")
(row,) = run_suite(load_suite(sys.argv[1]), [sample]).verdicts
print(contracts.__file__)
print(row.outcome)
print(row.message)
print(json.loads(row.evidence or "{}").get("env", "<no evidence>"))
"""


def test_the_blind_child_runs_the_parents_copy_of_the_packages(tmp_path: Path) -> None:
    checkout = tmp_path / "other-checkout"
    for pkg in (contracts, solvers):
        src = Path(pkg.__file__).parent
        shutil.copytree(src, checkout / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    user = tmp_path / "where_contracts.py"
    user.write_text(USER_FILE)
    # flywheel (the generators the script imports) stays the installed one: only the two jailed packages move
    installed = str(Path(contracts.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), installed])}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(user)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    parent, outcome, child, child_env = out.stdout.strip().splitlines()[-4:]
    copy = str(checkout / "contracts" / "__init__.py")
    assert parent == copy
    assert outcome == "pass", child  # a contract error here is the child failing to import its packages
    assert child == copy  # the user's contract ran against the parent's copy, not the installed package
    assert child_env == "<unset>"  # user code does not see where the packages came from
