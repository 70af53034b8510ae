"""Single-machine weighted tardiness (MILP): jobs with processing minutes, due times (hours after the shift
starts) and a cost per minute late run one at a time within the shift; a late job also pays a fixed fee; minimise
the total lateness cost.

Variables are the end times (``p[j] <= end[j] <= M``). Either-or pairs: for every ordered pair of jobs a binary
``first[a, c]`` (exactly one of ``first[a, c]`` and ``first[c, a]`` is 1) and the big-M row
``end[c] >= end[a] + p[c] - M first[c, a]``: ``c`` runs after ``a`` unless it goes first. ``M`` is the shift in
minutes (derived): every job lies inside the shift, so no end differs from another's by more.
``tardy[j] >= end[j] - 60 due[j]`` (and >= 0) is the lateness; the indicator row
``tardy[j] <= M_j late[j]`` (``M_j`` = shift minus due time, in minutes) charges the fee whenever a job is late.
Feasible by construction: the shift is at least the total processing time. Infeasible variant: the shift is
shorter than the total processing time, which one machine doing one job at a time cannot beat.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, money, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class WeightedTardiness(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3 / 4 / 4 jobs by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        jobs = drawn_names(rng, self.vocab[domain]["jobs"], spread(rng, (3, 4, 4, 5, 6)[difficulty - 1], 2), "Job")
        time = {j: int(rng.integers(2, 13)) * 5 for j in jobs}
        total = sum(time.values())
        # Due times spread over 30-90% of the work (quarter hours): some jobs must be late in any order.
        due = {j: max(0.25, math.floor(total * rng.uniform(0.3, 0.9) / 15) / 4) for j in jobs}
        return {"jobs": jobs, "time": time, "due": due, "weight": {j: int(rng.integers(1, 10)) for j in jobs},
                "fee": int(rng.integers(3, 16)) * 10, "shift": (math.ceil(total / 30) + int(rng.integers(0, 3))) / 2}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "shift": (sum(data["time"].values()) - 1) // 30 / 2}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (jobs,) = b.elements("jobs")
        big_m = data["shift"] * 60
        b.add_param("big_m", big_m, (), "minutes", "the shift in minutes (no gap in a schedule is longer)",
                    derived=True)
        # The indicator's own M: a job ending by the shift's end is at most (shift - due) x 60 minutes late. The
        # shift-wide M is valid too but leaves HiGHS a weaker root (seen: 2x the time at 5 jobs).
        late_m = {j: max(0.0, big_m - 60 * data["due"][j]) for j in jobs}
        b.add_param("late_m", late_m, ("jobs",), "minutes", "most lateness a job can have within the shift",
                    derived=True)
        b.add_param("minutes_per_hour", 60, (), "minutes", "minutes in an hour (due times are in hours)",
                    derived=True)
        time = data["time"]
        end = b.add_vars("end", ("jobs",), description="end time after the shift begins", unit="minutes")
        tardy = b.add_vars("tardy", ("jobs",), description="minutes past the due time", unit="minutes")
        late = b.add_vars("late", ("jobs",), VarType.BINARY, description="1 if the job is late (fee charged)")
        b.add_constrs("after_open", ("jobs",), "no job starts before the shift",
                      lambda j: ([(end[(j,)], 1)], ">=", time[j]))
        b.add_constrs("in_shift", ("jobs",), "every job ends within the shift",
                      lambda j: ([(end[(j,)], 1)], "<=", big_m))
        b.add_constrs("tardiness", ("jobs",), "tardy >= end - due (hours x 60)",
                      lambda j: ([(end[(j,)], 1), (tardy[(j,)], -1)], "<=", 60 * data["due"][j]))
        b.add_constrs("late_flag", ("jobs",), "a job with any lateness is flagged late (big-M indicator)",
                      lambda j: ([(tardy[(j,)], 1), (late[(j,)], -late_m[j])], "<=", 0))
        first = b.add_vars("first", ("jobs", "jobs"), VarType.BINARY,
                           description="1 if the first job goes before the second")
        b.add_constrs("one_first", ("jobs", "jobs"), "of two jobs, one goes first",
                      lambda a, c: ([(first[(a, c)], 1), (first[(c, a)], 1)], "==", 1), keys=combinations(jobs, 2))
        b.add_constrs("no_overlap", ("jobs", "jobs"), "a job starts after the other ends, unless it goes first",
                      lambda a, c: ([(end[(c,)], 1), (end[(a,)], -1), (first[(c, a)], big_m)], ">=", time[c]),
                      keys=[(a, c) for a in jobs for c in jobs if a != c])
        b.set_objective("minimize", [(tardy[(j,)], data["weight"][j]) for j in jobs]
                        + [(late[(j,)], data["fee"]) for j in jobs], description="lateness cost plus late fees")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        jobs = data["jobs"]
        job, cur = v["job"], v["money"]
        times = listing(data["time"], jobs, "{k} {v} min")
        dues = listing(data["due"], jobs, "{k} {v} h")
        weights = listing(data["weight"], jobs, "{k} {v}")
        rules = f"The {v['machine']} handles one {job} at a time, without interruption, and all work must end within the {number_text(data['shift'])}-hour shift. Lateness costs the {job}'s rate per minute, and every late {job} also triggers {v['fee']} of {money(data['fee'], cur)}."
        rows = [[j, data["time"][j], data["due"][j], data["weight"][j]] for j in jobs]
        head = [job.capitalize(), "Minutes", "Due (h after start)", f"{cur} per minute late"]
        return {"cur": cur, "dues": dues, "head": head, "job": job, "rows": rows, "rules": rules, "times": times, "weights":
                weights}
