"""Sequence-dependent setups (MILP): one machine runs every job once, starting from and returning to a clean
state; the changeover between two jobs depends on their order (asymmetric); some jobs must run before others;
minimise the cost of the changeover time, priced per hour.

The sequence is an asymmetric travelling-salesman tour through the clean state. Miller-Tucker-Zemlin position
variables (``position[j]`` in [1, n]; a used changeover ``i -> j`` forces ``position[j] >= position[i] + 1``, a
big-M row with M = n, the number of jobs) remove sub-cycles and carry the precedences:
``position[second] >= position[first] + 1``. Feasible by construction: the precedences follow one random order
of the jobs, so that order satisfies them. Infeasible variant: a precedence is added in the reverse direction of
an existing one, so ``position[a] >= position[b] + 1 >= position[a] + 2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators import _routing as rt
from flywheel.generators._text import money, names
from flywheel.generators.base import Family, register
from solvers.ir import Model


@register
class SequenceSetup(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        jobs = names(v["jobs"], 3 + difficulty, "Job")
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
        x = rt.legs(b, states, data["change"], "change", "minutes", "changeover time from one job to the next")
        b.add_param("rate", data["rate"], (), "money per hour", "cost of one hour of changeover")
        pos = b.add_vars("position", ("jobs",), lb=1, ub=len(jobs), description="place of a job in the sequence")
        rt.degree(b, x, states, states)
        rt.mtz(b, x, pos, jobs, dict.fromkeys(jobs, 1), len(jobs),
               "if job j directly follows job i, position[j] >= position[i] + 1")
        b.add_set("precedences", [f"{a}__{c}" for a, c in data["before"]], "pairs First__Second")
        b.con_group("before", ("precedences",), "the first job of a pair runs before the second")
        for a, c in data["before"]:
            b.add_constr("before", (f"{a}__{c}",), [(pos[(c,)], 1), (pos[(a,)], -1)], ">=", 1)
        b.set_objective("minimize", [(x[p], data["change"][p[0]][p[1]] * data["rate"] / 60) for p in x],
                        description="cost of the changeover time (minutes x rate per hour / 60)")
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
