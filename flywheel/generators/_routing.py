"""What the tour families (cvrp, orienteering, sequence_setup) share: distances between places, one binary per
directed leg with the degree rows, Miller-Tucker-Zemlin rows, and the legs as a phrase or a Markdown table.

The leading underscore keeps ``family_names()`` from importing this module as a family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flywheel.generators._text import table
from solvers.builder import ModelBuilder
from solvers.ir import VarType, number_text

Leg = tuple[str, str]


def euclidean(rng: np.random.Generator, places: Sequence[str], span: int = 60) -> dict[str, dict[str, int]]:
    """Rounded straight-line distances (>= 1, symmetric) between random points of a ``span`` x ``span`` square."""
    xy = rng.integers(0, span, size=(len(places), 2))
    return {a: {c: max(1, int(round(float(np.linalg.norm(xy[i] - xy[j]))))) for j, c in enumerate(places) if i != j}
            for i, a in enumerate(places)}


def legs(b: ModelBuilder, places: Sequence[str], cost: dict[str, dict[str, float]], param: str, unit: str,
         what: str) -> dict[Leg, str]:
    """The set ``arcs`` (``From_To``; place names carry no underscore), the parameter ``param`` over it and one
    binary ``travel`` per leg: returns leg -> variable."""
    pairs = [(a, c) for a in places for c in places if a != c]
    arcs = b.add_set("arcs", [f"{a}_{c}" for a, c in pairs], "direct legs From_To")
    b.add_param(param, {f"{a}_{c}": cost[a][c] for a, c in pairs}, ("arcs",), unit, what)
    x = b.add_vars("travel", ("arcs",), VarType.BINARY, description="1 if the leg is used")
    return {p: x[(arc,)] for p, arc in zip(pairs, arcs, strict=True)}


def degree(b: ModelBuilder, x: dict[Leg, str], places: Sequence[str], nodes: Sequence[str],
           visit: dict[str, str] | None = None) -> None:
    """Every node of ``nodes`` is left once and entered once (or, when it has a 0/1 variable in ``visit``, as
    often as that says)."""
    b.con_group("leave", ("places",), "leave a place once if it is visited")
    b.con_group("enter", ("places",), "enter a place once if it is visited")
    for a in nodes:
        extra = [(visit[a], -1)] if visit and a in visit else []
        rhs = 0 if extra else 1
        b.add_constr("leave", (a,), [(x[(a, c)], 1) for c in places if c != a] + extra, "==", rhs)
        b.add_constr("enter", (a,), [(x[(c, a)], 1) for c in places if c != a] + extra, "==", rhs)


def mtz(b: ModelBuilder, x: dict[Leg, str], u: dict[tuple[str, ...], str], nodes: Sequence[str],
        step: dict[str, float], big: float, description: str) -> None:
    """Miller-Tucker-Zemlin rows among ``nodes`` (the depot left out): if leg i -> j is used then
    ``u[j] >= u[i] + step[j]``, as ``u[j] - u[i] - big x[i,j] >= step[j] - big``. Valid when ``big`` is at least
    ``ub(u[i]) - lb(u[j]) + step[j]`` for every pair, so an unused leg never binds; a cycle avoiding the depot would
    need ``u`` to grow all the way round (every step > 0), so none exists."""
    b.con_group("mtz", ("arcs",), description)
    for a in nodes:
        for c in nodes:
            if a != c:
                b.add_constr("mtz", (f"{a}_{c}",), [(u[(c,)], 1), (u[(a,)], -1), (x[(a, c)], -big)], ">=",
                             step[c] - big)


def pairs_text(places: Sequence[str], dist: dict[str, dict[str, Any]], fmt: str = "{a}-{c} {v}",
               symmetric: bool = True) -> str:
    """``A-B 12, A-C 7, ...``: each unordered pair once when ``symmetric``, else every directed leg."""
    out = [fmt.format(a=a, c=c, v=number_text(dist[a][c])) for i, a in enumerate(places)
           for j, c in enumerate(places) if (i < j if symmetric else i != j)]
    return ", ".join(out)


def grid(places: Sequence[str], dist: dict[str, dict[str, Any]], corner: str = "From \\ To") -> str:
    """The legs as a Markdown matrix (row = from, column = to)."""
    return table([corner, *places], [[a] + [dist[a][c] if c != a else "-" for c in places] for a in places])
