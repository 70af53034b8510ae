"""Capacitated facility location (MILP): which facilities to open, and how to serve every customer from them.

Fixed cost to open (binary), per-unit serving cost (continuous flow), capacity only when open. Total capacity
exceeds total demand. Infeasible variant: one customer's demand grows past the capacity of all facilities together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, money, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType


@register
class FacilityLocation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 3x5 / 4x8 / 5x11 facilities x customers by difficulty, names drawn from the domain's
        # pool (``spread``, ``drawn_names``).
        facilities = drawn_names(rng, vocab["facilities"], spread(rng, 2 + difficulty, 2), "Facility")
        customers = drawn_names(rng, vocab["customers"], spread(rng, 2 + 3 * difficulty, 2), "Customer")
        demand = {c: int(rng.integers(5, 40)) for c in customers}
        total = sum(demand.values())
        # Each facility holds 35-70% of total demand: one is never enough, all together always are.
        capacity = {f: int(total * rng.uniform(0.35, 0.7)) + 1 for f in facilities}
        while sum(capacity.values()) < total:
            capacity = {f: c * 2 for f, c in capacity.items()}
        fixed_cost = {f: int(rng.integers(10, 50)) * 10 for f in facilities}
        # Serving cost grows with a random distance on a 100 x 100 map.
        fxy = {f: rng.uniform(0, 100, 2) for f in facilities}
        cxy = {c: rng.uniform(0, 100, 2) for c in customers}
        cost = {f: {c: 1 + int(np.linalg.norm(fxy[f] - cxy[c]) / 10) for c in customers} for f in facilities}
        return {"facilities": facilities, "customers": customers, "demand": demand, "capacity": capacity,
                "fixed_cost": fixed_cost, "cost": cost}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["customers"])
        spare = sum(data["capacity"].values()) - sum(data["demand"].values())
        return exceed(data, "demand", c, data["demand"][c] + spare, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        facs, custs = b.elements("facilities", "customers")
        open_ = b.add_vars("open", ("facilities",), VarType.BINARY, description="1 if the facility is opened")
        serve = b.add_vars("serve", ("facilities", "customers"), description="demand served from a facility",
                           unit="units")
        b.add_constrs("demand", ("customers",), "every customer's demand is fully served",
                      lambda c: ([(serve[(f, c)], 1) for f in facs], "==", data["demand"][c]))
        b.add_constrs("capacity", ("facilities",), "a facility serves up to its capacity, and only if open",
                      lambda f: ([(serve[(f, c)], 1) for c in custs] + [(open_[(f,)], -data["capacity"][f])], "<=", 0))
        b.set_objective("minimize", [(open_[(f,)], data["fixed_cost"][f]) for f in facs]
                        + [(serve[(f, c)], data["cost"][f][c]) for f in facs for c in custs],
                        description="opening cost plus serving cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        facs, custs, unit, cur = data["facilities"], data["customers"], v["unit"], v["money"]
        demand = listing(data["demand"], custs)
        caps = listing(data["capacity"], facs)
        fixed = ", ".join(f"{f} {money(data['fixed_cost'][f], cur)}" for f in facs)
        costs = "; ".join(f"from {f}: " + listing(data["cost"][f], custs) for f in facs)
        header = [f"{v['facility'].capitalize()}", f"Opening cost ({cur})", f"Capacity ({unit})"] + custs
        rows = [[f, data["fixed_cost"][f], data["capacity"][f]] + [data["cost"][f][c] for c in custs] for f in facs]
        rows.append([f"Demand ({unit})", "", ""] + [data["demand"][c] for c in custs])
        return {"caps": caps, "costs": costs, "cur": cur, "demand": demand, "facs": facs, "fixed": fixed, "header": header,
                "rows": rows, "unit": unit}
