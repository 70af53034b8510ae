"""Transportation (LP): ship from sources with limited supply to destinations with fixed demand at least cost.

Total supply exceeds total demand by construction. Infeasible variant: one destination's demand grows until total
demand exceeds total supply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model


@register
class Transportation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 2x3 / 3x5 / 4x7 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        sources = drawn_names(rng, vocab["sources"], spread(rng, 1 + difficulty, 2), "Source")
        dests = drawn_names(rng, vocab["dests"], spread(rng, 1 + 2 * difficulty, 2), "Dest")
        demand = {d: int(rng.integers(10, 100)) for d in dests}
        total = sum(demand.values())
        # Split 105-140% of total demand across the sources, each getting a fair random share.
        share = rng.dirichlet(np.full(len(sources), 3.0))
        supply = {s: int(np.ceil(total * rng.uniform(1.05, 1.4) * x)) for s, x in zip(sources, share, strict=True)}
        if sum(supply.values()) < total:  # rounding can only lose a few units; top up the largest source
            supply[max(supply, key=supply.__getitem__)] += total - sum(supply.values())
        cost = {s: {d: int(rng.integers(2, 30)) for d in dests} for s in sources}
        return {"sources": sources, "dests": dests, "supply": supply, "demand": demand, "cost": cost}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        dest = pick(rng, data["dests"])
        spare = sum(data["supply"].values()) - sum(data["demand"].values())
        return exceed(data, "demand", dest, data["demand"][dest] + spare, rng.integers(1, 30))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (sources,) = b.elements("sources")
        dests = b.add_set("destinations", data["dests"], "destinations with a demand to meet")
        b.add_param("supply", data["supply"], ("sources",), "units", "supply available at each source")
        b.add_param("demand", data["demand"], ("destinations",), "units", "demand of each destination")
        b.add_param("cost", data["cost"], ("sources", "destinations"), "money per unit", "shipping cost per unit")
        ship = b.add_vars("ship", ("sources", "destinations"), description="amount shipped on each route",
                          unit="units")
        b.add_constrs("supply", ("sources",), "no source ships more than it has",
                      lambda s: ([(ship[(s, d)], 1) for d in dests], "<=", data["supply"][s]))
        b.add_constrs("demand", ("destinations",), "every destination receives its demand",
                      lambda d: ([(ship[(s, d)], 1) for s in sources], ">=", data["demand"][d]))
        b.set_objective("minimize", [(ship[(s, d)], data["cost"][s][d]) for s in sources for d in dests],
                        description="total shipping cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        dests, sources = data["dests"], data["sources"]
        unit, money = v["unit"], v["money"]
        supply = listing(data["supply"], sources, "{k} {v} {unit}", unit=unit)
        demand = listing(data["demand"], dests, "{k} {v} {unit}", unit=unit)
        costs = "; ".join(f"from {s}: " + listing(data["cost"][s], dests, "{v} to {k}") for s in sources)
        header = [f"{v['source'].capitalize()} \\ {v['dest']}"] + dests + [f"Supply ({unit})"]
        rows = [[s] + [data["cost"][s][d] for d in dests] + [data["supply"][s]] for s in sources]
        rows.append([f"Demand ({unit})"] + [data["demand"][d] for d in dests] + [""])
        return {"costs": costs, "demand": demand, "header": header, "money": money, "rows": rows, "supply": supply, "unit":
                unit}
