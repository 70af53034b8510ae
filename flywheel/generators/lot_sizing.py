"""Multi-period lot sizing (MILP): when and how much of each product to make, trading setup costs against holding
inventory, under a shared per-period capacity.

Capacity is raised wherever cumulative capacity would fall short of cumulative net demand, which (one shared
resource, unit rates) is exactly the condition for a feasible plan. Infeasible variant: a first-period demand that
exceeds the first period's capacity plus the opening stock.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, money, names, table
from flywheel.generators.base import Family, register, replace_at
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType

_DOMAINS: dict[str, dict[str, Any]] = {
    "bicycle factory": {
        "unit": "bikes", "money": "$", "period": "week",
        "products": ["RoadBike", "MountainBike", "CityBike"],
        "periods": ["Week1", "Week2", "Week3", "Week4", "Week5", "Week6", "Week7", "Week8", "Week9", "Week10",
                    "Week11", "Week12"],
    },
    "craft brewery": {
        "unit": "hectolitres", "money": "EUR", "period": "week",
        "products": ["Lager", "Stout", "PaleAle"],
        "periods": ["Wk1", "Wk2", "Wk3", "Wk4", "Wk5", "Wk6", "Wk7", "Wk8", "Wk9", "Wk10", "Wk11", "Wk12"],
    },
    "pharmaceutical plant": {
        "unit": "batches", "money": "$", "period": "month",
        "products": ["Insulin", "Antibiotic", "Vaccine"],
        "periods": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
    },
}


@register
class LotSizing(Family):
    name = "lot_sizing"
    problem_class = "MILP"
    sectors = {"bicycle factory": "manufacturing", "craft brewery": "retail", "pharmaceutical plant": "health care"}
    techniques = ("fixed_charge", "big_m_indicator", "multi_period_balance")
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))
    reorder_keys = ("products",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        products = names(vocab["products"], 1 + difficulty // 2, "Product")
        periods = names(vocab["periods"], 2 + 2 * difficulty, "Period")
        demand = {p: {t: int(rng.integers(0, 60)) for t in periods} for p in products}
        setup_cost = {p: int(rng.integers(10, 50)) * 10 for p in products}
        holding_cost = {p: int(rng.integers(1, 6)) for p in products}
        initial = {p: int(rng.integers(0, 20)) for p in products}
        capacity = {t: int(sum(demand[p][t] for p in products) * rng.uniform(0.9, 1.6)) + 10 for t in periods}
        for k, t in enumerate(periods):  # cumulative capacity must cover cumulative net demand
            net = sum(max(0, sum(demand[p][u] for u in periods[: k + 1]) - initial[p]) for p in products)
            short = net - sum(capacity[u] for u in periods[: k + 1])
            if short > 0:
                capacity[t] += short
        return {"products": products, "periods": periods, "demand": demand, "setup_cost": setup_cost,
                "holding_cost": holding_cost, "initial": initial, "capacity": capacity}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        p, t = data["products"][0], data["periods"][0]
        too_much = data["capacity"][t] + data["initial"][p] + int(rng.integers(1, 20))
        return replace_at(data, ("demand", p, t), too_much)

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("lot_sizing")
        products = b.add_set("products", data["products"], "products made on the shared line")
        periods = b.add_set("periods", data["periods"], "planning periods in order")
        b.add_param("demand", data["demand"], ("products", "periods"), "units", "demand to meet in each period")
        b.add_param("setup_cost", data["setup_cost"], ("products",), "money", "cost of a production run")
        b.add_param("holding_cost", data["holding_cost"], ("products",), "money per unit per period",
                    "cost of carrying one unit to the next period")
        b.add_param("initial", data["initial"], ("products",), "units", "stock at the start")
        b.add_param("capacity", data["capacity"], ("periods",), "units", "production capacity of a period")
        make = b.add_vars("make", ("products", "periods"), description="units produced", unit="units")
        stock = b.add_vars("stock", ("products", "periods"), description="units held at the end of a period",
                           unit="units")
        setup = b.add_vars("setup", ("products", "periods"), VarType.BINARY,
                           description="1 if the product is set up (made) in the period")
        b.con_group("balance", ("products", "periods"), "previous stock + production - demand = stock")
        for p in products:
            for k, t in enumerate(periods):
                terms = [(make[(p, t)], 1), (stock[(p, t)], -1)]
                if k:
                    terms.append((stock[(p, periods[k - 1])], 1))
                rhs = data["demand"][p][t] - (data["initial"][p] if k == 0 else 0)
                b.add_constr("balance", (p, t), terms, "==", rhs)
        # Big-M of the setup link: never more than the period's capacity nor the demand still to come (making
        # more would only add stock nobody needs). The tighter M is, the stronger the LP relaxation.
        big_m = {(p, t): min(data["capacity"][t], sum(data["demand"][p][u] for u in periods[k:]))
                 for p in products for k, t in enumerate(periods)}
        b.add_param("big_m", big_m, ("products", "periods"), "units", "most worth making of a product in a period",
                    derived=True)
        b.con_group("setup_link", ("products", "periods"), "production only in periods with a setup")
        for p in products:
            for t in periods:
                b.add_constr("setup_link", (p, t), [(make[(p, t)], 1), (setup[(p, t)], -big_m[(p, t)])], "<=", 0)
        b.add_constrs("capacity", ("periods",), "total production within the period's capacity",
                      lambda t: ([(make[(p, t)], 1) for p in products], "<=", data["capacity"][t]))
        b.set_objective("minimize", [(setup[(p, t)], data["setup_cost"][p]) for p in products for t in periods]
                        + [(stock[(p, t)], data["holding_cost"][p]) for p in products for t in periods],
                        description="setup plus holding cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        prods, periods, unit, cur, per = data["products"], data["periods"], v["unit"], v["money"], v["period"]
        demand = "; ".join(f"{p}: " + listing(data["demand"][p], periods, "{v} in {k}") for p in prods)
        setups = ", ".join(f"{p} {money(data['setup_cost'][p], cur)}" for p in prods)
        holding = ", ".join(f"{p} {money(data['holding_cost'][p], cur)}" for p in prods)
        start = listing(data["initial"], prods, "{v} {unit} of {k}", unit=unit)
        caps = listing(data["capacity"], periods)
        if template == 0:
            return (f"A {domain} plans production of {join(prods)} over {len(periods)} {per}s ({join(periods)}). "
                    f"Demand ({unit}) must be met on time: {demand}. Opening stock: {start}. The line can make at "
                    f"most ({unit} per {per}, all products together): {caps}. Each {per} a product is made incurs a "
                    f"setup cost ({setups}); each unit left over at the end of a {per} costs ({holding}) to hold. "
                    "Minimise total setup plus holding cost; no backlogging.")
        if template == 1:
            return (f"Lot-sizing at a {domain}: decide for each {per} whether to set up each product and how many "
                    f"{unit} to make. Setup costs: {setups}. Holding costs per unit per {per}: {holding}. Demands: "
                    f"{demand}. Capacity per {per} (shared): {caps}. Initial inventory: {start}. Demand cannot be "
                    "delayed. Minimise cost.")
        if template == 2:
            header = [per.capitalize(), f"Capacity ({unit})"] + [f"{p} demand ({unit})" for p in prods]
            rows = [[t, data["capacity"][t]] + [data["demand"][p][t] for p in prods] for t in periods]
            costs = table(["Product", f"Setup cost ({cur})", f"Holding cost ({cur}/unit/{per})", f"Opening stock "
                           f"({unit})"], [[p, data["setup_cost"][p], data["holding_cost"][p], data["initial"][p]]
                                          for p in prods])
            return (f"Plan the production of a {domain}.\n\n{table(header, rows)}\n\n{costs}\n\nMeet every demand "
                    f"from stock or production in its {per}, respect the shared capacity, and minimise setup plus "
                    "holding cost.")
        return (f"Which {per}s should each product be produced in, and in what quantity? The {domain} faces demand "
                f"({unit}) {demand}, starts with {start}, and can produce {caps} per {per}. A production run costs "
                f"{setups}; carrying a unit into the next {per} costs {holding}. Find the cheapest plan that never "
                "runs short.")
