"""A small mutable builder for the immutable IR, so a generator family reads like the model it builds."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from solvers.errors import ModelError
from solvers.ir import (
    ConGroup,
    ConSense,
    Constraint,
    IndexSet,
    Model,
    Objective,
    ObjSense,
    Parameter,
    VarGroup,
    Variable,
    VarType,
)

Terms = Iterable[tuple[str, float]]


class ModelBuilder:
    """Collects sets, parameters, variable and constraint groups; ``build()`` returns a validated ``Model``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._sets: dict[str, IndexSet] = {}
        self._params: list[Parameter] = []
        self._var_groups: list[VarGroup] = []
        self._con_groups: dict[str, ConGroup] = {}
        self._vars: list[Variable] = []
        self._cons: list[Constraint] = []
        self._objective: Objective | None = None

    def add_set(self, name: str, elements: Sequence[str], description: str = "") -> tuple[str, ...]:
        self._sets[name] = IndexSet(name=name, elements=tuple(elements), description=description)
        return tuple(elements)

    def elements(self, *names: str) -> tuple[tuple[str, ...], ...]:
        """The elements of the declared sets ``names``, one tuple each (``(foods,) = b.elements("foods")``)."""
        return tuple(self._sets[n].elements for n in names)

    def add_param(
        self,
        name: str,
        values: float | Mapping[str, Any] | Mapping[tuple[str, ...], float],
        index: Sequence[str] = (),
        unit: str = "",
        description: str = "",
        derived: bool = False,
    ) -> None:
        """One parameter over the ``index`` sets (declared first). ``values``: a number (no index), a dict by
        element (one set) or by element tuple, or nested dicts one level per set (``values[row][col]``), read in
        the order of the sets' elements."""
        if isinstance(values, dict) and len(index) > 1 and any(isinstance(v, dict) for v in values.values()):
            values = {key: functools.reduce(operator.getitem, key, values)
                      for key in itertools.product(*(self._sets[s].elements for s in index))}
        if isinstance(values, dict):
            flat = {(",".join(k) if isinstance(k, tuple) else str(k)): float(v) for k, v in values.items()}
            stored: float | dict[str, float] = flat
        else:
            stored = float(values)
        self._params.append(
            Parameter(name=name, index=tuple(index), values=stored, unit=unit, description=description, derived=derived)
        )

    def add_vars(
        self,
        group: str,
        index: Sequence[str] = (),
        vtype: VarType = VarType.CONTINUOUS,
        lb: float | None = 0.0,
        ub: float | None = None,
        description: str = "",
        unit: str = "",
        keys: Iterable[Sequence[str]] | None = None,
    ) -> dict[tuple[str, ...], str]:
        """Add one variable per element of the product of ``index`` sets, or per key of ``keys`` (a sparse group:
        only the pairs that exist, e.g. the legs ``(i, j)`` with ``i != j``; the renderers then loop over a key
        list); returns index tuple -> variable name."""
        self._var_groups.append(VarGroup(name=group, index=tuple(index), vtype=vtype, description=description, unit=unit))
        if vtype == VarType.BINARY:
            lb, ub = 0.0, 1.0
        out: dict[tuple[str, ...], str] = {}
        if keys is None:
            keys = itertools.product(*(self._sets[s].elements for s in index))
        for key in keys:
            key = tuple(key)
            if len(key) != len(index) or any(k not in self._sets[s].elements for k, s in zip(key, index, strict=True)):
                raise ModelError(f"variable group {group!r}: key {key!r} is not an element of {tuple(index)}")
            name = "_".join((group, *key)) if key else group
            self._vars.append(Variable(name=name, group=group, index=tuple(key), vtype=vtype, lb=lb, ub=ub))
            out[tuple(key)] = name
        return out

    def add_var(self, name: str, vtype: VarType = VarType.CONTINUOUS, lb: float | None = 0.0,
                ub: float | None = None, description: str = "", unit: str = "") -> str:
        """A single scalar variable (its own group)."""
        return self.add_vars(name, (), vtype, lb, ub, description, unit)[()]

    def con_group(self, name: str, index: Sequence[str] = (), description: str = "") -> None:
        self._con_groups.setdefault(name, ConGroup(name=name, index=tuple(index), description=description))

    def add_constrs(self, group: str, index: Sequence[str], description: str,
                    row: Callable[..., tuple[Terms, ConSense | str, float]],
                    keys: Iterable[str | Sequence[str]] | None = None) -> None:
        """Declare constraint group ``group`` over ``index`` and add one row per key: ``row(*key)`` returns the
        row's ``(terms, sense, rhs)``. ``keys`` defaults to every element of the product of the ``index`` sets, in
        order; pass it for some of them (the lanes that exist, the mandatory items). A key may be one name.

            b.add_constrs("max_amount", ("foods",), "no food beyond its cap",
                          lambda f: ([(buy[(f,)], 1)], "<=", data["max_amount"][f]))
        """
        self.con_group(group, index, description)
        if keys is None:
            keys = itertools.product(*(self._sets[s].elements for s in index))
        for key in keys:
            key = (key,) if isinstance(key, str) else tuple(key)
            self.add_constr(group, key, *row(*key))

    def add_constr(self, group: str, key: Sequence[str], terms: Terms, sense: ConSense | str, rhs: float) -> str:
        """Add one row of constraint group ``group`` (declare the group first with ``con_group``).

        Terms with the same variable are merged and zero coefficients dropped.
        """
        if group not in self._con_groups:
            self.con_group(group)
        merged: dict[str, float] = {}
        for var, coef in terms:
            merged[var] = merged.get(var, 0.0) + float(coef)
        clean = tuple((v, c) for v, c in merged.items() if c != 0)
        name = "_".join((group, *key)) if key else group
        if not clean and _trivially_true(ConSense(sense), float(rhs)):
            # A row with no terms that always holds (a network node with no arcs: 0 == 0) is no constraint at
            # all; keeping it makes some APIs fail (pyomo rejects a constraint expression that is just True).
            return name
        self._cons.append(
            Constraint(name=name, group=group, index=tuple(key), terms=clean, sense=ConSense(sense), rhs=float(rhs))
        )
        return name

    def set_objective(self, sense: ObjSense | str, terms: Terms, quadratic: Iterable[tuple[str, str, float]] = (),
                      constant: float = 0.0, description: str = "") -> None:
        merged: dict[str, float] = {}
        for var, coef in terms:
            merged[var] = merged.get(var, 0.0) + float(coef)
        self._objective = Objective(
            sense=ObjSense(sense),
            terms=tuple((v, c) for v, c in merged.items() if c != 0),
            quadratic=tuple((a, b, float(c)) for a, b, c in quadratic if c != 0),
            constant=float(constant),
            description=description,
        )

    def build(self) -> Model:
        if self._objective is None:
            raise ValueError(f"model {self.name}: set_objective was never called")
        return Model(
            name=self.name,
            sets=tuple(self._sets.values()),
            params=tuple(self._params),
            var_groups=tuple(self._var_groups),
            con_groups=tuple(self._con_groups.values()),
            variables=tuple(self._vars),
            constraints=tuple(self._cons),
            objective=self._objective,
        )


def _trivially_true(sense: ConSense, rhs: float) -> bool:
    """Whether ``0 sense rhs`` holds."""
    return (sense == ConSense.LE and rhs >= 0) or (sense == ConSense.GE and rhs <= 0) or (
        sense == ConSense.EQ and rhs == 0)
