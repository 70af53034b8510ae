"""The optimisation-model IR: one typed, immutable description of an LP / IP / MILP / convex QP.

Generators build it, renderers turn it into programs, ground truth solves it, contracts compare captured models
with it and CoT explains it. It is scalar-expanded (every variable and constraint is listed) but keeps the
structure a person thinks in: index sets, named parameters, and variable / constraint *groups* with the sets
they range over. Element names are ones a person would choose (``ship_Plant1_Market2``).

Serialisation is deterministic (sorted keys, no whitespace), so ``content_hash`` is a stable id.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from solvers.errors import ModelError
from solvers.mps_names import mps_names


class VarType(StrEnum):
    CONTINUOUS = "continuous"
    INTEGER = "integer"
    BINARY = "binary"


class ConSense(StrEnum):
    LE = "<="
    GE = ">="
    EQ = "=="


class ObjSense(StrEnum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IndexSet(_Frozen):
    """A named set of elements, e.g. ``plants = (Plant1, Plant2)``."""

    name: str
    elements: tuple[str, ...]
    description: str = ""


class Parameter(_Frozen):
    """Named data. ``values`` is a scalar or maps a comma-joined index tuple to a number.

    ``derived`` marks numbers computed by the modeller (big-M, n-1 in MTZ) rather than given in the question.
    """

    name: str
    index: tuple[str, ...] = ()  # names of the index sets it ranges over
    values: float | dict[str, float]
    unit: str = ""
    description: str = ""
    derived: bool = False

    def numbers(self) -> list[float]:
        return [self.values] if isinstance(self.values, (int, float)) else list(self.values.values())


class VarGroup(_Frozen):
    """A family of variables indexed by sets, e.g. ``ship[plants, markets]``."""

    name: str
    index: tuple[str, ...] = ()
    vtype: VarType = VarType.CONTINUOUS
    description: str = ""
    unit: str = ""


class ConGroup(_Frozen):
    """A family of constraints, e.g. ``supply[plants]``: one row per element of its index sets."""

    name: str
    index: tuple[str, ...] = ()
    description: str = ""


class Variable(_Frozen):
    name: str
    group: str
    index: tuple[str, ...] = ()
    vtype: VarType = VarType.CONTINUOUS
    lb: float | None = 0.0  # None = -inf
    ub: float | None = None  # None = +inf


class Constraint(_Frozen):
    """``sum(coef * var) sense rhs``; terms are (variable name, coefficient) pairs."""

    name: str
    group: str
    index: tuple[str, ...] = ()
    terms: tuple[tuple[str, float], ...]
    sense: ConSense
    rhs: float


class Objective(_Frozen):
    sense: ObjSense
    terms: tuple[tuple[str, float], ...] = ()
    # (var_i, var_j, coef) meaning coef * x_i * x_j; convex for minimisation (concave for maximisation).
    quadratic: tuple[tuple[str, str, float], ...] = ()
    constant: float = 0.0
    description: str = ""


class Model(_Frozen):
    """An optimisation model. Construction validates names and numbers; the instance is immutable."""

    name: str
    sets: tuple[IndexSet, ...] = ()
    params: tuple[Parameter, ...] = ()
    var_groups: tuple[VarGroup, ...] = ()
    con_groups: tuple[ConGroup, ...] = ()
    variables: tuple[Variable, ...]
    constraints: tuple[Constraint, ...] = ()
    objective: Objective

    @model_validator(mode="after")
    def _check(self) -> Model:
        names = [v.name for v in self.variables]
        dupes = [n for n, c in Counter(names).items() if c > 1]
        if dupes:
            raise ModelError(f"duplicate variable names {dupes[:5]}", culprit=f"model {self.name}")
        cnames = [c.name for c in self.constraints]
        dupes = [n for n, c in Counter(cnames).items() if c > 1]
        if dupes:
            raise ModelError(f"duplicate constraint names {dupes[:5]}", culprit=f"model {self.name}")
        known = set(names)
        groups = {g.name for g in self.var_groups}
        for v in self.variables:
            if groups and v.group not in groups:
                raise ModelError(f"variable {v.name} names unknown group {v.group}", culprit=f"model {self.name}")
            for b in (v.lb, v.ub):
                if b is not None and not math.isfinite(b):
                    raise ModelError(f"bound of {v.name} is not finite (use None)", culprit=f"model {self.name}")
        for c in self.constraints:
            for var, coef in c.terms:
                if var not in known:
                    raise ModelError(f"constraint {c.name} uses unknown variable {var}", culprit=f"model {self.name}")
                if not math.isfinite(coef):
                    raise ModelError(f"constraint {c.name} has a non-finite coefficient", culprit=f"model {self.name}")
            if not math.isfinite(c.rhs):
                raise ModelError(f"constraint {c.name} has a non-finite rhs", culprit=f"model {self.name}")
        for var, _ in self.objective.terms:
            if var not in known:
                raise ModelError(f"objective uses unknown variable {var}", culprit=f"model {self.name}")
        for a, b, _ in self.objective.quadratic:
            if a not in known or b not in known:
                raise ModelError(f"objective uses unknown variable {a} or {b}", culprit=f"model {self.name}")
        return self

    # ---- classification and metrics -------------------------------------------------------------------

    @property
    def problem_class(self) -> str:
        """LP, IP (all integer), MILP, QP (continuous quadratic) or MIQP."""
        n_int = sum(v.vtype != VarType.CONTINUOUS for v in self.variables)
        if self.objective.quadratic:
            return "MIQP" if n_int else "QP"
        if n_int == 0:
            return "LP"
        return "IP" if n_int == len(self.variables) else "MILP"

    def metrics(self) -> dict[str, int]:
        """Complexity metrics computed from the IR: variables by type, constraints, non-zeros."""
        by_type = Counter(v.vtype for v in self.variables)
        return {
            "n_vars": len(self.variables),
            "n_continuous": by_type[VarType.CONTINUOUS],
            "n_integer": by_type[VarType.INTEGER],
            "n_binary": by_type[VarType.BINARY],
            "n_constraints": len(self.constraints),
            "n_nonzeros": sum(len(c.terms) for c in self.constraints),
            "n_quadratic_terms": len(self.objective.quadratic),
        }

    def var(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        raise ModelError(f"no variable {name!r}", culprit=f"model {self.name}")

    def param(self, name: str) -> Parameter:
        for p in self.params:
            if p.name == name:
                return p
        raise ModelError(f"no parameter {name!r}", culprit=f"model {self.name}")

    # ---- evaluation ----------------------------------------------------------------------------------

    def evaluate(self, solution: dict[str, float]) -> float:
        """Objective value of a full assignment (missing variables count as 0)."""
        total = self.objective.constant
        total += sum(coef * solution.get(v, 0.0) for v, coef in self.objective.terms)
        total += sum(coef * solution.get(a, 0.0) * solution.get(b, 0.0) for a, b, coef in self.objective.quadratic)
        return total

    def violations(self, solution: dict[str, float], tol: float = 1e-6) -> list[str]:
        """Names of constraints, bounds or integrality requirements the assignment breaks (scaled tolerance)."""
        bad: list[str] = []
        for v in self.variables:
            x = solution.get(v.name, 0.0)
            if v.lb is not None and x < v.lb - tol * (1 + abs(v.lb)):
                bad.append(f"lb:{v.name}")
            if v.ub is not None and x > v.ub + tol * (1 + abs(v.ub)):
                bad.append(f"ub:{v.name}")
            if v.vtype != VarType.CONTINUOUS and abs(x - round(x)) > 1e-5:
                bad.append(f"int:{v.name}")
        for c in self.constraints:
            lhs = sum(coef * solution.get(v, 0.0) for v, coef in c.terms)
            slack = tol * (1 + abs(c.rhs))
            if (
                (c.sense == ConSense.LE and lhs > c.rhs + slack)
                or (c.sense == ConSense.GE and lhs < c.rhs - slack)
                or (c.sense == ConSense.EQ and abs(lhs - c.rhs) > slack)
            ):
                bad.append(c.name)
        return bad

    # ---- serialisation -------------------------------------------------------------------------------

    def to_json(self) -> str:
        """Deterministic JSON (sorted keys, compact); the same model always gives the same bytes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> Model:
        return cls.model_validate_json(text)

    def content_hash(self, length: int = 16) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:length]

    def to_mps(self) -> str:
        """Free-format MPS text (highspy's ``readModel`` and every major solver read it back).

        Integer variables are wrapped in MARKER lines; a maximisation is written with OBJSENSE MAX. Quadratic
        objectives go in a QUADOBJ section (upper triangle, coefficients of 0.5 x'Qx as the QUADOBJ convention).
        """
        return _to_mps(self)


