"""Find the program in a model's response: markdown fences, several blocks, python-tagged preferred.

Policies answer in chat: prose, perhaps a data block, a model block, an example output block. The program to run is
the python block that imports a solver; when several do, the last one (models revise their answer as they go).
Without fences the whole text counts if it parses as Python and imports something. A response cut off inside a
fence (max tokens) still yields the open block.
"""

from __future__ import annotations

import ast
import re

SOLVER_MODULES = ("gurobipy", "pyomo", "ortools", "coptpy", "docplex", "pulp", "highspy", "cplex", "pyscipopt",
                  "mip", "cvxpy", "scipy")
PYTHON_TAGS = {"python", "py", "python3", "py3", "ipython"}

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<tag>[\w+#.-]*)[^\n]*\n", re.MULTILINE)
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
        body = text[m.end(): end.start() if end else len(text)]
        blocks.append((m.group("tag").lower(), body.rstrip() + "\n" if body.strip() else "", end is not None))
        if end is None:
            break
        pos = end.end()
    return blocks


def imports_solver(code: str) -> bool:
    return any(m.group("mod") in SOLVER_MODULES for m in _IMPORT.finditer(code))


def extract_code(text: str) -> str | None:
    """The program in ``text``, or None when it holds none. See the module docstring for the rules."""
    if not text or not text.strip():
        return None
    text = text.replace("\r\n", "\n")  # CRLF (a Windows client, some chat servers): fences close on their line
    blocks = code_blocks(text)
    if blocks:
        python = [b for tag, b in blocks if tag in PYTHON_TAGS]
        untagged = [b for tag, b in blocks if not tag and _parses(b)]
        for pool in (python, untagged):
            solver = [b for b in pool if imports_solver(b)]
            if solver:
                return solver[-1]
        pool = python or untagged
        return max(pool, key=len) if pool else None
    if _IMPORT.search(text) and _parses(text):
        return text.strip() + "\n"
    return None


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True
