"""A plain row-wise model form both sides of an equivalence check are put into: the reference IR and captured MPS.

Rows are ranged (``lo <= a.x <= hi``) so that <=, >= and == are one shape; integrality is a flag (binary is an
integer in [0, 1]); infinities are ``math.inf``. This is the common input of the canonical, WL and semantic layers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from solvers.ir import ConSense, Model, ObjSense, VarType

INF = math.inf


@dataclass
class StdModel:
    names: list[str]
    integer: list[bool]
    lb: list[float]
    ub: list[float]
    rows: list[dict[int, float]]
    lo: list[float]
    hi: list[float]
    obj: dict[int, float]
    maximize: bool = False
    constant: float = 0.0
    quad: dict[tuple[int, int], float] = field(default_factory=dict)  # coef * x_i * x_j with i <= j
    row_names: list[str] = field(default_factory=list)
    merged: set[str] = field(default_factory=set)  # columns that absorbed a split partner (reformulate.py)

    @property
    def n_vars(self) -> int:
        return len(self.names)

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    def copy(self) -> StdModel:
        return StdModel(list(self.names), list(self.integer), list(self.lb), list(self.ub),
                        [dict(r) for r in self.rows], list(self.lo), list(self.hi), dict(self.obj), self.maximize,
                        self.constant, dict(self.quad), list(self.row_names), set(self.merged))

    def objective_value(self, x: list[float]) -> float:
        val = self.constant + sum(c * x[j] for j, c in self.obj.items())
        val += sum(c * x[i] * x[j] for (i, j), c in self.quad.items())
        return val


def from_ir(model: Model) -> StdModel:
    """The IR in standard form (names kept, so name mapping works against captured models)."""
    index = {v.name: j for j, v in enumerate(model.variables)}
    integer = [v.vtype != VarType.CONTINUOUS for v in model.variables]
    lb = [(0.0 if v.vtype == VarType.BINARY else (-INF if v.lb is None else v.lb)) for v in model.variables]
    ub = [(1.0 if v.vtype == VarType.BINARY else (INF if v.ub is None else v.ub)) for v in model.variables]
    rows, lo, hi = [], [], []
    for c in model.constraints:
        row: dict[int, float] = {}
        for name, coef in c.terms:
            row[index[name]] = row.get(index[name], 0.0) + coef
        rows.append(row)
        lo.append(c.rhs if c.sense in (ConSense.GE, ConSense.EQ) else -INF)
        hi.append(c.rhs if c.sense in (ConSense.LE, ConSense.EQ) else INF)
    obj: dict[int, float] = {}
    for name, coef in model.objective.terms:
        obj[index[name]] = obj.get(index[name], 0.0) + coef
    quad: dict[tuple[int, int], float] = {}
    for a, b, coef in model.objective.quadratic:
        key = (min(index[a], index[b]), max(index[a], index[b]))
        quad[key] = quad.get(key, 0.0) + coef
    return StdModel([v.name for v in model.variables], integer, lb, ub, rows, lo, hi, obj,
                    model.objective.sense == ObjSense.MAXIMIZE, model.objective.constant, quad,
                    [c.name for c in model.constraints])


_NAME_JUNK = re.compile(r"[^a-z0-9]+")


def normalize_name(name: str) -> str:
    """``make[Chairs]``, ``make_Chairs`` and ``make(Chairs)`` all become ``make_chairs``."""
    return _NAME_JUNK.sub("_", name.lower()).strip("_")
