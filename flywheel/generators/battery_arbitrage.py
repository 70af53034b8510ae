"""Battery arbitrage (MILP, multi-period): per hour, charge (buying at the hour's price) or discharge (selling
at it), never both: a binary ``mode[t]`` (1 = charging) with big-M links ``charge[t] <= charge_max * mode[t]`` and
``discharge[t] <= discharge_max * (1 - mode[t])``, an either-or decision (without it, a negative price would
pay for charging and discharging at once to burn energy through the losses). The state of charge follows
``soc[t] = soc[t-1] + efficiency% * charge[t] - discharge[t]``, stays between a reserve share of the capacity and
the capacity, and must end at least at a stated level. Maximise selling revenue minus buying cost.

Feasible by construction: the opening charge is at least the reserve and the end level is at most the opening
charge, so staying idle is a plan. Infeasible variant: the end level exceeds what the opening charge plus
charging at full rate every hour (after losses) could store, or the capacity, whichever is smaller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class BatteryArbitrage(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6 / 8 / 10 hours by difficulty (``spread``); the hours stay in order and there is nothing else
        # to name.
        hours = [f"H{t}" for t in range(1, 1 + spread(rng, 4 + 2 * difficulty, 3))]
        capacity = int(rng.integers(20, 60))
        reserve_pct = int(rng.integers(5, 30))
        opening = int(capacity * rng.uniform(reserve_pct / 100 + 0.05, 0.9))
        return {"hours": hours, "capacity": capacity, "reserve_pct": reserve_pct, "opening": opening,
                "end_level": int(opening * rng.uniform(0.5, 1.0)),
                "charge_max": int(rng.integers(5, 30)), "discharge_max": int(rng.integers(5, 30)),
                "efficiency": int(rng.integers(75, 96)),
                "price": {t: int(rng.integers(self.vocab[domain]["low"], 120)) for t in hours}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        gain = data["efficiency"] / 100 * data["charge_max"] * len(data["hours"])
        most = min(data["capacity"], data["opening"] + gain)
        return {**data, "end_level": int(most) + int(rng.integers(1, 8))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (hours,) = b.elements("hours")
        eff = data["efficiency"] / 100
        charge = b.add_vars("charge", ("hours",), description="energy bought and charged")
        discharge = b.add_vars("discharge", ("hours",), description="energy discharged and sold")
        mode = b.add_vars("charging", ("hours",), VarType.BINARY, description="1 if the hour charges, 0 if it may "
                          "discharge")
        soc = b.add_vars("soc", ("hours",), lb=data["reserve_pct"] * data["capacity"] / 100, ub=data["capacity"],
                         description="state of charge at the end of an hour")
        first = hours[0]
        b.add_constrs("soc_first", ("hours",), "the first hour starts from the opening charge",
                      lambda t: ([(soc[(t,)], 1), (charge[(t,)], -eff), (discharge[(t,)], 1)], "==", data["opening"]),
                      keys=[first])
        b.add_constrs("soc_balance", ("hours", "hours"), "charge carried plus stored charging minus discharging",
                      lambda prev, t: ([(soc[(t,)], 1), (charge[(t,)], -eff), (discharge[(t,)], 1),
                                        (soc[(prev,)], -1)], "==", 0),
                      keys=list(zip(hours[:-1], hours[1:], strict=True)))
        b.add_constrs("charge_if_mode", ("hours",), "charging only in charging mode (big-M)",
                      lambda t: ([(charge[(t,)], 1), (mode[(t,)], -data["charge_max"])], "<=", 0))
        b.add_constrs("discharge_if_not", ("hours",), "discharging only outside charging mode (big-M)",
                      lambda t: ([(discharge[(t,)], 1), (mode[(t,)], data["discharge_max"])], "<=",
                                 data["discharge_max"]))
        b.add_constrs("end_level", ("hours",), "the battery ends at least at the stated level",
                      lambda t: ([(soc[(t,)], 1)], ">=", data["end_level"]), keys=[hours[-1]])
        b.set_objective("maximize", [(discharge[(t,)], data["price"][t]) for t in hours] +
                        [(charge[(t,)], -data["price"][t]) for t in hours], description="arbitrage profit")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        hours = data["hours"]
        n, e, p = number_text, v["e"], v["p"]
        prices = listing(data["price"], hours)
        spec = (
            f"The battery stores up to {n(data['capacity'])} {e} and holds {n(data['opening'])} {e} now; it may "
            f"charge up to {n(data['charge_max'])} {p} and discharge up to {n(data['discharge_max'])} {p} in an "
            f"hour, and only {n(data['efficiency'])}% of the energy charged is stored."
        )
        rules = (
            f"The charge may never fall below {n(data['reserve_pct'])}% of capacity ({v['why']}), and at the end "
            f"of the last hour at least {n(data['end_level'])} {e} must be left."
        )
        either = (
            "In any hour the battery either charges or discharges, not both (a negative price means the "
            "buyer is paid to take energy)."
        )
        body = table(["Hour", f"Price ({v['price']})"], [[t, data["price"][t]] for t in hours])
        return {"body": body, "either": either, "prices": prices, "rules": rules, "spec": spec}
