"""Which of the configured preload modules a program needs: the *flavour* of warm worker that should run it.

A fork copies the worker's page tables and every program's exit tears them down, so a worker that imported every
solver library (about 1,300 mappings, 90 MB of Python heap with OR-Tools' pandas and pyarrow) makes each program
pay for libraries it never touches (for pandas, which cp_model imports for an optional API, see ``deferred.py``). The pool keeps one kind of worker per flavour instead: a gurobipy program is
forked from a worker that imported gurobipy only. A module the program imports that its flavour did not preload
(a dynamic import, say) is simply imported in the child: slower, never wrong.
"""

from __future__ import annotations

import re

# Libraries a preloaded module loads on the program's behalf at solve time: pyomo reaches HiGHS through highspy.
COMPANIONS = {"pyomo.environ": ("highspy",)}


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([^#\n]*)|import[ \t]+([^#\n]*))", re.MULTILINE)


def imported_names(code: str) -> frozenset[str]:
    """Absolute module names the code imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``), read line by line
    with a regular expression: an order of magnitude cheaper than parsing, on the pool's critical path, and a miss or
    a spurious name only changes which worker runs the program (the child imports what its worker did not)."""
    names: set[str] = set()
    for module, imported, plain in _IMPORT.findall(code):
        if module:
            if not module.startswith("."):
                names.add(module)
                names.update(f"{module}.{n}" for n in _names(imported) if n != "*")
        else:
            names.update(_names(plain))
    return frozenset(names)


def _names(clause: str) -> list[str]:
    """``a.b as c, (d, e`` -> ['a.b', 'd', 'e']."""
    out = []
    for part in clause.replace("(", " ").replace(")", " ").replace("\\", " ").split(","):
        words = part.split()
        if words and all(w.isidentifier() for w in words[0].split(".")):
            out.append(words[0])
    return out


def flavour(preload: tuple[str, ...], code: str) -> tuple[str, ...]:
    """The entries of ``preload`` (in its order) that ``code`` needs. An entry is needed when the program imports
    it, a module below it, or the package above it; a library imported only through a module no entry names
    (``from pyomo.opt import SolverFactory``) needs every entry of that library. Companions come last, whether or not
    ``preload`` names them: they are part of loading the module that brings them."""
    names = imported_names(code)
    needed = {m for m in preload for n in names if n == m or n.startswith(m + ".") or m.startswith(n + ".")}
    matched_roots = {m.split(".")[0] for m in needed}
    roots = {n.split(".")[0] for n in names} - matched_roots
    needed.update(m for m in preload if m.split(".")[0] in roots)
    companions = tuple(c for m in preload if m in needed for c in COMPANIONS.get(m, ()) if c not in needed)
    return tuple(m for m in preload if m in needed) + tuple(dict.fromkeys(companions))
