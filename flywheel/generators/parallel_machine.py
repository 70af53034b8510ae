"""Makespan on unrelated parallel machines (MILP): assign every job to one machine so the last machine finishes as
early as possible, before a deadline.

Processing times are job size times machine slowness with noise (unrelated machines: no two machines rank all jobs
alike). The deadline is at least a greedy schedule's makespan, so the instance is feasible. Infeasible variant: the
deadline is shorter than some job's fastest processing time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "machine shop": {
        "job": "job", "machine": "CNC machine", "unit": "minutes",
        "jobs": ["Gearbox", "Axle", "Bracket", "Housing", "Flange", "Rotor", "Piston", "Valve", "Crank", "Hinge",
                 "Spindle", "Sprocket"],
        "machines": ["CNC_A", "CNC_B", "CNC_C", "CNC_D"],
    },
    "cloud batch computing": {
        "job": "batch task", "machine": "server", "unit": "seconds",
        "jobs": ["Indexing", "Backup", "Render", "Transcode", "Training", "Billing", "Export", "Import", "Audit",
                 "Compress", "Crawl", "Report"],
        "machines": ["NodeA", "NodeB", "NodeC", "NodeD"],
    },
    "operating theatres": {
        "job": "surgery", "machine": "operating room", "unit": "minutes",
        "jobs": ["Hip", "Knee", "Cataract", "Bypass", "Appendix", "Hernia", "Tonsils", "Spine", "Shoulder",
                 "Gallbladder", "Thyroid", "Wrist"],
        "machines": ["Theatre1", "Theatre2", "Theatre3", "Theatre4"],
    },
}


@register
class ParallelMachine(Family):
    name = "parallel_machine"
    problem_class = "MILP"
    sectors = {"machine shop": "manufacturing", "cloud batch computing": "telecom", "operating theatres": "health care"}
    techniques = ("min_max", "set_partitioning_covering")
    template_styles = (("plain",), ("table",), ("plain",), ("table",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        jobs = names(vocab["jobs"], 2 + 2 * difficulty, "Job")
        machines = names(vocab["machines"], 1 + (difficulty + 1) // 2, "Machine")
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
        b = ModelBuilder("parallel_machine")
        jobs = b.add_set("jobs", data["jobs"], "jobs, each processed whole on one machine")
        machines = b.add_set("machines", data["machines"], "parallel machines")
        b.add_param("time", data["time"], ("jobs", "machines"), "time units", "processing time of a job on a machine")
        b.add_param("deadline", data["deadline"], (), "time units", "latest allowed finish time")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        jobs, machines, unit, t = data["jobs"], data["machines"], v["unit"], data["time"]
        times = "; ".join(f"{j}: " + listing(t[j], machines, "{v} on {k}") for j in jobs)
        grid = table([v["job"].capitalize()] + [f"{m} ({unit})" for m in machines],
                     [[j] + [t[j][m] for m in machines] for j in jobs])
        deadline = f"{n(data['deadline'])} {unit}"
        if template == 0:
            return (f"Scheduling in {domain}: {len(jobs)} {v['job']}s ({join(jobs)}) must each be processed on one of the "
                    f"{v['machine']}s {join(machines)}. Processing times in {unit} depend on the {v['machine']}: "
                    f"{times}. A {v['machine']} handles one {v['job']} at a time, and a {v['job']} is never split. "
                    f"Everything starts at time 0 and must be done within {deadline}. Minimise the time at which the "
                    "last one finishes.")
        if template == 1:
            return (f"Minimise the makespan of scheduling these {v['job']}s on unrelated parallel "
                    f"{v['machine']}s ({domain}). Processing times:\n\n{grid}\n\nEach {v['job']} is assigned to "
                    f"exactly one {v['machine']}; all work must finish within {deadline}.")
        if template == 2:
            return (f"Balance the work of {join(machines)} ({domain}). Times ({unit}) per {v['job']} and "
                    f"{v['machine']}: {times}. Choose one {v['machine']} for every {v['job']} so that the largest "
                    f"total load is as small as possible, and no load exceeds {deadline}.")
        return (f"Which {v['machine']} should take each {v['job']} so that all are finished as early as possible? "
                f"The deadline is {deadline}.\n\n{grid}")
