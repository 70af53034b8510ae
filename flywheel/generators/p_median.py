"""p-median location (IP, binary): open exactly ``p`` of the candidate sites and assign every demand point to one
open site, minimising the demand-weighted travel distance. Each point is served exactly once (set partitioning:
``sum_j x[i,j] = 1``) and only by an open site (``x[i,j] <= y[j]``).

Feasible by construction: ``1 <= p <= number of sites``, every point may use every site. Infeasible variant: the
number of sites to open is set to 0, so no site is open and ``x[i,j] <= y[j] = 0`` leaves no way to serve a point
while ``sum_j x[i,j] = 1`` demands one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "ambulance bases": {
        "sites": ["Northgate", "Riverside", "Oldtown", "Hillcrest", "Airport", "Harbour", "Eastfield", "Westbrook"],
        "points": ["Elm", "Oak", "Pine", "Birch", "Maple", "Cedar", "Ash", "Willow", "Rowan", "Hazel", "Alder",
                   "Yew", "Larch", "Poplar"],
        "who": "a regional ambulance service", "site": "station", "point": "district", "demand": "calls per week",
        "dist": "minutes of driving",
    },
    "school catchments": {
        "sites": ["Central", "Lakeside", "Parkway", "Meadow", "Station", "Castle", "Mill", "Bridge"],
        "points": ["Ward1", "Ward2", "Ward3", "Ward4", "Ward5", "Ward6", "Ward7", "Ward8", "Ward9", "Ward10",
                   "Ward11", "Ward12", "Ward13", "Ward14"],
        "who": "a county education board", "site": "school", "point": "ward", "demand": "pupils",
        "dist": "km of travel",
    },
    "retail depots": {
        "sites": ["DepotA", "DepotB", "DepotC", "DepotD", "DepotE", "DepotF", "DepotG", "DepotH"],
        "points": ["Store1", "Store2", "Store3", "Store4", "Store5", "Store6", "Store7", "Store8", "Store9",
                   "Store10", "Store11", "Store12", "Store13", "Store14"],
        "who": "a supermarket chain", "site": "depot", "point": "store", "demand": "deliveries per week",
        "dist": "km of driving",
    },
}


@register
class PMedian(Family):
    name = "p_median"
    problem_class = "IP"
    sectors = {"ambulance bases": "health care", "school catchments": "public services",
               "retail depots": "retail"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("plain",), ("table",), ("story", "implied_integrality"), ("table",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        sites = names(v["sites"], 3 + difficulty, "Site")
        points = names(v["points"], 4 + 2 * difficulty, "Point")
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
        b = ModelBuilder("p_median")
        sites = b.add_set("sites", data["sites"], "candidate sites")
        points = b.add_set("points", data["points"], "demand points")
        b.add_param("dist", data["dist"], ("points", "sites"), "distance", "distance from a demand point to a site")
        b.add_param("demand", data["demand"], ("points",), "units", "demand of a point")
        b.add_param("p", data["p"], (), "sites", "number of sites to open")
        y = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if the site is opened")
        x = b.add_vars("serve", ("points", "sites"), VarType.BINARY, description="1 if the site serves the point")
        b.add_constrs("assign", ("points",), "every point served by exactly one site (set partitioning)",
                      lambda i: ([(x[(i, j)], 1) for j in sites], "==", 1))
        b.con_group("link", ("points", "sites"), "only open sites serve")
        for i in points:
            for j in sites:
                b.add_constr("link", (i, j), [(x[(i, j)], 1), (y[(j,)], -1)], "<=", 0)
        b.con_group("count", (), "exactly p sites open")
        b.add_constr("count", (), [(y[(j,)], 1) for j in sites], "==", data["p"])
        b.set_objective("minimize", [(x[(i, j)], data["demand"][i] * data["dist"][i][j]) for i in points
                                     for j in sites], description="demand-weighted distance")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        sites, points, p = data["sites"], data["points"], data["p"]
        dem = listing(data["demand"], points)
        dists = "; ".join(f"{i}: " + listing(data["dist"][i], sites) for i in points)
        header = [v["point"].capitalize(), v["demand"]] + sites
        rows = [[i, data["demand"][i]] + [data["dist"][i][j] for j in sites] for i in points]
        if template == 0:
            return (f"Choose exactly {n(p)} of the candidate {v['site']}s {join(sites)} to open for {domain}. Each "
                    f"{v['point']} ({join(points)}) is assigned to exactly one open {v['site']}. Demands "
                    f"({v['demand']}): {dem}. Distances ({v['dist']}) from each {v['point']} to each {v['site']}: "
                    f"{dists}. Minimise the total demand-weighted distance; opening and assignment are yes/no "
                    "decisions.")
        if template == 1:
            return (f"Open exactly {n(p)} {v['site']}s and assign each {v['point']} to one open {v['site']} so "
                    f"that the sum of demand times distance is smallest. Distances are in {v['dist']}.\n\n"
                    f"{table(header, rows)}")
        if template == 2:
            return (f"{v['who'].capitalize()} can afford to run {n(p)} {v['site']}s, chosen from {join(sites)}. "
                    f"Every {v['point']} will be served by the single open {v['site']} it is assigned to. The "
                    f"{v['point']}s generate {dem} ({v['demand']}). The {v['dist']} between them are: {dists}. "
                    f"Which {v['site']}s should open, and who serves whom, to minimise demand-weighted distance?")
        return (f"Site selection for {domain}: exactly {n(p)} {v['site']}s out of {len(sites)} open.\n\n"
                f"{table(header, rows)}\n\nDistances are in {v['dist']}; minimise the sum over "
                f"{v['point']}s of demand times distance to the assigned open {v['site']}.")
