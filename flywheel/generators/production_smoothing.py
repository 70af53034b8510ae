"""Production smoothing (convex QP): plan output per period with inventory balance
(``stock[t] = stock[t-1] + make[t] - demand[t]``, no backorders), a per-period capacity, a unit cost, a holding
cost stated as a percentage of the unit cost per period, and a quadratic penalty ``w * change[t]^2`` on every
change of output from the period before (``change[t] = make[t] - make[t-1]``, the first against last period's
level): hiring, overtime and idling make big swings expensive, small ones cheap.

Feasible by construction: the capacity is at least every period's demand, so making each period's demand is a
plan. Infeasible variant: the last period's demand is raised until the horizon's total demand exceeds the opening
stock plus the capacity of all periods, which bounds what can ever be delivered.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import listing, spread, table
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, number_text


@register
class ProductionSmoothing(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Around 6 / 8 / 10 periods by difficulty (``spread``); the periods keep their order.
        periods = [f"{self.vocab[domain]['period']}{t}" for t in range(1, spread(rng, 4 + 2 * difficulty, 2) + 1)]
        demand = {t: int(rng.integers(40, 200)) for t in periods}
        return {"periods": periods, "demand": demand,
                "capacity": max(demand.values()) + int(rng.integers(0, 60)),
                "opening": int(rng.integers(0, 50)), "last_level": int(rng.integers(60, 160)),
                "unit_cost": int(rng.integers(5, 60)), "holding_pct": int(rng.integers(1, 8)),
                "change_weight": round(float(rng.uniform(0.05, 1.5)), 2)}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        periods = data["periods"]
        most = data["opening"] + data["capacity"] * len(periods) - sum(data["demand"][t] for t in periods[:-1])
        return exceed(data, "demand", periods[-1], most, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (periods,) = b.elements("periods")
        make = b.add_vars("make", ("periods",), ub=data["capacity"], description="output of a period")
        stock = b.add_vars("stock", ("periods",), description="stock at the end of a period")
        change = b.add_vars("change", ("periods",), lb=None, description="output change from the period before")
        first = periods[0]
        steps = list(pairwise(periods))
        b.con_group("balance_first", (), "the first period starts from the opening stock")
        b.add_constr("balance_first", (), [(stock[(first,)], 1), (make[(first,)], -1)], "==",
                     data["opening"] - data["demand"][first])
        b.add_constrs("balance", ("periods", "periods"), "stock carried plus output minus demand",
                      lambda prev, t: ([(stock[(t,)], 1), (make[(t,)], -1), (stock[(prev,)], -1)], "==",
                                       -data["demand"][t]), keys=steps)
        b.con_group("change_first", (), "the first change is against last period's output")
        b.add_constr("change_first", (), [(change[(first,)], 1), (make[(first,)], -1)], "==", -data["last_level"])
        b.add_constrs("change_def", ("periods", "periods"), "change is output minus the previous output",
                      lambda prev, t: ([(change[(t,)], 1), (make[(t,)], -1), (make[(prev,)], 1)], "==", 0),
                      keys=steps)
        holding = data["holding_pct"] / 100 * data["unit_cost"]
        b.set_objective("minimize", [(make[(t,)], data["unit_cost"]) for t in periods] +
                        [(stock[(t,)], holding) for t in periods],
                        quadratic=[(change[(t,)], change[(t,)], data["change_weight"]) for t in periods],
                        description="production, holding and smoothing cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        periods = data["periods"]
        n, item, per = number_text, v["item"], v["period"].lower()
        dem = listing(data["demand"], periods)
        costs = (
            f"Each of the {item} costs ${n(data['unit_cost'])} to make, and holding one in stock costs "
            f"{n(data['holding_pct'])}% of that per {per} (on the stock left at the end of the {per})."
        )
        swing = (
            f"Changing output from one {per} to the next ({v['swing']}) costs ${n(data['change_weight'])} times "
            f"the square of the change; last {per}'s output was {n(data['last_level'])}."
        )
        frame = (
            f"At most {n(data['capacity'])} can be made per {per}; the opening stock is {n(data['opening'])} and "
            "demand must be met on time from output and stock."
        )
        body = table([v["period"], f"Demand ({item})"], [[t, data["demand"][t]] for t in periods])
        return {"body": body, "costs": costs, "dem": dem, "frame": frame, "item": item, "n": n, "per": per, "swing": swing}
