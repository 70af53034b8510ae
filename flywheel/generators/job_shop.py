"""Job-shop scheduling (MILP): every job visits machines in its own order; a machine does one operation at a time;
minimise the makespan (a min-max: ``makespan >= end of every operation``), within a deadline.

Precedence inside a job, for each step of its route: ``start[j, next] >= start[j, m] + p[j, m]``. Disjunction on a
machine for each ordered pair of jobs, with a binary ``first[a, c, m]`` (exactly one of ``first[a, c, m]`` and
``first[c, a, m]`` is 1) and the deadline as big-M (no operation ends after it, so a relaxed row always holds):
``start[c, m] >= start[a, m] + p[a, m] - deadline * first[c, a, m]``. Feasible by construction: the deadline is the
sum of all processing times (one operation at a time). Infeasible variant: the deadline is shorter than some job's
own total processing time.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class JobShop(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x2 / 3x3 / 4x3 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        jobs = drawn_names(rng, v["jobs"], spread(rng, 2 + (difficulty + 1) // 2, 2), "Job")
        machines = drawn_names(rng, v["machines"], spread(rng, 2 + difficulty // 2, 2), "Machine")
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
        time = data["time"]
        start = b.add_vars("start", ("jobs", "machines"), description="start time of an operation", unit="minutes")
        makespan = b.add_var("makespan", description="end of the last operation", unit="minutes")
        steps = [(j, m, n) for j in jobs for m, n in zip(data["route"][j], data["route"][j][1:], strict=False)]
        b.add_constrs("route", ("jobs", "machines", "machines"),
                      "an operation starts after the job's previous one ends",
                      lambda j, m, n: ([(start[(j, n)], 1), (start[(j, m)], -1)], ">=", time[j][m]), keys=steps)
        b.add_constrs("makespan", ("jobs", "machines"), "the makespan is no earlier than any operation's end (min-max)",
                      lambda j, m: ([(makespan, 1), (start[(j, m)], -1)], ">=", time[j][m]))
        first = b.add_vars("first", ("jobs", "jobs", "machines"), VarType.BINARY,
                           description="1 if the first job goes before the second on the machine")
        pairs = [(a, c, m) for a in jobs for c in jobs if a != c for m in machines]
        b.add_constrs("one_first", ("jobs", "jobs", "machines"), "of two jobs on a machine, one goes first",
                      lambda a, c, m: ([(first[(a, c, m)], 1), (first[(c, a, m)], 1)], "==", 1),
                      keys=[(a, c, m) for a, c in combinations(jobs, 2) for m in machines])
        # Disjunction with the deadline as big-M: no operation ends after it, so a relaxed row always holds.
        b.add_constrs("no_overlap", ("jobs", "jobs", "machines"),
                      "a job ends on a machine before the other starts, unless the other goes first",
                      lambda a, c, m: ([(start[(c, m)], 1), (start[(a, m)], -1), (first[(c, a, m)], data["deadline"])],
                                       ">=", time[a][m]), keys=pairs)
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
