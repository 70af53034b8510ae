"""Economic dispatch (convex QP): share one hour's demand between running units whose fuel cost is
``a + b p + c p^2`` (``c`` > 0, so the objective is convex), each between its minimum and maximum output, while
keeping a spinning reserve of at least a stated percentage of demand: a unit's reserve is capped by its headroom
(``max - p``) and by how far it can ramp within the response window (ramp rate per minute times the window).

Feasible by construction: the dispatch that loads every unit to the same fraction of its range meets demand and
carries, by the choice of the percentage, at least the required reserve. Infeasible variant: the reserve
percentage asks for more than every unit ramping flat out within the window could supply.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._phrasing import minutes
from flywheel.generators._text import drawn_names, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class EconomicDispatch(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3 / 4 / 5 units by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        units = drawn_names(rng, self.vocab[domain]["units"], spread(rng, 2 + difficulty, 2), "Unit")
        pmax = {u: int(rng.integers(60, 300)) for u in units}
        pmin = {u: int(pmax[u] * rng.uniform(0.1, 0.4)) for u in units}
        ramp = {u: round(float(rng.uniform(0.5, 4)), 1) for u in units}
        window = int(rng.choice([10, 15, 20]))
        lo, hi = sum(pmin.values()), sum(pmax.values())
        demand = int(lo + (hi - lo) * rng.uniform(0.3, 0.7))
        theta = (demand - lo) / (hi - lo)
        # The reserve of the evenly loaded dispatch; asking for 40-90% of it keeps the instance feasible.
        even = sum(min((1 - theta) * (pmax[u] - pmin[u]), window * ramp[u]) for u in units)
        return {"units": units, "pmin": pmin, "pmax": pmax, "ramp": ramp, "window": window, "demand": demand,
                "reserve_pct": max(1, int(100 * even / demand * rng.uniform(0.4, 0.9))),
                "fixed": {u: int(rng.integers(50, 500)) for u in units},
                "linear": {u: round(float(rng.uniform(8, 40)), 1) for u in units},
                "quad": {u: round(float(rng.uniform(0.005, 0.08)), 3) for u in units}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = data["window"] * sum(data["ramp"].values())  # no reserve beyond every unit's ramp in the window
        return {**data, "reserve_pct": math.floor(100 * most / data["demand"]) + int(rng.integers(1, 10))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (units,) = b.elements("units")
        out = b.add_vars("output", ("units",), description="output of a unit")
        res = b.add_vars("reserve", ("units",), description="spinning reserve held on a unit")
        b.con_group("balance", (), "outputs meet demand")
        b.add_constr("balance", (), [(out[(u,)], 1) for u in units], "==", data["demand"])
        b.con_group("min_output", ("units",), "each unit at least at its minimum")
        b.con_group("headroom", ("units",), "output plus reserve within the maximum")
        b.con_group("ramp_limit", ("units",), "reserve deliverable within the window")
        for u in units:
            b.add_constr("min_output", (u,), [(out[(u,)], 1)], ">=", data["pmin"][u])
            b.add_constr("headroom", (u,), [(out[(u,)], 1), (res[(u,)], 1)], "<=", data["pmax"][u])
            b.add_constr("ramp_limit", (u,), [(res[(u,)], 1)], "<=", data["window"] * data["ramp"][u])
        b.con_group("reserve", (), "total reserve at least the required share of demand")
        b.add_constr("reserve", (), [(res[(u,)], 1) for u in units], ">=",
                     data["reserve_pct"] / 100 * data["demand"])
        b.set_objective("minimize", [(out[(u,)], data["linear"][u]) for u in units],
                        quadratic=[(out[(u,)], out[(u,)], data["quad"][u]) for u in units],
                        constant=sum(data["fixed"].values()), description="hourly fuel cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        units = data["units"]
        n, q = number_text, v["q"]
        costs = "; ".join(
            f"{u}: {n(data['fixed'][u])} + {n(data['linear'][u])} p + {n(data['quad'][u])} p^2" for u in units
        )
        limits = "; ".join(
            f"{u} {n(data['pmin'][u])} to {n(data['pmax'][u])} {q}, ramping {n(data['ramp'][u])} {q} per minute"
            for u in units
        )
        need = (
            f"The {v['load']} is {n(data['demand'])} {q}. Spinning reserve (unused capacity a unit can deliver "
            f"within {minutes(data['window'] / 60)}, limited by its ramp rate and its headroom below its maximum) "
            f"must total at least {n(data['reserve_pct'])}% of the {v['load']}."
        )
        rows = [
            [u, data["pmin"][u], data["pmax"][u], data["ramp"][u], data["fixed"][u], data["linear"][u], data["quad"][u]]
            for u in units
        ]
        head = ["Unit", f"Min ({q})", f"Max ({q})", f"Ramp ({q}/min)", "a ($/h)", "b ($ per unit)", "c"]
        return {"costs": costs, "head": head, "limits": limits, "need": need, "q": q, "rows": rows}
