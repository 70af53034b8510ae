"""Reservoir scheduling (LP, multi-period): per period, release water through the turbines or outlets (between a
minimum environmental release and the outlet capacity) or spill it, with the volume balance
``volume[t] = volume[t-1] + inflow[t] - release[t] - spill[t]`` between a minimum share of capacity and the
capacity, and an end-of-horizon volume of at least a stated share of capacity. Maximise the value of the releases
at each period's price (a release converts to sellable output at a fixed factor: ``output[t] = factor *
release[t]``). The opening volume is a variable ``start`` fixed to it, so the first balance row has the shape of
the others. Shares are stated in percent.

Feasible by construction: every inflow is at least the minimum release and both shares are at most the opening
fill, so releasing the minimum and spilling any excess never lets the volume fall below the opening one.
Infeasible variant: the minimum release is raised until the releases over the horizon exceed the opening volume
plus all inflows minus the minimum volume, so the balance would drive the volume below its minimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class HydroScheduling(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 5 / 7 / 9 periods by difficulty (``spread``); the periods stay in order and there is nothing
        # else to name.
        periods = [f"{self.vocab[domain]['period']}{t}" for t in range(1, 1 + spread(rng, 3 + 2 * difficulty, 2))]
        capacity = int(rng.integers(20, 60)) * 10
        opening = int(capacity * rng.uniform(0.4, 0.8))
        fill = 100 * opening / capacity
        min_release = int(rng.integers(2, 15))
        return {"periods": periods, "capacity": capacity, "opening": opening,
                "inflow": {t: min_release + int(rng.integers(0, 60)) for t in periods},
                "price": {t: int(rng.integers(20, 90)) for t in periods},
                "outlet_max": int(rng.integers(40, 120)), "min_release": min_release,
                "factor": round(float(rng.uniform(*self.vocab[domain]["factor"])), 2),
                "min_pct": int(fill * rng.uniform(0.1, 0.5)), "end_pct": int(fill * rng.uniform(0.5, 1.0))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        water = data["opening"] + sum(data["inflow"].values()) - data["min_pct"] / 100 * data["capacity"]
        return {**data, "min_release": int(water // len(data["periods"])) + int(rng.integers(1, 6))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (periods,) = b.elements("periods")
        release = b.add_vars("release", ("periods",), description="water released through the outlet")
        spill = b.add_vars("spill", ("periods",), description="water spilled without value")
        output = b.add_vars("output", ("periods",), description="sellable output of the releases")
        low = data["min_pct"] * data["capacity"] / 100
        volume = b.add_vars("volume", ("periods",), lb=low, ub=data["capacity"], description="volume at period end")
        start = b.add_var("start", description="volume before the first period")
        b.add_constrs("opening", (), "the reservoir starts at the opening volume",
                      lambda: ([(start, 1)], "==", data["opening"]))

        def balance(t: str, before: str) -> tuple[list[tuple[str, float]], str, float]:
            return [(volume[(t,)], 1), (release[(t,)], 1), (spill[(t,)], 1), (before, -1)], "==", data["inflow"][t]

        b.add_constrs("balance_first", ("periods",), "opening volume plus inflow minus release and spill",
                      lambda t: balance(t, start), keys=periods[:1])
        b.add_constrs("balance", ("periods", "periods"), "volume carried plus inflow minus release and spill",
                      lambda prev, t: balance(t, volume[(prev,)]), keys=list(zip(periods[:-1], periods[1:],
                                                                                  strict=True)))
        # Release limits as rows, not bounds: the infeasible variant may push the minimum above the maximum.
        b.add_constrs("release_min", ("periods",), "at least the minimum release",
                      lambda t: ([(release[(t,)], 1)], ">=", data["min_release"]))
        b.add_constrs("release_max", ("periods",), "at most the outlet capacity",
                      lambda t: ([(release[(t,)], 1)], "<=", data["outlet_max"]))
        b.add_constrs("output", ("periods",), "a release converts to output at the fixed factor",
                      lambda t: ([(output[(t,)], 1), (release[(t,)], -data["factor"])], "==", 0))
        b.add_constrs("end_volume", ("periods",), "final volume at least the required share of capacity",
                      lambda t: ([(volume[(t,)], 1)], ">=", data["end_pct"] * data["capacity"] / 100),
                      keys=periods[-1:])
        b.set_objective("maximize", [(output[(t,)], data["price"][t]) for t in periods],
                        description="value of all releases")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        periods = data["periods"]
        n, w, per = number_text, v["water"], v["period"].lower()
        res = (
            f"The reservoir holds up to {n(data['capacity'])} {w} and starts with {n(data['opening'])} {w}. The "
            f"reservoir may never drop below {n(data['min_pct'])}% of capacity and must end the horizon at least "
            f"{n(data['end_pct'])}% full."
        )
        out = (
            f"Each {per}, between {n(data['min_release'])} and {n(data['outlet_max'])} {w} go through the "
            f"{v['outlet']}; anything else may be spilled at no value. Each {w[:-1] if w.endswith('s') else w} "
            f"released yields {n(data['factor'])} {v['out']}."
        )
        flows = listing(data["inflow"], periods, "{k} {v}")
        prices = listing(data["price"], periods, "{k} {v}")
        body = table(
            [v["period"], f"Inflow ({w})", f"Price ({v['price']})"],
            [[t, data["inflow"][t], data["price"][t]] for t in periods],
        )
        return {"body": body, "flows": flows, "out": out, "per": per, "prices": prices, "res": res, "w": w}
