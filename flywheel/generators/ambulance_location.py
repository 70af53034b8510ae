"""Ambulance / fire-station location (IP, set covering): open the cheapest set of candidate stations so that every
district has at least its required number of open stations within the response-time standard (in minutes);
high-priority districts need two. Coverage is derived from the stated travel times.

Feasible by construction: every district has at least two candidate sites within the standard. Infeasible
variant: every travel time to one district is raised above the standard, so nothing can cover it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, pick, register, replace_at
from solvers.ir import Model, VarType, number_text


@register
class AmbulanceLocation(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 4x6 / 5x8 / 6x10 sites x districts by difficulty, names drawn from the domain's pool
        # (``spread``, ``drawn_names``).
        sites = drawn_names(rng, v["sites"], spread(rng, 3 + difficulty, 3), "Site")
        districts = drawn_names(rng, v["districts"], spread(rng, 4 + 2 * difficulty, 2), "District")
        standard = int(rng.choice([8, 10, 12, 15]))
        time = {d: {s: int(rng.integers(3, 2 * standard + 6)) for s in sites} for d in districts}
        for d in districts:  # two sites within the standard for every district
            for s in rng.choice(sites, size=2, replace=False):
                time[d][str(s)] = min(time[d][str(s)], int(rng.integers(2, standard + 1)))
        cost = {s: int(rng.integers(40, 200)) for s in sites}
        priority = [str(d) for d in rng.choice(districts, size=max(1, len(districts) // 4), replace=False)]
        return {"sites": sites, "districts": districts, "time": time, "standard": standard, "cost": cost,
                "priority": sorted(priority, key=districts.index)}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        d = pick(rng, data["districts"])
        far = {s: max(t, data["standard"] + int(rng.integers(1, 6))) for s, t in data["time"][d].items()}
        return replace_at(data, ("time", d), far)

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        sites, districts = b.elements("sites", "districts")
        need = {d: 2 if d in data["priority"] else 1 for d in districts}
        b.add_param("need", need, ("districts",), "stations", "stations required within the standard",
                    derived=True)
        x = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if a station opens at the site")
        b.con_group("cover", ("districts",), "enough open stations within the standard of each district")
        for d in districts:
            near = [(x[(s,)], 1) for s in sites if data["time"][d][s] <= data["standard"]]
            b.add_constr("cover", (d,), near, ">=", need[d])
        b.set_objective("minimize", [(x[(s,)], data["cost"][s]) for s in sites], description="total opening cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        districts, sites = data["districts"], data["sites"]
        std = data["standard"]
        times = "; ".join(f"{d}: " + listing(data["time"][d], sites) for d in districts)
        costs = listing(data["cost"], sites)
        rule = f"A district counts as covered by a station if the travel time is at most {number_text(std)} minutes. Every district must be covered by at least one open station, and the high-priority districts ({join(data['priority'])}) by at least two."
        header = ["District"] + [f"{s} (min)" for s in sites]
        rows = [[d] + [data["time"][d][s] for s in sites] for d in districts]
        return {"costs": costs, "header": header, "rows": rows, "rule": rule, "times": times}
