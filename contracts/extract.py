"""Find the program in a model's response: markdown fences, several blocks, python-tagged preferred.

Policies answer in chat: prose, perhaps a data block, a model block, an example output block. The program to run is
the python block that imports a solver; when several do, the last one (models revise their answer as they go).
Failing a python-tagged one, an untagged block or one tagged with something else (``gurobipy``, ``pyomo``) that
parses and imports a solver.
Without fences the whole text counts if it parses as Python and imports something. A response cut off inside a
fence (max tokens) still yields the open block.

A program written across blocks (step-by-step answers: data, then variables, then constraints, then the solve) is
put back together: earlier blocks that bind a name the chosen block reads and never binds are prepended (a draft
that solves on its own is never prepended), and while no solve call is present, later blocks that read names the
program binds are appended. Whatever is assembled must parse; otherwise the chosen block stands alone.
"""

from __future__ import annotations

import ast
import builtins
import re

SOLVER_MODULES = ("gurobipy", "pyomo", "ortools", "coptpy", "docplex", "pulp", "highspy", "cplex", "pyscipopt",
                  "mip", "cvxpy", "scipy")
PYTHON_TAGS = {"python", "py", "python3", "py3", "ipython"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[\w+#.-]*)[^\n]*\n", re.MULTILINE)
# Tag formats some models are trained on (OR-R1 style: <think> / <model> / <code>); an unclosed tag runs to the end.
_TAG = re.compile(r"<(code|python)>\s*\n?(.*?)(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?P<mod>[A-Za-z_][\w]*)", re.MULTILINE)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block as (language tag, body), in order. An unclosed last fence runs to the end.

    Without fences, ``<code>`` / ``<python>`` tag blocks count as python blocks (a fence inside a tag block wins).
    """
    fenced = _fenced_blocks(text)
    if fenced:
        return fenced
    return [("python", m.group(2).strip("\n") + "\n") for m in _TAG.finditer(text) if m.group(2).strip()]


def closed_code_blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``text`` whose closing fence has been written, as (language tag, body), in order."""
    return [(tag, body) for tag, body, closed in _fenced(text) if closed and body]


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    return [(tag, body) for tag, body, _ in _fenced(text) if body]


def _fenced(text: str) -> list[tuple[str, str, bool]]:
    blocks: list[tuple[str, str, bool]] = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            break
        fence = m.group("fence")
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = close.search(text, m.end())
        body = _outdent(text[m.end(): end.start() if end else len(text)], len(m.group("indent").expandtabs(4)))
        blocks.append((m.group("tag").lower(), body.rstrip() + "\n" if body.strip() else "", end is not None))
        if end is None:
            break
        pos = end.end()
    return blocks


def _outdent(body: str, indent: int) -> str:
    """A fence indented under a list item ("1. The model:" then "   ```python"): its lines lose up to the fence's
    indentation (CommonMark's rule), so the program does not start with an unexpected indent."""
    if not indent:
        return body
    lines = body.split("\n")
    return "\n".join(line[min(indent, len(line) - len(line.lstrip(" \t"))):] for line in lines)


def imports_solver(code: str) -> bool:
    return any(m.group("mod") in SOLVER_MODULES for m in _IMPORT.finditer(code))


def extract_code(text: str) -> str | None:
    """The program in ``text``, or None when it holds none. See the module docstring for the rules."""
    if not text or not text.strip():
        return None
    text = text.replace("\r\n", "\n")  # CRLF (a Windows client, some chat servers): fences close on their line
    blocks = code_blocks(text)
    if blocks:
        blocks = [(tag, _without_shell_lines(b)) for tag, b in blocks]
        # python-tagged blocks; then untagged ones and ones tagged otherwise (```gurobipy, ```pyomo) that parse
        code = [(tag in PYTHON_TAGS, tag, b) for tag, b in blocks if tag in PYTHON_TAGS or _parses(b)]
        for tagged in (True, False):
            solver = [i for i, (t, _, b) in enumerate(code) if t is tagged and imports_solver(b)]
            if solver:
                return _assemble([b for _, _, b in code], solver[-1])
        python = [b for t, _, b in code if t]
        pool = python or [b for t, tag, b in code if not tag]
        return max(pool, key=len) if pool else None
    text = _without_shell_lines(text)
    if _IMPORT.search(text) and _parses(text):
        return text.strip() + "\n"
    return None


# Notebook habits in a python block: "!pip install gurobipy", "%pip install pulp", "%%time", "pip install ..." on a
# line of its own. Not Python, and not the model: commented out (line numbers kept) when that makes the block parse.
_SHELL = re.compile(r"^([ \t]*)((?:!|%{1,2}[A-Za-z]|(?:pip3?|conda|apt(?:-get)?)[ \t]+install\b).*)$", re.MULTILINE)


def _without_shell_lines(code: str) -> str:
    if not _SHELL.search(code) or _parses(code):
        return code
    cleaned = _SHELL.sub(lambda m: f"{m.group(1)}# {m.group(2)}", code)
    return cleaned if _parses(cleaned) else code


# Calls that run a solver, by callee name (attribute or plain name), across the APIs in SOLVER_MODULES.
_SOLVE_CALLS = {"optimize", "solve", "Solve", "solveLP", "solveMIP", "run", "linprog", "milp", "minimize",
                "solve_model", "SolveWithObserver"}
_BUILTINS = set(dir(builtins))


def _names(code: str) -> tuple[set[str], set[str], bool] | None:
    """(names bound anywhere, names read, whether a solve call is present) of ``code``, or None if it does not parse.

    Bound over-approximates (a function's local counts as bound): that only makes assembly take less.
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    bound: set[str] = set()
    read: set[str] = set()
    solves = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Call):
            f = node.func
            callee = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            solves = solves or callee in _SOLVE_CALLS
    return bound, read, solves


def _assemble(pool: list[str], chosen: int) -> str:
    """The chosen block with the blocks it continues and the blocks that continue it (see the module docstring)."""
    info = [_names(b) for b in pool]
    if info[chosen] is None:
        return pool[chosen]
    take = {chosen}
    while True:
        bound = set().union(*(info[i][0] for i in take))
        missing = set().union(*(info[i][1] for i in take)) - bound - _BUILTINS
        add = [i for i in range(chosen) if i not in take and info[i] and not info[i][2] and info[i][0] & missing]
        if not add and not any(info[i][2] for i in take):
            add = [i for i in range(max(take) + 1, len(pool)) if info[i] and info[i][1] & bound][:1]
        if not add:
            break
        take.update(add)
    program = "\n".join(pool[i].strip("\n") for i in sorted(take)) + "\n"
    return program if len(take) > 1 and _parses(program) else pool[chosen]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True
