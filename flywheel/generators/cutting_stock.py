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

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "paper mill": {"orders": ["Newsprint", "Kraft", "Tissue", "Bond", "Glossy", "Cardstock"], "stock": "jumbo reel",
                   "lengths": (2.0, 3.5), "piece": "roll width", "who": "the mill's converting department"},
    "fabric shop": {"orders": ["Curtains", "Cushions", "Aprons", "Tablecloths", "Banners", "Quilts"],
                    "stock": "bolt", "lengths": (3.0, 5.0), "piece": "cut length", "who": "the shop's cutting table"},
    "pipe works": {"orders": ["Mains", "Laterals", "Risers", "Bypasses", "Drains", "Sleeves"], "stock": "pipe",
                   "lengths": (4.0, 6.5), "piece": "section length", "who": "the council's water works crew"},
}


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
    name = "cutting_stock"
    version = "1"
    problem_class = "IP"
    domains = tuple(_DOMAINS)
    sectors = {"paper mill": "manufacturing", "fabric shop": "retail", "pipe works": "public services"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("implied_integrality", "units"))
    reorder_keys = ("orders",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        orders = names(v["orders"], 1 + difficulty, "Order")
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
        b = ModelBuilder("cutting_stock")
        orders = b.add_set("orders", data["orders"], "ordered pieces")
        patterns = b.add_set("patterns", data["patterns"], "maximal cutting patterns")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        orders, stock, pieces = data["orders"], v["stock"], data["pieces"]
        sizes = listing(data["width"], orders, "{k} {v} cm")
        qty = listing(data["quantity"], orders)
        plans = "; ".join(f"{p}: " + listing(pieces[p], orders, "{v} {k}") for p in data["patterns"])
        frame = (f"Each {stock} is {n(data['length'])} m long and {n(data['stock'])} are in stock. Ordered "
                 f"{v['piece']}s: {sizes}.")
        if template == 0:
            return (f"{v['who'].capitalize()} must cut {join(orders)}. {frame} Pieces ordered: {qty}. The possible "
                    f"cutting patterns (pieces per {stock}) are {plans}. Use as few {stock}s as possible.")
        if template == 1:
            grid = table(["Pattern", *orders], [[p, *(pieces[p][o] for o in orders)] for p in data["patterns"]])
            return (f"Cutting-stock problem ({domain}). {frame} Pieces ordered: {qty}.\n\n{grid}\n\nEach row gives "
                    f"the pieces one {stock} yields with a pattern. Minimise the number of {stock}s cut.")
        if template == 2:
            return (f"Orders have piled up at {v['who']}: {qty} pieces. {frame} After measuring, the foreman "
                    f"listed the patterns worth using: {plans}. Extra pieces may go back on the shelf. How many "
                    f"{stock}s should be cut with each pattern to fill every order from the fewest {stock}s?")
        return f"Cover the orders {qty} by cutting {stock}s. {frame} Patterns: {plans}. Minimise the {stock}s used."
