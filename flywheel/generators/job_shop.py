"""Job-shop scheduling (MILP): every job visits machines in its own order; a machine does one operation at a time;
minimise the makespan (a min-max: ``makespan >= end of every job's last operation``), within a deadline.

Precedence inside a job: ``start[j, next] >= start[j, m] + p[j, m]``. Disjunction on a machine for each pair of
jobs, with one binary ``order`` and a big-M equal to the sum of all processing times (a derived parameter, since
no schedule needs longer): ``start[j] >= start[k] + p[k] - M * order`` and ``start[k] >= start[j] + p[j] -
M * (1 - order)``. Feasible by construction: the deadline is the sum of all processing times (one operation at a
time). Infeasible variant: the deadline is shorter than some job's own total processing time.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from flywheel.generators._text import listing, names
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class JobShop(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        jobs = names(v["jobs"], 2 + (difficulty + 1) // 2, "Job")
        machines = names(v["machines"], 2 + difficulty // 2, "Machine")
        route = {j: [machines[int(i)] for i in rng.permutation(len(machines))] for j in jobs}
        time = {j: {m: int(rng.integers(5, 40)) for m in machines} for j in jobs}  # minutes
        return {"jobs": jobs, "machines": machines, "route": route, "time": time,
                "deadline": sum(sum(t.values()) for t in time.values())}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        longest = max(sum(t.values()) for t in data["time"].values())
        return {**data, "deadline": int(longest - rng.integers(1, 5))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        jobs, machines = b.elements("jobs", "machines")
        big_m = sum(data["time"][j][m] for j in jobs for m in machines)
        b.add_param("big_m", big_m, (), "minutes", "sum of all processing times (no schedule needs more)",
                    derived=True)
        start = b.add_vars("start", ("jobs", "machines"), description="start time of an operation", unit="minutes")
        makespan = b.add_var("makespan", description="end of the last operation", unit="minutes")
        b.con_group("route", ("jobs", "machines"), "an operation starts after the job's previous one ends")
        b.con_group("makespan", ("jobs",), "the makespan is no earlier than any job's end (min-max)")
        for j in jobs:
            r = data["route"][j]
            for prev, nxt in zip(r, r[1:], strict=False):
                b.add_constr("route", (j, nxt), [(start[(j, nxt)], 1), (start[(j, prev)], -1)], ">=",
                             data["time"][j][prev])
            b.add_constr("makespan", (j,), [(makespan, 1), (start[(j, r[-1])], -1)], ">=", data["time"][j][r[-1]])
        b.add_set("pairs", [f"{a}__{c}" for a, c in combinations(jobs, 2)], "pairs of jobs sharing a machine")
        order = b.add_vars("order", ("pairs", "machines"), VarType.BINARY,
                           description="1 if the second job of the pair goes first on the machine")
        b.con_group("first_before", ("pairs", "machines"), "the first job ends before the second starts, or ...")
        b.con_group("second_before", ("pairs", "machines"), "... the second ends before the first starts")
        for a, c in combinations(jobs, 2):
            for m in machines:
                o = order[(f"{a}__{c}", m)]
                b.add_constr("first_before", (f"{a}__{c}", m), [(start[(c, m)], 1), (start[(a, m)], -1),
                                                                 (o, big_m)], ">=", data["time"][a][m])
                b.add_constr("second_before", (f"{a}__{c}", m), [(start[(a, m)], 1), (start[(c, m)], -1),
                                                                  (o, -big_m)], ">=", data["time"][c][m] - big_m)
        b.con_group("deadline", (), "the makespan meets the deadline")
        b.add_constr("deadline", (), [(makespan, 1)], "<=", data["deadline"])
        b.set_objective("minimize", [(makespan, 1)], description="makespan")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        jobs, machines = data["jobs"], data["machines"]
        job = v["job"]
        routes = "; ".join(
            f"{j} goes " + listing(data["time"][j], data["route"][j], "{k} ({v} min)", sep=" then ") for j in jobs
        )
        rule = f"Each machine handles one {job} at a time and an operation, once started, runs to the end. Everything must be finished within {number_text(data['deadline'])} minutes."
        header = [job.capitalize(), "Route"] + [f"{m} (min)" for m in machines]
        rows = [[j, " > ".join(data["route"][j])] + [data["time"][j][m] for m in machines] for j in jobs]
        return {"header": header, "job": job, "routes": routes, "rows": rows, "rule": rule}
