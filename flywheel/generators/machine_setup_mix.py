"""Product mix with setups and minimum lots (MILP): each product made at all pays a setup cost and must be run in a
lot of at least its minimum (either nothing or at least ``L``: an either-or condition), up to its market, within
every machine's hours; one product is contracted and must be made.

With ``y[p]`` binary: ``x[p] >= L[p] y[p]`` (the minimum lot when made), ``x[p] <= U[p] y[p]`` (nothing without
the setup; the market ``U`` is the big-M), setup cost ``K[p] y[p]`` in the objective (fixed charge). Machine times
are minutes per unit against capacities in hours (coefficient minutes / 60).

Feasible by construction: the contracted product's minimum lot takes at most half of every machine's hours.
Infeasible variant: that minimum lot is raised above what one machine can process in its hours (the market is
raised with it), and the contract forces the lot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType


@register
class MachineSetupMix(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x2 / 4x3 / 5x3 products x machines by difficulty, names drawn from the domain's pool
        # (``spread``, ``drawn_names``).
        products = drawn_names(rng, v["products"], spread(rng, 2 + difficulty, 2), "Product")
        machines = drawn_names(rng, v["machines"], spread(rng, 2 + difficulty // 2, 2), "Machine")
        minutes = {p: {m: int(rng.integers(1, 13)) for m in machines} for p in products}
        hours = {m: int(rng.integers(6, 20)) * 10 for m in machines}
        market = {p: int(rng.integers(30, 120)) * 10 for p in products}
        lot = {p: int(market[p] * rng.uniform(0.2, 0.5)) for p in products}
        must = pick(rng, products)
        # The contracted lot fits in half of every machine's hours.
        fits = min(hours[m] * 30 // minutes[must][m] for m in machines)
        lot[must] = max(1, min(lot[must], fits))
        margin = {p: int(rng.integers(3, 30)) for p in products}
        setup = {p: int(margin[p] * lot[p] * rng.uniform(0.3, 1.2)) // 10 * 10 + 10 for p in products}
        return {"products": products, "machines": machines, "minutes": minutes, "hours": hours, "market": market,
                "lot": lot, "margin": margin, "setup": setup, "contract": must}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        p, m = data["contract"], pick(rng, data["machines"])
        too_many = math.floor(data["hours"][m] * 60 / data["minutes"][p][m]) + int(rng.integers(1, 20))
        return {**data, "lot": {**data["lot"], p: too_many},
                "market": {**data["market"], p: max(too_many, data["market"][p])}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        products, machines = b.elements("products", "machines")
        x = b.add_vars("make", ("products",), description="units made", unit="units")
        y = b.add_vars("setup_on", ("products",), VarType.BINARY, description="1 if the product is set up")
        b.con_group("min_lot", ("products",), "either nothing or at least the minimum lot (either-or)")
        b.con_group("max_lot", ("products",), "nothing without the setup, never beyond the market (big-M)")
        for p in products:
            b.add_constr("min_lot", (p,), [(x[(p,)], 1), (y[(p,)], -data["lot"][p])], ">=", 0)
            b.add_constr("max_lot", (p,), [(x[(p,)], 1), (y[(p,)], -data["market"][p])], "<=", 0)
        b.con_group("capacity", ("machines",), "machine minutes / 60 within the machine's hours")
        for m in machines:
            b.add_constr("capacity", (m,), [(x[(p,)], data["minutes"][p][m] / 60) for p in products], "<=",
                         data["hours"][m])
        b.con_group("contract", (), "the contracted product is made")
        b.add_constr("contract", (), [(y[(data["contract"],)], 1)], ">=", 1)
        b.set_objective("maximize", [(x[(p,)], data["margin"][p]) for p in products]
                        + [(y[(p,)], -data["setup"][p]) for p in products], description="margin minus setup costs")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        machines, products = data["machines"], data["products"]
        d, unit, lot = data, v["unit"], v["lot"]
        times = "; ".join(f"{p}: " + listing(d["minutes"][p], machines, "{v} min on {k}") for p in products)
        caps = listing(d["hours"], machines, "{k} {v} hours")
        rules = (
            f"A product that is made at all needs a setup and a {lot} of at least its minimum; a product can "
            f"also be skipped entirely. {d['contract']} must be made, as {v['buyer']} has a contract for it."
        )
        margins = listing(d["margin"], products, "{k} ${v}")
        setups = listing(d["setup"], products, "{k} ${v}")
        lots = listing(d["lot"], products, "{k} {v}")
        markets = listing(d["market"], products, "{k} {v}")
        header = ["Product", "Margin ($/unit)", "Setup ($)", f"Min {lot}", "Market"] + [
            f"{m} (min/unit)" for m in machines
        ]
        rows = [
            [p, d["margin"][p], d["setup"][p], d["lot"][p], d["market"][p]] + [d["minutes"][p][m] for m in machines]
            for p in products
        ]
        return {"caps": caps, "header": header, "lot": lot, "lots": lots, "margins": margins, "markets": markets, "rows":
                rows, "rules": rules, "setups": setups, "times": times, "unit": unit}
