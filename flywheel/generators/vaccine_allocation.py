"""Vaccine allocation (LP, max-min): ship a limited stock from depots to regions so that the worst-covered region
is covered as well as possible. A region's coverage is ``shipped / (per_head * 1000 * population)`` (population in
thousands, ``per_head`` doses for one person), and ``worst <= coverage`` for every region, written without the
division through the worst rate per thousand people ``rate = per_thousand * worst`` (``per_thousand = 1000 *
per_head``, derived): ``shipped - population * rate >= 0``. Each route carries at most its limit, no region
gets more than a full course for everyone, and every region must reach the floor ``floor_pct`` (a percentage).

Feasible by construction: a planted shipment plan fits every stock and route limit and covers each region 30-80%;
the floor is below the worst planted coverage. Infeasible variant: the floor is raised above the smallest of three
ceilings no plan can pass: all stock spread over all regions, the route limits into one region, and 100%.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class VaccineAllocation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 2x3 / 3x4 / 3x5 depots x regions by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        depots = drawn_names(rng, v["depots"], spread(rng, 2 + difficulty // 2, 2), "Depot")
        regions = drawn_names(rng, v["regions"], spread(rng, 2 + difficulty, 2), "Region")
        per_head = int(v["per_head"][int(rng.integers(len(v["per_head"])))])
        plan = {d: {r: 100 * int(rng.integers(5, 60)) for r in regions} for d in depots}
        got = {r: sum(plan[d][r] for d in depots) for r in regions}
        # Population (thousands, 1 decimal) so the planted plan covers 30-80% of each region.
        population = {r: round(got[r] / (per_head * 1000 * rng.uniform(0.3, 0.8)) + 0.1, 1) for r in regions}
        worst = min(got[r] / (per_head * 1000 * population[r]) for r in regions)
        return {"depots": depots, "regions": regions, "per_head": per_head, "population": population,
                "stock": {d: sum(plan[d].values()) + 100 * int(rng.integers(0, 20)) for d in depots},
                "limit": {d: {r: plan[d][r] + 100 * int(rng.integers(0, 30)) for r in regions} for d in depots},
                "floor_pct": int(100 * worst * rng.uniform(0.4, 0.9))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        need = {r: data["per_head"] * 1000 * data["population"][r] for r in data["regions"]}
        by_stock = sum(data["stock"].values()) / sum(need.values())
        by_route = min(sum(data["limit"][d][r] for d in data["depots"]) / need[r] for r in data["regions"])
        return {**data, "floor_pct": int(100 * min(1.0, by_stock, by_route)) + int(rng.integers(1, 4))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        per_thousand = data["per_head"] * 1000
        b.add_param("per_thousand", per_thousand, (), "units per thousand people",
                    "units a thousand people need", derived=True)
        ship = b.add_vars("ship", ("depots", "regions"), description="units sent along a route", unit="units")
        worst = b.add_var("worst", description="coverage of the worst-covered region (a fraction)")
        rate = b.add_var("worst_rate", description="units per thousand people reaching the worst-covered region",
                         unit="units per thousand people")
        b.add_constrs("stock", ("depots",), "no depot ships more than it holds",
                      lambda d: ([(ship[(d, r)], 1) for r in data["regions"]], "<=", data["stock"][d]))
        b.add_constrs("route", ("depots", "regions"), "each route within its limit",
                      lambda d, r: ([(ship[(d, r)], 1)], "<=", data["limit"][d][r]))
        b.add_constrs("rate", (), "units per thousand people = coverage x units a thousand people need",
                      lambda: ([(rate, 1), (worst, -per_thousand)], "==", 0))

        def into(r: str) -> list[tuple[str, float]]:
            return [(ship[(d, r)], 1) for d in data["depots"]]

        b.add_constrs("worst", ("regions",), "every region gets at least the worst rate per thousand people "
                      "(max-min, ratio multiplied out)",
                      lambda r: (into(r) + [(rate, -data["population"][r])], ">=", 0))
        b.add_constrs("full", ("regions",), "no region beyond a full course for everyone",
                      lambda r: (into(r), "<=", data["population"][r] * per_thousand))
        b.add_constrs("floor", (), "the worst coverage reaches the floor percentage",
                      lambda: ([(worst, 100)], ">=", data["floor_pct"]))
        b.set_objective("maximize", [(worst, 1)], description="coverage of the worst-covered region")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        depots, regions = data["depots"], data["regions"]
        unit, people = v["unit"], v["people"]
        pop = listing(data["population"], regions, "{k} {v} thousand")
        stock = listing(data["stock"], depots, "{k} {v}")
        limits = "; ".join(f"from {d}: " + listing(data["limit"][d], regions) for d in depots)
        rules = f"Coverage is the share of {people} served, and {v['course'].format(k=number_text(data['per_head']))}. No region needs more than full coverage, and every region must reach at least {number_text(data['floor_pct'])}%."
        header = ["Region", f"{people.capitalize()} (thousands)"] + [f"Max from {d}" for d in depots]
        rows = [[r, data["population"][r]] + [data["limit"][d][r] for d in depots] for r in regions]
        return {"header": header, "limits": limits, "people": people, "pop": pop, "rows": rows, "rules": rules, "stock":
                stock, "unit": unit}
