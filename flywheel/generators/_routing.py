"""What the tour families (cvrp, orienteering, sequence_setup) share: distances between places (a parameter over
"places" x "places"), one binary per directed leg (a sparse group over the same pairs) with the degree rows, and
the legs as a phrase or a Markdown table.

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
    """The parameter ``param`` over the legs (pairs of ``places``, both declared as the set "places", no
    ``(i, i)``) and one binary ``travel`` per leg, a sparse group over the same pairs: returns leg -> variable."""
    pairs = [(a, c) for a in places for c in places if a != c]
    b.add_param(param, {p: cost[p[0]][p[1]] for p in pairs}, ("places", "places"), unit, what)
    return b.add_vars("travel", ("places", "places"), VarType.BINARY, description="1 if the leg is used", keys=pairs)


def degree(b: ModelBuilder, x: dict[Leg, str], places: Sequence[str], rows: str, suffix: str = "",
           visit: dict[tuple[str, ...], str] | None = None) -> None:
    """Every place of the set ``rows`` (a subset of ``places``) is left once and entered once, or, with a 0/1
    variable ``visit`` over it, as often as that says: groups ``leave<suffix>`` and ``enter<suffix>``."""
    extra = (lambda a: [(visit[(a,)], -1)]) if visit else (lambda a: [])
    rhs = 0 if visit else 1
    what = "as often as it is visited" if visit else "exactly once"
    b.add_constrs(f"leave{suffix}", (rows,), f"leave every place of {rows} {what}",
                  lambda a: ([(x[(a, c)], 1) for c in places if c != a] + extra(a), "==", rhs))
    b.add_constrs(f"enter{suffix}", (rows,), f"enter every place of {rows} {what}",
                  lambda c: ([(x[(a, c)], 1) for a in places if a != c] + extra(c), "==", rhs))


def pairs_text(places: Sequence[str], dist: dict[str, dict[str, Any]], fmt: str = "{a}-{c} {v}",
               symmetric: bool = True) -> str:
    """``A-B 12, A-C 7, ...``: each unordered pair once when ``symmetric``, else every directed leg."""
    out = [fmt.format(a=a, c=c, v=number_text(dist[a][c])) for i, a in enumerate(places)
           for j, c in enumerate(places) if (i < j if symmetric else i != j)]
    return ", ".join(out)


def grid(places: Sequence[str], dist: dict[str, dict[str, Any]], corner: str = "From \\ To") -> str:
    """The legs as a Markdown matrix (row = from, column = to)."""
    return table([corner, *places], [[a] + [dist[a][c] if c != a else "-" for c in places] for a in places])
