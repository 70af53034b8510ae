"""Multi-dimensional knapsack (IP, binary): pick items of greatest total value within several capacity limits.

One item is mandatory (a customer order, a committed project) and always fits on its own. Infeasible variant: more
items become mandatory than the first capacity can hold together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text

# The vocabularies (spec/multi_knapsack.json), per domain: the container, item names, the value unit, and each limited dimension's unit.


@register
class MultiKnapsack(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 6x2 / 10x2 / 14x3 items x dimensions by difficulty, names drawn from the domain's pool
        # (``spread``, ``drawn_names``).
        items = drawn_names(rng, vocab["items"], spread(rng, 2 + 4 * difficulty, 2), "Item")
        dims = drawn_names(rng, list(vocab["dims"]), spread(rng, 1 + (difficulty + 1) // 2, high=len(vocab["dims"])),
                           "Dim")
        value = {i: int(rng.integers(10, 100)) for i in items}
        weight = {d: {i: int(rng.integers(1, 50)) for i in items} for d in dims}
        # Capacity is 30-60% of the total, so roughly half the items fit: a real choice in every dimension.
        capacity = {d: max(max(weight[d].values()), int(sum(weight[d].values()) * rng.uniform(0.3, 0.6)))
                    for d in dims}
        mandatory = [pick(rng, items)]
        return {"items": items, "dims": dims, "value": value, "weight": weight, "capacity": capacity,
                "mandatory": mandatory}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        # Make the heaviest items (first dimension) mandatory until together they overflow that capacity.
        first = data["dims"][0]
        heavy = sorted(data["items"], key=lambda i: (-data["weight"][first][i], i))
        chosen: list[str] = []
        for i in heavy:
            chosen.append(i)
            if sum(data["weight"][first][j] for j in chosen) > data["capacity"][first]:
                break
        return {**data, "mandatory": sorted(chosen, key=data["items"].index)}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (items,) = b.elements("items")
        b.add_set("dimensions", data["dims"], "limited capacities")
        b.add_param("value", data["value"], ("items",), "value units", "value of taking an item")
        b.add_param("weight", data["weight"], ("dimensions", "items"), "capacity units", "capacity an item uses")
        b.add_param("capacity", data["capacity"], ("dimensions",), "capacity units", "capacity available")
        take = b.add_vars("take", ("items",), VarType.BINARY, description="1 if the item is selected")
        b.add_constrs("capacity", ("dimensions",), "selected items fit in every dimension",
                      lambda d: ([(take[(i,)], data["weight"][d][i]) for i in items], "<=", data["capacity"][d]))
        b.add_constrs("mandatory", ("items",), "mandatory items must be selected",
                      lambda i: ([(take[(i,)], 1)], "==", 1), keys=data["mandatory"])
        b.set_objective("maximize", [(take[(i,)], data["value"][i]) for i in items], description="total value")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        dims, items = data["dims"], data["items"]
        unit = v["dims"]
        values = listing(data["value"], items)
        caps = ", ".join(f"{number_text(data['capacity'][d])} {unit[d]} of {d}" for d in dims)
        uses = "; ".join(
            f"{i} uses "
            + ", ".join(
                f"{number_text(data['weight'][d][i])} {unit[d]}" + (f" of {d}" if len(dims) > 1 else "") for d in dims
            )
            for i in items
        )
        must = join(data["mandatory"])
        header = [v["item"].capitalize(), f"Value ({v['value']})"] + [f"{d} ({unit[d]})" for d in dims]
        rows = [[i, data["value"][i]] + [data["weight"][d][i] for d in dims] for i in items]
        return {"caps": caps, "header": header, "must": must, "rows": rows, "uses": uses, "values": values}
