"""Orienteering (MILP): leave the base once, visit a chosen subset of sites in one round trip whose travel and
visit minutes fit a time budget stated in hours, and collect as much score as possible.

``visit[s]`` says whether site ``s`` is on the tour; it is left and entered exactly ``visit[s]`` times, the base
exactly once. Miller-Tucker-Zemlin order variables (``order[s]`` in [1, n];
``order[j] >= order[i] + visit[j] - M (1 - travel[i, j])`` with M = n, the number of sites: a used leg enters a
visited site, so the order grows by one) rule out a second loop that skips the base. The tour's travel and visit
minutes are ``60 * tour_hours``, and ``tour_hours`` is within the budget. Feasible by construction: the budget
covers the cheapest single-site round trip. Infeasible variant: the budget is below the least any tour must spend
(the shortest leg out of the base, the shortest leg back and the shortest visit), and the base must be left.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators import _routing as rt
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text

_QUARTER = 15  # the budget is a whole number of quarter hours (minutes)


@register
class Orienteering(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3 / 4 / 5 sites by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``);
        # the base stays first.
        sites = drawn_names(rng, v["sites"], spread(rng, 2 + difficulty, 2), "Site")
        places = [v["base"], *sites]
        travel = {a: {c: d + 5 for c, d in row.items()} for a, row in rt.euclidean(rng, places).items()}
        visit = {s: int(rng.integers(3, 10)) * 5 for s in sites}
        score = {s: int(rng.integers(5, 50)) for s in sites}
        full = sum(travel[a][c] for a, c in zip(places, places[1:] + places[:1], strict=True)) + sum(visit.values())
        single = min(travel[v["base"]][s] + travel[s][v["base"]] + visit[s] for s in sites)
        # 35-60% of the time visiting everyone would take: a real choice, but the cheapest single visit fits.
        budget = max(single, full * rng.uniform(0.35, 0.6))
        return {"base": v["base"], "sites": sites, "travel": travel, "visit": visit, "score": score,
                "budget": math.ceil(budget / _QUARTER) * _QUARTER / 60}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        base, t = data["base"], data["travel"]
        least = (min(t[base][s] for s in data["sites"]) + min(t[s][base] for s in data["sites"])
                 + min(data["visit"].values()))
        return {**data, "budget": (least - 1) // _QUARTER * _QUARTER / 60}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        places = b.add_set("places", [data["base"], *data["sites"]], "the base (first) and the sites")
        b.add_set("base", places[:1], "where the tour starts and ends")
        sites = b.add_set("sites", data["sites"], "sites that may be visited")
        x = rt.legs(b, places, data["travel"], "travel_time", "minutes", "travel time of a leg")
        b.add_param("visit_time", data["visit"], ("sites",), "minutes", "time spent at a site")
        b.add_param("score", data["score"], ("sites",), "points", "score collected at a visited site")
        b.add_param("budget", data["budget"], (), "hours", "time available for the whole tour")
        y = b.add_vars("visit", ("sites",), VarType.BINARY, description="1 if the site is on the tour")
        order = b.add_vars("order", ("sites",), lb=1, ub=len(sites), description="position on the tour (MTZ)")
        hours = b.add_var("tour_hours", description="length of the tour", unit="hours")
        rt.degree(b, x, places, "base", "_base")
        rt.degree(b, x, places, "sites", visit=y)
        # The big-M is the number of sites, a constant in the program; where the budget (hours) is that same
        # number a program would read it as the budget, so one more (as valid) is used.
        big = len(sites) + (data["budget"] == len(sites))
        b.add_constrs("mtz", ("sites", "sites"),
                      "if leg i -> j is used, order[j] >= order[i] + visit[j] (no loop that skips the base)",
                      lambda a, c: ([(order[(c,)], 1), (order[(a,)], -1), (y[(c,)], -1), (x[(a, c)], -big)], ">=",
                                    -big),
                      keys=[(a, c) for a in sites for c in sites if a != c])
        b.add_constrs("duration", (), "the tour's travel and visit minutes, in hours",
                      lambda: ([(hours, 60)] + [(x[p], -data["travel"][p[0]][p[1]]) for p in x]
                               + [(y[(s,)], -data["visit"][s]) for s in sites], "==", 0))
        b.add_constrs("budget", (), "the tour fits the time budget", lambda: ([(hours, 1)], "<=", data["budget"]))
        b.set_objective("maximize", [(y[(s,)], data["score"][s]) for s in sites], description="score collected")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        base, sites = data["base"], data["sites"]
        site = v["site"]
        places = [base, *sites]
        scores = listing(data["score"], sites)
        stays = listing(data["visit"], sites, "{v} minutes at {k}")
        legs = rt.pairs_text(places, data["travel"], "{a}-{c} {v} min")
        rule = f"The tour starts and ends at {base}, visits at least one {site}, and its travel plus visit time may not exceed {number_text(data['budget'])} hours."
        rows = [[s, data["score"][s], data["visit"][s]] for s in sites]
        return {"legs": legs, "places": places, "rows": rows, "rule": rule, "scores": scores, "site": site, "stays": stays}
