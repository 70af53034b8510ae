"""Newsvendor under scenarios (LP, two-stage stochastic): order each item once, before demand is known (first
stage); in every demand scenario sell up to the demand and the stock, and salvage what is left at a lower value
(second stage, one copy of the sales per scenario). Maximise expected profit = expected revenue from sales and
salvage minus the purchase cost, within a storage capacity and each supplier's minimum order.

Scenario probabilities are stated in percent (the coefficient is percent / 100). Feasible by construction: the
minimum orders together fit in the storage (ordering exactly them, selling nothing is a solution). Infeasible
variant: the storage is cut below the sum of the minimum orders, which every order plan must store.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "fashion retailer": {"items": ["Parkas", "Scarves", "Boots", "Gloves", "Beanies"], "unit": "units",
                         "season": "the winter season", "left": "sold to an outlet chain",
                         "space": "stockroom", "who": "the buyer of a fashion retailer"},
    "flu vaccine clinic": {"items": ["Quadrivalent", "HighDose", "Adjuvanted", "CellBased", "Recombinant"],
                           "unit": "doses", "season": "the flu season", "left": "returned to the distributor",
                           "space": "vaccine fridge", "who": "the pharmacist of a vaccination clinic"},
    "championship merchandise": {"items": ["Jerseys", "Caps", "Scarfs", "Mugs", "Pennants"], "unit": "pieces",
                                 "season": "the championship final", "left": "cleared at a discount stall",
                                 "space": "stand's storage", "who": "the merchandise manager of a sports club"},
}
_SCENARIOS = ["Weak", "Normal", "Strong", "Record", "Washout"]


@register
class NewsvendorScenarios(Family):
    name = "newsvendor_scenarios"
    version = "1"
    problem_class = "LP"
    domains = tuple(_DOMAINS)
    sectors = {"fashion retailer": "retail", "flu vaccine clinic": "health care",
               "championship merchandise": "sports and education"}
    techniques = ("scenario_stochastic",)
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("units",))
    reorder_keys = ("items", "scenarios")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        items = names(_DOMAINS[domain]["items"], difficulty, "Item")
        scenarios = _SCENARIOS[:2 + (difficulty + 1) // 2]
        # Probabilities in tens of percent, each at least 10%: a multinomial split of the remaining tens.
        tens = rng.multinomial(10 - len(scenarios), [1 / len(scenarios)] * len(scenarios)) + 1
        cost = {i: int(rng.integers(8, 40)) for i in items}
        price = {i: cost[i] + int(rng.integers(5, 30)) for i in items}
        salvage = {i: int(cost[i] * rng.uniform(0.2, 0.7)) for i in items}
        demand = {sc: {i: int(rng.integers(20, 200)) for i in items} for sc in scenarios}
        peak = sum(max(demand[sc][i] for sc in scenarios) for i in items)
        capacity = int(peak * rng.uniform(0.5, 0.85))
        # Minimum orders take at most two thirds of the storage together; a large one can bind on a thin margin.
        min_order = {i: int(rng.integers(1, max(2, 2 * capacity // (3 * len(items))))) for i in items}
        return {"items": items, "scenarios": scenarios,
                "prob": {sc: int(10 * t) for sc, t in zip(scenarios, tens, strict=True)},
                "cost": cost, "price": price, "salvage": salvage, "demand": demand,
                "min_order": min_order, "capacity": capacity}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        # int() of a number below the sum is below the sum: strictly less room than the minimum orders need.
        return {**data, "capacity": int(sum(data["min_order"].values()) * rng.uniform(0.5, 0.9))}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("newsvendor_scenarios")
        items = b.add_set("items", data["items"], "items ordered before the season")
        scen = b.add_set("scenarios", data["scenarios"], "demand scenarios")
        b.add_param("prob", data["prob"], ("scenarios",), "percent", "probability of a scenario")
        for key, what in (("cost", "purchase cost"), ("price", "selling price"), ("salvage", "salvage value")):
            b.add_param(key, data[key], ("items",), "money per unit", f"{what} of one unit")
        b.add_param("demand", {(sc, i): data["demand"][sc][i] for sc in scen for i in items}, ("scenarios", "items"),
                    "units", "demand for an item in a scenario")
        b.add_param("min_order", data["min_order"], ("items",), "units", "supplier's minimum order")
        b.add_param("capacity", data["capacity"], (), "units", "storage capacity for all orders")
        order = b.add_vars("order", ("items",), description="units ordered now (first stage)", unit="units")
        sold = b.add_vars("sold", ("scenarios", "items"), description="units sold in a scenario (recourse)")
        left = b.add_vars("leftover", ("scenarios", "items"), description="units salvaged in a scenario (recourse)")
        b.con_group("min_order", ("items",), "each order meets the supplier's minimum")
        for i in items:
            b.add_constr("min_order", (i,), [(order[(i,)], 1)], ">=", data["min_order"][i])
        b.con_group("storage", (), "all orders fit in storage")
        b.add_constr("storage", (), [(order[(i,)], 1) for i in items], "<=", data["capacity"])
        b.con_group("demand_cap", ("scenarios", "items"), "sales within the scenario's demand")
        b.con_group("stock_split", ("scenarios", "items"), "stock is either sold or salvaged")
        terms = [(order[(i,)], -data["cost"][i]) for i in items]
        for sc in scen:
            p = data["prob"][sc] / 100
            for i in items:
                b.add_constr("demand_cap", (sc, i), [(sold[(sc, i)], 1)], "<=", data["demand"][sc][i])
                b.add_constr("stock_split", (sc, i), [(sold[(sc, i)], 1), (left[(sc, i)], 1), (order[(i,)], -1)],
                             "==", 0)
                terms += [(sold[(sc, i)], p * data["price"][i]), (left[(sc, i)], p * data["salvage"][i])]
        b.set_objective("maximize", terms, description="expected sales and salvage revenue minus purchase cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        items, scen, unit = data["items"], data["scenarios"], v["unit"]
        probs = listing(data["prob"], scen, "{k} {v}%")
        dem = "; ".join(f"{sc}: " + listing(data["demand"][sc], items) for sc in scen)
        terms = "; ".join(f"{i} costs ${number_text(data['cost'][i])}, sells for ${number_text(data['price'][i])} "
                          f"and is worth ${number_text(data['salvage'][i])} if unsold" for i in items)
        limits = (f"The {v['space']} holds {number_text(data['capacity'])} {unit} in total, and the suppliers' minimum "
                  f"orders are {listing(data['min_order'], items, '{v} ' + unit + ' of {k}')}.")
        once = f"Orders are placed once, before {v['season']}; unsold stock is {v['left']}."
        if template == 0:
            return (f"{v['who'].capitalize()} must decide how many {unit} of {join(items)} to order for {v['season']}. "
                    f"Per unit, {terms}. Demand ({unit}) follows one of these scenarios, with probabilities {probs}: "
                    f"{dem}. {once} {limits} Sales cannot exceed demand or stock. Maximise expected profit; "
                    "quantities may be fractional.")
        if template == 1:
            econ = table(["Item", "Cost ($)", "Price ($)", "Salvage ($)", f"Minimum order ({unit})"],
                         [[i, data["cost"][i], data["price"][i], data["salvage"][i], data["min_order"][i]]
                          for i in items])
            scen_rows = [[sc, f"{number_text(data['prob'][sc])}%"] + [data["demand"][sc][i] for i in items]
                         for sc in scen]
            return (f"Newsvendor planning for a {domain}.\n\n{econ}\n\n"
                    f"{table(['Scenario', 'Probability'] + [f'{i} demand' for i in items], scen_rows)}\n\n"
                    f"{once} Storage: at most {number_text(data['capacity'])} {unit}. Choose continuous order "
                    "quantities that maximise the expected profit.")
        if template == 2:
            return (f"Every year {v['who']} faces the same gamble: order too little and customers leave empty-handed, "
                    f"order too much and the rest is {v['left']}. Forecasters describe {v['season']} by scenarios "
                    f"({probs}) with demands {dem}. {terms}. {limits} How much of each should be ordered to make "
                    "the expected profit as large as possible? Fractional quantities are fine.")
        return (f"Two-stage stochastic LP ({domain}). First stage: order quantities. Second stage, per scenario: "
                f"sales (at most demand and stock) and salvage of the rest. Scenario probabilities: {probs}. "
                f"Demands: {dem}. Economics: {terms}. {limits} Objective: maximise expected profit (continuous "
                "quantities).")
