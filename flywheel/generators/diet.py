"""Diet (LP): the cheapest mix of foods that meets every nutrient requirement, with a cap on each food.

Infeasible variant: one requirement is raised above what the foods could supply even at their caps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, number_text


@register
class Diet(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 4x2 / 6x3 / 8x4 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        foods = drawn_names(rng, vocab["foods"], spread(rng, 2 + 2 * difficulty, 2), "Food")
        nutrients = drawn_names(rng, vocab["nutrients"], spread(rng, 1 + difficulty, 2), "Nutrient")
        cost = {f: int(rng.integers(5, 60)) for f in foods}
        content = {n: {f: int(rng.integers(0, 30)) for f in foods} for n in nutrients}
        max_amount = {f: int(rng.integers(3, 10)) for f in foods}
        # Ask for 20-60% of the most the capped foods could supply: always reachable, never trivial.
        requirement = {n: max(1, int(sum(content[n][f] * max_amount[f] for f in foods) * rng.uniform(0.2, 0.6)))
                       for n in nutrients}
        return {"foods": foods, "nutrients": nutrients, "cost": cost, "content": content,
                "max_amount": max_amount, "requirement": requirement}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        n = pick(rng, data["nutrients"])
        most = sum(data["content"][n][f] * data["max_amount"][f] for f in data["foods"])
        return exceed(data, "requirement", n, most, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (foods,) = b.elements("foods")
        buy = b.add_vars("buy", ("foods",), description="units of each food in the mix", unit="units")
        b.add_constrs("requirement", ("nutrients",), "each nutrient reaches its minimum",
                      lambda n: ([(buy[(f,)], data["content"][n][f]) for f in foods], ">=", data["requirement"][n]))
        b.add_constrs("max_amount", ("foods",), "no food beyond its cap",
                      lambda f: ([(buy[(f,)], 1)], "<=", data["max_amount"][f]))
        b.set_objective("minimize", [(buy[(f,)], data["cost"][f]) for f in foods], description="total cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        foods, nutrients = data["foods"], data["nutrients"]
        unit, serving, money = v["unit"], v["serving"], v["money"]
        costs = listing(data["cost"], foods, "{k} {v} {money}", money=money)
        caps = listing(data["max_amount"], foods, "{v} {serving} of {k}", serving=serving)
        needs = listing(data["requirement"], nutrients, "{v} {unit} of {k}", unit=unit)
        contents = "; ".join(
            f"one unit of {f} gives " + ", ".join(f"{number_text(data['content'][k][f])} {unit} {k}" for k in nutrients)
            for f in foods
        )
        header = [v["food"].capitalize(), f"Cost ({money}/unit)", f"Max ({serving})"] + [
            f"{k} ({unit}/unit)" for k in nutrients
        ]
        rows = [[f, data["cost"][f], data["max_amount"][f]] + [data["content"][k][f] for k in nutrients] for f in foods]
        return {"caps": caps, "contents": contents, "costs": costs, "header": header, "money": money, "needs": needs, "rows":
                rows, "serving": serving}
