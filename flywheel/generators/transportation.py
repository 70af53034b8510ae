"""Transportation (LP): ship from sources with limited supply to destinations with fixed demand at least cost.

Total supply exceeds total demand by construction. Infeasible variant: one destination's demand grows until total
demand exceeds total supply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model

_DOMAINS: dict[str, dict[str, Any]] = {
    "steel distribution": {
        "source": "mill", "dest": "warehouse", "unit": "tons", "money": "$",
        "sources": ["Pittsburgh", "Gary", "Cleveland", "Birmingham", "Detroit", "Chicago", "Houston", "Denver"],
        "dests": ["Warehouse_A", "Warehouse_B", "Warehouse_C", "Warehouse_D", "Warehouse_E", "Warehouse_F",
                  "Warehouse_G", "Warehouse_H", "Warehouse_I", "Warehouse_J", "Warehouse_K", "Warehouse_L"],
    },
    "electricity supply": {
        "source": "power plant", "dest": "city", "unit": "MWh", "money": "EUR",
        "sources": ["Coal1", "Gas1", "Hydro1", "Wind1", "Nuclear1", "Solar1", "Gas2", "Hydro2"],
        "dests": ["Lyon", "Paris", "Lille", "Nantes", "Nice", "Metz", "Dijon", "Rennes", "Brest", "Tours", "Caen",
                  "Reims"],
    },
    "fresh produce": {
        "source": "farm", "dest": "market", "unit": "crates", "money": "$",
        "sources": ["GreenAcres", "SunnyFields", "RiverFarm", "HillTop", "OakGrove", "Meadow", "Valley", "Orchard"],
        "dests": ["Downtown", "Harbour", "Uptown", "Airport", "Station", "Campus", "Suburb", "Mall", "OldTown",
                  "Riverside", "Northgate", "Eastside"],
    },
}


@register
class Transportation(Family):
    name = "transportation"
    problem_class = "LP"
    sectors = {"steel distribution": "logistics", "electricity supply": "energy", "fresh produce": "agriculture"}
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        sources = names(vocab["sources"], 1 + difficulty, "Source")
        dests = names(vocab["dests"], 1 + 2 * difficulty, "Dest")
        demand = {d: int(rng.integers(10, 100)) for d in dests}
        total = sum(demand.values())
        # Split 105-140% of total demand across the sources, each getting a fair random share.
        share = rng.dirichlet(np.full(len(sources), 3.0))
        supply = {s: int(np.ceil(total * rng.uniform(1.05, 1.4) * x)) for s, x in zip(sources, share, strict=True)}
        if sum(supply.values()) < total:  # rounding can only lose a few units; top up the largest source
            supply[max(supply, key=supply.__getitem__)] += total - sum(supply.values())
        cost = {s: {d: int(rng.integers(2, 30)) for d in dests} for s in sources}
        return {"sources": sources, "dests": dests, "supply": supply, "demand": demand, "cost": cost}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        dest = pick(rng, data["dests"])
        spare = sum(data["supply"].values()) - sum(data["demand"].values())
        return exceed(data, "demand", dest, data["demand"][dest] + spare, rng.integers(1, 30))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("transportation")
        sources = b.add_set("sources", data["sources"], "origins with limited supply")
        dests = b.add_set("destinations", data["dests"], "destinations with a demand to meet")
        b.add_param("supply", data["supply"], ("sources",), "units", "supply available at each source")
        b.add_param("demand", data["demand"], ("destinations",), "units", "demand of each destination")
        b.add_param("cost", data["cost"], ("sources", "destinations"), "money per unit", "shipping cost per unit")
        ship = b.add_vars("ship", ("sources", "destinations"), description="amount shipped on each route",
                          unit="units")
        b.add_constrs("supply", ("sources",), "no source ships more than it has",
                      lambda s: ([(ship[(s, d)], 1) for d in dests], "<=", data["supply"][s]))
        b.add_constrs("demand", ("destinations",), "every destination receives its demand",
                      lambda d: ([(ship[(s, d)], 1) for s in sources], ">=", data["demand"][d]))
        b.set_objective("minimize", [(ship[(s, d)], data["cost"][s][d]) for s in sources for d in dests],
                        description="total shipping cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        sources, dests, unit, money = data["sources"], data["dests"], v["unit"], v["money"]
        supply = listing(data["supply"], sources, "{k} {v} {unit}", unit=unit)
        demand = listing(data["demand"], dests, "{k} {v} {unit}", unit=unit)
        costs = "; ".join(f"from {s}: " + listing(data["cost"][s], dests, "{v} to {k}")
                          for s in sources)
        if template == 0:
            return (f"A company plans {domain}. Each {v['source']} can send at most: {supply}. Each {v['dest']} needs "
                    f"at least: {demand}. Shipping costs in {money} per unit of {unit} are {costs}. Find the "
                    "cheapest shipping plan (fractional amounts allowed).")
        if template == 1:
            return (f"{join(sources)} supply {join(dests)}. Capacities: {supply}. Requirements: {demand}. "
                    f"The per-{unit[:-1] if unit.endswith('s') else unit} cost ({money}) of each route is {costs}. "
                    "Minimise the total transportation cost.")
        if template == 2:
            header = [f"{v['source'].capitalize()} \\ {v['dest']}"] + dests + [f"Supply ({unit})"]
            rows = [[s] + [data["cost"][s][d] for d in dests] + [data["supply"][s]] for s in sources]
            rows.append([f"Demand ({unit})"] + [data["demand"][d] for d in dests] + [""])
            return (f"Unit shipping costs ({money}) for {domain}:\n\n{table(header, rows)}\n\n"
                    "Meet every demand without exceeding any supply, at minimum total cost.")
        return (f"How should {unit} be routed from each {v['source']} to each {v['dest']} to meet demand at least "
                f"cost? Demand: {demand}. Supply limits: {supply}. Cost per unit ({money}): {costs}.")
