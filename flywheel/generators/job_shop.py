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

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "print shop": {"jobs": ["Flyers", "Posters", "Menus", "Cards", "Brochures", "Banners"],
                   "machines": ["Press", "Cutter", "Folder", "Binder"], "job": "order"},
    "auto repair garage": {"jobs": ["Sedan", "Van", "Pickup", "Coupe", "Wagon", "Truck"],
                           "machines": ["Lift", "Diagnostics", "PaintBooth", "Alignment"], "job": "car"},
    "hospital laboratory": {"jobs": ["SampleA", "SampleB", "SampleC", "SampleD", "SampleE", "SampleF"],
                            "machines": ["Centrifuge", "Analyser", "Microscope", "Sequencer"], "job": "sample"},
}


@register
class JobShop(Family):
    name = "job_shop"
    problem_class = "MILP"
    sectors = {"print shop": "manufacturing", "auto repair garage": "retail", "hospital laboratory": "health care"}
    techniques = ("precedence_disjunctive", "big_m_indicator", "min_max")
    template_styles = (("plain",), ("table",), ("story",), ("plain",))
    reorder_keys = ("jobs",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
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
        b = ModelBuilder("job_shop")
        jobs = b.add_set("jobs", data["jobs"], "jobs to schedule")
        machines = b.add_set("machines", data["machines"], "machines, one operation at a time")
        b.add_param("time", data["time"], ("jobs", "machines"), "minutes", "processing time of a job on a machine")
        b.add_param("deadline", data["deadline"], (), "minutes", "latest allowed makespan")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        jobs, machines, job = data["jobs"], data["machines"], v["job"]
        routes = "; ".join(f"{j} goes " + listing(data["time"][j], data["route"][j], "{k} ({v} min)", sep=" then ")
                           for j in jobs)
        rule = (f"Each machine handles one {job} at a time and an operation, once started, runs to the end. "
                f"Everything must be finished within {n(data['deadline'])} minutes.")
        if template == 0:
            return (f"A {domain} has {len(jobs)} {job}s ({join(jobs)}) to process on {join(machines)}. Each {job} "
                    f"visits the machines in its own order: {routes}. {rule} Schedule the operations so that the "
                    f"last {job} is finished as early as possible.")
        if template == 1:
            header = [job.capitalize(), "Route"] + [f"{m} (min)" for m in machines]
            rows = [[j, " > ".join(data["route"][j])] + [data["time"][j][m] for m in machines] for j in jobs]
            return (f"Job-shop schedule for a {domain}.\n\n{table(header, rows)}\n\n{rule} Minimise the makespan.")
        if template == 2:
            return (f"It is Monday morning at a busy {domain}, and the manager wants every {job} done as early as "
                    f"possible. The {job}s are {join(jobs)}: {routes}. {rule} When will the last one be finished "
                    "in the best schedule?")
        return (f"Minimise the completion time of the last {job} in a {domain}. Routes and times: {routes}. {rule}")
