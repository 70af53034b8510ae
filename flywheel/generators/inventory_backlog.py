"""Multi-period production and inventory with backlogs (LP): meet each period's demand from production, stock
or late (backlogged, at a penalty per unit per period), within production capacity; all backlog must be cleared
by the end. Each period balances: ``stock[t] - backlog[t] = stock[t-1] - backlog[t-1] + make[t] - demand[t]``.

Holding cost is quoted as a percentage of the unit's value per period (a derived ``holding_cost``, value * percent
/ 100). The first period balances with the opening stock (a variable fixed to the stated one) in place of the period
before.
Feasible by construction: total capacity exceeds total demand. Infeasible variant: the last period's demand
grows beyond everything the plant can make over the horizon (plus the opening stock).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import listing, spread, table
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, number_text


@register
class InventoryBacklog(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4 / 6 / 8 periods by difficulty (``spread``); the periods stay in order (the pool's first n) and
        # there is nothing else to name.
        periods = self.vocab[domain]["periods"][:spread(rng, 2 + 2 * difficulty, 3)]
        demand = {t: int(rng.integers(20, 120)) for t in periods}
        avg = sum(demand.values()) / len(periods)
        capacity = {t: int(avg * rng.uniform(0.8, 1.4)) + 5 for t in periods}
        return {"periods": periods, "demand": demand, "capacity": capacity,
                "make_cost": {t: int(rng.integers(5, 20)) for t in periods}, "value": int(rng.integers(20, 80)),
                "hold_pct": int(rng.choice([2, 3, 4, 5, 8, 10])), "backlog_cost": int(rng.integers(3, 15)),
                "opening": int(rng.integers(0, 40))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        last = data["periods"][-1]
        others = sum(v for t, v in data["demand"].items() if t != last)
        most = sum(data["capacity"].values()) + data["opening"] - others
        return exceed(data, "demand", last, most, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (periods,) = b.elements("periods")
        hold = data["value"] * data["hold_pct"] / 100
        b.add_param("holding_cost", hold, (), "money per unit per period", "unit_value x hold_pct / 100", derived=True)
        make = b.add_vars("make", ("periods",), description="units made in a period")
        stock = b.add_vars("stock", ("periods",), description="units in stock at the end of a period")
        late = b.add_vars("backlog", ("periods",), description="units owed to customers at the end of a period")
        start = b.add_var("start_stock", description="stock at the start")
        b.add_constrs("start_stock", (), "the opening stock is the one given",
                      lambda: ([(start, 1)], "==", data["opening"]))
        b.add_constrs("balance_first", ("periods",), "opening stock, plus production, minus demand: stock minus backlog",
                      lambda t: ([(start, 1), (make[(t,)], 1), (stock[(t,)], -1), (late[(t,)], 1)], "==",
                                 data["demand"][t]), keys=periods[:1])
        b.add_constrs("balance", ("periods", "periods"), "stock minus backlog carries over, plus production, minus demand",
                      lambda prev, t: ([(stock[(prev,)], 1), (late[(prev,)], -1), (make[(t,)], 1), (stock[(t,)], -1),
                                        (late[(t,)], 1)], "==", data["demand"][t]),
                      keys=list(pairwise(periods)))
        b.add_constrs("capacity", ("periods",), "production within capacity",
                      lambda t: ([(make[(t,)], 1)], "<=", data["capacity"][t]))
        b.add_constrs("clear", (), "no backlog left at the end", lambda: ([(late[(periods[-1],)], 1)], "<=", 0))
        b.set_objective("minimize", [(make[(t,)], data["make_cost"][t]) for t in periods]
                        + [(stock[(t,)], hold) for t in periods]
                        + [(late[(t,)], data["backlog_cost"]) for t in periods],
                        description="production, holding and backlog cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        periods = data["periods"]
        good, per = v["good"], v["period"]
        dem = listing(data["demand"], periods)
        cap = listing(data["capacity"], periods)
        cost = listing(data["make_cost"], periods, "{k} ${v}")
        terms = f"Each of the {good} is valued at ${number_text(data['value'])}, and keeping one in stock costs {number_text(data['hold_pct'])}% of its value per {per}. Demand that is not met on time can be delivered later at a penalty of ${number_text(data['backlog_cost'])} per unit per {per}, but every order must be delivered by the end of {periods[-1]}. The opening stock is {number_text(data['opening'])} {good}."
        rows = [[t, data["demand"][t], data["capacity"][t], data["make_cost"][t]] for t in periods]
        t1_part0 = table([per.capitalize(), f"Demand ({good})", f"Capacity ({good})", "Cost ($/unit)"], rows)
        return {"t1_part0": t1_part0, "cap": cap, "cost": cost, "dem": dem, "good": good, "per": per, "terms": terms}
