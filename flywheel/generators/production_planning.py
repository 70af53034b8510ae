"""Production planning (LP): choose how much of each product to make to maximise profit under resource limits.

The shape every family follows: ``sample`` draws names and numbers, ``make_infeasible`` breaks the instance on
purpose, ``build`` writes the IR, ``question`` tells the story in one of four phrasings for one of three domains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import listing, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

# Per domain: what is made, what limits it, the unit of the resource, and a few product / resource names.
_DOMAINS: dict[str, dict[str, Any]] = {
    "furniture workshop": {
        "item": "piece of furniture", "items": ["Chairs", "Tables", "Desks", "Shelves", "Cabinets", "Stools"],
        "resources": ["Carpentry", "Finishing", "Packaging", "Assembly"], "unit": "hours",
    },
    "chemical plant": {
        "item": "batch", "items": ["Solvent", "Resin", "Coating", "Adhesive", "Cleaner", "Sealant"],
        "resources": ["Reactor", "Distillation", "Mixing", "QualityLab"], "unit": "hours",
    },
    "bakery": {
        "item": "tray", "items": ["Bread", "Croissants", "Muffins", "Cakes", "Cookies", "Bagels"],
        "resources": ["Flour", "Butter", "OvenTime", "Labour"], "unit": "units",
    },
}


@register
class ProductionPlanning(Family):
    name = "production_planning"
    problem_class = "LP"
    sectors = {"furniture workshop": "manufacturing", "chemical plant": "manufacturing", "bakery": "retail"}
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        n_prod = min(2 + difficulty, len(vocab["items"]))
        n_res = min(1 + (difficulty + 1) // 2, len(vocab["resources"]))
        products = list(vocab["items"][:n_prod])
        resources = list(vocab["resources"][:n_res])
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
        b = ModelBuilder("production_planning")
        products = b.add_set("products", data["products"], "products that can be made")
        b.add_set("resources", data["resources"], "limited resources")
        b.add_param("profit", data["profit"], ("products",), "$ per unit", "profit of one unit")
        b.add_param("usage", data["usage"], ("resources", "products"), "per unit", "resource used by one unit")
        b.add_param("capacity", data["capacity"], ("resources",), "", "resource available")
        b.add_param("min_output", data["min_output"], ("products",), "units", "minimum output required")
        make = b.add_vars("make", ("products",), description="units of each product to make", unit="units")
        b.add_constrs("capacity", ("resources",), "resource use cannot exceed what is available",
                      lambda r: ([(make[(p,)], data["usage"][r][p]) for p in products], "<=", data["capacity"][r]))
        b.con_group("min_output", ("products",), "required minimum output")
        for p, q in data["min_output"].items():
            b.add_constr("min_output", (p,), [(make[(p,)], 1)], ">=", q)
        b.set_objective("maximize", [(make[(p,)], data["profit"][p]) for p in products],
                        description="total profit")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        unit = _DOMAINS[domain]["unit"]
        products, resources = data["products"], data["resources"]
        profit = listing(data["profit"], products, "{k} ${v}")
        usage = "; ".join(
            f"each unit of {p} needs " + ", ".join(f"{n(data['usage'][r][p])} {unit} of {r}" for r in resources)
            for p in products
        )
        capacity = listing(data["capacity"], resources, "{v} {unit} of {k}", unit=unit)
        (first, q), = data["min_output"].items()
        if template == 0:
            return (f"A {domain} makes {', '.join(products)}. The profit per unit is: {profit}. Production uses "
                    f"limited resources: {usage}. Available this week: {capacity}. At least {n(q)} units of "
                    f"{first} must be made. How many units of each product should be made to maximise total "
                    "profit? Fractional units are allowed.")
        if template == 1:
            return (f"You manage a {domain}. Resources available: {capacity}. Requirements per unit: {usage}. "
                    f"Unit profits: {profit}. A contract requires at least {n(q)} units of {first}. "
                    "Find the continuous production plan that maximises profit.")
        if template == 2:
            # A Markdown table needs its separator row: the shared helper writes it (it was missing here).
            grid = table(["Product", "Profit ($/unit)"] + [f"{r} ({unit}/unit)" for r in resources],
                         [[p, data["profit"][p]] + [data["usage"][r][p] for r in resources] for p in products])
            return (f"Plan production at a {domain}.\n\n{grid}\n\nCapacity: {capacity}. "
                    f"Minimum output: {n(q)} units of {first}. Maximise total profit (fractional quantities allowed).")
        return (f"What production mix maximises profit for a {domain}? The products are {', '.join(products)} "
                f"earning {profit} per unit respectively. {usage[0].upper() + usage[1:]}. The limits are {capacity}, "
                f"and no fewer than {n(q)} units of {first} may be produced. Quantities may be fractional.")
