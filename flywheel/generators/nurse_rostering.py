"""Nurse rostering (IP): assign staff to the shifts of each day so every shift has its minimum head count, nobody
works twice a day or on a day off, nobody works the first shift of a day after the night shift of the day
before, and nobody exceeds a cap on shifts; minimise wages (hourly rate x shift hours).

``work[n, d, s]`` binary; the coverage rows are set covering; the rest rule is an if-then row
``work[n, d, night] + work[n, d+1, first] <= 1`` (one per person and pair of consecutive days); ``paid[n]`` sums
a person's shift hours, billed at their hourly rate. Feasible by construction: a hidden roster that keeps every rule
is drawn first, and the minimum head counts and caps are at most what it provides. Infeasible variant: one shift
asks for more staff than are available that day, and each person works at most one shift a day.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, VarType


@register
class NurseRostering(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 4x4 / 5x5 / 6x6 staff x days by difficulty, staff names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the days stay in order and the shifts of a day are the pool's (the last one the night).
        staff, shifts = drawn_names(rng, v["staff"], spread(rng, 3 + difficulty, 2), "Person"), v["shifts"]
        days = [f"Day{k}" for k in range(1, 1 + spread(rng, 3 + difficulty, 3))]
        off = sorted([p, days[int(rng.integers(len(days)))]] for p in staff if rng.random() < 0.6)
        roster: dict[str, dict[str, str | None]] = {p: {} for p in staff}
        for p in staff:
            for i, d in enumerate(days):
                ok = [s for s in shifts if not (s == shifts[0] and i and roster[p][days[i - 1]] == shifts[-1])]
                roster[p][d] = None if [p, d] in off or rng.random() < 0.3 else ok[int(rng.integers(len(ok)))]
        count = {d: {s: sum(roster[p][d] == s for p in staff) for s in shifts} for d in days}
        need = {d: {s: max(0, count[d][s] - int(rng.integers(0, 2))) for s in shifts} for d in days}
        cap = {p: sum(s is not None for s in roster[p].values()) + int(rng.integers(0, 2)) for p in staff}
        return {"staff": staff, "days": days, "shifts": shifts, "need": need, "off": off, "cap": cap,
                "hours": {s: int(rng.integers(6, 11)) for s in shifts},
                "wage": {p: int(rng.integers(36, 61)) / 2 for p in staff}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        d = data["days"][int(rng.integers(len(data["days"])))]
        s = data["shifts"][int(rng.integers(len(data["shifts"])))]
        free = sum([p, d] not in data["off"] for p in data["staff"])
        return {**data, "need": exceed(data["need"], d, s, free, 1)}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        staff, days, shifts = b.elements("staff", "days", "shifts")
        need = data["need"]
        b.add_param("need", {(d, s): need[d][s] for d in days for s in shifts}, ("days", "shifts"), "people",
                    "minimum head count of a shift")
        b.add_param("cap", data["cap"], ("staff",), "shifts", "most shifts a person may work")
        b.add_param("hours", data["hours"], ("shifts",), "hours", "length of a shift")
        b.add_param("wage", data["wage"], ("staff",), "money per hour", "hourly rate")
        x = b.add_vars("work", ("staff", "days", "shifts"), VarType.BINARY, description="1 if the person works it")
        paid = b.add_vars("paid", ("staff",), VarType.INTEGER, description="hours a person is paid for", unit="hours")
        b.add_constrs("cover", ("days", "shifts"), "every shift has its minimum head count (covering)",
                      lambda d, s: ([(x[(p, d, s)], 1) for p in staff], ">=", need[d][s]))
        b.add_constrs("daily", ("staff", "days"), "at most one shift a day",
                      lambda p, d: ([(x[(p, d, s)], 1) for s in shifts], "<=", 1))
        b.add_constrs("off", ("staff", "days"), "no shift on a day off",
                      lambda p, d: ([(x[(p, d, s)], 1) for s in shifts], "==", 0), keys=data["off"])
        night = b.add_set("night", shifts[-1:], "the night shift")
        first = b.add_set("first", shifts[:1], "the first shift of a day")
        b.add_constrs("rest", ("staff", "days", "days", "night", "first"),
                      "no first shift right after a night shift (if-then)",
                      lambda p, d, d2, n, f: ([(x[(p, d, n)], 1), (x[(p, d2, f)], 1)], "<=", 1),
                      keys=[(p, d, d2, *night, *first) for p in staff for d, d2 in pairwise(days)])
        b.add_constrs("cap", ("staff",), "no more shifts than a person's cap",
                      lambda p: ([(x[(p, d, s)], 1) for d in days for s in shifts], "<=", data["cap"][p]))
        b.add_constrs("paid_hours", ("staff",), "paid hours are the hours of the shifts worked",
                      lambda p: ([(paid[(p,)], 1)] + [(x[(p, d, s)], -data["hours"][s]) for d in days for s in shifts],
                                 "==", 0))
        b.set_objective("minimize", [(paid[(p,)], data["wage"][p]) for p in staff],
                        description="wages (rate x paid hours)")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        days, need, shifts, staff = data["days"], data["need"], data["shifts"], data["staff"]
        person = v["person"]
        cur = v["money"]
        needs = "; ".join(f"{d}: " + listing(need[d], shifts) for d in days)
        offs = ", ".join(f"{p} on {d}" for p, d in data["off"]) or "nobody"
        rates = listing(data["wage"], staff, "{k} ${v}" if cur == "$" else "{k} {v} " + cur)
        rules = (
            f"A {person} works at most one shift a day and never on a day off ({offs}). Whoever works the "
            f"{shifts[-1]} shift may not work the {shifts[0]} shift the next day. Shift caps over the period: "
            f"{listing(data['cap'], staff)}. Shifts last {listing(data['hours'], shifts, '{v} hours ({k})')}, "
            f"and each {person} is paid per hour: {rates}."
        )
        grid = table(["Day", *shifts], [[d, *(need[d][s] for s in shifts)] for d in days])
        return {"grid": grid, "needs": needs, "person": person, "rules": rules}
