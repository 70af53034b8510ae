"""Shelf space allocation (IP): how many facings (side-by-side slots) each product gets on a shelf of a given
length, between its minimum and maximum, so that every category's share of the occupied space stays within its
percentage band, maximising the weekly profit of the facings.

Share bands are ratios of variables, written linearly with integer width variables (centimetres):
``W_c = sum_{p in c} w_p n_p``, ``U = sum_c W_c``, ``100 W_c >= lo_c U`` (and likewise ``<= hi_c``). Facings are
indexed by (category, product) pairs. The shelf is in metres (coefficient 100 cm per metre).

Feasible by construction: the bands and the shelf are set around a witness allocation (facings drawn between
each product's bounds). Infeasible variant: one category's lower band is raised so that the lower bands add up to
more than 100%; every product has at least one facing, so the occupied space is positive and the shares, which
sum to exactly 100%, cannot all reach their lower bands.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


@register
class ShelfSpace(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        pools = self.vocab[domain]["categories"]
        # Sizes around 2x2 / 2x2 / 3x3 (categories x products of each) by difficulty, each category's own count,
        # names drawn from the domain's pool (``spread``, ``drawn_names``).
        n_cat = spread(rng, 2 + (difficulty >= 3) + (difficulty >= 5), 2, high=len(pools))
        categories = drawn_names(rng, list(pools), n_cat, "Category")
        members = {c: drawn_names(rng, pools[c], spread(rng, 1 + (difficulty + 1) // 2), c) for c in categories}
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
        categories, = b.elements("categories")
        w, low, high = data["width"], data["low"], data["high"]
        shelved = [(c, p) for c in categories for p in data["members"][c]]
        n = b.add_vars("facings", ("categories", "products"), VarType.INTEGER, description="facings of a product",
                       keys=shelved)
        cw = b.add_vars("category_width", ("categories",), VarType.INTEGER, description="width a category occupies",
                        unit="cm")
        used = b.add_var("occupied", VarType.INTEGER, description="occupied shelf width", unit="cm")
        b.add_constrs("category_width", ("categories",), "a category's width is its facings' widths",
                      lambda c: ([(n[(c, p)], w[p]) for p in data["members"][c]] + [(cw[(c,)], -1)], "==", 0))
        b.add_constrs("occupied_width", (), "occupied width is the categories' widths",
                      lambda: ([(cw[(c,)], 1) for c in categories] + [(used, -1)], "==", 0))
        b.add_constrs("shelf", (), "occupied width (cm) within the shelf (metres x 100)",
                      lambda: ([(used, 1)], "<=", 100 * data["shelf"]))
        b.add_constrs("facing_bounds_low", ("categories", "products"), "at least a product's fewest facings",
                      lambda c, p: ([(n[(c, p)], 1)], ">=", low[p]), keys=shelved)
        b.add_constrs("facing_bounds_high", ("categories", "products"), "at most a product's most facings",
                      lambda c, p: ([(n[(c, p)], 1)], "<=", high[p]), keys=shelved)

        def share(bound: dict[str, float], sense: str) -> Any:
            return lambda c: ([(cw[(c,)], 100), (used, -bound[c])], sense, 0)

        # A band starting at 0% holds for any allocation: no row.
        b.add_constrs("share_low", ("categories",), "100 x category width at least its least share x occupied width",
                      share(data["share_low"], ">="), keys=[c for c in categories if data["share_low"][c] > 0])
        b.add_constrs("share_high", ("categories",), "100 x category width at most its most share x occupied width",
                      share(data["share_high"], "<="))
        b.set_objective("maximize", [(n[k], data["profit"][k[1]]) for k in shelved],
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
