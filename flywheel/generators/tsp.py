"""Small travelling salesman (MILP, MTZ): the shortest round trip from a depot through every stop, within a
maximum route length.

Miller-Tucker-Zemlin subtour elimination: continuous order ``u[s]`` in [1, n-1] for every stop and
``u[i] - u[j] + (n-1) x[i,j] <= n-2``; the ``n-1`` is a modeller's constant, a derived parameter. The length limit
is the length of the visiting-order tour, so the instance is feasible. Infeasible variant: the limit is below the sum
over places of their shortest outgoing distance, which every tour must pay.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class TSP(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 3 / 4 / 5 stops by difficulty (at least three: two stops leave one tour), names drawn from the
        # domain's pool (``spread``, ``drawn_names``); the depot stays first.
        places = [vocab["depot"], *drawn_names(rng, vocab["stops"], spread(rng, 2 + difficulty, 3), "Stop")]
        xy = rng.integers(0, 100, size=(len(places), 2))
        dist = {a: {b: max(1, int(round(float(np.linalg.norm(xy[i] - xy[j]))))) for j, b in enumerate(places)
                    if i != j} for i, a in enumerate(places)}
        tour = sum(dist[a][b] for a, b in zip(places, places[1:] + places[:1], strict=True))
        return {"places": places, "dist": dist, "max_length": tour + int(rng.integers(0, 20))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        floor = sum(min(row.values()) for row in data["dist"].values())
        return {**data, "max_length": floor - int(rng.integers(1, 10))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        places = b.add_set("places", data["places"], "the depot (first) and the stops")
        stops = b.add_set("stops", places[1:], "places other than the depot")
        pairs = [(a, c) for a in places for c in places if a != c]
        n = len(places)
        b.add_param("dist", {p: data["dist"][p[0]][p[1]] for p in pairs}, ("places", "places"), "distance",
                    "length of a leg")
        b.add_param("max_length", data["max_length"], (), "distance", "longest allowed round trip")
        b.add_param("mtz_n_minus_1", n - 1, (), "", "n - 1, the MTZ coefficient (n places)", derived=True)
        x = b.add_vars("travel", ("places", "places"), VarType.BINARY, description="1 if the leg is driven",
                       keys=pairs)
        u = b.add_vars("order", ("stops",), lb=1, ub=n - 1, description="position of a stop in the tour (MTZ)")
        b.add_constrs("leave", ("places",), "leave every place exactly once",
                      lambda a: ([(x[(a, c)], 1) for c in places if c != a], "==", 1))
        b.add_constrs("enter", ("places",), "enter every place exactly once",
                      lambda c: ([(x[(a, c)], 1) for a in places if a != c], "==", 1))
        b.add_constrs("mtz", ("stops", "stops"),
                      "no subtour among the stops: order[j] >= order[i] + 1 if i -> j is driven",
                      lambda a, c: ([(u[(a,)], 1), (u[(c,)], -1), (x[(a, c)], n - 1)], "<=", n - 2),
                      keys=[(a, c) for a in stops for c in stops if a != c])
        dist_terms = [(x[p], data["dist"][p[0]][p[1]]) for p in pairs]
        b.add_constrs("max_length", (), "the round trip is no longer than allowed",
                      lambda: (dist_terms, "<=", data["max_length"]))
        b.set_objective("minimize", dist_terms, description="total distance travelled")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        dist, places = data["dist"], data["places"]
        unit = v["unit"]
        depot, stops = places[0], places[1:]
        legs = "; ".join(f"{a} to {c} {number_text(dist[a][c])}" for a in places for c in places if a != c)
        grid = table(["From \\ To"] + places, [[a] + [dist[a][c] if c != a else "-" for c in places] for a in places])
        limit = f"{number_text(data['max_length'])} {unit}"
        return {"depot": depot, "grid": grid, "legs": legs, "limit": limit, "stops": stops, "unit": unit}
