"""Blending (LP): mix raw materials into one batch whose average qualities lie inside given bounds, at least cost.

Quality is a weighted average, so ``lower <= sum(content * x) / batch <= upper`` becomes the linear
``sum(content * x) >= lower * batch`` (and ``<=`` for the upper bound). Bounds are drawn around a random
feasible recipe, so the instance is feasible by construction. Infeasible variant: the batch is larger than all
the raw material available.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, money, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

# The vocabularies (spec/blending.json), per domain: product, raw materials, quantity unit, money unit, and qualities with (unit, low, high) ranges.


@register
class Blending(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 3x1 / 4x2 / 5x2 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        raws = drawn_names(rng, vocab["raws"], spread(rng, 2 + difficulty, 2), "Material")
        n_qual = spread(rng, 1 + difficulty // 2, high=len(vocab["qualities"]))
        qualities = drawn_names(rng, list(vocab["qualities"]), n_qual, "Quality")
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
        b = self.builder(data)
        raws, qualities = b.elements("raws", "qualities")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        qualities, raws = data["qualities"], data["raws"]
        unit, cur = v["unit"], v["money"]
        qunit = {q: v["qualities"][q][0] for q in qualities}
        costs = ", ".join(f"{r} {money(data['cost'][r], cur)}" for r in raws)
        stock = listing(data["available"], raws, "{v} {unit} of {k}", unit=unit)
        bounds = "; ".join(
            f"{q} between {number_text(data['lower'][q])} and {number_text(data['upper'][q])} {qunit[q]}"
            for q in qualities
        )
        levels = "; ".join(
            f"{r} has " + ", ".join(f"{q} {number_text(data['content'][q][r])} {qunit[q]}" for q in qualities)
            for r in raws
        )
        batch = f"{number_text(data['batch'])} {unit}"
        header = ["Material", f"Cost ({cur}/unit)", f"Stock ({unit})"] + [f"{q} ({qunit[q]})" for q in qualities]
        rows = [[r, data["cost"][r], data["available"][r]] + [data["content"][q][r] for q in qualities] for r in raws]
        return {"batch": batch, "bounds": bounds, "costs": costs, "header": header, "levels": levels, "rows": rows, "stock":
                stock, "unit": unit}
