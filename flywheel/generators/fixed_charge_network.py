"""Fixed-charge network design (MILP): which shipping lanes from depots to customers to open, and how much to
send on each, at least fixed-plus-variable cost. A lane carries goods only when opened (``x <= capacity * open``,
the big-M link with the lane's own capacity as M), and opening it costs its fixed charge.

Variable costs are quoted per dozen units, so the amount shipped is counted in dozens (12 units each in the
supply, demand and lane-capacity rows) and costs price per dozen. Feasible by construction: total
supply covers total demand and every lane can carry its customer's whole demand. Infeasible variant: one
customer's demand exceeds what all depots together can supply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class FixedChargeNetwork(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x3 / 3x4 / 4x5 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        depots = drawn_names(rng, v["depots"], spread(rng, 1 + (difficulty + 1) // 2 + 1, 2), "Depot")
        customers = drawn_names(rng, v["customers"], spread(rng, 2 + difficulty, 2), "Customer")
        demand = {c: int(rng.integers(2, 30)) * 12 for c in customers}
        total = sum(demand.values())
        share = rng.dirichlet(np.ones(len(depots)))
        supply = {d: int(total * (0.3 + share[i])) + 12 for i, d in enumerate(depots)}
        price = {d: {c: int(rng.integers(2, 20)) for c in customers} for d in depots}  # per dozen
        fixed = {d: {c: int(rng.integers(20, 200)) for c in customers} for d in depots}
        capacity = {d: {c: demand[c] + 12 * int(rng.integers(0, 6)) for c in customers} for d in depots}
        return {"depots": depots, "customers": customers, "demand": demand, "supply": supply, "price": price,
                "fixed": fixed, "capacity": capacity}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        c = pick(rng, data["customers"])
        return exceed(data, "demand", c, sum(data["supply"].values()), 12 * int(rng.integers(1, 5)))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        depots, customers = b.elements("depots", "customers")
        lanes = [(d, c) for d in depots for c in customers]
        b.add_param("supply", data["supply"], ("depots",), "units", "most a depot can ship")
        b.add_param("demand", data["demand"], ("customers",), "units", "demand of a customer")
        b.add_param("price", data["price"], ("depots", "customers"), "money per dozen",
                    "shipping cost per dozen units on a lane")
        b.add_param("fixed", data["fixed"], ("depots", "customers"), "money", "fixed charge of opening a lane")
        b.add_param("capacity", data["capacity"], ("depots", "customers"), "units",
                    "most a lane can carry once opened")
        x = b.add_vars("ship", ("depots", "customers"), description="dozens shipped on a lane", unit="dozens")
        y = b.add_vars("open", ("depots", "customers"), VarType.BINARY, description="1 if the lane is opened")
        b.add_constrs("supply", ("depots",), "a depot ships at most its supply (12 units a dozen)",
                      lambda d: ([(x[(d, c)], 12) for c in customers], "<=", data["supply"][d]))
        b.add_constrs("demand", ("customers",), "every customer receives its demand",
                      lambda c: ([(x[(d, c)], 12) for d in depots], ">=", data["demand"][c]))
        b.add_constrs("link", ("depots", "customers"), "a lane carries goods only when opened (capacity as big-M)",
                      lambda d, c: ([(x[(d, c)], 12), (y[(d, c)], -data["capacity"][d][c])], "<=", 0), keys=lanes)
        b.set_objective("minimize", [(x[k], data["price"][k[0]][k[1]]) for k in lanes]
                        + [(y[k], data["fixed"][k[0]][k[1]]) for k in lanes], description="fixed plus shipping cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        customers, depots = data["customers"], data["depots"]
        goods, lane = v["goods"], v["lane"]
        sup = listing(data["supply"], depots)
        dem = listing(data["demand"], customers)
        lanes = "; ".join(
            f"{d} to {c}: ${number_text(data['price'][d][c])} per dozen {goods}, ${number_text(data['fixed'][d][c])} to open, up to {number_text(data['capacity'][d][c])} {goods}"
            for d in depots
            for c in customers
        )
        header = ["From", "To", f"Cost ($ per dozen {goods})", "Opening charge ($)", f"Capacity ({goods})"]
        rows = [
            [d, c, data["price"][d][c], data["fixed"][d][c], data["capacity"][d][c]] for d in depots for c in customers
        ]
        return {"dem": dem, "goods": goods, "header": header, "lane": lane, "lanes": lanes, "rows": rows, "sup": sup}
