"""Procurement with quantity discounts (MILP): buy enough of each material to cover demand, where every supplier
prices by volume tiers, so cost is piecewise linear and concave in the quantity (cheaper per unit beyond each
breakpoint). Concave costs cannot be left to an LP; the lambda (convex-combination) formulation with one binary
per segment (an SOS2 condition written with binaries) makes the cost exact.

For every supplier s: quantity q = sum_k lambda_k * B_k, cost = sum_k lambda_k * C(B_k), sum_k lambda_k = 1,
lambda_k <= z_{k-1} + z_k, sum_k z_k = 1 (z: the active segment). Feasible by construction: the suppliers'
largest breakpoints together exceed demand. Infeasible variant: demand above every supplier's largest tier.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import names
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class PiecewiseProcurement(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        suppliers = names(self.vocab[domain]["suppliers"], 1 + (difficulty + 1) // 2, "Supplier")
        tiers = 2 + difficulty // 2
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
        tiers = len(data["breaks"][suppliers[0]])
        b.add_set("tiers", [f"T{k + 1}" for k in range(tiers)], "price tiers (segments)")
        b.add_set("points", [f"P{k}" for k in range(tiers + 1)], "breakpoints, P0 = nothing bought")
        b.add_param("breaks", {(s, f"T{k + 1}"): data["breaks"][s][k] for s in suppliers for k in range(tiers)},
                    ("suppliers", "tiers"), "units", "upper end of a tier")
        b.add_param("prices", {(s, f"T{k + 1}"): data["prices"][s][k] for s in suppliers for k in range(tiers)},
                    ("suppliers", "tiers"), "money per unit", "unit price within a tier")
        b.add_param("demand", data["demand"], (), "units", "quantity needed in total")
        lam = b.add_vars("weight", ("suppliers", "points"), ub=1, description="convex weight of a breakpoint")
        seg = b.add_vars("segment", ("suppliers", "tiers"), VarType.BINARY, description="1 if the tier is active")
        b.con_group("convexity", ("suppliers",), "breakpoint weights sum to one")
        b.con_group("one_segment", ("suppliers",), "exactly one active tier per supplier")
        b.con_group("adjacent", ("suppliers", "points"), "only the two ends of the active tier carry weight (SOS2)")
        cost_terms, qty_terms = [], []
        for s in suppliers:
            points = [0] + data["breaks"][s]
            cost = [0.0]
            for k in range(tiers):
                cost.append(cost[-1] + data["prices"][s][k] * (points[k + 1] - points[k]))
            b.add_constr("convexity", (s,), [(lam[(s, f"P{k}")], 1) for k in range(tiers + 1)], "==", 1)
            b.add_constr("one_segment", (s,), [(seg[(s, f"T{k + 1}")], 1) for k in range(tiers)], "==", 1)
            for k in range(tiers + 1):
                near = [seg[(s, f"T{j + 1}")] for j in (k - 1, k) if 0 <= j < tiers]
                b.add_constr("adjacent", (s, f"P{k}"), [(lam[(s, f"P{k}")], 1)] + [(z, -1) for z in near], "<=", 0)
            qty_terms += [(lam[(s, f"P{k}")], points[k]) for k in range(1, tiers + 1)]
            cost_terms += [(lam[(s, f"P{k}")], cost[k]) for k in range(1, tiers + 1)]
        b.con_group("demand", (), "total quantity bought covers demand")
        b.add_constr("demand", (), qty_terms, ">=", data["demand"])
        b.set_objective("minimize", cost_terms, description="total purchase cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        suppliers = data["suppliers"]
        item = v["item"]
        def tiers_of(s: str) -> str:
            lo, out = 0, []
            for hi, price in zip(data["breaks"][s], data["prices"][s], strict=True):
                out.append(f"${number_text(price)} each from {number_text(lo)} up to {number_text(hi)}")
                lo = hi
            return ", ".join(out)
        offers = "; ".join(f"{s} charges {tiers_of(s)}" for s in suppliers)
        need = f"{number_text(data['demand'])} {item}"
        limit = "No supplier can deliver beyond its last tier."
        rows = []
        for s in suppliers:
            lo = 0
            for hi, price in zip(data["breaks"][s], data["prices"][s], strict=True):
                rows.append([s, lo, hi, price])
                lo = hi
        return {"limit": limit, "need": need, "offers": offers, "rows": rows}
