"""Fair workload (IP): give every task to one qualified member of staff (binary ``assign`` only on the qualified
pairs), on top of the hours each already carries, so that the heaviest total load is as light as possible
(min-max: an integer ``peak >= load`` of everyone). Each person works a percentage of a full-time contract, and
their total load may not exceed that share of the full-time hours (``100 * load <= pct * full_time``).

Every number of hours is a whole number, so loads are integers and the integer ``peak`` loses nothing.
Feasible by construction: a planted assignment to qualified staff fits every contract (the full-time hours are
set from it). Infeasible variant: one task grows until all the tasks plus the committed hours exceed the sum of
all contracts; the tasks must all be done, so someone's contract would be broken.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType, number_text


@register
class FairWorkload(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 6x3 / 8x3 / 10x4 tasks x staff by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        tasks = drawn_names(rng, v["tasks"], spread(rng, 4 + 2 * difficulty, 2), "Task")
        staff = drawn_names(rng, v["staff"], spread(rng, 2 + (difficulty + 1) // 2, 2), "Staff")
        hours = {t: int(rng.integers(4, 40)) for t in tasks}
        planted = {t: pick(rng, staff) for t in tasks}
        qualified = {t: [s for s in staff if s == planted[t] or rng.random() < 0.5] for t in tasks}
        committed = {s: int(rng.integers(0, 30)) for s in staff}
        share = {s: int(pick(rng, [50, 60, 75, 80, 100, 100])) for s in staff}
        load = {s: committed[s] + sum(hours[t] for t in tasks if planted[t] == s) for s in staff}
        full = max(math.ceil(load[s] * 100 / share[s]) for s in staff) + int(rng.integers(0, 20))
        return {"tasks": tasks, "staff": staff, "hours": hours, "qualified": qualified, "committed": committed,
                "share_pct": share, "full_time": full}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        t = pick(rng, data["tasks"])
        room = sum(data["share_pct"][s] * data["full_time"] / 100 - data["committed"][s] for s in data["staff"])
        others = sum(data["hours"].values()) - data["hours"][t]
        return exceed(data, "hours", t, room - others, rng.integers(1, 10))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        tasks, staff = b.elements("tasks", "staff")
        b.add_param("hours", data["hours"], ("tasks",), "hours", "hours a task takes")
        b.add_param("committed", data["committed"], ("staff",), "hours", "hours a person already carries")
        b.add_param("share_pct", data["share_pct"], ("staff",), "%", "contract as a percentage of full time")
        b.add_param("full_time", data["full_time"], (), "hours", "hours of a full-time contract")
        pairs = [(t, s) for t in tasks for s in data["qualified"][t]]
        x = b.add_vars("assign", ("tasks", "staff"), VarType.BINARY, keys=pairs,
                       description="1 if the person takes the task (qualified pairs only)")
        load = b.add_vars("load", ("staff",), VarType.INTEGER, description="total load of a person", unit="hours")
        peak = b.add_var("peak", VarType.INTEGER, description="heaviest total load", unit="hours")
        b.add_constrs("cover", ("tasks",), "every task goes to exactly one qualified person",
                      lambda t: ([(x[(t, s)], 1) for s in data["qualified"][t]], "==", 1))
        b.add_constrs("load_def", ("staff",), "a person's load: committed hours plus the tasks taken",
                      lambda s: ([(load[(s,)], 1)] + [(x[(t, s2)], -data["hours"][t]) for t, s2 in pairs if s2 == s],
                                 "==", data["committed"][s]))
        b.add_constrs("peak", ("staff",), "the peak is at least everyone's total load (min-max)",
                      lambda s: ([(peak, 1), (load[(s,)], -1)], ">=", 0))
        b.add_constrs("contract", ("staff",), "total load within the contract's share of full time",
                      lambda s: ([(load[(s,)], 100)], "<=", data["share_pct"][s] * data["full_time"]))
        b.set_objective("minimize", [(peak, 1)], description="heaviest load")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        staff, tasks = data["staff"], data["tasks"]
        task, person = v["task"], v["person"]
        hours = listing(data["hours"], tasks, "{k} {v} h")
        who_can = "; ".join(f"{t}: {join(data['qualified'][t])}" for t in tasks)
        load = listing(data["committed"], staff, "{k} {v} h")
        contract = f"A full-time contract is {number_text(data['full_time'])} hours {v['when']}, and each {person} works a share of it: {listing(data['share_pct'], staff, '{k} {v}%')}. Nobody's total may exceed their share."
        rows = [[t, data["hours"][t], ", ".join(data["qualified"][t])] for t in tasks]
        return {"contract": contract, "hours": hours, "load": load, "person": person, "rows": rows, "task": task, "who_can":
                who_can}
