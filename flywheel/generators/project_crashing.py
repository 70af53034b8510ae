"""Project crashing (LP): activities with precedences, a normal and a crash (shortest) duration and a cost per
day saved; shorten ("crash") activities so the project finishes by its deadline at the least cost.

``start[a] >= 0``; ``cut[a] >= 0`` days is how much an activity is shortened, ``duration[a] = normal[a] - cut[a]``
at least the crash duration; a precedence ``a -> b`` means ``start[b] >= start[a] + duration[a]``; every activity
ends by the deadline. Crash costs are stated in thousands of dollars per day and kept so (the objective is in
thousands). Feasible by construction: the deadline is at least the longest path with every activity crashed.
Infeasible variant: the deadline is shorter than that path, which no amount of crashing can beat.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import drawn_names, join, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


def _longest(acts: list[str], pred: dict[str, list[str]], dur: dict[str, int]) -> int:
    """Length of the longest path (activities listed in an order that respects ``pred``)."""
    end: dict[str, int] = {}
    for a in acts:
        end[a] = max((end[p] for p in pred[a]), default=0) + dur[a]
    return max(end.values())


@register
class ProjectCrashing(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6 / 8 / 10 activities by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        acts = drawn_names(rng, self.vocab[domain]["acts"], spread(rng, 4 + 2 * difficulty, 3), "Task")
        normal = {a: int(rng.integers(3, 16)) for a in acts}
        crash = {a: max(1, normal[a] - int(rng.integers(0, normal[a] // 2 + 1))) for a in acts}
        pred = {a: sorted({acts[int(rng.integers(k))] for _ in range(int(rng.integers(1, 3)))}) if k else []
                for k, a in enumerate(acts)}
        lo, hi = _longest(acts, pred, crash), _longest(acts, pred, normal)
        return {"activities": acts, "normal": normal, "crash": crash, "pred": pred,
                "cost": {a: int(rng.integers(2, 40)) / 2 for a in acts},
                "deadline": lo + int((hi - lo) * rng.uniform(0.3, 0.8))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        floor = _longest(data["activities"], data["pred"], data["crash"])
        return {**data, "deadline": floor - int(rng.integers(1, 4))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (acts,) = b.elements("activities")
        for name, unit, text in (("normal", "days", "duration without crashing"),
                                 ("crash", "days", "shortest possible duration"),
                                 ("cost", "thousand $ per day", "cost of shortening by one day")):
            b.add_param(name, data[name], ("activities",), unit, text)
        b.add_param("deadline", data["deadline"], (), "days", "latest allowed finish")
        start = b.add_vars("start", ("activities",), description="start day", unit="days")
        dur = b.add_vars("duration", ("activities",), description="duration after crashing", unit="days")
        cut = b.add_vars("cut", ("activities",), description="days an activity is shortened", unit="days")
        b.add_constrs("shorten", ("activities",), "the duration is the normal one less the days cut",
                      lambda a: ([(dur[(a,)], 1), (cut[(a,)], 1)], "==", data["normal"][a]))
        b.add_constrs("crash_limit", ("activities",), "no activity shorter than its crash duration",
                      lambda a: ([(dur[(a,)], 1)], ">=", data["crash"][a]))
        b.add_constrs("finish", ("activities",), "every activity ends by the deadline",
                      lambda a: ([(start[(a,)], 1), (dur[(a,)], 1)], "<=", data["deadline"]))
        b.add_constrs("precedence", ("activities", "activities"), "an activity starts once its predecessor has ended",
                      lambda p, a: ([(start[(a,)], 1), (start[(p,)], -1), (dur[(p,)], -1)], ">=", 0),
                      keys=[(p, a) for a in acts for p in data["pred"][a]])
        b.set_objective("minimize", [(cut[(a,)], data["cost"][a]) for a in acts],
                        description="crashing cost (thousand $)")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        pred = data["pred"]
        acts = data["activities"]
        deps = "; ".join(f"{a} needs {join(pred[a])} finished" for a in acts if pred[a])
        durs = "; ".join(
            f"{a} {number_text(data['normal'][a])} days (at best {number_text(data['crash'][a])})" for a in acts
        )
        price = ", ".join(f"{a} ${thousands(data['cost'][a] * 1000)}" for a in acts)
        goal = f"{v['who'].capitalize()} must {v['goal']} within {number_text(data['deadline'])} days of the start."
        rows = [[a, data["normal"][a], data["crash"][a], data["cost"][a], ", ".join(pred[a]) or "-"] for a in acts]
        head = ["Activity", "Normal (days)", "Crash (days)", "Cost per day saved ($k)", "Predecessors"]
        t3_part0 = ", ".join(f"{a} {number_text(data['cost'][a])}" for a in acts)
        return {"t3_part0": t3_part0, "deps": deps, "durs": durs, "goal": goal, "head": head, "price": price, "rows": rows}
