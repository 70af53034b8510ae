"""Capacitated facility location (MILP): which facilities to open, and how to serve every customer from them.

Fixed cost to open (binary), per-unit serving cost (continuous flow), capacity only when open. Total capacity
exceeds total demand. Infeasible variant: one customer's demand grows past the capacity of all facilities together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, money, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType

_DOMAINS: dict[str, dict[str, Any]] = {
    "retail distribution": {
        "facility": "warehouse", "customer": "store", "unit": "pallets", "money": "$",
        "facilities": ["Warehouse_North", "Warehouse_South", "Warehouse_East", "Warehouse_West",
                       "Warehouse_Central", "Warehouse_Port", "Warehouse_Airport", "Warehouse_Lake"],
        "customers": ["Store1", "Store2", "Store3", "Store4", "Store5", "Store6", "Store7", "Store8", "Store9",
                      "Store10", "Store11", "Store12", "Store13", "Store14", "Store15", "Store16"],
    },
    "cloud computing": {
        "facility": "data centre", "customer": "region", "unit": "TB per day", "money": "EUR",
        "facilities": ["Dublin", "Frankfurt", "Madrid", "Milan", "Stockholm", "Warsaw", "Zurich", "Paris"],
        "customers": ["Iberia", "Benelux", "Nordics", "Alps", "Balkans", "Baltics", "Britain", "Ireland", "Poland",
                      "Bavaria", "Provence", "Tuscany", "Bohemia", "Saxony", "Brittany", "Catalonia"],
    },
    "public health": {
        "facility": "clinic", "customer": "neighbourhood", "unit": "patients per week", "money": "$",
        "facilities": ["Clinic_Elm", "Clinic_Oak", "Clinic_Pine", "Clinic_Maple", "Clinic_Cedar", "Clinic_Birch",
                       "Clinic_Ash", "Clinic_Willow"],
        "customers": ["Riverside", "Hillcrest", "Midtown", "Lakeside", "Parkview", "Old_Town", "Harbour",
                      "Greenfield", "Northside", "Southend", "Westwood", "Eastgate", "Fairview", "Brookside",
                      "Sunnyvale", "Kingsway"],
    },
}


@register
class FacilityLocation(Family):
    name = "facility_location"
    problem_class = "MILP"
    sectors = {"retail distribution": "retail", "cloud computing": "telecom", "public health": "health care"}
    techniques = ("fixed_charge", "big_m_indicator")
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        facilities = names(vocab["facilities"], 2 + difficulty, "Facility")
        customers = names(vocab["customers"], 2 + 3 * difficulty, "Customer")
        demand = {c: int(rng.integers(5, 40)) for c in customers}
        total = sum(demand.values())
        # Each facility holds 35-70% of total demand: one is never enough, all together always are.
        capacity = {f: int(total * rng.uniform(0.35, 0.7)) + 1 for f in facilities}
        while sum(capacity.values()) < total:
            capacity = {f: c * 2 for f, c in capacity.items()}
        fixed_cost = {f: int(rng.integers(10, 50)) * 10 for f in facilities}
        # Serving cost grows with a random distance on a 100 x 100 map.
        fxy = {f: rng.uniform(0, 100, 2) for f in facilities}
        cxy = {c: rng.uniform(0, 100, 2) for c in customers}
        cost = {f: {c: 1 + int(np.linalg.norm(fxy[f] - cxy[c]) / 10) for c in customers} for f in facilities}
        return {"facilities": facilities, "customers": customers, "demand": demand, "capacity": capacity,
                "fixed_cost": fixed_cost, "cost": cost}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["customers"])
        spare = sum(data["capacity"].values()) - sum(data["demand"].values())
        return exceed(data, "demand", c, data["demand"][c] + spare, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("facility_location")
        facs = b.add_set("facilities", data["facilities"], "candidate facilities")
        custs = b.add_set("customers", data["customers"], "customers whose demand must be met")
        b.add_param("demand", data["demand"], ("customers",), "units", "demand of each customer")
        b.add_param("capacity", data["capacity"], ("facilities",), "units", "capacity of an open facility")
        b.add_param("fixed_cost", data["fixed_cost"], ("facilities",), "money", "cost of opening a facility")
        b.add_param("cost", data["cost"], ("facilities", "customers"), "money per unit", "cost of serving one unit")
        open_ = b.add_vars("open", ("facilities",), VarType.BINARY, description="1 if the facility is opened")
        serve = b.add_vars("serve", ("facilities", "customers"), description="demand served from a facility",
                           unit="units")
        b.add_constrs("demand", ("customers",), "every customer's demand is fully served",
                      lambda c: ([(serve[(f, c)], 1) for f in facs], "==", data["demand"][c]))
        b.add_constrs("capacity", ("facilities",), "a facility serves up to its capacity, and only if open",
                      lambda f: ([(serve[(f, c)], 1) for c in custs] + [(open_[(f,)], -data["capacity"][f])], "<=", 0))
        b.set_objective("minimize", [(open_[(f,)], data["fixed_cost"][f]) for f in facs]
                        + [(serve[(f, c)], data["cost"][f][c]) for f in facs for c in custs],
                        description="opening cost plus serving cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        facs, custs, unit, cur = data["facilities"], data["customers"], v["unit"], v["money"]
        demand = listing(data["demand"], custs)
        caps = listing(data["capacity"], facs)
        fixed = ", ".join(f"{f} {money(data['fixed_cost'][f], cur)}" for f in facs)
        costs = "; ".join(f"from {f}: " + listing(data["cost"][f], custs) for f in facs)
        if template == 0:
            return (f"In {domain}, a planner may open any of the {v['facility']}s {join(facs)}. Opening costs: "
                    f"{fixed}. Capacities ({unit}): {caps}. Each {v['customer']} has a demand ({unit}): {demand}. "
                    f"Serving one unit costs ({cur}) {costs}. A {v['customer']} may be served by several open "
                    f"{v['facility']}s. Which {v['facility']}s should open, and who serves whom, to minimise total "
                    "cost?")
        if template == 1:
            return (f"Minimise fixed plus variable cost. Candidate {v['facility']}s and their opening costs: {fixed}; "
                    f"their capacities if opened: {caps} {unit}. Demands of the {v['customer']}s: {demand} {unit}. "
                    f"Per-unit service costs in {cur}: {costs}. A closed {v['facility']} serves nobody.")
        if template == 2:
            header = [f"{v['facility'].capitalize()}", f"Opening cost ({cur})", f"Capacity ({unit})"] + custs
            rows = [[f, data["fixed_cost"][f], data["capacity"][f]] + [data["cost"][f][c] for c in custs]
                    for f in facs]
            rows.append([f"Demand ({unit})", "", ""] + [data["demand"][c] for c in custs])
            return (f"Capacitated {v['facility']} location for {domain}; the last columns give the per-unit service "
                    f"cost ({cur}) to each {v['customer']}.\n\n{table(header, rows)}\n\nOpen {v['facility']}s and "
                    "assign flows so every demand is met within capacities at minimum total cost.")
        return (f"Every {v['customer']} needs service: {demand} {unit}. {join(facs)} could be opened at {fixed} "
                f"and could then handle {caps} {unit}. Unit service costs ({cur}): {costs}. Decide "
                f"which {v['facility']}s to open and how to split each demand to keep the total cost lowest.")
