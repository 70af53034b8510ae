"""Irrigation allocation (LP, multi-period balance): how much of each field to plant (hectares, up to a limit) so
that the season's yield value is as high as possible, when every planted hectare needs its crop's water each
period from one reservoir. Storage balance per period: ``storage[t] = (1 - evap% / 100) * storage[t-1] +
inflow[t] - release[t] - spill[t]``, storage never above the reservoir's capacity and, at the end, at least a
reserve. The canals lose ``loss%`` of what is released: ``sum_f need[f, t] * plant[f] = 1000 * (1 - loss% / 100) *
release[t]``. Needs are in m3 per hectare, volumes in thousand m3 (the 1000 is in the coefficients).

Feasible by construction: planting nothing keeps storage on the capped no-release path, and the reserve is below
its final value. Infeasible variant: the reserve exceeds that path's final storage; releasing water only lowers
storage, so no plan (not even planting nothing) can end that high.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


def _capped_path(data: dict[str, Any]) -> float:
    """Final storage when nothing is released: the most any plan can end with (every release only lowers it)."""
    keep, level = 1 - data["evap_pct"] / 100, float(data["initial"])
    for t in data["periods"]:
        level = min(data["capacity"], keep * level + data["inflow"][t])
    return level


@register
class IrrigationAllocation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x4 / 4x5 / 5x6 fields x periods by difficulty, field names drawn from the domain's pool
        # (``spread``, ``drawn_names``); the periods stay in order.
        fields = drawn_names(rng, v["fields"], spread(rng, 2 + difficulty, 2), "Field")
        periods = [f"{v['period']}{k}" for k in range(1, 1 + spread(rng, 3 + difficulty, 2))]
        capacity = 100 * int(rng.integers(20, 80))
        data = {"fields": fields, "periods": periods, "capacity": capacity,
                "initial": int(capacity * rng.uniform(0.3, 0.9)), "evap_pct": int(rng.integers(1, 9)),
                "loss_pct": int(rng.integers(5, 25)), "inflow": {t: 10 * int(rng.integers(5, 100)) for t in periods},
                "need": {f: {t: 50 * int(rng.integers(0, 30)) for t in periods} for f in fields},
                "value": {f: 10 * int(rng.integers(20, 200)) for f in fields},
                "max_area": {f: 10 * int(rng.integers(20, 120)) for f in fields}}
        return {**data, "reserve": int(_capped_path(data) * rng.uniform(0.2, 0.6))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "reserve": int(_capped_path(data)) + int(rng.integers(1, 50))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        fields, periods = b.elements("fields", "periods")
        area = b.add_vars("plant", ("fields",), description="area planted", unit="area units")
        release = b.add_vars("release", ("periods",), description="water released into the canals",
                             unit="thousand m3")
        store = b.add_vars("storage", ("periods",), ub=data["capacity"], description="storage at the period's end",
                           unit="thousand m3")
        spill = b.add_vars("spill", ("periods",), description="water spilled over the dam", unit="thousand m3")
        start = b.add_var("start", description="storage before the first period", unit="thousand m3")
        keep = (100 - data["evap_pct"]) / 100
        b.add_constrs("initial", (), "the reservoir starts at its initial storage",
                      lambda: ([(start, 1)], "==", data["initial"]))
        b.add_constrs("delivery", ("periods",), "the fields' needs (m3) = release (thousand m3) x 1000 less canal "
                      "losses", lambda t: ([(area[(f,)], data["need"][f][t]) for f in fields]
                                           + [(release[(t,)], -10 * (100 - data["loss_pct"]))], "==", 0))

        def balance(t: str, before: str) -> tuple[list[tuple[str, float]], str, float]:
            return ([(store[(t,)], 1), (spill[(t,)], 1), (release[(t,)], 1), (before, -keep)], "==",
                    data["inflow"][t])

        b.add_constrs("balance_first", ("periods",), "storage = kept initial storage + inflow - release - spill",
                      lambda t: balance(t, start), keys=periods[:1])
        b.add_constrs("balance", ("periods", "periods"), "storage = kept storage + inflow - release - spill",
                      lambda prev, t: balance(t, store[(prev,)]),
                      keys=list(zip(periods[:-1], periods[1:], strict=True)))
        b.add_constrs("max_area", ("fields",), "no field beyond its limit",
                      lambda f: ([(area[(f,)], 1)], "<=", data["max_area"][f]))
        b.add_constrs("reserve", ("periods",), "the reservoir ends the season at least at the reserve",
                      lambda t: ([(store[(t,)], 1)], ">=", data["reserve"]), keys=periods[-1:])
        b.set_objective("maximize", [(area[(f,)], data["value"][f]) for f in fields], description="season value")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        fields, periods = data["fields"], data["periods"]
        unit = v["area"]
        needs = "; ".join(f"{f}: " + listing(data["need"][f], periods) for f in fields)
        inflow = listing(data["inflow"], periods)
        worth = listing(data["value"], fields, "{k} ${v}")
        limit = listing(data["max_area"], fields)
        dam = f"The reservoir holds at most {number_text(data['capacity'])} thousand m3, starts with {number_text(data['initial'])} thousand m3 and must end with at least {number_text(data['reserve'])} thousand m3. Each {v['period'].lower()} {number_text(data['evap_pct'])}% of the water stored at its start evaporates, and the canals lose {number_text(data['loss_pct'])}% of every release; surplus water can be spilled."
        header = [v["field"].capitalize(), "Value ($/unit)", "Max"] + [f"{t} (m3/unit)" for t in periods]
        rows = [[f, data["value"][f], data["max_area"][f]] + [data["need"][f][t] for t in periods] for f in fields]
        return {"dam": dam, "header": header, "inflow": inflow, "limit": limit, "needs": needs, "rows": rows, "unit": unit,
                "worth": worth}
