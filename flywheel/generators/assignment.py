"""Assignment (IP, binary): give every task to exactly one qualified worker, each worker at most one task, at least
cost.

Some worker-task pairs are not qualified; a hidden perfect assignment always stays qualified, so the instance is
feasible. Infeasible variant: two tasks become doable only by the same single worker (Hall's condition fails).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType


@register
class Assignment(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 4x3 / 6x5 / 8x7 by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        n_tasks = spread(rng, 1 + 2 * difficulty, 2)
        workers = drawn_names(rng, vocab["workers"], n_tasks + 1, "Worker")
        tasks = drawn_names(rng, vocab["tasks"], n_tasks, "Task")
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
        b = self.builder(data)
        workers, tasks = b.elements("workers", "tasks")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        tasks, workers = data["tasks"], data["workers"]
        banned: dict[str, list[str]] = {}
        for w, t in data["unqualified"]:
            banned.setdefault(w, []).append(t)
        rules = (
            ("; ".join(f"{w} cannot do {join(ts)}" for w, ts in banned.items()) + ".")
            if banned
            else (f"Every {v['worker']} is qualified for every {v['task']}.")
        )
        costs = "; ".join(f"{w}: " + listing(data["cost"][w], tasks) for w in workers)
        unit = v["cost"]
        header = [f"{v['worker'].capitalize()} \\ {v['task']}"] + tasks
        rows = [[w] + [data["cost"][w][t] for t in tasks] for w in workers]
        return {"costs": costs, "header": header, "rows": rows, "rules": rules, "unit": unit}
