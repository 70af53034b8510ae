"""Single-allocation hub location (MILP): open hubs (a fixed cost each, in thousands of dollars) and assign every
origin, with its whole volume, to exactly one open hub (a partitioning row per origin), paying a collection cost per
unit; a hub handles its capacity, plus up to a limited amount of extra capacity (overtime, rented space: a
continuous quantity at a premium per unit) only if it is open.

``sum_h x[o,h] = 1``; ``x[o,h] <= y[h]``; ``sum_o v[o] x[o,h] <= cap[h] y[h] + extra[h]``;
``extra[h] <= ext[h] y[h]`` (big-M: none at a closed hub); the volume an origin sends to a hub,
``flow[o,h] = v[o] x[o,h]``, carries the collection cost, and the fixed costs enter in dollars (a derived copy,
1000 x the thousands stated). Feasible by construction: the capacities sum to at
least total volume plus (number of hubs) x (largest volume), so first-fit with every hub open assigns every origin
without extra capacity. Infeasible variant: one origin's volume exceeds every hub's capacity plus its extra limit,
and an origin cannot be split between hubs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import drawn_names, listing, plural, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class HubLocation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 6x2 / 8x2 / 10x2 origins x hubs by difficulty, names drawn from the domain's pool
        # (``spread``, ``drawn_names``).
        origins = drawn_names(rng, v["origins"], spread(rng, 4 + 2 * difficulty, 3), "Origin")
        hubs = drawn_names(rng, v["hubs"], spread(rng, 2 + difficulty // 3, 2), "Hub")
        volume = {o: int(rng.integers(2, 20)) * 10 for o in origins}
        total, top = sum(volume.values()), max(volume.values())
        capacity = {h: math.ceil(total / len(hubs) * rng.uniform(0.8, 1.4)) + top for h in hubs}
        if sum(capacity.values()) < total + len(hubs) * top:  # keep the first-fit guarantee
            capacity[hubs[0]] += total + len(hubs) * top - sum(capacity.values())
        where = {k: rng.uniform(0, 100, size=2) for k in origins + hubs}
        cost = {o: {h: 1 + int(np.linalg.norm(where[o] - where[h]) // 8) for h in hubs} for o in origins}
        return {"origins": origins, "hubs": hubs, "volume": volume, "capacity": capacity, "cost": cost,
                "fixed": {h: int(rng.integers(2, 12)) for h in hubs},  # thousand dollars
                "extra": {h: int(capacity[h] * rng.uniform(0.1, 0.3)) for h in hubs},
                "premium": {h: int(rng.integers(3, 12)) for h in hubs}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = max(data["capacity"][h] + data["extra"][h] for h in data["hubs"])
        return exceed(data, "volume", pick(rng, data["origins"]), most, rng.integers(1, 30))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        origins, hubs = b.elements("origins", "hubs")
        b.add_param("fixed_dollars", {h: 1000 * data["fixed"][h] for h in hubs}, ("hubs",), "dollars",
                    "fixed cost of opening a hub in dollars", derived=True)
        x = b.add_vars("assign", ("origins", "hubs"), VarType.BINARY, description="1 if the origin uses the hub")
        y = b.add_vars("open", ("hubs",), VarType.BINARY, description="1 if the hub is opened")
        e = b.add_vars("extra_used", ("hubs",), description="extra capacity bought at a hub", unit="units")
        f = b.add_vars("flow", ("origins", "hubs"), description="volume an origin sends to a hub", unit="units")
        b.con_group("assign", ("origins",), "every origin to exactly one hub (partitioning)")
        for o in origins:
            b.add_constr("assign", (o,), [(x[(o, h)], 1) for h in hubs], "==", 1)
        b.con_group("open_only", ("origins", "hubs"), "only open hubs take origins")
        for o in origins:
            for h in hubs:
                b.add_constr("open_only", (o, h), [(x[(o, h)], 1), (y[(h,)], -1)], "<=", 0)
        b.con_group("capacity", ("hubs",), "assigned volume within capacity of an open hub plus extra")
        b.con_group("extra_limit", ("hubs",), "extra capacity only at an open hub, up to its limit (big-M)")
        for h in hubs:
            b.add_constr("capacity", (h,), [(x[(o, h)], data["volume"][o]) for o in origins]
                         + [(y[(h,)], -data["capacity"][h]), (e[(h,)], -1)], "<=", 0)
            b.add_constr("extra_limit", (h,), [(e[(h,)], 1), (y[(h,)], -data["extra"][h])], "<=", 0)
        b.add_constrs("flow", ("origins", "hubs"), "an origin sends its whole volume to its hub",
                      lambda o, h: ([(f[(o, h)], 1), (x[(o, h)], -data["volume"][o])], "==", 0))
        b.set_objective("minimize", [(y[(h,)], 1000 * data["fixed"][h]) for h in hubs]
                        + [(e[(h,)], data["premium"][h]) for h in hubs]
                        + [(f[(o, h)], data["cost"][o][h]) for o in origins for h in hubs],
                        description="fixed costs plus collection plus extra capacity, in dollars")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        hubs, origins = data["hubs"], data["origins"]
        d, unit, one = data, v["unit"], v["one"]
        hubs_word, origins_word = plural(v["hub"]), plural(v["origin"])
        volumes = listing(d["volume"], origins)
        hub_terms = "; ".join(
            f"{h}: opening costs {number_text(d['fixed'][h])} thousand dollars, capacity {number_text(d['capacity'][h])}, plus up to {number_text(d['extra'][h])} extra at ${number_text(d['premium'][h])} per {one}"
            for h in hubs
        )
        costs = "; ".join(f"{o}: " + listing(d["cost"][o], hubs, "{k} ${v}") for o in origins)
        rule = f"Each {v['origin']} must be served by exactly one open {v['hub']}, with all of its volume; extra capacity exists only at an open {v['hub']}."
        rows = [[o, d["volume"][o]] + [d["cost"][o][h] for h in hubs] for o in origins]
        header = [v["origin"].capitalize(), f"Volume ({unit})"] + [f"{h} ($/{one})" for h in hubs]
        fixed = ", ".join(f"{h} ${thousands(1000 * d['fixed'][h])}" for h in hubs)
        t2_part0 = listing(d["premium"], hubs, "{k} ${v}")
        return {"t2_part0": t2_part0, "costs": costs, "d": d, "fixed": fixed, "header": header, "hub_terms": hub_terms,
                "hubs_word": hubs_word, "one": one, "origins_word": origins_word, "rows": rows, "rule": rule, "unit": unit,
                "volumes": volumes}
