"""Multi-period lot sizing (MILP): when and how much of each product to make, trading setup costs against holding
inventory, under a shared per-period capacity. Each period balances: stock of the period before + production -
demand = stock; the first period uses the opening stock (a variable fixed to the stated one) in its place.
A setup allows production up to the period's capacity (the big-M).

Capacity is raised wherever cumulative capacity would fall short of cumulative net demand, which (one shared
resource, unit rates) is exactly the condition for a feasible plan. Infeasible variant: a first-period demand that
exceeds the first period's capacity plus the opening stock.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, money, names, spread, table
from flywheel.generators.base import Family, register, replace_at
from solvers.ir import Model, VarType


@register
class LotSizing(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 1x4 / 2x6 / 2x8 by difficulty, product names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the periods keep their calendar order.
        products = drawn_names(rng, vocab["products"], spread(rng, 1 + difficulty // 2, high=len(vocab["products"])),
                               "Product")
        periods = names(vocab["periods"], spread(rng, 2 + 2 * difficulty, 2), "Period")
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
        b = self.builder(data)
        products, periods = b.elements("products", "periods")
        make = b.add_vars("make", ("products", "periods"), description="units produced", unit="units")
        stock = b.add_vars("stock", ("products", "periods"), description="units held at the end of a period",
                           unit="units")
        opening = b.add_vars("opening", ("products",), description="stock at the start", unit="units")
        setup = b.add_vars("setup", ("products", "periods"), VarType.BINARY,
                           description="1 if the product is set up (made) in the period")
        b.add_constrs("opening", ("products",), "the opening stock is the one given",
                      lambda p: ([(opening[(p,)], 1)], "==", data["initial"][p]))
        first = periods[0]
        b.add_constrs("balance_first", ("products", "periods"), "opening stock + production - demand = stock",
                      lambda p, t: ([(opening[(p,)], 1), (make[(p, t)], 1), (stock[(p, t)], -1)], "==",
                                    data["demand"][p][t]), keys=[(p, first) for p in products])
        b.add_constrs("balance", ("products", "periods", "periods"), "previous stock + production - demand = stock",
                      lambda p, prev, t: ([(stock[(p, prev)], 1), (make[(p, t)], 1), (stock[(p, t)], -1)], "==",
                                          data["demand"][p][t]),
                      keys=[(p, prev, t) for p in products for prev, t in pairwise(periods)])
        # Big-M of the setup link: the period's capacity (no product is made beyond it anyway).
        b.add_constrs("setup_link", ("products", "periods"), "production only in periods with a setup",
                      lambda p, t: ([(make[(p, t)], 1), (setup[(p, t)], -data["capacity"][t])], "<=", 0))
        b.add_constrs("capacity", ("periods",), "total production within the period's capacity",
                      lambda t: ([(make[(p, t)], 1) for p in products], "<=", data["capacity"][t]))
        b.set_objective("minimize", [(setup[(p, t)], data["setup_cost"][p]) for p in products for t in periods]
                        + [(stock[(p, t)], data["holding_cost"][p]) for p in products for t in periods],
                        description="setup plus holding cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        periods = data["periods"]
        prods, unit, cur, per = data["products"], v["unit"], v["money"], v["period"]
        demand = "; ".join(f"{p}: " + listing(data["demand"][p], periods, "{v} in {k}") for p in prods)
        setups = ", ".join(f"{p} {money(data['setup_cost'][p], cur)}" for p in prods)
        holding = ", ".join(f"{p} {money(data['holding_cost'][p], cur)}" for p in prods)
        start = listing(data["initial"], prods, "{v} {unit} of {k}", unit=unit)
        caps = listing(data["capacity"], periods)
        header = [per.capitalize(), f"Capacity ({unit})"] + [f"{p} demand ({unit})" for p in prods]
        rows = [[t, data["capacity"][t]] + [data["demand"][p][t] for p in prods] for t in periods]
        costs = table(
            ["Product", f"Setup cost ({cur})", f"Holding cost ({cur}/unit/{per})", f"Opening stock ({unit})"],
            [[p, data["setup_cost"][p], data["holding_cost"][p], data["initial"][p]] for p in prods],
        )
        return {"caps": caps, "costs": costs, "demand": demand, "header": header, "holding": holding, "per": per, "prods":
                prods, "rows": rows, "setups": setups, "start": start, "unit": unit}
