"""Assignment (IP, binary): give every task to exactly one qualified worker, each worker at most one task, at least
cost.

Some worker-task pairs are not qualified; a hidden perfect assignment always stays qualified, so the instance is
feasible. Infeasible variant: two tasks become doable only by the same single worker (Hall's condition fails).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType

_DOMAINS: dict[str, dict[str, Any]] = {
    "consulting firm": {
        "worker": "consultant", "task": "project", "cost": "effort in hours",
        "workers": ["Alice", "Bob", "Chen", "Dana", "Eve", "Farid", "Grace", "Hugo", "Ines", "Jon", "Kira", "Liam"],
        "tasks": ["Audit", "Merger", "Tax", "Pricing", "Strategy", "Risk", "Hiring", "Supply", "Marketing", "Legal",
                  "Payroll"],
    },
    "machine shop": {
        "worker": "machine", "task": "job", "cost": "setup time in minutes",
        "workers": ["Lathe1", "Lathe2", "Mill1", "Mill2", "Drill1", "Drill2", "Grinder1", "Press1", "Press2",
                    "Saw1", "Router1", "Laser1"],
        "tasks": ["Shaft", "Gear", "Bracket", "Housing", "Flange", "Bushing", "Spindle", "Pulley", "Coupling",
                  "Valve", "Cam"],
    },
    "translation agency": {
        "worker": "translator", "task": "document", "cost": "fee in EUR",
        "workers": ["Anna", "Boris", "Carla", "Dmitri", "Elena", "Felix", "Gita", "Henrik", "Ivo", "Julia",
                    "Karl", "Lena"],
        "tasks": ["Contract", "Manual", "Website", "Patent", "Brochure", "Report", "Subtitles", "Letter",
                  "Thesis", "Menu", "Poster"],
    },
}


@register
class Assignment(Family):
    name = "assignment"
    problem_class = "IP"
    sectors = {"consulting firm": "finance", "machine shop": "manufacturing", "translation agency": "public services"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        n_tasks = 1 + 2 * difficulty
        workers = names(vocab["workers"], n_tasks + 1, "Worker")
        tasks = names(vocab["tasks"], n_tasks, "Task")
        cost = {w: {t: int(rng.integers(5, 60)) for t in tasks} for w in workers}
        hidden = rng.permutation(len(workers))[:n_tasks]  # task k -> worker hidden[k] stays qualified
        keep = {(workers[int(w)], t) for w, t in zip(hidden, tasks, strict=True)}
        unqualified = sorted((w, t) for w in workers for t in tasks if (w, t) not in keep and rng.random() < 0.2)
        return {"workers": workers, "tasks": tasks, "cost": cost, "unqualified": [list(p) for p in unqualified]}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        t1, t2 = (data["tasks"][int(i)] for i in rng.choice(len(data["tasks"]), 2, replace=False))
        only = pick(rng, data["workers"])
        banned = {tuple(p) for p in data["unqualified"]}
        banned |= {(w, t) for w in data["workers"] for t in (t1, t2) if w != only}
        return {**data, "unqualified": [list(p) for p in sorted(banned)]}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("assignment")
        workers = b.add_set("workers", data["workers"], "who can take a task")
        tasks = b.add_set("tasks", data["tasks"], "tasks that must each be covered once")
        b.add_param("cost", data["cost"], ("workers", "tasks"), "cost units", "cost of giving a task to a worker")
        x = b.add_vars("assign", ("workers", "tasks"), VarType.BINARY, description="1 if the worker gets the task")
        b.add_constrs("one_worker_per_task", ("tasks",), "every task gets exactly one worker",
                      lambda t: ([(x[(w, t)], 1) for w in workers], "==", 1))
        b.add_constrs("one_task_per_worker", ("workers",), "no worker takes more than one task",
                      lambda w: ([(x[(w, t)], 1) for t in tasks], "<=", 1))
        b.add_constrs("unqualified", ("workers", "tasks"), "a worker never gets a task they are not qualified for",
                      lambda w, t: ([(x[(w, t)], 1)], "==", 0), keys=data["unqualified"])
        b.set_objective("minimize", [(x[(w, t)], data["cost"][w][t]) for w in workers for t in tasks],
                        description="total assignment cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        workers, tasks = data["workers"], data["tasks"]
        banned: dict[str, list[str]] = {}
        for w, t in data["unqualified"]:
            banned.setdefault(w, []).append(t)
        rules = ("; ".join(f"{w} cannot do {join(ts)}" for w, ts in banned.items()) + ".") if banned else (
            f"Every {v['worker']} is qualified for every {v['task']}.")
        costs = "; ".join(f"{w}: " + listing(data["cost"][w], tasks) for w in workers)
        unit = v["cost"]
        if template == 0:
            return (f"A {domain} must assign {len(tasks)} {v['task']}s ({join(tasks)}) to its {len(workers)} "
                    f"{v['worker']}s ({join(workers)}). Each {v['task']} goes to exactly one {v['worker']} and each "
                    f"{v['worker']} takes at most one. The {unit} of each pairing is: {costs}. Restrictions: {rules} "
                    "Find the assignment with the smallest total.")
        if template == 1:
            return (f"Minimise the total {unit} of matching {v['task']}s to {v['worker']}s. Costs by "
                    f"{v['worker']}: {costs}. Qualification limits: {rules} Every {v['task']} needs one "
                    f"{v['worker']}; no {v['worker']} can take two.")
        if template == 2:
            header = [f"{v['worker'].capitalize()} \\ {v['task']}"] + tasks
            rows = [[w] + [data["cost"][w][t] for t in tasks] for w in workers]
            return (f"The table gives the {unit} for each {v['worker']} ({domain}).\n\n{table(header, rows)}\n\n"
                    f"{rules} Assign each {v['task']} to one {v['worker']}, at most one {v['task']} per "
                    f"{v['worker']}, minimising the total.")
        return (f"Which {v['worker']} should handle which {v['task']}? {rules} Pairing costs ({unit}): {costs}. "
                f"Every {v['task']} must be covered by a single {v['worker']}, who can handle only one. Aim for the "
                "lowest total.")
