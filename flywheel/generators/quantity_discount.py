"""All-units quantity discounts (MILP): buy bulk quantities of several items to cover each item's demand, where
the price of *every* unit drops once the order reaches a tier's threshold, within one storage room.

The cost is piecewise linear and discontinuous in the quantity, so each (item, tier) gets a binary ``y`` and a
quantity ``q``: ``start_k y_k <= q_k <= start_{k+1} y_k``, and ``volume q_k <= 1000 capacity y_k`` (the big-M that
bounds the top tier: the most that fits the store), at most one tier per item, ``sum_k q_k >= demand``. A quantity
exactly at a threshold may sit in the dearer tier below it, but never does at an optimum (the next tier is
cheaper). Volumes are litres per unit and the store is in cubic metres (a derived copy in litres, 1000 a cubic
metre).

Feasible by construction: the store holds 130-180% of the volume of the demands (buying exactly the demand, in
whichever tier its size falls, fits). Infeasible variant: the store is shrunk below the volume of the demands,
which must all be bought.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class QuantityDiscount(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 2x2 / 3x3 / 4x3 items x tiers by difficulty, item names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the tiers stay in order.
        items = drawn_names(rng, self.vocab[domain]["items"], spread(rng, 1 + difficulty, 2), "Item")
        tiers = spread(rng, 2 + difficulty // 2, 2)
        demand = {i: int(rng.integers(20, 200)) * 10 for i in items}
        volume = {i: int(rng.integers(1, 10)) for i in items}  # litres of storage per unit
        start, price = {}, {}
        for i in items:
            # Thresholds around the demand, so that ordering more than needed to reach a cheaper tier is a choice.
            first = max(20, int(demand[i] * rng.uniform(0.5, 1.2)) // 10 * 10)
            steps = np.cumsum([0] + [10 * int(w) for w in rng.integers(20, 120, size=tiers - 2)])
            start[i] = [0] + [first + int(w) for w in steps]
            # Falling prices with one decimal: each tier 0.1-0.5 below the one before.
            cuts = np.cumsum([0] + [int(c) for c in rng.integers(1, 6, size=tiers - 1)])
            base = int(rng.integers(40, 150))
            price[i] = [round((base - int(c)) / 10, 1) for c in cuts]
        need = sum(volume[i] * demand[i] for i in items) / 1000
        return {"items": items, "demand": demand, "volume": volume, "start": start, "price": price,
                "capacity": math.ceil(need * rng.uniform(1.3, 1.8))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        need = sum(data["volume"][i] * data["demand"][i] for i in data["items"]) / 1000
        return {**data, "capacity": max(0, math.ceil(need) - int(rng.integers(1, 4)))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (items,) = b.elements("items")
        tiers = b.add_set("tiers", [f"T{k + 1}" for k in range(len(data["price"][items[0]]))],
                          "price tiers, cheapest last")
        b.add_param("demand", data["demand"], ("items",), "units", "quantity of an item needed")
        b.add_param("volume", data["volume"], ("items",), "litres per unit", "storage volume of one unit")
        # The thresholds above the first tier's 0 (a sparse parameter: its keys are also the tiers with a threshold).
        start = {(i, t): data["start"][i][k] for i in items for k, t in enumerate(tiers) if k}
        b.add_param("start", start, ("items", "tiers"), "units", "smallest order that gets a tier's price")
        b.add_param("price", {(i, t): data["price"][i][k] for i in items for k, t in enumerate(tiers)},
                    ("items", "tiers"), "money per unit", "price of every unit when the order is in a tier")
        b.add_param("capacity", data["capacity"], (), "cubic metres", "storage room volume")
        litres = 1000 * data["capacity"]
        b.add_param("capacity_litres", litres, (), "litres", "storage room volume in litres", derived=True)
        q = b.add_vars("buy", ("items", "tiers"), description="quantity bought at a tier's price", unit="units")
        y = b.add_vars("tier", ("items", "tiers"), VarType.BINARY, description="1 if the item's order is in the tier")
        b.add_constrs("tier_start", ("items", "tiers"), "an order in a tier reaches the tier's threshold",
                      lambda i, t: ([(q[(i, t)], 1), (y[(i, t)], -start[(i, t)])], ">=", 0), keys=list(start))
        b.add_constrs("tier_end", ("items", "tiers", "tiers"), "an order in a tier stays below the next threshold",
                      lambda i, t, nxt: ([(q[(i, t)], 1), (y[(i, t)], -start[(i, nxt)])], "<=", 0),
                      keys=[(i, t, nxt) for i in items for t, nxt in pairwise(tiers)])
        b.add_constrs("tier_fit", ("items", "tiers"), "an order in a tier fits the store; none outside its tier (big-M)",
                      lambda i, t: ([(q[(i, t)], data["volume"][i]), (y[(i, t)], -litres)], "<=", 0))
        b.add_constrs("one_tier", ("items",), "each item's order falls in at most one tier",
                      lambda i: ([(y[(i, t)], 1) for t in tiers], "<=", 1))
        b.add_constrs("demand", ("items",), "each item's demand is covered",
                      lambda i: ([(q[(i, t)], 1) for t in tiers], ">=", data["demand"][i]))
        b.add_constrs("storage", (), "everything bought fits the store (1000 litres a cubic metre)",
                      lambda: ([(q[(i, t)], data["volume"][i]) for i in items for t in tiers], "<=", litres))
        b.set_objective("minimize", [(q[(i, t)], data["price"][i][k]) for i in items for k, t in enumerate(tiers)],
                        description="total purchase cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        items = data["items"]
        unit, one = v["unit"], v["one"]
        def offer(i: str) -> str:
            return f"{i}: " + ", ".join(
                (
                    f"${number_text(p)} per {one} from {number_text(s)} {unit}"
                    for s, p in zip(data["start"][i], data["price"][i], strict=True)
                )
            )
        offers = "; ".join(offer(i) for i in items)
        rule = "The discount is all-units: once an order reaches a threshold, every unit in it is charged that tier's price."
        needs = listing(data["demand"], items, "{v} " + unit + " of {k}")
        vols = listing(data["volume"], items, "{k} {v} litres per " + one)
        room = f"The {v['room']} holds {number_text(data['capacity'])} cubic metres"
        rows = [
            [i, data["demand"][i], data["volume"][i], s, p]
            for i in items
            for s, p in zip(data["start"][i], data["price"][i], strict=True)
        ]
        header = [
            "Item",
            f"Demand ({unit})",
            f"Storage litres per {one}",
            f"Tier from ({unit})",
            f"Price ($ per {one})",
        ]
        return {"header": header, "needs": needs, "offers": offers, "room": room, "rows": rows, "rule": rule, "vols": vols}
