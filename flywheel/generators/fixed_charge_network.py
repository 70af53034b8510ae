"""Fixed-charge network design (MILP): which shipping lanes from depots to customers to open, and how much to
send on each, at least fixed-plus-variable cost. A lane carries goods only when opened (``x <= capacity * open``,
the big-M link with the lane's own capacity as M), and opening it costs its fixed charge.

Variable costs are quoted per dozen units, so the coefficient is price / 12. Feasible by construction: total
supply covers total demand and every lane can carry its customer's whole demand. Infeasible variant: one
customer's demand exceeds what all depots together can supply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "bakery distribution": {"depots": ["OvenHouse", "EastBakery", "MillRoad", "RiverOven", "Northside"],
                            "customers": ["Cafe_A", "Deli_B", "Hotel_C", "School_D", "Market_E", "Diner_F", "Shop_G",
                                          "Office_H", "Clinic_I", "Bistro_J", "Kiosk_K"],
                            "goods": "loaves", "lane": "delivery route"},
    "regional freight": {"depots": ["Terminal1", "Terminal2", "Terminal3", "Terminal4", "Terminal5"],
                         "customers": ["Plant_Ames", "Plant_Bree", "Yard_Cole", "Store_Dunn", "Port_Erie",
                                       "Mill_Fern", "Depot_Gale", "Site_Hale", "Farm_Iver", "Dock_Jade", "Hub_Kent"],
                         "goods": "pallets", "lane": "trucking lane"},
    "fuel supply": {"depots": ["Refinery_W", "Refinery_E", "Tankfarm_N", "Tankfarm_S", "Terminal_C"],
                    "customers": ["Station01", "Station02", "Station03", "Station04", "Station05", "Station06",
                                  "Station07", "Station08", "Station09", "Station10", "Station11"],
                    "goods": "barrels", "lane": "pipeline spur"},
}


@register
class FixedChargeNetwork(Family):
    name = "fixed_charge_network"
    problem_class = "MILP"
    sectors = {"bakery distribution": "retail", "regional freight": "logistics", "fuel supply": "energy"}
    techniques = ("fixed_charge", "big_m_indicator")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("units",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        depots = names(v["depots"], 1 + (difficulty + 1) // 2 + 1, "Depot")
        customers = names(v["customers"], 2 + difficulty, "Customer")
        demand = {c: int(rng.integers(2, 30)) * 12 for c in customers}
        total = sum(demand.values())
        share = rng.dirichlet(np.ones(len(depots)))
        supply = {d: int(total * (0.3 + share[i])) + 12 for i, d in enumerate(depots)}
        price = {d: {c: int(rng.integers(2, 20)) for c in customers} for d in depots}  # per dozen
        fixed = {d: {c: int(rng.integers(20, 200)) for c in customers} for d in depots}
        capacity = {d: {c: demand[c] + 12 * int(rng.integers(0, 6)) for c in customers} for d in depots}
        return {"depots": depots, "customers": customers, "demand": demand, "supply": supply, "price": price,
                "fixed": fixed, "capacity": capacity}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["customers"])
        return exceed(data, "demand", c, sum(data["supply"].values()), 12 * int(rng.integers(1, 5)))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("fixed_charge_network")
        depots = b.add_set("depots", data["depots"], "depots that ship")
        customers = b.add_set("customers", data["customers"], "customers with a demand")
        lanes = [(d, c) for d in depots for c in customers]
        b.add_param("supply", data["supply"], ("depots",), "units", "most a depot can ship")
        b.add_param("demand", data["demand"], ("customers",), "units", "demand of a customer")
        b.add_param("price", {k: data["price"][k[0]][k[1]] for k in lanes}, ("depots", "customers"),
                    "money per dozen", "shipping cost per dozen units on a lane")
        b.add_param("fixed", {k: data["fixed"][k[0]][k[1]] for k in lanes}, ("depots", "customers"), "money",
                    "fixed charge of opening a lane")
        b.add_param("capacity", {k: data["capacity"][k[0]][k[1]] for k in lanes}, ("depots", "customers"),
                    "units", "most a lane can carry once opened")
        x = b.add_vars("ship", ("depots", "customers"), description="units shipped on a lane", unit="units")
        y = b.add_vars("open", ("depots", "customers"), VarType.BINARY, description="1 if the lane is opened")
        b.add_constrs("supply", ("depots",), "a depot ships at most its supply",
                      lambda d: ([(x[(d, c)], 1) for c in customers], "<=", data["supply"][d]))
        b.add_constrs("demand", ("customers",), "every customer receives its demand",
                      lambda c: ([(x[(d, c)], 1) for d in depots], ">=", data["demand"][c]))
        b.add_constrs("link", ("depots", "customers"), "a lane carries goods only when opened (capacity as big-M)",
                      lambda d, c: ([(x[(d, c)], 1), (y[(d, c)], -data["capacity"][d][c])], "<=", 0), keys=lanes)
        b.set_objective("minimize", [(x[k], data["price"][k[0]][k[1]] / 12) for k in lanes]
                        + [(y[k], data["fixed"][k[0]][k[1]]) for k in lanes], description="fixed plus shipping cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        depots, customers, goods, lane = data["depots"], data["customers"], v["goods"], v["lane"]
        sup = listing(data["supply"], depots)
        dem = listing(data["demand"], customers)
        lanes = "; ".join(f"{d} to {c}: ${n(data['price'][d][c])} per dozen {goods}, ${n(data['fixed'][d][c])} to "
                          f"open, up to {n(data['capacity'][d][c])} {goods}" for d in depots for c in customers)
        if template == 0:
            return (f"A {domain} network has depots {join(depots)} and customers {join(customers)}. Supplies "
                    f"({goods}): {sup}. Demands ({goods}): {dem}. Every depot-customer {lane} must be opened before "
                    f"use: {lanes}. Choose the {lane}s to open and the shipments so that all demand is met at the "
                    "lowest total cost (opening charges plus shipping).")
        if template == 1:
            header = ["From", "To", f"Cost ($ per dozen {goods})", "Opening charge ($)", f"Capacity ({goods})"]
            rows = [[d, c, data["price"][d][c], data["fixed"][d][c], data["capacity"][d][c]]
                    for d in depots for c in customers]
            return (f"Design the {domain} network.\n\n{table(header, rows)}\n\nDepot supplies: {sup}. Customer "
                    f"demands: {dem}. A {lane} that is not opened carries nothing. Minimise total cost.")
        if template == 2:
            return (f"Every morning the {domain} dispatcher must decide which {lane}s to run. Opening a {lane} has "
                    f"a fixed charge, and shipping is priced per dozen {goods}: {lanes}. The depots hold {sup} "
                    f"{goods}; the customers need {dem} {goods}. What is the cheapest way to serve everyone?")
        return (f"Minimise fixed plus variable cost in a {domain} network. Demands: {dem}. Supplies: {sup}. Lanes "
                f"(cost per dozen, opening charge, capacity): {lanes}. Shipments are continuous; lane openings are "
                "yes/no decisions.")
