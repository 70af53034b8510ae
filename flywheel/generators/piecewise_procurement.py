"""Procurement with quantity discounts (MILP): buy enough of each material to cover demand, where every supplier
prices by volume tiers, so cost is piecewise linear and concave in the quantity (cheaper per unit beyond each
breakpoint). Concave costs cannot be left to an LP; the incremental formulation with one binary per tier makes the
cost exact.

For every supplier s and tier t: ``buy[s,t]`` units at the tier's price, at most the tier's size and only if the
tier is used (``buy[s,t] <= size[s,t] use[s,t]``); a tier is used only once the tier before it is full
(``buy[s,t] >= size[s,t] use[s,t']`` for consecutive tiers t, t'). Feasible by construction: the suppliers' tiers
together exceed demand. Infeasible variant: demand above the sum of every supplier's tiers.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


def _sizes(data: dict[str, Any], s: str) -> list[int]:
    """Units in each of supplier ``s``'s tiers (the widths between its breakpoints)."""
    breaks = [0] + list(data["breaks"][s])
    return [hi - lo for lo, hi in pairwise(breaks)]


@register
class PiecewiseProcurement(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 2x2 / 2x3 / 3x3 suppliers x price tiers by difficulty, supplier names drawn from the domain's
        # pool (``spread``, ``drawn_names``); the tiers stay in order.
        pool = self.vocab[domain]["suppliers"]
        suppliers = drawn_names(rng, pool, spread(rng, 1 + (difficulty + 1) // 2), "Supplier")
        tiers = spread(rng, 2 + difficulty // 2, 2)
        breaks, prices = {}, {}
        for s in suppliers:
            widths = [int(w) for w in rng.integers(20, 80, size=tiers)]
            breaks[s] = [int(x) for x in np.cumsum(widths)]
            start = int(rng.integers(8, 20))
            prices[s] = [max(1, start - k * int(rng.integers(1, 3))) for k in range(tiers)]  # falling: concave cost
        top = sum(breaks[s][-1] for s in suppliers)
        return {"suppliers": suppliers, "breaks": breaks, "prices": prices,
                "demand": int(top * rng.uniform(0.3, 0.7))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "demand": int(sum(data["breaks"][s][-1] for s in data["suppliers"]) + rng.integers(1, 30))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (suppliers,) = b.elements("suppliers")
        tiers = b.add_set("tiers", [f"T{k + 1}" for k in range(len(data["prices"][suppliers[0]]))],
                          "price tiers, in order")
        b.add_param("prices", {(s, t): data["prices"][s][k] for s in suppliers for k, t in enumerate(tiers)},
                    ("suppliers", "tiers"), "money per unit", "unit price within a tier")
        size = {(s, t): w for s in suppliers for t, w in zip(tiers, _sizes(data, s), strict=True)}
        b.add_param("size", size, ("suppliers", "tiers"), "units", "units in a tier")
        b.add_param("demand", data["demand"], (), "units", "quantity needed in total")
        buy = b.add_vars("buy", ("suppliers", "tiers"), description="units bought at a tier's price", unit="units")
        use = b.add_vars("use", ("suppliers", "tiers"), VarType.BINARY, description="1 if the tier is used")
        b.add_constrs("tier_size", ("suppliers", "tiers"), "a tier holds at most its size, and only if used",
                      lambda s, t: ([(buy[(s, t)], 1), (use[(s, t)], -size[(s, t)])], "<=", 0))
        b.add_constrs("fill_order", ("suppliers", "tiers", "tiers"), "a tier is used only once the one before is full",
                      lambda s, t, nxt: ([(buy[(s, t)], 1), (use[(s, nxt)], -size[(s, t)])], ">=", 0),
                      keys=[(s, t, nxt) for s in suppliers for t, nxt in pairwise(tiers)])
        b.add_constrs("demand", (), "total quantity bought covers demand",
                      lambda: ([(buy[k], 1) for k in buy], ">=", data["demand"]))
        b.set_objective("minimize", [(buy[(s, t)], data["prices"][s][k]) for s in suppliers for k, t in enumerate(tiers)],
                        description="total purchase cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        suppliers = data["suppliers"]
        item = v["item"]
        def tiers_of(s: str) -> str:
            return ", ".join(f"${number_text(price)} each for the {'first' if k == 0 else 'next'} {number_text(size)}"
                             for k, (size, price) in enumerate(zip(_sizes(data, s), data["prices"][s], strict=True)))
        offers = "; ".join(f"{s} charges {tiers_of(s)}" for s in suppliers)
        need = f"{number_text(data['demand'])} {item}"
        limit = "No supplier can deliver beyond its last tier."
        rows = [[s, f"tier {k + 1}", size, price] for s in suppliers
                for k, (size, price) in enumerate(zip(_sizes(data, s), data["prices"][s], strict=True))]
        return {"limit": limit, "need": need, "offers": offers, "rows": rows}
