"""Identifiers and literals of rendered programs: names a person would choose that never collide with the
program's own handles, and Python literals for element names and numbers."""

from __future__ import annotations

import itertools
import json
import keyword
import re
from collections.abc import Iterable, Sequence

from solvers.errors import ModelError
from solvers.ir import number_text

Key = tuple[str, ...]

# Names a program uses for its own handles; data identifiers never take them.
RESERVED = frozenset(
    set(keyword.kwlist)
    | {"gp", "GRB", "pyo", "cp", "COPT", "env", "m", "model", "mdl", "Model", "solver", "pywraplp", "cp_model",
       "mathopt", "itertools", "math", "status", "result", "results", "solution", "sol", "v", "var", "value",
       "name", "sum", "min", "max", "abs", "range", "len", "print", "list", "dict", "set", "tuple", "float", "int",
       "str", "object", "type", "open", "input", "id", "map", "filter", "zip", "all", "any", "round", "pow",
       "format", "hash", "iter", "next", "vars", "dir", "help", "exit", "quit", "obj", "objective", "params"}
)


def ident(name: str) -> str:
    """A valid, lower-risk Python identifier for an IR name."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = f"n_{out}"
    return out


class Namespace:
    """Hands out unique identifiers; a name already taken (or reserved) gets a suffix."""

    def __init__(self, reserved: Iterable[str] = RESERVED) -> None:
        self.taken: set[str] = set(reserved)

    def claim(self, wanted: str, suffix: str = "") -> str:
        base = ident(wanted)
        # Lazily: the numbered fallbacks are rarely reached, and building all 998 per claim cost ~10% of a render.
        numbered = (f"{base}{suffix or '_'}{k}" for k in range(2, 1000))
        for c in itertools.chain([base, f"{base}{suffix}"] if suffix else [base], numbered):
            if c not in self.taken:
                self.taken.add(c)
                return c
        raise ModelError(f"cannot name {wanted!r}", culprit=wanted)

    def claim_loop(self, set_name: str) -> str:
        """A loop variable for ``set_name`` as a person picks it: ``p`` for products, then ``pe`` for periods
        if ``p`` is taken, and ``p2`` for a second loop over the same set."""
        base = ident(set_name).lstrip("_").lower() or "k"
        for c in (base[0], base[:2], base[0] + "2", base[:2] + "2", base[0] + "3"):
            if c.isidentifier() and c not in self.taken:
                self.taken.add(c)
                return c
        return self.claim(base[0])


_json_str = json.encoder.encode_basestring_ascii


def lit(value: object) -> str:
    """A Python literal for a key element or a number, as it appears in the program."""
    if isinstance(value, str):
        return _json_str(value)  # what json.dumps(value) returns for a str, without the encoder's dispatch
    if isinstance(value, tuple):
        return "(" + ", ".join(lit(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return number_text(float(value))
    raise TypeError(f"no literal for {value!r}")


def key_lit(key: Key) -> str:
    """A dict key in the program: the element itself for one index, a tuple for several."""
    return lit(key[0]) if len(key) == 1 else lit(key)


def wrap_items(items: Sequence[str], open_: str, close: str, indent: str = "    ", width: int = 112) -> str:
    """``open_ a, b, c close`` on one line if it fits, else filled lines of items (what black would write)."""
    one = open_ + ", ".join(items) + close
    if len(one) <= width:
        return one
    lines, line = [], indent
    for item in items:
        piece = item + ","
        if len(line) + len(piece) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += piece + " "
    lines.append(line.rstrip())
    return open_ + "\n" + "\n".join(lines) + "\n" + close
