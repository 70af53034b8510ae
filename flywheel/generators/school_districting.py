"""School districting (IP, binary): assign every neighbourhood, whole, to exactly one school (set partitioning:
``sum_j assign[i, j] = 1``) so that each school's enrolment stays within a percentage band of its capacity
(``low_share * capacity <= enrolment <= high_share * capacity``, the percentages divided by 100 as derived
shares), and the total student-kilometres travelled are as small as possible. ``pupils[i, j] = students[i] *
assign[i, j]`` counts the students an assignment sends, so enrolment and travel are sums over it.

Feasible by construction: a planted assignment gives every school at least one neighbourhood, and each capacity
is set so that the planted enrolment sits in the middle of the band. Infeasible variant: one neighbourhood grows
until the students exceed ``hi%`` of all the capacities together; every student must go somewhere, so some
school is over its upper limit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class SchoolDistricting(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 7x3 / 10x3 / 13x4 by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the areas spread twice (+-2), since +-1 around steps of 3 would not overlap.
        areas = drawn_names(rng, v["areas"], spread(rng, spread(rng, 4 + 3 * difficulty)), "Area")
        sites = drawn_names(rng, v["sites"], spread(rng, 2 + (difficulty + 1) // 2, 2), "Site")
        students = {a: 10 * int(rng.integers(4, 40)) for a in areas}
        distance = {a: {s: round(float(rng.uniform(0.5, 12)), 1) for s in sites} for a in areas}
        planted = [sites[int(i)] for i in rng.permutation(len(sites))] + [pick(rng, sites) for _ in areas]
        low, high = int(pick(rng, [60, 65, 70, 75])), int(pick(rng, [95, 100, 105, 110]))
        load = {s: sum(students[a] for a, p in zip(areas, planted, strict=False) if p == s) for s in sites}
        # The planted enrolment at the middle of the band: rounding the capacity moves the ratio by < 1 point.
        capacity = {s: round(load[s] * 200 / (low + high)) for s in sites}
        return {"areas": areas, "sites": sites, "students": students, "distance": distance, "capacity": capacity,
                "low_pct": low, "high_pct": high}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        room = sum(data["capacity"].values()) * data["high_pct"] / 100
        a = pick(rng, data["areas"])
        others = sum(data["students"].values()) - data["students"][a]
        return exceed(data, "students", a, room - others, 10 * rng.integers(1, 5))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        areas, sites = b.elements("areas", "sites")
        b.add_param("low_share", data["low_pct"] / 100, (), "fraction", "least enrolment as a share of capacity",
                    derived=True)
        b.add_param("high_share", data["high_pct"] / 100, (), "fraction", "most enrolment as a share of capacity",
                    derived=True)
        x = b.add_vars("assign", ("areas", "sites"), VarType.BINARY, description="1 if the area goes to the site")
        sent = b.add_vars("pupils", ("areas", "sites"), VarType.INTEGER, description="students of the area at the site",
                          unit="students")
        b.add_constrs("one_site", ("areas",), "every neighbourhood goes to exactly one site (partitioning)",
                      lambda a: ([(x[(a, s)], 1) for s in sites], "==", 1))
        b.add_constrs("whole_area", ("areas", "sites"), "all of an area's students go to its site, none elsewhere",
                      lambda a, s: ([(sent[(a, s)], 1), (x[(a, s)], -data["students"][a])], "==", 0))
        b.add_constrs("band_low", ("sites",), "enrolment at least low_share of capacity",
                      lambda s: ([(sent[(a, s)], 1) for a in areas], ">=",
                                 data["low_pct"] / 100 * data["capacity"][s]))
        b.add_constrs("band_high", ("sites",), "enrolment at most high_share of capacity",
                      lambda s: ([(sent[(a, s)], 1) for a in areas], "<=",
                                 data["high_pct"] / 100 * data["capacity"][s]))
        b.set_objective("minimize", [(sent[(a, s)], data["distance"][a][s]) for a in areas for s in sites],
                        description="student-kilometres")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        areas, sites = data["areas"], data["sites"]
        site, people = v["site"], v["people"]
        counts = listing(data["students"], areas)
        caps = listing(data["capacity"], sites)
        dist = "; ".join(f"{a}: " + listing(data["distance"][a], sites, "{v} km to {k}") for a in areas)
        band = f"Each {site} must be filled to between {number_text(data['low_pct'])}% and {number_text(data['high_pct'])}% of its capacity."
        rows = [[a, data["students"][a]] + [data["distance"][a][s] for s in sites] for a in areas]
        header = ["Neighbourhood", people.capitalize()] + [f"km to {s}" for s in sites]
        return {"band": band, "caps": caps, "counts": counts, "dist": dist, "header": header, "people": people, "rows": rows,
                "site": site}
