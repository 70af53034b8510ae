"""Static facts about a program and a question text: imports, numeric literals, the numbers a question states.

Shared by several contracts (uses_requested_api, numeric_coverage, no_hardcoded_answer) and the repairs, so the
parsing rules live in one place.
"""

from __future__ import annotations

import ast
import math
import re

# Numbers in prose: 1,200 / 3.5 / -4 / 1e3 / 15% ; a thousands comma only between digit groups of three.
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?%?")
# A word after a number that scales it: "15 percent" is 0.15, "4 million" is 4e6 in a program.
_SCALE_WORDS = {"percent": 0.01, "per cent": 0.01, "thousand": 1e3, "million": 1e6, "billion": 1e9}
_SCALE = re.compile(r"\s*(" + "|".join(_SCALE_WORDS) + r")\b", re.IGNORECASE)

# Literal values that need no justification from the question: loop bounds, signs, unit steps, big-M style
# constants, which every modeller writes without the question stating them.
TRIVIAL = {0.0, 1.0, 2.0, -1.0}
# Unit conversions a question leaves to the modeller (minutes per hour, percent, a dozen, hours per day, days per
# week, grams per kilogram, seconds per hour): a program may use them without the question stating them.
UNIT_CONSTANTS = {60.0, 100.0, 12.0, 24.0, 7.0, 1000.0, 3600.0}

# Calls / attributes / keywords whose numeric arguments are solver settings, not model data.
_SETTING_WORDS = ("param", "time", "limit", "gap", "thread", "seed", "verbose", "msg", "log", "output", "tolerance",
                  "round", "range", "print", "format", "sleep", "precision", "emphasis", "workers", "display")


def imported_modules(code: str) -> set[str]:
    """Top-level module names a program imports (``from ortools.linear_solver import x`` gives ``ortools``)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return {m.group(1) for m in re.finditer(r"^\s*(?:from|import)\s+(\w+)", code, re.MULTILINE)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


_CALLBACKS = re.compile(r"cbLazy|cbCut|LazyConstraints|\.optimize\(\s*[A-Za-z_]|setCallback|CallbackBase|"
                        r"cb_lazy|register_callback|LazyConstraintCallback")


def uses_callbacks(code: str) -> bool:
    """Does the program add constraints from solver callbacks? Then the model it handed the solver (and that the
    sandbox captured) is not the whole model: lazy cuts live only in the callback."""
    return bool(_CALLBACKS.search(code))


def question_numbers(text: str) -> set[float]:
    """Every number a question states; a percentage counts both as written (15) and as a fraction (0.15), and
    "4 million" both as 4 and as 4e6."""
    out: set[float] = set()
    for m in _NUMBER.finditer(text):
        tok = m.group(0)
        try:
            x = float(tok.rstrip("%").replace(",", ""))
        except ValueError:
            continue
        out.add(x)
        if tok.endswith("%"):
            out.add(x / 100)
        scale = _SCALE.match(text, m.end())
        if scale:
            out.add(x * _SCALE_WORDS[scale.group(1).lower()])
    if "%" in text or re.search(r"\bper ?cent", text, re.IGNORECASE):
        # a table column headed "Efficiency (%)" states its cells as percentages
        out |= {x / 100 for x in list(out)}
    return out


def code_literals(code: str) -> list[float]:
    """Numeric literals of a program that could be model data (solver settings and print formatting excluded)."""
    tree = _parse(code)
    if tree is None:
        return []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _call_name(node.func).lower()
            if any(w in name for w in _SETTING_WORDS):
                skip |= {id(n) for arg in node.args for n in ast.walk(arg)}
            for kw in node.keywords:
                if kw.arg and any(w in kw.arg.lower() for w in _SETTING_WORDS):
                    skip |= {id(n) for n in ast.walk(kw.value)}
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) for t in node.targets):
            # model.Params.TimeLimit = 60 is a setting; a plain name (time = {...}) is data.
            target = " ".join(_call_name(t) for t in node.targets).lower()
            if any(w in target for w in _SETTING_WORDS):
                skip |= {id(n) for n in ast.walk(node.value)}
        elif isinstance(node, ast.Subscript):  # indexing (x[0], data[2]) is positions, not data
            skip |= {id(n) for n in ast.walk(node.slice)}
    out: list[float] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_num(node.operand):
            skip.add(id(node.operand))
            out.append(-float(node.operand.value))  # type: ignore[attr-defined]
        elif _is_num(node):
            out.append(float(node.value))  # type: ignore[attr-defined]
    return out


def printed_literals(code: str) -> list[float]:
    """Numeric literals passed straight to ``print`` (a program that prints its answer instead of computing it)."""
    tree = _parse(code)
    if tree is None:
        return []
    out: list[float] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node.func) == "print":
            for arg in node.args:
                for n in ast.walk(arg):
                    if _is_num(n) and not isinstance(n.value, bool):  # type: ignore[attr-defined]
                        out.append(float(n.value))  # type: ignore[attr-defined]
    return out


def is_big_m(x: float) -> bool:
    """1e4, 1e5, 10**6, ...: conventional big-M constants; below 1e-4: tolerances and epsilons. Never data."""
    return (abs(x) >= 1e4 and math.log10(abs(x)).is_integer()) or 0 < abs(x) < 1e-4


def derivable(pool: set[float], x: float) -> bool:
    """x is one arithmetic step (a*b, a/b, a+b, a-b) away from two stated numbers (a batch of 320 at 4% -> 12.8)."""
    nums = list(pool)
    for i, a in enumerate(nums):
        for b in nums[i:]:
            cands = (a * b, a + b, a - b, b - a, a / b if b else math.nan, b / a if a else math.nan)
            if any(abs(x - c) <= 1e-9 * max(1.0, abs(x)) for c in cands):
                return True
    return False


def contains_number(pool: set[float], x: float) -> bool:
    # 1e-9 relative: the same decimal written twice parses to the same float or one ulp apart.
    return any(abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y)) for y in pool)


def _parse(code: str) -> ast.Module | None:
    """The program's syntax tree, or None when it does not parse (then it states no literals)."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _is_num(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_call_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return _call_name(node.value)
    if isinstance(node, ast.Call):
        return _call_name(node.func)
    return ""
