"""Permutation flow shop (MILP): every job passes the machines in the same order, every machine keeps the same
job sequence; choose the sequence that finishes the last job earliest, within a deadline stated in hours.

Positional assignment: ``slot[j, k]`` = 1 when job ``j`` takes position ``k`` (an assignment: one job per
position, one position per job). ``end[k, m]``, the end of position ``k`` on machine ``m``, waits for both the
previous position on the same machine and the same position on the previous machine (the two precedences of a
flow shop; each a row over the consecutive pairs), plus the processing time of whichever job holds the slot. The
makespan is a min-max: it is at least the end of every position on every machine (and, as a valid cut, every
machine's head + load + tail bound).
Feasible by construction: the deadline is the makespan of the
jobs in list order, rounded up to a quarter hour. Infeasible variant: the deadline is below the busiest machine's
total processing time, which that machine needs in any sequence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


def _makespan(order: list[str], machines: list[str], time: dict[str, dict[str, int]]) -> int:
    """End of the last job of ``order`` on the last machine (the flow-shop recursion)."""
    end = dict.fromkeys(machines, 0)
    for j in order:
        ready = 0
        for m in machines:
            ready = end[m] = max(end[m], ready) + time[j][m]
    return end[machines[-1]]


@register
class FlowShop(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x2 / 4x2 / 5x3 jobs x machines by difficulty, job names drawn from the domain's pool
        # (``spread``, ``drawn_names``); the machines keep the pool's route order (its first n).
        jobs = drawn_names(rng, v["jobs"], spread(rng, 2 + difficulty, 2), "Job")
        machines = v["machines"][: spread(rng, (2, 2, 3, 3, 3)[difficulty - 1], 2)]
        time = {j: {m: int(rng.integers(3, 31)) for m in machines} for j in jobs}
        return {"jobs": jobs, "machines": machines, "time": time,
                "deadline": math.ceil(_makespan(jobs, machines, time) / 15) / 4}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        busiest = max(sum(data["time"][j][m] for j in data["jobs"]) for m in data["machines"])
        return {**data, "deadline": (busiest - 1) // 15 / 4}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        jobs, machines = b.elements("jobs", "machines")
        slots = b.add_set("positions", [f"P{k}" for k in range(1, len(jobs) + 1)], "positions in the sequence")
        time = data["time"]
        b.add_param("time", {(j, m): time[j][m] for j in jobs for m in machines}, ("jobs", "machines"), "minutes",
                    "processing time of a job on a machine")
        b.add_param("deadline", data["deadline"], (), "hours", "latest allowed makespan")
        z = b.add_vars("slot", ("jobs", "positions"), VarType.BINARY, description="1 if the job takes the position")
        end = b.add_vars("end", ("positions", "machines"), description="end of a position on a machine",
                         unit="minutes")
        makespan = b.add_var("makespan", description="end of the last job on the last machine", unit="minutes")
        b.con_group("one_job", ("positions",), "each position holds one job")
        b.con_group("one_slot", ("jobs",), "each job takes one position")
        for k in slots:
            b.add_constr("one_job", (k,), [(z[(j, k)], 1) for j in jobs], "==", 1)
        for j in jobs:
            b.add_constr("one_slot", (j,), [(z[(j, k)], 1) for k in slots], "==", 1)
        def work(k: str, m: str) -> list[tuple[str, float]]:
            return [(end[(k, m)], 1)] + [(z[(j, k)], -time[j][m]) for j in jobs]

        b.add_constrs("process", ("positions", "machines"), "a slot ends no earlier than its processing time",
                      lambda k, m: (work(k, m), ">=", 0))
        b.add_constrs("after_slot", ("positions", "positions", "machines"),
                      "a machine takes a slot after the one before it",
                      lambda p, k, m: (work(k, m) + [(end[(p, m)], -1)], ">=", 0),
                      keys=[(p, k, m) for p, k in zip(slots, slots[1:], strict=False) for m in machines])
        b.add_constrs("after_machine", ("positions", "machines", "machines"),
                      "a slot starts on a machine after it leaves the previous machine",
                      lambda k, g, m: (work(k, m) + [(end[(k, g)], -1)], ">=", 0),
                      keys=[(k, g, m) for k in slots for g, m in zip(machines, machines[1:], strict=False)])
        b.add_constrs("makespan", ("positions", "machines"), "the makespan is no earlier than any slot ends (min-max)",
                      lambda k, m: ([(makespan, 1), (end[(k, m)], -1)], ">=", 0))
        # A valid cut (the classic machine bound): machine m cannot start before some job has passed the machines
        # ahead of it, then works its whole load, and the job it ends with still has the machines after it. Without
        # it the LP bound of the positional model is weak and HiGHS needs about a second at 7 jobs.
        bound = {m: min(sum(time[j][g] for g in machines[:h]) for j in jobs) + sum(time[j][m] for j in jobs)
                 + min(sum(time[j][g] for g in machines[h + 1:]) for j in jobs) for h, m in enumerate(machines)}
        b.add_param("machine_bound", bound, ("machines",), "minutes", "least head + load + tail of a machine",
                    derived=True)
        b.con_group("machine_bound", ("machines",), "the makespan is at least every machine's bound")
        for m in machines:
            b.add_constr("machine_bound", (m,), [(makespan, 1)], ">=", bound[m])
        b.con_group("deadline", (), "the makespan meets the deadline (hours x 60)")
        b.add_constr("deadline", (), [(makespan, 1)], "<=", data["deadline"] * 60)
        b.set_objective("minimize", [(makespan, 1)], description="makespan in minutes")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        jobs, machines, time = data["jobs"], data["machines"], data["time"]
        job = v["job"]
        route = " -> ".join(machines)
        times = "; ".join(f"{j}: " + ", ".join(f"{number_text(time[j][m])} on {m}" for m in machines) for j in jobs)
        rules = f"Every {job} visits {route} in that order, each machine works on one {job} at a time, and all machines process the {job}s in the same sequence. Everything must be done within {number_text(data['deadline'])} hours."
        rows = [[j, *(time[j][m] for m in machines)] for j in jobs]
        t1_part0 = table([job.capitalize(), *machines], rows)
        return {"t1_part0": t1_part0, "job": job, "rules": rules, "times": times}
