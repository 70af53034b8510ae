"""p-median location (IP, binary): open exactly ``p`` of the candidate sites and assign every demand point to one
open site, minimising the demand-weighted travel distance. Each point is served exactly once (set partitioning:
``sum_j x[i,j] = 1``) and only by an open site (``x[i,j] <= y[j]``); ``flow[i,j] = demand[i] * x[i,j]`` is the
demand that travels, so the objective is ``sum dist[i,j] * flow[i,j]``.

Feasible by construction: ``1 <= p <= number of sites``, every point may use every site. Infeasible variant: the
number of sites to open is set to 0, so no site is open and ``x[i,j] <= y[j] = 0`` leaves no way to serve a point
while ``sum_j x[i,j] = 1`` demands one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType


@register
class PMedian(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 4x6 / 5x8 / 6x10 sites x points by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        sites = drawn_names(rng, v["sites"], spread(rng, 3 + difficulty, 3), "Site")
        points = drawn_names(rng, v["points"], spread(rng, 4 + 2 * difficulty, 2), "Point")
        xy_s = rng.uniform(0, 30, size=(len(sites), 2))
        xy_p = rng.uniform(0, 30, size=(len(points), 2))
        dist = {i: {j: max(1, int(np.abs(xy_p[a] - xy_s[b]).sum())) for b, j in enumerate(sites)}
                for a, i in enumerate(points)}
        demand = {i: int(rng.integers(5, 60)) for i in points}
        p = int(rng.integers(2, max(3, len(sites) // 2 + 1)))
        return {"sites": sites, "points": points, "dist": dist, "demand": demand, "p": p}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "p": 0}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        sites, points = b.elements("sites", "points")
        y = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if the site is opened")
        x = b.add_vars("serve", ("points", "sites"), VarType.BINARY, description="1 if the site serves the point")
        flow = b.add_vars("flow", ("points", "sites"), VarType.INTEGER, description="demand of the point served there",
                          unit="units")
        b.add_constrs("assign", ("points",), "every point served by exactly one site (set partitioning)",
                      lambda i: ([(x[(i, j)], 1) for j in sites], "==", 1))
        b.add_constrs("link", ("points", "sites"), "only open sites serve",
                      lambda i, j: ([(x[(i, j)], 1), (y[(j,)], -1)], "<=", 0))
        b.add_constrs("whole_demand", ("points", "sites"), "a point's whole demand goes to the site serving it",
                      lambda i, j: ([(flow[(i, j)], 1), (x[(i, j)], -data["demand"][i])], "==", 0))
        b.add_constrs("count", (), "exactly p sites open", lambda: ([(y[(j,)], 1) for j in sites], "==", data["p"]))
        b.set_objective("minimize", [(flow[(i, j)], data["dist"][i][j]) for i in points for j in sites],
                        description="demand-weighted distance")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        points, sites = data["points"], data["sites"]
        dem = listing(data["demand"], points)
        dists = "; ".join(f"{i}: " + listing(data["dist"][i], sites) for i in points)
        header = [v["point"].capitalize(), v["demand"]] + sites
        rows = [[i, data["demand"][i]] + [data["dist"][i][j] for j in sites] for i in points]
        return {"dem": dem, "dists": dists, "header": header, "rows": rows}
