"""Sequence-dependent setups (MILP): one machine runs every job once, starting from and returning to a clean
state; the changeover between two jobs depends on their order (asymmetric); some jobs must run before others;
minimise the cost of the changeover time, priced per hour.

The sequence is an asymmetric travelling-salesman tour through the clean state. Miller-Tucker-Zemlin position
variables (``position[j]`` in [1, n]; a used changeover ``i -> j`` forces ``position[j] >= position[i] + 1``, a
big-M row with M = n, the number of jobs) remove sub-cycles and carry the precedences:
``position[second] >= position[first] + 1``. The cost is ``rate * hours`` with ``60 * hours`` the changeover
minutes (at a rate of 60, the minutes themselves). Feasible by construction: the precedences follow one random
order of the jobs, so that order satisfies them. Infeasible variant: a precedence is added in the reverse direction
of an existing one, so ``position[a] >= position[b] + 1 >= position[a] + 2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators import _routing as rt
from flywheel.generators._text import drawn_names, money, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model

# The rate is per hour, the changeovers in minutes. At a rate of 60 (a money unit a minute) the objective is the
# minutes themselves: an hours row ``60 * hours == minutes`` would read as ``rate * hours`` in a program.
_MINUTES_PER_HOUR = 60


@register
class SequenceSetup(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 4 / 5 / 6 jobs by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        jobs = drawn_names(rng, v["jobs"], spread(rng, 3 + difficulty, 3), "Job")
        states = [v["clean"], *jobs]
        change = {a: {c: int(rng.integers(4, 40)) * 5 for c in states if c != a} for a in states}  # minutes
        order = [jobs[int(i)] for i in rng.permutation(len(jobs))]
        picks = sorted(int(i) for i in rng.choice(len(jobs), size=2, replace=False))
        before = [[order[picks[0]], order[picks[1]]]]
        if difficulty >= 3:
            third = sorted(int(i) for i in rng.choice(len(jobs), size=2, replace=False))
            if order[third[0]] not in before[0] or order[third[1]] not in before[0]:
                before.append([order[third[0]], order[third[1]]])
        return {"clean": v["clean"], "jobs": jobs, "change": change, "before": before,
                "rate": int(rng.integers(4, 17)) * 15}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        first, second = data["before"][int(rng.integers(len(data["before"])))]
        return {**data, "before": [*data["before"], [second, first]]}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        states = b.add_set("places", [data["clean"], *data["jobs"]], "the clean state (first) and the jobs")
        jobs = b.add_set("jobs", data["jobs"], "jobs, each run once")
        n = len(jobs)
        b.add_param("n_jobs", n, (), "", "number of jobs: the MTZ big-M", derived=True)
        x = rt.legs(b, states, data["change"], "change", "minutes", "changeover time from one job to the next")
        b.add_param("rate", data["rate"], (), "money per hour", "cost of one hour of changeover")
        pos = b.add_vars("position", ("jobs",), lb=1, ub=n, description="place of a job in the sequence")
        rt.degree(b, x, states, "places")
        b.add_constrs("mtz", ("jobs", "jobs"), "if job j directly follows job i, position[j] >= position[i] + 1",
                      lambda a, c: ([(pos[(a,)], 1), (pos[(c,)], -1), (x[(a, c)], n)], "<=", n - 1),
                      keys=[(a, c) for a in jobs for c in jobs if a != c])
        b.add_constrs("before", ("jobs", "jobs"), "the first job of a pair runs before the second",
                      lambda a, c: ([(pos[(c,)], 1), (pos[(a,)], -1)], ">=", 1), keys=data["before"])
        minutes = [(x[p], data["change"][p[0]][p[1]]) for p in x]
        if data["rate"] == _MINUTES_PER_HOUR:  # a money unit a minute: the cost is the minutes
            b.set_objective("minimize", minutes, description="cost of the changeover time (minutes x rate / 60)")
            return b.build()
        hours = b.add_var("changeover_hours", description="total changeover time", unit="hours")
        b.add_constrs("hours", (), "the changeover minutes in hours",
                      lambda: ([(hours, _MINUTES_PER_HOUR)] + [(v, -c) for v, c in minutes], "==", 0))
        b.set_objective("minimize", [(hours, data["rate"])], description="cost of the changeover time")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        change, clean, jobs = data["change"], data["clean"], data["jobs"]
        job = v["job"]
        states = [clean, *jobs]
        rate = f"{money(data['rate'], v['money'])} per hour"
        changes = rt.pairs_text(states, change, "{a} to {c} {v}", symmetric=False)
        rules = " ".join(f"{a} must run before {c} ({v['why']})." for a, c in data["before"])
        frame = (
            f"The {v['machine']} starts from {v['state']} ({clean}) and must end there again, running each "
            f"{job} once. {rules} Changeover time costs {rate}."
        )
        return {"changes": changes, "frame": frame, "job": job, "states": states}
