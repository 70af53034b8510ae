"""Diet (LP): the cheapest mix of foods that meets every nutrient requirement, with a cap on each food.

Infeasible variant: one requirement is raised above what the foods could supply even at their caps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "hospital menu": {
        "who": "a hospital dietitian", "food": "food", "serving": "servings",
        "foods": ["Oatmeal", "Chicken", "Eggs", "Milk", "Bread", "Rice", "Beans", "Spinach", "Salmon", "Yogurt",
                  "Apples", "Lentils", "Cheese"],
        "nutrients": ["Protein", "Calcium", "Iron", "Fibre", "VitaminC", "Energy", "Potassium"],
        "unit": "mg", "money": "cents",
    },
    "livestock feed": {
        "who": "a cattle farmer", "food": "feed ingredient", "serving": "kg",
        "foods": ["Corn", "Barley", "Soymeal", "Hay", "Oats", "Alfalfa", "Wheat", "Silage", "Canola", "Molasses",
                  "Sorghum", "BeetPulp", "Bran"],
        "nutrients": ["CrudeProtein", "Fat", "Fibre", "Calcium", "Phosphorus", "Energy", "Magnesium"],
        "unit": "g", "money": "cents",
    },
    "fertiliser mix": {
        "who": "a greenhouse manager", "food": "fertiliser product", "serving": "bags",
        "foods": ["Urea", "Compost", "BoneMeal", "Potash", "FishEmulsion", "Guano", "Kelp", "BloodMeal",
                  "Superphosphate", "Gypsum", "Dolomite", "Manure", "Ammonium"],
        "nutrients": ["Nitrogen", "Phosphorus", "Potassium", "Sulphur", "Calcium", "Magnesium", "Zinc"],
        "unit": "g", "money": "dollars",
    },
}


@register
class Diet(Family):
    name = "diet"
    problem_class = "LP"
    sectors = {"hospital menu": "health care", "livestock feed": "agriculture", "fertiliser mix": "agriculture"}
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        foods = names(vocab["foods"], 2 + 2 * difficulty, "Food")
        nutrients = names(vocab["nutrients"], 1 + difficulty, "Nutrient")
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
        b = ModelBuilder("diet")
        foods = b.add_set("foods", data["foods"], "foods that can be bought")
        b.add_set("nutrients", data["nutrients"], "nutrients with a minimum requirement")
        b.add_param("cost", data["cost"], ("foods",), "money per unit", "cost of one unit of food")
        b.add_param("content", data["content"], ("nutrients", "foods"), "per unit", "nutrient in one unit of food")
        b.add_param("max_amount", data["max_amount"], ("foods",), "units", "most units of a food allowed")
        b.add_param("requirement", data["requirement"], ("nutrients",), "", "minimum nutrient intake")
        buy = b.add_vars("buy", ("foods",), description="units of each food in the mix", unit="units")
        b.add_constrs("requirement", ("nutrients",), "each nutrient reaches its minimum",
                      lambda n: ([(buy[(f,)], data["content"][n][f]) for f in foods], ">=", data["requirement"][n]))
        b.add_constrs("max_amount", ("foods",), "no food beyond its cap",
                      lambda f: ([(buy[(f,)], 1)], "<=", data["max_amount"][f]))
        b.set_objective("minimize", [(buy[(f,)], data["cost"][f]) for f in foods], description="total cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        foods, nutrients, unit, serving, money = data["foods"], data["nutrients"], v["unit"], v["serving"], v["money"]
        costs = listing(data["cost"], foods, "{k} {v} {money}", money=money)
        caps = listing(data["max_amount"], foods, "{v} {serving} of {k}", serving=serving)
        needs = listing(data["requirement"], nutrients, "{v} {unit} of {k}", unit=unit)
        contents = "; ".join(
            f"one unit of {f} gives " + ", ".join(f"{n(data['content'][k][f])} {unit} {k}" for k in nutrients)
            for f in foods)
        if template == 0:
            return (f"{v['who'].capitalize()} mixes {join(foods)}, measured in {serving}. Each {v['food']} costs "
                    f"(per unit): {costs}. Nutrient content: {contents}. The mix must provide at least {needs}. "
                    f"At most {caps} may be used. Find the cheapest mix; fractional amounts are allowed.")
        if template == 1:
            return (f"Minimise the cost of a {domain}. Requirements: at least {needs}. Limits: at most {caps}. "
                    f"Unit costs in {money}: {costs}. Contents per unit ({serving}): {contents}. "
                    "Amounts are continuous.")
        if template == 2:
            header = [v["food"].capitalize(), f"Cost ({money}/unit)", f"Max ({serving})"] + [
                f"{k} ({unit}/unit)" for k in nutrients]
            rows = [[f, data["cost"][f], data["max_amount"][f]] + [data["content"][k][f] for k in nutrients]
                    for f in foods]
            return (f"Plan a {domain} for {v['who']}.\n\n{table(header, rows)}\n\nMinimum requirements: {needs}. "
                    "Choose how much of each to use (fractions allowed) so that the total cost is as small as "
                    "possible.")
        return (f"What is the least-cost {domain}? Each unit ({serving}) of a {v['food']} supplies: {contents}. "
                f"Prices: {costs}. The minimums are {needs}, and no more than {caps} are available. "
                "Amounts may be fractional.")
