"""Warehouse location with single sourcing (IP, all binary): open warehouses (fixed cost) and assign every customer to exactly
one open warehouse (binary assignment, cost per unit shipped times demand), within each warehouse's capacity:
``sum_i demand[i] x[i,j] <= cap[j] y[j]`` (the capacity row also forbids assigning to a closed warehouse).

Feasible by construction: the capacities sum to at least total demand plus (number of warehouses) x (largest
demand), so greedy first-fit with all warehouses open assigns everyone. Infeasible variant: one customer's demand
exceeds the largest capacity, so no warehouse can serve it alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "grocery distribution": {
        "sites": ["Ashford", "Barnet", "Crewe", "Dover", "Epsom", "Frome", "Goole"],
        "customers": ["Store01", "Store02", "Store03", "Store04", "Store05", "Store06", "Store07", "Store08",
                      "Store09", "Store10", "Store11", "Store12", "Store13", "Store14", "Store15", "Store16",
                      "Store17", "Store18", "Store19"],
        "who": "a supermarket chain", "unit": "pallets per week",
    },
    "spare parts": {
        "sites": ["HubNorth", "HubSouth", "HubEast", "HubWest", "HubCentral", "HubPort", "HubAir"],
        "customers": ["Dealer_A", "Dealer_B", "Dealer_C", "Dealer_D", "Dealer_E", "Dealer_F", "Dealer_G",
                      "Dealer_H", "Dealer_I", "Dealer_J", "Dealer_K", "Dealer_L", "Dealer_M", "Dealer_N",
                      "Dealer_O", "Dealer_P", "Dealer_Q", "Dealer_R", "Dealer_S"],
        "who": "a machinery maker", "unit": "crates per week",
    },
    "medical supplies": {
        "sites": ["DepotA", "DepotB", "DepotC", "DepotD", "DepotE", "DepotF", "DepotG"],
        "customers": ["Clinic1", "Clinic2", "Clinic3", "Clinic4", "Clinic5", "Clinic6", "Clinic7", "Clinic8",
                      "Clinic9", "Clinic10", "Clinic11", "Clinic12", "Clinic13", "Clinic14", "Clinic15",
                      "Clinic16", "Clinic17", "Clinic18", "Clinic19"],
        "who": "a health-care distributor", "unit": "boxes per week",
    },
}


@register
class WarehouseSingleSource(Family):
    name = "warehouse_single_source"
    problem_class = "IP"
    sectors = {"grocery distribution": "logistics", "spare parts": "logistics", "medical supplies": "health care"}
    techniques = ("fixed_charge", "big_m_indicator", "set_partitioning_covering")
    template_styles = (("implied_integrality",), ("table",), ("story",), ("plain",))
    reorder_keys = ("sites", "customers")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        sites = names(v["sites"], 2 + difficulty, "Site")
        customers = names(v["customers"], 3 + 3 * difficulty, "Customer")
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
        b = ModelBuilder("warehouse_single_source")
        sites = b.add_set("sites", data["sites"], "candidate warehouses")
        customers = b.add_set("customers", data["customers"], "customers to serve")
        b.add_param("demand", data["demand"], ("customers",), "units per week", "demand of a customer")
        b.add_param("cap", data["cap"], ("sites",), "units per week", "capacity of a warehouse")
        b.add_param("fixed", data["fixed"], ("sites",), "money per week", "fixed cost of an open warehouse")
        b.add_param("ship", data["ship"], ("customers", "sites"),
                    "money per unit", "shipping cost per unit from a warehouse to a customer")
        y = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if the warehouse opens")
        x = b.add_vars("assign", ("customers", "sites"), VarType.BINARY, description="1 if served from there")
        b.add_constrs("single_source", ("customers",), "each customer served by exactly one warehouse",
                      lambda c: ([(x[(c, s)], 1) for s in sites], "==", 1))
        b.add_constrs("capacity", ("sites",), "assigned demand within capacity, none at a closed warehouse",
                      lambda s: ([(x[(c, s)], data["demand"][c]) for c in customers] + [(y[(s,)], -data["cap"][s])],
                                 "<=", 0))
        b.set_objective("minimize", [(y[(s,)], data["fixed"][s]) for s in sites]
                        + [(x[(c, s)], data["ship"][c][s] * data["demand"][c]) for c in customers for s in sites],
                        description="fixed plus shipping cost per week")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        sites, customers, u = data["sites"], data["customers"], v["unit"]
        wh = ", ".join(f"{s} (capacity {n(data['cap'][s])}, fixed cost ${n(data['fixed'][s])} per week)"
                       for s in sites)
        dem = listing(data["demand"], customers)
        ship = "; ".join(f"to {c}: " + listing(data["ship"][c], sites, "{k} ${v}") for c in customers)
        rule = "Each customer must receive all its demand from a single open warehouse."
        if template == 0:
            return (f"{v['who'].capitalize()} may open warehouses at {wh}; capacities are in {u}. Customer demand "
                    f"({u}): {dem}. Shipping cost per unit: {ship}. {rule} Each warehouse is opened or not, and "
                    "each customer is assigned to exactly one warehouse. Minimise total weekly cost.")
        if template == 1:
            header = ["Customer", f"Demand ({u})"] + [f"{s} ($/unit)" for s in sites]
            rows = [[c, data["demand"][c]] + [data["ship"][c][s] for s in sites] for c in customers]
            return (f"Warehouses: {wh} (capacities in {u}).\n\n{table(header, rows)}\n\n{rule} Choose which "
                    "warehouses to open and the assignment that minimises fixed plus shipping cost.")
        if template == 2:
            return (f"{v['who'].capitalize()} is redrawing its distribution network. It can use {join(sites)}: "
                    f"{wh}. Its customers need {dem} ({u}), and moving one unit costs {ship}. {rule} Which "
                    "warehouses should it open, and who serves whom, to keep weekly cost lowest?")
        return (f"Capacitated facility location with single sourcing. Sites: {wh}. Demands ({u}): {dem}. Unit "
                f"shipping costs: {ship}. {rule}")