def _to_mps(m: Model) -> str:
    vn = dict(zip((v.name for v in m.variables), mps_names([v.name for v in m.variables]), strict=True))
    cn = mps_names([c.name for c in m.constraints], frozenset({"obj"}))
    lines = [f"NAME {mps_names([m.name])[0]}"]
    lines += ["OBJSENSE", "    MAX" if m.objective.sense == ObjSense.MAXIMIZE else "    MIN"]
    lines.append("ROWS")
    lines.append(" N  obj")
    code = {ConSense.LE: "L", ConSense.GE: "G", ConSense.EQ: "E"}
    for c, name in zip(m.constraints, cn, strict=True):
        lines.append(f" {code[c.sense]}  {name}")
    columns: dict[str, list[tuple[str, float]]] = {v.name: [] for v in m.variables}
    for v, coef in m.objective.terms:
        columns[v].append(("obj", coef))
    for c, name in zip(m.constraints, cn, strict=True):
        for v, coef in c.terms:
            columns[v].append((name, coef))
    lines.append("COLUMNS")
    in_int = False
    for i, v in enumerate(m.variables):
        is_int = v.vtype != VarType.CONTINUOUS
        if is_int and not in_int:
            lines.append(f"    MARKER{i} 'MARKER' 'INTORG'")
            in_int = True
        if not is_int and in_int:
            lines.append(f"    MARKER{i} 'MARKER' 'INTEND'")
            in_int = False
        entries = columns[v.name] or [("obj", 0.0)]
        for row, coef in entries:
            lines.append(f"    {vn[v.name]} {row} {coef!r}")
    if in_int:
        lines.append("    MARKEREND 'MARKER' 'INTEND'")
    lines.append("RHS")
    for c, name in zip(m.constraints, cn, strict=True):
        if c.rhs != 0:
            lines.append(f"    RHS {name} {c.rhs!r}")
    if m.objective.constant:
        # MPS convention: the RHS of the objective row is minus the objective constant.
        lines.append(f"    RHS obj {-m.objective.constant!r}")
    lines.append("BOUNDS")
    for v in m.variables:
        if v.vtype == VarType.BINARY:
            lines.append(f" BV BND {vn[v.name]}")
            continue
        if v.lb is None and v.ub is None:
            lines.append(f" FR BND {vn[v.name]}")
            continue
        if v.lb is None:
            lines.append(f" MI BND {vn[v.name]}")
        elif v.lb != 0:
            lines.append(f" LO BND {vn[v.name]} {v.lb!r}")
        if v.ub is not None:
            lines.append(f" UP BND {vn[v.name]} {v.ub!r}")
        elif v.vtype == VarType.INTEGER:
            # MPS readers (HiGHS among them) give an integer column inside MARKERs a default upper bound of 1;
            # PL states the +inf upper bound explicitly.
            lines.append(f" PL BND {vn[v.name]}")
    if m.objective.quadratic:
        # QUADOBJ holds Q of the objective 0.5 x'Qx: a term c*x_i*x_j (i != j) is Q_ij = Q_ji = c,
        # and c*x_i^2 is Q_ii = 2c. Only the lower triangle is listed.
        q: dict[tuple[str, str], float] = {}
        order = {v.name: k for k, v in enumerate(m.variables)}
        for a, b, coef in m.objective.quadratic:
            i, j = sorted((a, b), key=order.__getitem__)
            q[(i, j)] = q.get((i, j), 0.0) + (2 * coef if i == j else coef)
        lines.append("QUADOBJ")
        for (i, j), coef in q.items():
            lines.append(f"    {vn[i]} {vn[j]} {coef!r}")
    lines.append("ENDATA")
    return "\n".join(lines) + "\n"


def linear_expr_str(terms: tuple[tuple[str, float], ...] | list[tuple[str, float]]) -> str:
    """Human-readable ``3 x + 2 y - z`` (used in formulations and error messages)."""
    parts: list[str] = []
    for i, (v, c) in enumerate(terms):
        mag = abs(c)
        coef = "" if mag == 1 else f"{_num(mag)} "
        sign = "-" if c < 0 else "+"
        parts.append((f"-{coef}{v}" if sign == "-" else f"{coef}{v}") if i == 0 else f"{sign} {coef}{v}")
    return " ".join(parts) if parts else "0"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def number_text(x: float) -> str:
    """How a number is written in questions and programs: integers without ``.0``."""
    return _num(x)


def as_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays inside params to plain Python for JSON."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): as_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return as_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
