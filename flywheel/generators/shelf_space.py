"""Shelf space allocation (IP): how many facings (side-by-side slots) each product gets on a shelf of a given
length, between its minimum and maximum, so that every category's share of the occupied space stays within its
percentage band, maximising the weekly profit of the facings.

Share bands are ratios of variables, written linearly: ``sum_{p in c} w_p n_p - lo_c/100 sum_p w_p n_p >= 0``
(and likewise ``<= hi_c``). Widths are centimetres, the shelf metres (coefficient 100 cm per metre).

Feasible by construction: the bands and the shelf are set around a witness allocation (facings drawn between
each product's bounds). Infeasible variant: one category's lower band is raised so that the lower bands add up to
more than 100%; every product has at least one facing, so the occupied space is positive and the shares, which
sum to exactly 100%, cannot all reach their lower bands.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


@register
class ShelfSpace(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        pools = self.vocab[domain]["categories"]
        categories = list(pools)[:2 + (difficulty >= 3) + (difficulty >= 5)]
        members = {c: names(pools[c], 1 + (difficulty + 1) // 2, c) for c in categories}
        products = [p for c in categories for p in members[c]]
        width = {p: int(rng.integers(8, 40)) for p in products}  # cm per facing
        low = {p: int(rng.integers(1, 3)) for p in products}
        high = {p: low[p] + int(rng.integers(2, 8)) for p in products}
        witness = {p: int(rng.integers(low[p], high[p] + 1)) for p in products}
        used = sum(width[p] * witness[p] for p in products)
        share = {c: 100 * sum(width[p] * witness[p] for p in members[c]) / used for c in categories}
        return {"categories": categories, "members": members, "products": products, "width": width, "low": low,
                "high": high, "profit": {p: round(float(rng.integers(5, 60)) / 10, 1) for p in products},
                "shelf": math.ceil(used / 100 * rng.uniform(1.0, 1.3)),  # the witness always fits
                "share_low": {c: max(0, math.floor(share[c]) - int(rng.integers(2, 12))) for c in categories},
                "share_high": {c: min(100, math.ceil(share[c]) + int(rng.integers(2, 12))) for c in categories}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["categories"])
        others = sum(data["share_low"][k] for k in data["categories"] if k != c)
        return {**data, "share_low": {**data["share_low"], c: 100 - others + int(rng.integers(1, 6))}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        products, categories = b.elements("products", "categories")
        n = b.add_vars("facings", ("products",), VarType.INTEGER, description="facings of a product")
        w = data["width"]
        b.con_group("shelf", (), "occupied width (cm) within the shelf (metres x 100)")
        b.add_constr("shelf", (), [(n[(p,)], w[p]) for p in products], "<=", 100 * data["shelf"])
        b.con_group("facing_bounds_low", ("products",), "at least a product's fewest facings")
        b.con_group("facing_bounds_high", ("products",), "at most a product's most facings")
        for p in products:
            b.add_constr("facing_bounds_low", (p,), [(n[(p,)], 1)], ">=", data["low"][p])
            b.add_constr("facing_bounds_high", (p,), [(n[(p,)], 1)], "<=", data["high"][p])
        b.con_group("share_low", ("categories",), "category width minus its least share of all occupied width >= 0")
        b.con_group("share_high", ("categories",), "category width minus its most share of all occupied width <= 0")
        for c in categories:
            inside = set(data["members"][c])
            for group, pct, sense in (("share_low", data["share_low"][c], ">="),
                                      ("share_high", data["share_high"][c], "<=")):
                b.add_constr(group, (c,), [(n[(p,)], w[p] * ((p in inside) - pct / 100)) for p in products], sense,
                             0)
        b.set_objective("maximize", [(n[(p,)], data["profit"][p]) for p in products],
                        description="weekly profit of the facings")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        v, d = self.vocab[domain], data
        products = d["products"]
        groups = "; ".join(f"{c}: {join([p for p in products if p in d['members'][c]])}" for c in d["categories"])
        bands = ", ".join(
            f"{c} between {number_text(d['share_low'][c])}% and {number_text(d['share_high'][c])}%"
            for c in d["categories"]
        )
        shares = f"Each category's share of the occupied shelf width must lie in its band: {bands}."
        widths = listing(d["width"], products, "{k} {v} cm")
        bounds = ", ".join(f"{p} {number_text(d['low'][p])} to {number_text(d['high'][p])}" for p in products)
        profits = listing(d["profit"], products, "{k} ${v}")
        shelf = f"The shelf is {number_text(d['shelf'])} metres long"
        cat = {p: c for c in d["categories"] for p in d["members"][c]}
        rows = [[p, cat[p], d["width"][p], d["low"][p], d["high"][p], d["profit"][p]] for p in products]
        header = ["Product", "Category", "Width (cm)", "Min facings", "Max facings", "Profit ($/facing/week)"]
        return {"bounds": bounds, "groups": groups, "header": header, "profits": profits, "rows": rows, "shares": shares,
                "shelf": shelf, "v": v, "widths": widths}
