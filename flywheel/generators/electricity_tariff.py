"""Load shifting under a block tariff (MILP): flexible jobs each need the energy of a stated run time (in minutes)
at their full rate within their time window, at no more than that rate per hour, on top of a fixed base load and within the connection limit; every hour's load is billed by blocks
whose prices depend on the hour's band: rising blocks in the peak (convex), falling blocks off-peak (a bulk
discount, concave). ``run[j,h]`` is the share of hour h a job runs at full rate (``60 * sum_h run[j,h]`` is its
run time in minutes, ``rate[j] * run[j,h]`` its energy). A concave cost cannot be left to an LP, so each hour's
load is split incrementally into blocks with one binary per block boundary: ``seg[h,k] >= width[k] * full[h,k]``
and ``seg[h,k+1] <= limit * full[h,k]`` (a block fills only once the one before is full; the connection limit
caps the hour's total). Base loads are keyed by (band, hour), so an hour's cost row reads its band's prices.
Minimise the bill.

Feasible by construction: each job's run time is at most 80% of its window, and the connection limit covers
the largest base load plus every job at full rate. Infeasible variant: one job's run time exceeds its window, so
it needs more energy than its rate times the hours of its window can deliver.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread, table
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, VarType, number_text

_BANDS = ("OffPeak", "Peak", "Shoulder")


@register
class ElectricityTariff(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6x2 / 8x2 / 10x3 hours x jobs by difficulty, job names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the hours stay in order.
        hours = [f"H{t}" for t in range(1, 1 + spread(rng, 4 + 2 * difficulty, 3))]
        pool = self.vocab[domain]["jobs"]
        jobs = drawn_names(rng, pool, spread(rng, 1 + (difficulty + 1) // 2, 2, high=len(pool)), "Job")
        # Bands in the order of the day: off-peak first third, peak middle third, shoulder the rest.
        band = {h: _BANDS[min(2, 3 * k // len(hours))] for k, h in enumerate(hours)}
        base = {h: int(rng.integers(5, 40)) for h in hours}
        rate = {j: int(rng.integers(10, 40)) for j in jobs}
        start = {j: int(rng.integers(1, len(hours) - 1)) for j in jobs}
        end = {j: int(rng.integers(start[j] + 1, len(hours) + 1)) for j in jobs}
        # Run times in half hours, 30% to 80% of the window: the energy needed is rate * minutes / 60.
        minutes = {j: 30 * max(1, int(2 * (end[j] - start[j] + 1) * rng.uniform(0.3, 0.8))) for j in jobs}
        first = int(rng.integers(10, 30))
        steps = {"OffPeak": -1, "Peak": 1, "Shoulder": 0}
        price = {bd: [max(1, first + s * k * int(rng.integers(2, 8)) + (10 if bd == "Peak" else 0))
                      for k in range(3)] for bd, s in steps.items()}
        limit = max(base.values()) + sum(rate.values()) + int(rng.integers(0, 20))
        # The first two blocks take 40-70% of the limit: the third always has room.
        widths = [max(1, int(limit * rng.uniform(0.2, 0.35))) for _ in range(2)]
        return {"hours": hours, "jobs": jobs, "band": band, "base": base, "rate": rate, "start": start, "end": end,
                "minutes": minutes, "widths": widths, "price": price, "limit": limit}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        j = data["jobs"][-1]
        return exceed(data, "minutes", j, 60 * (data["end"][j] - data["start"][j] + 1), 30 * rng.integers(1, 4))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        hours, jobs = b.elements("hours", "jobs")
        blocks = b.add_set("blocks", ["B1", "B2", "B3"], "tariff blocks, cheapest first off-peak")
        inner = b.add_set("boundaries", ["B1", "B2"], "blocks with a fixed size (the last runs to the limit)")
        b.add_set("bands", list(_BANDS), "tariff bands of the day")
        # Keyed by (band, hour): the hour's rows read their band's prices.
        b.add_param("base", {(data["band"][h], h): data["base"][h] for h in hours}, ("bands", "hours"), "energy",
                    "fixed base load of an hour (in its band)")
        for key, what in (("rate", "most energy per hour"), ("minutes", "run time at full rate"),
                          ("start", "first allowed hour"), ("end", "last allowed hour")):
            b.add_param(key, data[key], ("jobs",), "", f"{what} of a flexible load")
        b.add_param("widths", dict(zip(inner, data["widths"], strict=True)), ("boundaries",), "energy",
                    "size of a block")
        b.add_param("price", {(bd, blk): data["price"][bd][k] for bd in _BANDS for k, blk in enumerate(blocks)},
                    ("bands", "blocks"), "money per energy", "price of a block in a band")
        b.add_param("limit", data["limit"], (), "energy", "connection limit per hour")
        run = b.add_vars("run", ("jobs", "hours"), ub=1,
                         description="share of an hour a flexible load runs at full rate")
        seg = b.add_vars("block_use", ("hours", "blocks"), description="load of an hour billed in a block")
        full = b.add_vars("block_full", ("hours", "boundaries"), VarType.BINARY, description="1 if the block is full")
        bill = b.add_vars("hour_cost", ("hours",), description="cost of an hour's load")
        b.add_constrs("need", ("jobs",), "each flexible load runs its run time (in minutes)",
                      lambda j: ([(run[(j, h)], 60) for h in hours], "==", data["minutes"][j]))
        b.add_constrs("outside", ("jobs", "hours"), "no run outside the window",
                      lambda j, h: ([(run[(j, h)], 1)], "==", 0),
                      keys=[(j, h) for j in jobs for k, h in enumerate(hours, 1)
                            if not data["start"][j] <= k <= data["end"][j]])
        b.add_constrs("load_split", ("bands", "hours"), "the hour's load (base plus flexible) is the sum of its blocks",
                      lambda bd, h: ([(seg[(h, k)], 1) for k in blocks]
                                     + [(run[(j, h)], -data["rate"][j]) for j in jobs], "==", data["base"][h]),
                      keys=[(data["band"][h], h) for h in hours])
        b.add_constrs("connection", ("hours",), "the connection limit",
                      lambda h: ([(seg[(h, k)], 1) for k in blocks], "<=", data["limit"]))
        b.add_constrs("block_cap", ("hours", "boundaries"), "a block holds at most its size",
                      lambda h, k: ([(seg[(h, k)], 1)], "<=", data["widths"][inner.index(k)]))
        b.add_constrs("fill_first", ("hours", "boundaries"), "a block marked full is full",
                      lambda h, k: ([(seg[(h, k)], 1), (full[(h, k)], -data["widths"][inner.index(k)])], ">=", 0))
        b.add_constrs("fill_next", ("hours", "blocks", "blocks"),
                      "a block is used only once the one before is full",
                      lambda h, k, nxt: ([(seg[(h, nxt)], 1), (full[(h, k)], -data["limit"])], "<=", 0),
                      keys=[(h, k, nxt) for h in hours for k, nxt in zip(inner, blocks[1:], strict=True)])
        b.add_constrs("hour_cost", ("bands", "hours"), "an hour's blocks at its band's prices",
                      lambda bd, h: ([(bill[(h,)], 1)] + [(seg[(h, blk)], -data["price"][bd][k])
                                                          for k, blk in enumerate(blocks)], "==", 0),
                      keys=[(data["band"][h], h) for h in hours])
        b.set_objective("minimize", [(bill[(h,)], 1) for h in hours], description="electricity bill")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        hours, jobs = data["hours"], data["jobs"]
        n, e, money = number_text, v["e"], v["money"]
        w1, w2 = data["widths"]
        tariff = "; ".join(
            f"{bd} hours: the first {n(w1)} {e} at {n(p[0])}, the next {n(w2)} at {n(p[1])} and the "
            f"rest at {n(p[2])} {money} per {e}"
            for bd, p in data["price"].items()
        )
        bands = "; ".join(f"{bd} {join([h for h in hours if data['band'][h] == bd])}" for bd in _BANDS)
        needs = "; ".join(
            f"{j} needs the energy of {n(data['minutes'][j])} minutes at its full rate of "
            f"{n(data['rate'][j])} {e} per hour, between hours {n(data['start'][j])} and "
            f"{n(data['end'][j])} (inclusive), never above that rate"
            for j in jobs
        )
        base = listing(data["base"], hours)
        limit = f"The connection carries at most {n(data['limit'])} {e} in any hour, base load included."
        rows = [[h, data["band"][h], data["base"][h]] for h in hours]
        job_rows = [[j, data["minutes"][j], data["rate"][j], data["start"][j], data["end"][j]] for j in jobs]
        t1_part0 = table(["Hour", "Band", f"Base load ({e})"], rows)
        t1_part1 = table([v["what"].capitalize(), "Run time (min)", f"Rate ({e}/h)", "From hour", "To hour"], job_rows)
        return {"t1_part0": t1_part0, "t1_part1": t1_part1, "bands": bands, "base": base, "e": e, "limit": limit, "needs":
                needs, "tariff": tariff}
