"""Blending (LP): mix raw materials into one batch whose average qualities lie inside given bounds, at least cost.

Quality is a weighted average, so ``lower <= sum(content * x) / batch <= upper`` becomes the linear
``sum(content * x) >= lower * batch`` (and ``<=`` for the upper bound). Bounds are drawn around a random
feasible recipe, so the instance is feasible by construction. Infeasible variant: the batch is larger than all
the raw material available.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, money, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

# Per domain: product, raw materials, quantity unit, money unit, and qualities with (unit, low, high) ranges.
_DOMAINS: dict[str, dict[str, Any]] = {
    "steel foundry": {
        "product": "alloy steel", "unit": "tons", "money": "$",
        "raws": ["ScrapA", "ScrapB", "PigIron", "FerroChrome", "FerroNickel", "Alloy40", "Recycled", "DirectIron"],
        "qualities": {"Carbon": ("tenths of a percent", 1, 40), "Chromium": ("percent", 0, 30),
                      "Nickel": ("percent", 0, 20)},
    },
    "oil refinery": {
        "product": "gasoline", "unit": "barrels", "money": "$",
        "raws": ["Alkylate", "Reformate", "Butane", "CatGasoline", "StraightRun", "Isomerate", "Naphtha",
                 "Ethanol"],
        "qualities": {"Octane": ("octane points", 70, 110), "Sulphur": ("ppm", 5, 60),
                      "VapourPressure": ("kPa", 20, 90)},
    },
    "juice bottler": {
        "product": "fruit juice blend", "unit": "litres", "money": "cents",
        "raws": ["Orange", "Apple", "Grape", "Mango", "Pineapple", "Cranberry", "Pear", "Peach"],
        "qualities": {"Sugar": ("g per litre", 60, 150), "Acidity": ("g per litre", 2, 15),
                      "VitaminC": ("mg per litre", 20, 500)},
    },
}


@register
class Blending(Family):
    name = "blending"
    problem_class = "LP"
    sectors = {"steel foundry": "manufacturing", "oil refinery": "energy", "juice bottler": "agriculture"}
    techniques = ("ratio_percentage",)
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        raws = names(vocab["raws"], 2 + difficulty, "Material")
        qualities = list(vocab["qualities"])[: 1 + difficulty // 2]
        cost = {r: int(rng.integers(20, 120)) for r in raws}
        content = {q: {r: int(rng.integers(vocab["qualities"][q][1], vocab["qualities"][q][2] + 1)) for r in raws}
                   for q in qualities}
        batch = int(rng.integers(10, 50)) * 10
        # A random recipe fixes achievable average qualities; the bounds are drawn around them.
        share = rng.dirichlet(np.ones(len(raws)))
        lower, upper = {}, {}
        for q in qualities:
            avg = float(sum(content[q][r] * s for r, s in zip(raws, share, strict=True)))
            lower[q] = max(0, int(np.floor(avg - rng.uniform(0, 3))))
            upper[q] = int(np.ceil(avg + rng.uniform(0, 3)))
        available = {r: int(np.ceil(batch * s)) + int(rng.integers(5, 200)) for r, s in zip(raws, share, strict=True)}
        return {"raws": raws, "qualities": qualities, "cost": cost, "content": content, "batch": batch,
                "lower": lower, "upper": upper, "available": available}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "batch": int(sum(data["available"].values()) + rng.integers(1, 50))}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("blending")
        raws = b.add_set("raws", data["raws"], "raw materials that can go into the blend")
        qualities = b.add_set("qualities", data["qualities"], "qualities with bounds on the blend's average")
        b.add_param("cost", data["cost"], ("raws",), "money per unit", "cost of one unit of raw material")
        b.add_param("content", data["content"],
                    ("qualities", "raws"), "quality units", "quality level of each raw material")
        b.add_param("available", data["available"], ("raws",), "units", "raw material on hand")
        b.add_param("batch", data["batch"], (), "units", "size of the batch to blend")
        b.add_param("lower", data["lower"], ("qualities",), "quality units", "lowest allowed average quality")
        b.add_param("upper", data["upper"], ("qualities",), "quality units", "highest allowed average quality")
        use = b.add_vars("use", ("raws",), description="amount of each raw material blended", unit="units")
        b.con_group("batch_size", (), "the blend adds up to the batch size")
        b.add_constr("batch_size", (), [(use[(r,)], 1) for r in raws], "==", data["batch"])
        b.add_constrs("available", ("raws",), "no more raw material than is on hand",
                      lambda r: ([(use[(r,)], 1)], "<=", data["available"][r]))
        b.con_group("quality_min", ("qualities",), "average quality at least the lower bound (times batch)")
        b.con_group("quality_max", ("qualities",), "average quality at most the upper bound (times batch)")
        for q in qualities:
            terms = [(use[(r,)], data["content"][q][r]) for r in raws]
            b.add_constr("quality_min", (q,), terms, ">=", data["lower"][q] * data["batch"])
            b.add_constr("quality_max", (q,), terms, "<=", data["upper"][q] * data["batch"])
        b.set_objective("minimize", [(use[(r,)], data["cost"][r]) for r in raws], description="total material cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        raws, qualities, unit, cur = data["raws"], data["qualities"], v["unit"], v["money"]
        qunit = {q: v["qualities"][q][0] for q in qualities}
        costs = ", ".join(f"{r} {money(data['cost'][r], cur)}" for r in raws)
        stock = listing(data["available"], raws, "{v} {unit} of {k}", unit=unit)
        bounds = "; ".join(f"{q} between {n(data['lower'][q])} and {n(data['upper'][q])} {qunit[q]}"
                           for q in qualities)
        levels = "; ".join(f"{r} has " + ", ".join(f"{q} {n(data['content'][q][r])} {qunit[q]}" for q in qualities)
                           for r in raws)
        batch = f"{n(data['batch'])} {unit}"
        if template == 0:
            return (f"A {domain} blends {join(raws)} into {batch} of {v['product']}. Costs per unit: {costs}. "
                    f"Quality levels: {levels}. The blend's average quality (weighted by amount) must be: {bounds}. "
                    f"On hand: {stock}. How much of each should be used to minimise cost?")
        if template == 1:
            return (f"Find the cheapest recipe for {batch} of {v['product']} at a {domain}. Available raw materials "
                    f"and their costs per unit of the {unit}: {costs}; stock limits: {stock}. Each material's "
                    f"qualities: {levels}. Requirements on the weighted-average quality of the blend: {bounds}.")
        if template == 2:
            header = ["Material", f"Cost ({cur}/unit)", f"Stock ({unit})"] + [f"{q} ({qunit[q]})" for q in qualities]
            rows = [[r, data["cost"][r], data["available"][r]] + [data["content"][q][r] for q in qualities]
                    for r in raws]
            return (f"Blend {batch} of {v['product']} ({domain}).\n\n{table(header, rows)}\n\n"
                    f"Average-quality bounds: {bounds}. Minimise total cost; amounts are continuous.")
        return (f"You must produce exactly {batch} of {v['product']}. Your suppliers offer {costs} per unit, and "
                f"you hold {stock}. Qualities mix linearly by amount: {levels}. Keep {bounds}. What blend is "
                "cheapest?")
