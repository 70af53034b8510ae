"""Multi-period workforce planning (IP): month by month, hire trainees, lay off staff and keep enough experienced
staff to cover each month's requirement, at least cost (salaries, hiring and training, severance).

Staff balance: ``staff[t] = staff[t-1] + hire[t-1] - fire[t]`` (``staff[0]`` the current headcount; a hire is a
trainee for one month, then experienced). Trainees need mentors: ``hire[t] <= p/100 * staff[t]`` (a ratio written
linearly). Trainees do not count towards cover: ``staff[t] >= need[t]``. All counts are integers.

Feasible by construction: with ``m[1] = staff0`` and ``m[t] = m[t-1] + floor(p m[t-1] / 100)`` (hiring the most
every month, firing no one), every requirement is at most ``m[t]``. Infeasible variant: one month's requirement is
raised above ``m[t]``, which bounds ``staff[t]`` for every plan (``x + floor(p x / 100)`` grows with ``x``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _most_staff(data: dict[str, Any]) -> list[int]:
    """The most experienced staff each month can have: hire the ratio's maximum every month, fire no one."""
    most = [data["staff0"]]
    for _ in data["months"][1:]:
        most.append(most[-1] + most[-1] * data["ratio"] // 100)
    return most


@register
class WorkforcePlanning(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4 / 5 / 6 months by difficulty (``spread``); the months stay in calendar order, from a drawn
        # first month (the plan may run over the new year), so their names are read from the question too.
        n_months = spread(rng, 3 + difficulty, 2, high=len(_MONTHS))
        first = int(rng.integers(len(_MONTHS)))
        months = [_MONTHS[(first + k) % len(_MONTHS)] for k in range(n_months)]
        data = {"months": months, "staff0": int(rng.integers(20, 60)), "ratio": int(rng.integers(10, 35))}
        need = {m: max(1, int(most * rng.uniform(0.55, 1.0))) for m, most in zip(months, _most_staff(data),
                                                                                  strict=True)}
        salary, hire_cost, fire_cost = (int(rng.integers(lo, hi)) * 100 for lo, hi in ((30, 60), (15, 60), (20, 80)))
        return {**data, "need": need, "salary": salary, "hire_cost": hire_cost, "fire_cost": fire_cost}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        k = int(rng.integers(len(data["months"])))
        return {**data, "need": {**data["need"], data["months"][k]: _most_staff(data)[k] + int(rng.integers(1, 6))}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (months,) = b.elements("months")
        staff = b.add_vars("staff", ("months",), VarType.INTEGER, description="experienced staff in a month")
        hire = b.add_vars("hire", ("months",), VarType.INTEGER, description="trainees hired in a month")
        fire = b.add_vars("fire", ("months",), VarType.INTEGER, description="layoffs at the start of a month")
        b.con_group("balance", ("months",), "staff = last month's staff + last month's trainees - layoffs")
        b.con_group("mentors", ("months",), "trainees at most the ratio (percent) of experienced staff")
        b.con_group("cover", ("months",), "experienced staff cover the month's requirement")
        for k, m in enumerate(months):
            carried = [(staff[(months[k - 1],)], -1), (hire[(months[k - 1],)], -1)] if k else []
            b.add_constr("balance", (m,), [(staff[(m,)], 1), (fire[(m,)], 1)] + carried, "==",
                         0 if k else data["staff0"])
            b.add_constr("mentors", (m,), [(hire[(m,)], 1), (staff[(m,)], -data["ratio"] / 100)], "<=", 0)
            b.add_constr("cover", (m,), [(staff[(m,)], 1)], ">=", data["need"][m])
        b.set_objective("minimize", [(staff[(m,)], data["salary"]) for m in months]
                        + [(hire[(m,)], data["hire_cost"]) for m in months]
                        + [(fire[(m,)], data["fire_cost"]) for m in months], description="total staffing cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        d, staff = data, v["staff"]
        needs = listing(d["need"], d["months"], "{v} in {k}")
        trainees = f"A new hire spends the month of hiring as a trainee and is experienced from the next month on; trainees do not count towards cover, and each month there may be at most {number_text(d['ratio'])} trainees per 100 experienced {staff} (each needs {v['mentor']} as mentor)."
        layoffs = "Layoffs happen at the start of a month."
        start = f"There are {number_text(d['staff0'])} experienced {staff} now, just before {d['months'][0]}."
        rows = [[m, d["need"][m]] for m in d["months"]]
        t1_part0 = table(["Month", f"Experienced {staff} needed"], rows)
        return {"t1_part0": t1_part0, "d": d, "layoffs": layoffs, "needs": needs, "staff": staff, "start": start, "trainees":
                trainees}
