"""Warehouse location with single sourcing (IP): open warehouses (fixed cost) and assign every customer to exactly
one open warehouse (binary assignment, which ships the customer's whole demand: ``units[i,j] = demand[i] x[i,j]``,
cost per unit shipped), within each warehouse's capacity: ``sum_i units[i,j] <= cap[j] y[j]`` (the capacity row
also forbids assigning to a closed warehouse).

Feasible by construction: the capacities sum to at least total demand plus (number of warehouses) x (largest
demand), so greedy first-fit with all warehouses open assigns everyone. Infeasible variant: one customer's demand
exceeds the largest capacity, so no warehouse can serve it alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class WarehouseSingleSource(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x6 / 4x9 / 5x12 by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the customers spread twice (+-2), since +-1 around steps of 3 would not overlap.
        sites = drawn_names(rng, v["sites"], spread(rng, 2 + difficulty, 2), "Site")
        customers = drawn_names(rng, v["customers"], spread(rng, spread(rng, 3 + 3 * difficulty)), "Customer")
        demand = {c: int(rng.integers(5, 40)) for c in customers}
        need = sum(demand.values()) + len(sites) * max(demand.values())
        share = rng.dirichlet(np.ones(len(sites)) * 3)
        cap = {s: int(need * float(w)) + 1 + max(demand.values()) for s, w in zip(sites, share, strict=True)}
        fixed = {s: int(rng.integers(100, 400)) for s in sites}
        ship = {c: {s: int(rng.integers(1, 12)) for s in sites} for c in customers}
        return {"sites": sites, "customers": customers, "demand": demand, "cap": cap, "fixed": fixed, "ship": ship}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["customers"])
        return exceed(data, "demand", c, max(data["cap"].values()), rng.integers(1, 10))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        sites, customers = b.elements("sites", "customers")
        y = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if the warehouse opens")
        x = b.add_vars("assign", ("customers", "sites"), VarType.BINARY, description="1 if served from there")
        units = b.add_vars("units", ("customers", "sites"), VarType.INTEGER,
                           description="units per week shipped to the customer from there", unit="units per week")
        b.add_constrs("single_source", ("customers",), "each customer served by exactly one warehouse",
                      lambda c: ([(x[(c, s)], 1) for s in sites], "==", 1))
        b.add_constrs("whole_demand", ("customers", "sites"), "the assigned warehouse ships the whole demand",
                      lambda c, s: ([(units[(c, s)], 1), (x[(c, s)], -data["demand"][c])], "==", 0))
        b.add_constrs("capacity", ("sites",), "shipped units within capacity, none from a closed warehouse",
                      lambda s: ([(units[(c, s)], 1) for c in customers] + [(y[(s,)], -data["cap"][s])], "<=", 0))
        b.set_objective("minimize", [(y[(s,)], data["fixed"][s]) for s in sites]
                        + [(units[(c, s)], data["ship"][c][s]) for c in customers for s in sites],
                        description="fixed plus shipping cost per week")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        customers, sites = data["customers"], data["sites"]
        u = v["unit"]
        wh = ", ".join(
            f"{s} (capacity {number_text(data['cap'][s])}, fixed cost ${number_text(data['fixed'][s])} per week)"
            for s in sites
        )
        dem = listing(data["demand"], customers)
        ship = "; ".join(f"to {c}: " + listing(data["ship"][c], sites, "{k} ${v}") for c in customers)
        rule = "Each customer must receive all its demand from a single open warehouse."
        header = ["Customer", f"Demand ({u})"] + [f"{s} ($/unit)" for s in sites]
        rows = [[c, data["demand"][c]] + [data["ship"][c][s] for s in sites] for c in customers]
        return {"dem": dem, "header": header, "rows": rows, "rule": rule, "ship": ship, "u": u, "wh": wh}
