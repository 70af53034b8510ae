"""Makespan on unrelated parallel machines (MILP): assign every job to one machine so the last machine finishes as
early as possible, before a deadline.

Processing times are job size times machine slowness with noise (unrelated machines: no two machines rank all jobs
alike). The deadline is at least a greedy schedule's makespan, so the instance is feasible. Infeasible variant: the
deadline is shorter than some job's fastest processing time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class ParallelMachine(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 4x2 / 6x2 / 8x3 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        jobs = drawn_names(rng, vocab["jobs"], spread(rng, 2 + 2 * difficulty, 2), "Job")
        machines = drawn_names(rng, vocab["machines"], spread(rng, 1 + (difficulty + 1) // 2, 2), "Machine")
        size = {j: int(rng.integers(10, 60)) for j in jobs}
        slowness = {m: float(rng.uniform(0.8, 1.5)) for m in machines}
        time = {j: {m: max(1, int(round(size[j] * slowness[m] * rng.uniform(0.7, 1.3)))) for m in machines}
                for j in jobs}
        load = dict.fromkeys(machines, 0)  # greedy witness: longest job first, to the machine finishing earliest
        for j in sorted(jobs, key=lambda j: (-min(time[j].values()), j)):
            best = min(machines, key=lambda m: (load[m] + time[j][m], m))
            load[best] += time[j][best]
        return {"jobs": jobs, "machines": machines, "time": time,
                "deadline": max(load.values()) + int(rng.integers(0, 15))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        longest = max(min(row.values()) for row in data["time"].values())
        return {**data, "deadline": longest - int(rng.integers(1, 5))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        jobs, machines = b.elements("jobs", "machines")
        x = b.add_vars("assign", ("jobs", "machines"), VarType.BINARY, description="1 if the job runs on the machine")
        cmax = b.add_var("makespan", description="finish time of the busiest machine", unit="time units")
        b.add_constrs("assign", ("jobs",), "every job runs on exactly one machine",
                      lambda j: ([(x[(j, m)], 1) for m in machines], "==", 1))
        b.add_constrs("load", ("machines",), "each machine's total processing time is at most the makespan",
                      lambda m: ([(x[(j, m)], data["time"][j][m]) for j in jobs] + [(cmax, -1)], "<=", 0))
        b.con_group("deadline", (), "everything finishes by the deadline")
        b.add_constr("deadline", (), [(cmax, 1)], "<=", data["deadline"])
        b.set_objective("minimize", [(cmax, 1)], description="makespan")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        jobs, machines = data["jobs"], data["machines"]
        unit, t = v["unit"], data["time"]
        times = "; ".join(f"{j}: " + listing(t[j], machines, "{v} on {k}") for j in jobs)
        grid = table(
            [v["job"].capitalize()] + [f"{m} ({unit})" for m in machines],
            [[j] + [t[j][m] for m in machines] for j in jobs],
        )
        deadline = f"{number_text(data['deadline'])} {unit}"
        return {"deadline": deadline, "grid": grid, "times": times, "unit": unit}
