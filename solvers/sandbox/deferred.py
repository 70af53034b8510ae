"""Preload a solver library without the heavy library it imports only for an optional API.

OR-Tools' ``cp_model`` imports pandas (and, through it, pyarrow) at the top of the module, for its pandas helpers
(``new_int_var_series`` and the like) alone. In a warm worker that is 40-50 MB of heap and ~500 more mappings, and
every program forked from it pays for them twice: fork copies one page-table entry per resident page and the
program's exit tears them down again. Measured on this machine: fork + exit of a process that imported
``cp_model`` took 13.8 ms, of one that imported gurobipy 1.2 ms.

So the worker imports such a module with a stand-in for the optional library (``Deferred``): while the module
body runs, the few attributes it evaluates for annotations only (listed in ``DEFERRED``, checked against the
library's source) are placeholder classes; any other use, then or later, imports the real library and from then
on the stand-in is the real module's namespace. The stand-in is never left in ``sys.modules``: a program that
imports pandas gets pandas. And a program that imports pandas runs on a worker that preloaded it (``pandas`` is
in the default preload), so only programs that never name pandas run without it.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

# module to preload -> (the optional library it imports, the attributes of it the module body evaluates for
# annotations only). cp_model: ``_IndexOrSeries = Union[pd.Index, pd.Series]`` and signature annotations; every
# runtime use (``isinstance(obj, pd.Series)``, ``pd.Series(...)``) is inside a function, so it reaches the real one.
DEFERRED: dict[str, tuple[str, frozenset[str]]] = {
    "ortools.sat.python.cp_model": ("pandas", frozenset({"Index", "Series"})),
}


class Deferred(types.ModuleType):
    """A module that becomes the real ``name`` on first real use (see the module docstring)."""

    def __init__(self, name: str, placeholders: frozenset[str]) -> None:
        super().__init__(name)
        self.__dict__.update(_flywheel_placeholders=placeholders, _flywheel_importing=True, _flywheel_made={})

    def __getattr__(self, attr: str) -> Any:  # only for names not (yet) in the namespace
        d = self.__dict__
        if d["_flywheel_importing"] and attr in d["_flywheel_placeholders"]:
            # Not stored in the namespace: the next lookup, once the importer is done, must reach the real class.
            made = d["_flywheel_made"]
            if attr not in made:
                made[attr] = type(attr, (), {"__module__": self.__name__,
                                             "__doc__": f"stand-in for {self.__name__}.{attr} in annotations"})
            return made[attr]
        if attr.startswith("__") and attr.endswith("__") and d["_flywheel_importing"]:
            raise AttributeError(attr)  # import machinery probing (__path__, __file__): not a use of the library
        real = self._load()
        return getattr(real, attr)

    def _load(self) -> types.ModuleType:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        self.__dict__["_flywheel_importing"] = False
        return real


@contextlib.contextmanager
def _standing_in(name: str, placeholders: frozenset[str]) -> Iterator[Deferred | None]:
    if name in sys.modules:  # already imported for real: nothing to save
        yield None
        return
    stand_in = Deferred(name, placeholders)
    sys.modules[name] = stand_in
    try:
        yield stand_in
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        stand_in.__dict__["_flywheel_importing"] = False


def import_module(name: str) -> types.ModuleType:
    """``importlib.import_module``, deferring the optional library ``DEFERRED`` names for ``name``."""
    if name not in DEFERRED or name in sys.modules:
        return importlib.import_module(name)
    with _standing_in(*DEFERRED[name]):
        return importlib.import_module(name)
