"""Unit commitment (MILP): which generating units to run in each period, and at what output, to meet demand at
least cost. A unit that is on produces between its minimum and maximum (``min * on <= p <= max * on``, big-M
style links), pays a fixed hourly running cost when on and a start-up cost when switched on
(``start[t] >= on[t] - on[t-1]``: if-then logic over consecutive periods; all units start off).

Feasible by construction: the units together can cover the peak demand. Infeasible variant: one period's demand
exceeds the sum of all units' maxima.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class UnitCommitment(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3x3 / 3x4 / 4x5 units x hours by difficulty, unit names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the hours stay in order.
        units = drawn_names(rng, self.vocab[domain]["units"], spread(rng, 2 + (difficulty + 1) // 2, 2), "Unit")
        periods = [f"H{k}" for k in range(1, 1 + spread(rng, 2 + difficulty, 2))]
        pmax = {u: int(rng.integers(40, 160)) for u in units}
        pmin = {u: int(pmax[u] * rng.uniform(0.2, 0.5)) for u in units}
        total = sum(pmax.values())
        demand = {t: int(total * rng.uniform(0.3, 0.85)) for t in periods}
        return {"units": units, "periods": periods, "pmin": pmin, "pmax": pmax, "demand": demand,
                "marginal": {u: int(rng.integers(10, 60)) for u in units},
                "fixed": {u: int(rng.integers(50, 400)) for u in units},
                "startup": {u: int(rng.integers(100, 900)) for u in units}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        t = pick(rng, data["periods"])
        return exceed(data, "demand", t, sum(data["pmax"].values()), rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        units, periods = b.elements("units", "periods")
        for key, desc in (("pmin", "least output of a running unit"), ("pmax", "most output of a running unit"),
                          ("marginal", "cost per unit of output"), ("fixed", "cost per hour of running"),
                          ("startup", "cost of switching a unit on")):
            b.add_param(key, data[key], ("units",), "", desc)
        b.add_param("demand", data["demand"], ("periods",), "", "load to meet in an hour")
        p = b.add_vars("output", ("units", "periods"), description="output of a unit in an hour")
        on = b.add_vars("on", ("units", "periods"), VarType.BINARY, description="1 if the unit runs in the hour")
        st = b.add_vars("start", ("units", "periods"), VarType.BINARY, description="1 if the unit is switched on")
        b.add_constrs("demand", ("periods",), "output meets demand every hour",
                      lambda t: ([(p[(u, t)], 1) for u in units], ">=", data["demand"][t]))
        b.add_constrs("max_output", ("units", "periods"), "output only when on, up to the maximum",
                      lambda u, t: ([(p[(u, t)], 1), (on[(u, t)], -data["pmax"][u])], "<=", 0))
        b.add_constrs("min_output", ("units", "periods"), "a running unit produces at least its minimum",
                      lambda u, t: ([(p[(u, t)], 1), (on[(u, t)], -data["pmin"][u])], ">=", 0))
        b.add_constrs("startup_first", ("units", "periods"), "a unit on in the first hour was switched on (all off)",
                      lambda u, t: ([(st[(u, t)], 1), (on[(u, t)], -1)], ">=", 0),
                      keys=[(u, periods[0]) for u in units])
        b.add_constrs("startup", ("units", "periods", "periods"),
                      "switching on (off before, on now) incurs a start-up",
                      lambda u, prev, t: ([(st[(u, t)], 1), (on[(u, t)], -1), (on[(u, prev)], 1)], ">=", 0),
                      keys=[(u, prev, t) for u in units for prev, t in pairwise(periods)])
        b.set_objective("minimize", [(p[(u, t)], data["marginal"][u]) for u in units for t in periods]
                        + [(on[(u, t)], data["fixed"][u]) for u in units for t in periods]
                        + [(st[(u, t)], data["startup"][u]) for u in units for t in periods],
                        description="running, output and start-up cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        periods, units = data["periods"], data["units"]
        mw = v["unit"]
        dem = listing(data["demand"], periods)
        specs = "; ".join(
            f"{u}: {number_text(data['pmin'][u])} to {number_text(data['pmax'][u])} {mw} when running, ${number_text(data['marginal'][u])} per {mw.split()[0]}, ${number_text(data['fixed'][u])} per hour on, ${number_text(data['startup'][u])} to start"
            for u in units
        )
        rule = "A unit that runs must produce at least its minimum; every unit is off before the first hour, and each switch-on pays the start-up cost."
        header = [
            v["what"].capitalize(),
            f"Min ({mw})",
            f"Max ({mw})",
            "Cost per output",
            "Running cost ($/h)",
            "Start-up ($)",
        ]
        rows = [
            [u, data["pmin"][u], data["pmax"][u], data["marginal"][u], data["fixed"][u], data["startup"][u]]
            for u in units
        ]
        load = table(["Hour", f"Demand ({mw})"], [[t, data["demand"][t]] for t in periods])
        return {"dem": dem, "header": header, "load": load, "mw": mw, "rows": rows, "rule": rule, "specs": specs}
