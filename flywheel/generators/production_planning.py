"""Production planning (LP): choose how much of each product to make to maximise profit under resource limits.

The shape every family follows: ``sample`` draws names and numbers, ``make_infeasible`` breaks the instance on
purpose, ``build`` writes the IR, ``question`` tells the story in one of four phrasings for one of three domains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

# The vocabularies (spec/production_planning.json), per domain: what is made, what limits it, the unit of the resource, and a few product / resource names.


@register
class ProductionPlanning(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 3x2 / 4x2 / 5x3 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        n_prod = spread(rng, 2 + difficulty, 2, high=len(vocab["items"]))
        n_res = spread(rng, 1 + (difficulty + 1) // 2, high=len(vocab["resources"]))
        products = drawn_names(rng, vocab["items"], n_prod, "Product")
        resources = drawn_names(rng, vocab["resources"], n_res, "Resource")
        profit = {p: int(rng.integers(10, 60)) for p in products}
        usage = {r: {p: int(rng.integers(1, 10)) for p in products} for r in resources}
        capacity = {r: int(rng.integers(80, 400)) for r in resources}
        # A minimum output for the first product keeps the story honest and gives the infeasible variant a lever.
        min_output = {products[0]: int(rng.integers(1, 5))}
        return {"products": products, "resources": resources, "profit": profit, "usage": usage,
                "capacity": capacity, "min_output": min_output}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        # Demand more of the first product than the tightest resource could ever allow.
        first = data["products"][0]
        most = min(data["capacity"][r] // data["usage"][r][first] for r in data["resources"])
        return {**data, "min_output": {first: int(most + rng.integers(1, 10))}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (products,) = b.elements("products")
        make = b.add_vars("make", ("products",), description="units of each product to make", unit="units")
        b.add_constrs("capacity", ("resources",), "resource use cannot exceed what is available",
                      lambda r: ([(make[(p,)], data["usage"][r][p]) for p in products], "<=", data["capacity"][r]))
        b.con_group("min_output", ("products",), "required minimum output")
        for p, q in data["min_output"].items():
            b.add_constr("min_output", (p,), [(make[(p,)], 1)], ">=", q)
        b.set_objective("maximize", [(make[(p,)], data["profit"][p]) for p in products],
                        description="total profit")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        products, resources = data["products"], data["resources"]
        unit = self.vocab[domain]["unit"]
        profit = listing(data["profit"], products, "{k} ${v}")
        usage = "; ".join(
            f"each unit of {p} needs "
            + ", ".join(f"{number_text(data['usage'][r][p])} {unit} of {r}" for r in resources)
            for p in products
        )
        capacity = listing(data["capacity"], resources, "{v} {unit} of {k}", unit=unit)
        ((first, q),) = data["min_output"].items()
        grid = table(
            ["Product", "Profit ($/unit)"] + [f"{r} ({unit}/unit)" for r in resources],
            [[p, data["profit"][p]] + [data["usage"][r][p] for r in resources] for p in products],
        )
        return {"capacity": capacity, "first": first, "grid": grid, "profit": profit, "q": q, "usage": usage}
