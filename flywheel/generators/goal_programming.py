"""Weighted goal programming (LP): a production mix that comes as close as possible to a profit goal and a labour
goal, penalising each unit of profit shortfall and each hour of labour away from its goal (over or under: an
absolute value, split into two deviation variables) by stated weights, within a hard material limit and a
contracted minimum of one product.

Labour is given in minutes per unit but its goal in hours: the coefficient is minutes / 60. Feasible by
construction (the contracted minimum fits the material). Infeasible variant: the contracted minimum needs more
material than is available.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, number_text


@register
class GoalProgramming(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3 / 5 / 7 products by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        products = drawn_names(rng, self.vocab[domain]["products"], spread(rng, 1 + 2 * difficulty, 2), "Product")
        profit = {p: int(rng.integers(4, 40)) for p in products}
        labour = {p: int(rng.choice([10, 15, 20, 30, 40, 45, 60, 90])) for p in products}  # minutes per unit
        material = {p: int(rng.integers(1, 9)) for p in products}
        avail = int(sum(material.values()) * rng.integers(8, 20))
        first = pick(rng, products)  # the contracted product: any of them, not always the first listed
        minimum = int(max(1, avail // material[first] * rng.uniform(0.1, 0.4)))
        return {"products": products, "profit": profit, "labour": labour, "material": material,
                "available": avail, "profit_goal": int(avail * rng.uniform(3, 8)),
                "labour_goal": int(rng.integers(20, 160)), "w_profit": int(rng.integers(1, 4)),
                "w_labour": int(rng.integers(3, 12)), "min_product": first, "minimum": minimum}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = data["available"] // data["material"][data["min_product"]]
        return {**data, "minimum": int(most + rng.integers(1, 10))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (products,) = b.elements("products")
        for key, desc in (("available", "material available"), ("profit_goal", "profit goal"),
                          ("labour_goal", "labour goal in hours"), ("w_profit", "penalty per unit of profit shortfall"),
                          ("w_labour", "penalty per hour of labour deviation"),
                          ("minimum", "contracted minimum of one product")):
            b.add_param(key, data[key], (), "", desc)
        x = b.add_vars("make", ("products",), description="units made", unit="units")
        under_p = b.add_var("profit_under", description="profit shortfall below the goal")
        over_p = b.add_var("profit_over", description="profit above the goal (not penalised)")
        under_l = b.add_var("labour_under", description="labour hours below the goal")
        over_l = b.add_var("labour_over", description="labour hours above the goal")
        b.con_group("profit_goal", (), "profit plus shortfall minus excess equals the goal")
        b.add_constr("profit_goal", (), [(x[(p,)], data["profit"][p]) for p in products]
                     + [(under_p, 1), (over_p, -1)], "==", data["profit_goal"])
        b.con_group("labour_goal", (), "labour hours (minutes / 60) plus shortfall minus excess equal the goal")
        b.add_constr("labour_goal", (), [(x[(p,)], data["labour"][p] / 60) for p in products]
                     + [(under_l, 1), (over_l, -1)], "==", data["labour_goal"])
        b.con_group("material", (), "material within what is available")
        b.add_constr("material", (), [(x[(p,)], data["material"][p]) for p in products], "<=", data["available"])
        b.con_group("contract", (), "contracted minimum of one product")
        b.add_constr("contract", (), [(x[(data["min_product"],)], 1)], ">=", data["minimum"])
        b.set_objective("minimize", [(under_p, data["w_profit"]), (under_l, data["w_labour"]),
                                     (over_l, data["w_labour"])], description="weighted goal deviations")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        products = data["products"]
        profits = listing(data["profit"], products, "{k} ${v}")
        labour = listing(data["labour"], products, "{k} {v} minutes")
        mat = ", ".join(f"{p} {number_text(data['material'][p])} {v['munit']}" for p in products)
        goals = f"The owner would like a profit of at least ${number_text(data['profit_goal'])} and would like to keep the {v['staff']} busy for exactly {number_text(data['labour_goal'])} hours. Each dollar of profit below the goal costs {number_text(data['w_profit'])} penalty points; each hour of labour above or below the goal costs {number_text(data['w_labour'])} points."
        hard = f"Only {number_text(data['available'])} {v['munit']} of {v['material']} are available, and a contract requires at least {number_text(data['minimum'])} units of {data['min_product']}."
        header = [
            "Product",
            "Profit ($/unit)",
            "Labour (min/unit)",
            f"{v['material'].capitalize()} ({v['munit']}/unit)",
        ]
        rows = [[p, data["profit"][p], data["labour"][p], data["material"][p]] for p in products]
        return {"goals": goals, "hard": hard, "header": header, "labour": labour, "mat": mat, "profits": profits, "rows": rows}
