"""Cutting stock (IP): stock pieces of one length (metres) are cut into ordered pieces (centimetres) by the
cutting patterns listed in the question; cover every order with as few stock pieces as possible, within stock.

``use[p]`` (integer) is how many stock pieces are cut with pattern ``p``; the covering rows ask
``sum_p pieces[o, p] use[p] >= quantity[o]``. The patterns are every maximal one (no further ordered piece fits in
the trim), enumerated here. A material row, ``100 length x sum use >= sum width x quantity``, is implied by the
covering rows (each pattern fits its stock piece) but makes the LP bound, and a short stock, obvious to the
solver. Feasible by construction: for each order some maximal pattern holds floor(100 length / width) of it,
so the stock is at least the sum over orders of quantity / that, rounded up. Infeasible variant: the stock is
below ceil(sum width x quantity / (100 length)), and no stock piece yields more than its length.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


def _patterns(size: int, width: dict[str, int]) -> list[dict[str, int]]:
    """Every maximal pattern: counts per order whose widths fit ``size`` and leave less than the narrowest."""
    orders, out = list(width), []

    def grow(i: int, room: int, counts: dict[str, int]) -> None:
        if i == len(orders):
            if room < min(width.values()):
                out.append(dict(counts))
            return
        for k in range(room // width[orders[i]], -1, -1):
            grow(i + 1, room - k * width[orders[i]], {**counts, orders[i]: k})

    grow(0, size, {})
    return out


@register
class CuttingStock(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 2 / 3 / 4 orders by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        # Never above the difficulty's own size from four orders up (difficulty 3: 3-4 orders): a fifth order about
        # doubles the maximal patterns the question lists (up to ~90, a 5,000-character question).
        orders = drawn_names(rng, v["orders"], spread(rng, 1 + difficulty, 2, high=max(4, 1 + difficulty)), "Order")
        low, high = v["lengths"]
        length = low + 0.5 * int(rng.integers(0, int((high - low) * 2) + 1))
        size = round(length * 100)
        width = {o: 5 * int(rng.integers(int(size * 0.16) // 5, int(size * 0.45) // 5 + 1)) for o in orders}
        quantity = {o: int(rng.integers(3, 8 + 4 * difficulty)) for o in orders}
        stock = sum(math.ceil(quantity[o] / (size // width[o])) for o in orders) + int(rng.integers(0, 3))
        patterns = _patterns(size, width)
        return {"orders": orders, "length": length, "width": width, "quantity": quantity, "stock": stock,
                "patterns": [f"P{k}" for k in range(1, len(patterns) + 1)],
                "pieces": {f"P{k}": p for k, p in enumerate(patterns, 1)}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        need = sum(data["width"][o] * data["quantity"][o] for o in data["orders"])
        return {**data, "stock": math.ceil(need / round(data["length"] * 100)) - 1}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        orders, patterns = b.elements("orders", "patterns")
        pieces = data["pieces"]
        b.add_param("length", data["length"], (), "m", "length of a stock piece")
        b.add_param("width", data["width"], ("orders",), "cm", "size of an ordered piece")
        b.add_param("quantity", data["quantity"], ("orders",), "pieces", "pieces ordered")
        b.add_param("stock", data["stock"], (), "stock pieces", "stock pieces available")
        b.add_param("pieces", {(o, p): pieces[p][o] for o in orders for p in patterns}, ("orders", "patterns"),
                    "pieces", "pieces of an order one stock piece cut by the pattern yields")
        use = b.add_vars("use", ("patterns",), VarType.INTEGER, description="stock pieces cut with the pattern")
        b.con_group("cover", ("orders",), "every order is covered (covering)")
        for o in orders:
            b.add_constr("cover", (o,), [(use[(p,)], pieces[p][o]) for p in patterns], ">=", data["quantity"][o])
        rolls = [(use[(p,)], 1) for p in patterns]
        b.con_group("stock", (), "no more stock pieces than available")
        b.add_constr("stock", (), rolls, "<=", data["stock"])
        b.con_group("material", (), "the stock cut (cm) covers the ordered material (implied; tightens the LP)")
        b.add_constr("material", (), [(use[(p,)], 100 * data["length"]) for p in patterns], ">=",
                     sum(data["width"][o] * data["quantity"][o] for o in orders))
        b.set_objective("minimize", rolls, description="stock pieces used")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        orders, pieces = data["orders"], data["pieces"]
        stock = v["stock"]
        sizes = listing(data["width"], orders, "{k} {v} cm")
        qty = listing(data["quantity"], orders)
        plans = "; ".join(f"{p}: " + listing(pieces[p], orders, "{v} {k}") for p in data["patterns"])
        frame = f"Each {stock} is {number_text(data['length'])} m long and {number_text(data['stock'])} are in stock. Ordered {v['piece']}s: {sizes}."
        grid = table(["Pattern", *orders], [[p, *(pieces[p][o] for o in orders)] for p in data["patterns"]])
        return {"frame": frame, "grid": grid, "plans": plans, "qty": qty, "stock": stock}
