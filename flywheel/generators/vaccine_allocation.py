"""Vaccine allocation (LP, max-min): ship a limited stock from depots to regions so that the worst-covered region
is covered as well as possible. A region's coverage is ``shipped / (per_head * 1000 * population)`` (population in
thousands, ``per_head`` doses for one person), and ``worst <= coverage`` for every region, written without the
division: ``shipped - per_head * 1000 * population * worst >= 0``. Each route carries at most its limit, no region
gets more than a full course for everyone, and every region must reach the floor ``floor_pct`` (a percentage).

Feasible by construction: a planted shipment plan fits every stock and route limit and covers each region 30-80%;
the floor is below the worst planted coverage. Infeasible variant: the floor is raised above the smallest of three
ceilings no plan can pass: all stock spread over all regions, the route limits into one region, and 100%.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "vaccination campaign": {
        "depots": ["ColdStoreA", "ColdStoreB", "Airport", "Pharmacy"],
        "regions": ["Northshire", "Eastvale", "Southmoor", "Westbury", "Midlands", "Highlands", "Coastal"],
        "unit": "doses", "people": "residents", "course": "a full course is {k} doses per person",
        "per_head": [2, 3], "who": "the health ministry",
    },
    "seed aid": {
        "depots": ["GrainSilo", "CoopBarn", "RiverPort", "Seedbank"],
        "regions": ["Upland", "Delta", "Plateau", "Valley", "Savanna", "Lakeside", "Foothills"],
        "unit": "kg of seed", "people": "farming households", "course": "each household needs {k} kg to plant",
        "per_head": [20, 25, 30], "who": "an agricultural aid programme",
    },
    "disaster relief": {
        "depots": ["Warehouse1", "Warehouse2", "Airbase", "Harbour"],
        "regions": ["Floodplain", "Hillside", "OldTown", "Riverbend", "Marshes", "Ridge", "Bayside"],
        "unit": "ration kits", "people": "displaced families", "course": "each family needs {k} ration kits",
        "per_head": [3, 4, 5], "who": "the civil protection agency",
    },
}


@register
class VaccineAllocation(Family):
    name = "vaccine_allocation"
    version = "1"
    problem_class = "LP"
    domains = tuple(_DOMAINS)
    sectors = {"vaccination campaign": "health care", "seed aid": "agriculture", "disaster relief": "public services"}
    techniques = ("min_max", "ratio_percentage")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("units",))
    reorder_keys = ("regions",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        depots = names(v["depots"], 2 + difficulty // 2, "Depot")
        regions = names(v["regions"], 2 + difficulty, "Region")
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
        b = ModelBuilder("vaccine_allocation")
        depots = b.add_set("depots", data["depots"], "depots holding stock")
        regions = b.add_set("regions", data["regions"], "regions to cover")
        b.add_param("stock", data["stock"], ("depots",), "units", "stock at a depot")
        b.add_param("limit", {(d, r): data["limit"][d][r] for d in depots for r in regions}, ("depots", "regions"),
                    "units", "most a route can carry")
        b.add_param("population", data["population"], ("regions",), "thousand people", "people in a region")
        b.add_param("per_head", data["per_head"], (), "units per person", "units one person needs")
        b.add_param("floor_pct", data["floor_pct"], (), "%", "least coverage of every region")
        ship = b.add_vars("ship", ("depots", "regions"), description="units sent along a route", unit="units")
        worst = b.add_var("worst", description="coverage of the worst-covered region (a fraction)")
        need = {r: data["per_head"] * 1000 * data["population"][r] for r in regions}
        b.con_group("stock", ("depots",), "no depot ships more than it holds")
        for d in depots:
            b.add_constr("stock", (d,), [(ship[(d, r)], 1) for r in regions], "<=", data["stock"][d])
        b.con_group("route", ("depots", "regions"), "each route within its limit")
        for d in depots:
            for r in regions:
                b.add_constr("route", (d, r), [(ship[(d, r)], 1)], "<=", data["limit"][d][r])
        b.con_group("worst", ("regions",), "worst coverage at most every region's coverage (max-min, ratio "
                    "multiplied out)")
        b.con_group("full", ("regions",), "no region beyond a full course for everyone")
        for r in regions:
            into = [(ship[(d, r)], 1) for d in depots]
            b.add_constr("worst", (r,), into + [(worst, -need[r])], ">=", 0)
            b.add_constr("full", (r,), into, "<=", need[r])
        b.con_group("floor", (), "the worst coverage reaches the floor percentage")
        b.add_constr("floor", (), [(worst, 1)], ">=", data["floor_pct"] / 100)
        b.set_objective("maximize", [(worst, 1)], description="coverage of the worst-covered region")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        depots, regions, unit, people = data["depots"], data["regions"], v["unit"], v["people"]
        pop = listing(data["population"], regions, "{k} {v} thousand")
        stock = listing(data["stock"], depots, "{k} {v}")
        limits = "; ".join(f"from {d}: " + listing(data["limit"][d], regions) for d in depots)
        rules = (f"Coverage is the share of {people} served, and {v['course'].format(k=n(data['per_head']))}. "
                 f"No region needs more than full coverage, and every region must reach at least "
                 f"{n(data['floor_pct'])}%.")
        if template == 0:
            return (f"{v['who'].capitalize()} distributes {unit} from {join(depots)} (stocks: {stock}) to "
                    f"{join(regions)}, home to {pop} {people}. Route limits in {unit}: {limits}. {rules} Maximise "
                    "the coverage of the worst-covered region; shipments may be fractional.")
        if template == 1:
            header = ["Region", f"{people.capitalize()} (thousands)"] + [f"Max from {d}" for d in depots]
            rows = [[r, data["population"][r]] + [data["limit"][d][r] for d in depots] for r in regions]
            return (f"Fair allocation of {unit}.\n\n{table(header, rows)}\n\nStocks: {stock}. {rules} Find the "
                    "allocation that maximises the smallest coverage percentage.")
        if template == 2:
            return (f"Supplies are short and {v['who']} has been accused of favouring the cities. To be fair, it "
                    f"will make the worst-served region as well served as possible. The depots hold {stock} {unit}. "
                    f"The regions have {pop} {people}. Each route can carry only so much: {limits}. {rules} "
                    "What is the best achievable worst-case coverage?")
        return (f"Max-min coverage. Regions and {people}: {pop}. Depot stocks ({unit}): {stock}. Route capacities: "
                f"{limits}. {rules}")
