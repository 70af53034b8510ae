"""Code extraction from responses, the tolerance rules, and the answer-blind repairs (checked by running the
repaired programs with the real solver in a subprocess)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contracts.api import get_contract
from contracts.extract import extract_code
from contracts.sample import BlindProblem, BlindSample
from contracts.tolerance import compare
from solvers.records import Attempt

SOLVER_BLOCK = "import gurobipy as gp\nm = gp.Model()\nm.optimize()\n"


@pytest.mark.parametrize("text, expected", [
    (f"Here it is:\n```python\n{SOLVER_BLOCK}```\nDone.", SOLVER_BLOCK),
    # several blocks: the data block and the example output are not the program
    (f"Data:\n```python\ncost = [1, 2]\n```\nModel:\n```python\n{SOLVER_BLOCK}```\nOutput:\n```\nOptimal 3\n```",
     SOLVER_BLOCK),
    # python-tagged preferred over an untagged block that also parses
    (f"```\nimport pulp\n```\n```python\n{SOLVER_BLOCK}```", SOLVER_BLOCK),
    # two solver blocks: the last (the revised answer) wins
    (f"```python\nimport pyomo.environ as pyo\n```\nBetter:\n```py\n{SOLVER_BLOCK}```", SOLVER_BLOCK),
    # tilde fences and a response cut off inside the block
    (f"~~~python\n{SOLVER_BLOCK}~~~", SOLVER_BLOCK),
    (f"Answer:\n```python\n{SOLVER_BLOCK}", SOLVER_BLOCK),
    # no fences at all: a bare program
    (SOLVER_BLOCK, SOLVER_BLOCK),
    # OR-R1 style tags, closed or cut off
    (f"<think>plan</think>\n<model>x</model>\n<code>\n{SOLVER_BLOCK}</code>", SOLVER_BLOCK),
    (f"<think>plan</think>\n<code>\n{SOLVER_BLOCK}", SOLVER_BLOCK),
    # CRLF line endings (a Windows client, some chat servers): the closing fence still closes the block
    (f"Here:\r\n```python\r\n{SOLVER_BLOCK.replace(chr(10), chr(13) + chr(10))}```\r\nThe answer is 3.\r\n",
     SOLVER_BLOCK),
    # a fence tagged with the solver's name, not the language
    (f"```gurobipy\n{SOLVER_BLOCK}```", SOLVER_BLOCK),
    # ... but never one that does not parse, nor a JSON block when no block imports a solver
    ("```gurobi\nmaximize 3 x\n```", None),
    ('```json\n{"x": 1}\n```', None),
    ("The answer is 42.", None),
    ("", None),
    ("```text\nnot code at all\n```", None),
])
def test_extract_code(text: str, expected: str | None) -> None:
    assert extract_code(text) == expected


def test_question_numbers_scale_words_and_percentages() -> None:
    from contracts.codefacts import question_numbers

    nums = question_numbers("Budget: 4 million yuan, 1,200 units, efficiency 15%; table | A | 80 |")
    assert {4.0, 4e6, 1200.0, 15.0, 0.15, 80.0, 0.8} <= nums
    assert 0.8 not in question_numbers("A makes 80 chairs.")  # no percent anywhere: no fractions invented


def test_tolerance_rules() -> None:
    # strict: 1e-6 (|g| + 1)
    assert compare(100.00005, 100.0).match and not compare(100.001, 100.0).match
    # orlm_lenient: round both, then 5% relative
    assert compare(104.4, 100.0, "orlm_lenient").match and not compare(106.0, 100.0, "orlm_lenient").match
    # the achieved MIP gap widens every rule
    c = compare(99.0, 100.0, "strict", mip_gap=0.02)
    assert c.match and c.tolerance == pytest.approx(1e-6 * 101 + 0.02 * 100)
    assert compare(1.5, 1.0, atol=0.6).match and not compare(1.5, 1.0, atol=0.1, rtol=0.1).match


def _blind(code: str) -> BlindSample:
    return BlindSample(problem=BlindProblem(problem_id="p", family="f", question="q"),
                       attempt=Attempt(attempt_id="a", problem_id="p", code=code))


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


GUROBI_NO_IMPORT_NO_SOLVE = """m = gp.Model("t")
x = m.addVar(ub=4, name="x")
m.setObjective(3 * x, GRB.MAXIMIZE)
"""


def test_repairs_fix_imports_add_solve_and_params() -> None:
    code = GUROBI_NO_IMPORT_NO_SOLVE
    assert _run(code).returncode != 0  # NameError: gp
    fixed = get_contract("fix_import_aliases")(_blind(code))
    assert fixed.kind == "fix_import_aliases" and "import gurobipy as gp" in fixed.code
    solved = get_contract("add_solve_call")(_blind(fixed.code))
    assert solved.code.rstrip().endswith("m.optimize()")
    tuned = get_contract("inject_solver_params")(_blind(solved.code))
    assert "m.Params.TimeLimit = 60" in tuned.code and "m.Params.Threads = 1" in tuned.code
    out = _run(tuned.code + "print('OBJ', m.ObjVal, m.Params.TimeLimit)\n")
    assert out.returncode == 0 and "OBJ 12.0 60.0" in out.stdout, out.stderr
    # nothing left to repair: each returns None
    for name in ("fix_import_aliases", "add_solve_call", "inject_solver_params", "strip_fences"):
        assert get_contract(name)(_blind(tuned.code)) is None, name


def test_strip_fences_and_module_name_fixes() -> None:
    rep = get_contract("strip_fences")(_blind(f"Sure!\n```python\n{SOLVER_BLOCK}```"))
    assert rep.code == SOLVER_BLOCK
    rep = get_contract("fix_import_aliases")(_blind("import gurobi as gp\nm = gp.Model()\n"))
    assert rep.code.startswith("import gurobipy as gp")


DATA = "profit = [3, 5]\nhours = [1, 2]\n"
MODEL = ("import gurobipy as gp\nm = gp.Model()\nm.Params.OutputFlag = 0\nx = m.addVars(2)\n"
         "m.setObjective(gp.quicksum(profit[i] * x[i] for i in range(2)), gp.GRB.MAXIMIZE)\n"
         "m.addConstr(gp.quicksum(hours[i] * x[i] for i in range(2)) <= 10)\n")
SOLVE = "m.optimize()\nprint('OBJ', m.ObjVal)\n"


@pytest.mark.parametrize("text, expected", [
    # step by step: data, model, solve in three blocks (and an output block that is not code)
    (f"Data:\n```python\n{DATA}```\nModel:\n```python\n{MODEL}```\nSolve:\n```python\n{SOLVE}```\n"
     "Output:\n```\nOBJ 30.0\n```", DATA + MODEL + SOLVE),
    # the data in an untagged block, the imports alone in the first python block
    (f"```\n{DATA}```\n```python\nimport gurobipy as gp\n```\n```python\n{MODEL[21:]}{SOLVE}```",
     DATA + MODEL + SOLVE),
    # the solve and report split off the end only
    (f"```python\n{DATA}{MODEL}```\nThen:\n```python\n{SOLVE}```", DATA + MODEL + SOLVE),
])
def test_a_program_written_across_blocks_is_put_back_together(text: str, expected: str) -> None:
    code = extract_code(text)
    assert code == expected
    out = _run(code)
    assert out.returncode == 0 and "OBJ 30.0" in out.stdout, out.stderr


def test_assembly_never_takes_a_draft_that_solves_or_an_unrelated_block() -> None:
    draft = DATA + MODEL + SOLVE
    revised = MODEL.replace("<= 10", "<= 12") + SOLVE
    # the revised answer reads `profit` / `hours` bound only in the draft; the draft solves, so it is not prepended
    assert extract_code(f"```python\n{draft}```\nBetter:\n```python\n{revised}```") == revised
    # a complete program is never extended by later blocks, even ones that read its names
    assert extract_code(f"```python\n{draft}```\n```python\nprint(m.Status)\n```") == draft
    # a later block that reads nothing the program binds is not a continuation
    assert extract_code(f"```python\n{DATA}{MODEL}```\n```python\nprint(1 + 1)\n```") == DATA + MODEL


@pytest.mark.parametrize("line", ["!pip install gurobipy", "%pip install -q gurobipy", "%%time",
                                  "pip install gurobipy", "    !conda install -y gurobi"])
def test_notebook_shell_lines_are_commented_out(line: str) -> None:
    program = f"{line}\n{DATA}{MODEL}{SOLVE}" if not line.startswith(" ") else \
        f"{DATA}if True:\n{line}\n    pass\n{MODEL}{SOLVE}"
    code = extract_code(f"Install first, then run:\n```python\n{program}```")
    assert code is not None and code.count("\n") == program.count("\n")  # line numbers kept for tracebacks
    assert f"# {line.strip()}" in code
    out = _run(code)
    assert out.returncode == 0 and "OBJ 30.0" in out.stdout, out.stderr


def test_shell_like_python_is_left_alone() -> None:
    # `%` and `!` inside valid Python are not notebook lines; a block that parses is never touched
    program = f"{DATA}{MODEL}{SOLVE}print(7 % 3, 1 != 2)\n"
    assert extract_code(f"```python\n{program}```") == program
    # a block broken for another reason stays as the model wrote it
    broken = "!pip install gurobipy\nimport gurobipy as gp\nm = gp.Model(\n"
    assert extract_code(f"```python\n{broken}```") == broken


def test_a_fence_indented_under_a_list_item_loses_that_indentation() -> None:
    program = DATA + MODEL + "for i in range(2):\n    x[i].Start = 0\n" + SOLVE
    indented = "".join(f"   {line}" if line.strip() else line for line in program.splitlines(keepends=True))
    text = f"Steps:\n\n1. Write the model:\n\n   ```python\n{indented}   ```\n\n2. Run it.\n"
    code = extract_code(text)
    assert code == program  # the loop body keeps its own four spaces
    out = _run(code)
    assert out.returncode == 0 and "OBJ 30.0" in out.stdout, out.stderr
