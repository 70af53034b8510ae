"""Newsvendor under scenarios (LP, two-stage stochastic): order each item once, before demand is known (first
stage); in every demand scenario sell up to the demand and the stock, and salvage what is left at a lower value
(second stage, one copy of the sales per scenario). Maximise expected profit = expected revenue from sales and
salvage minus the purchase cost, within a storage capacity and each supplier's minimum order.

Scenario probabilities are stated in percent (``prob``, derived, is percent / 100); ``revenue[s]`` is a scenario's
sales and salvage revenue, so the expected profit is ``sum_s prob[s] * revenue[s] - sum_i cost[i] * order[i]``.
Feasible by construction: the minimum orders together fit in the storage (ordering exactly them, selling nothing is
a solution). Infeasible variant: the storage is cut below the sum of the minimum orders, which every order plan must
store.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

_SCENARIOS = ["Weak", "Normal", "Strong", "Record", "Washout"]


@register
class NewsvendorScenarios(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 1x3 / 2x3 / 3x4 by difficulty, item names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the scenarios keep their order (weak to strong).
        items = drawn_names(rng, self.vocab[domain]["items"], spread(rng, difficulty), "Item")
        scenarios = _SCENARIOS[:spread(rng, 2 + (difficulty + 1) // 2, 2)]
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
        b = self.builder(data)
        items, scen = b.elements("items", "scenarios")
        for key, what in (("cost", "purchase cost"), ("price", "selling price"), ("salvage", "salvage value")):
            b.add_param(key, data[key], ("items",), "money per unit", f"{what} of one unit")
        b.add_param("demand", {(sc, i): data["demand"][sc][i] for sc in scen for i in items}, ("scenarios", "items"),
                    "units", "demand for an item in a scenario")
        b.add_param("min_order", data["min_order"], ("items",), "units", "supplier's minimum order")
        b.add_param("capacity", data["capacity"], (), "units", "storage capacity for all orders")
        b.add_param("prob", {sc: data["prob"][sc] / 100 for sc in scen}, ("scenarios",), "fraction",
                    "probability of a scenario (the percentage / 100)", derived=True)
        order = b.add_vars("order", ("items",), description="units ordered now (first stage)", unit="units")
        sold = b.add_vars("sold", ("scenarios", "items"), description="units sold in a scenario (recourse)")
        left = b.add_vars("leftover", ("scenarios", "items"), description="units salvaged in a scenario (recourse)")
        revenue = b.add_vars("revenue", ("scenarios",), description="sales and salvage revenue in a scenario",
                             unit="money")
        b.add_constrs("min_order", ("items",), "each order meets the supplier's minimum",
                      lambda i: ([(order[(i,)], 1)], ">=", data["min_order"][i]))
        b.add_constrs("storage", (), "all orders fit in storage",
                      lambda: ([(order[(i,)], 1) for i in items], "<=", data["capacity"]))
        b.add_constrs("demand_cap", ("scenarios", "items"), "sales within the scenario's demand",
                      lambda sc, i: ([(sold[(sc, i)], 1)], "<=", data["demand"][sc][i]))
        b.add_constrs("stock_split", ("scenarios", "items"), "stock is either sold or salvaged",
                      lambda sc, i: ([(sold[(sc, i)], 1), (left[(sc, i)], 1), (order[(i,)], -1)], "==", 0))
        b.add_constrs("scenario_revenue", ("scenarios",), "a scenario's revenue from its sales and salvage",
                      lambda sc: ([(revenue[(sc,)], 1)] + [(sold[(sc, i)], -data["price"][i]) for i in items]
                                  + [(left[(sc, i)], -data["salvage"][i]) for i in items], "==", 0))
        b.set_objective("maximize", [(order[(i,)], -data["cost"][i]) for i in items]
                        + [(revenue[(sc,)], data["prob"][sc] / 100) for sc in scen],
                        description="expected sales and salvage revenue minus purchase cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        items = data["items"]
        scen, unit = data["scenarios"], v["unit"]
        probs = listing(data["prob"], scen, "{k} {v}%")
        dem = "; ".join(f"{sc}: " + listing(data["demand"][sc], items) for sc in scen)
        terms = "; ".join(
            f"{i} costs ${number_text(data['cost'][i])}, sells for ${number_text(data['price'][i])} "
            f"and is worth ${number_text(data['salvage'][i])} if unsold"
            for i in items
        )
        limits = (
            f"The {v['space']} holds {number_text(data['capacity'])} {unit} in total, and the suppliers' minimum "
            f"orders are {listing(data['min_order'], items, '{v} ' + unit + ' of {k}')}."
        )
        once = f"Orders are placed once, before {v['season']}; unsold stock is {v['left']}."
        econ = table(
            ["Item", "Cost ($)", "Price ($)", "Salvage ($)", f"Minimum order ({unit})"],
            [[i, data["cost"][i], data["price"][i], data["salvage"][i], data["min_order"][i]] for i in items],
        )
        scen_rows = [[sc, f"{number_text(data['prob'][sc])}%"] + [data["demand"][sc][i] for i in items] for sc in scen]
        t1_part0 = table(["Scenario", "Probability"] + [f"{i} demand" for i in items], scen_rows)
        return {"t1_part0": t1_part0, "dem": dem, "econ": econ, "limits": limits, "once": once, "probs": probs, "terms":
                terms, "unit": unit}
