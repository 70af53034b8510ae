"""Shift staffing (IP): how many staff start each shift type at each period of a cyclic day so every period is
covered, at least cost and within a headcount cap.

Shifts wrap around midnight. Difficulty refines the periods (4 h, 2 h, 1 h) and adds shift types (drawn from Full,
Half and Long). The headcount cap is at least what tiling the day with shifts of one type would need, so the
instance is feasible. Infeasible variant: the
cap falls below the busiest period's demand, and every person works one shift.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, money, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text

# difficulty -> (hours per period, shift types used); shift types are (name, hours), all multiples of the period.
_LEVELS = {1: (4, 1), 2: (4, 2), 3: (2, 2), 4: (2, 3), 5: (1, 3)}
_SHIFTS = (("Full", 8), ("Half", 4), ("Long", 12))


@register
class ShiftStaffing(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        period_hours, n_types = _LEVELS[difficulty]
        periods = [f"h{h:02d}" for h in range(0, 24, period_hours)]
        # Shift types around 1 / 2 / 2 by difficulty, drawn from the three (``spread``, ``drawn_names``); the periods
        # tile the day in order, their length set by the difficulty.
        hours_of = dict(_SHIFTS)
        shifts = drawn_names(rng, list(hours_of), spread(rng, n_types, high=len(_SHIFTS)), "Shift")
        length = {name: hours_of[name] for name in shifts}
        # Busy in the day, quiet at night: a smooth profile plus noise.
        demand = {p: int(max(1, round(8 + 6 * np.sin((h - 8) * np.pi / 12) + rng.integers(-2, 3))))
                  for p, h in zip(periods, range(0, 24, period_hours), strict=True)}
        cost = {name: int(length[name] * rng.integers(18, 30) + rng.integers(0, 20)) for name in shifts}
        # Witness: shifts of the first drawn type back to back (every length divides 24 h), each staffed for the
        # busiest period it covers.
        per = length[shifts[0]] // period_hours
        witness = sum(max(demand[periods[(k + j) % len(periods)]] for j in range(per))
                      for k in range(0, len(periods), per))
        return {"periods": periods, "period_hours": period_hours, "shifts": shifts, "length": length,
                "demand": demand, "cost": cost, "max_staff": witness + int(rng.integers(0, 6))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "max_staff": max(data["demand"].values()) - 1}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        periods, shifts = b.elements("periods", "shifts")
        start = b.add_vars("start", ("shifts", "periods"), VarType.INTEGER,
                           description="staff starting a shift type at a period", unit="staff")
        n = len(periods)
        b.con_group("cover", ("periods",), "staff on duty meet the demand of every period (shifts wrap midnight)")
        for k, p in enumerate(periods):
            terms = [(start[(s, periods[(k - j) % n])], 1) for s in shifts
                     for j in range(data["length"][s] // data["period_hours"])]
            b.add_constr("cover", (p,), terms, ">=", data["demand"][p])
        b.con_group("headcount", (), "no more staff than available")
        b.add_constr("headcount", (), [(x, 1) for x in start.values()], "<=", data["max_staff"])
        b.set_objective("minimize", [(start[(s, p)], data["cost"][s]) for s in shifts for p in periods],
                        description="total wage cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        staff, ph, cur = v["staff"], data["period_hours"], v["money"]
        hours = [int(p[1:]) for p in data["periods"]]
        need = ", ".join(
            (f"{number_text(data['demand'][p])} from {h:02d}:00" for h, p in zip(hours, data["periods"], strict=True))
        )
        kinds = "; ".join(
            f"a {s} shift lasts {number_text(data['length'][s])} consecutive hours and costs {money(data['cost'][s], cur)} per person"
            for s in data["shifts"]
        )
        cap = number_text(data["max_staff"])
        rule = f"Shifts may start at the beginning of any {number_text(ph)}-hour period and may run past midnight into the next day (the schedule repeats daily)."
        rows = [[f"{h:02d}:00", data["demand"][p]] for h, p in zip(hours, data["periods"], strict=True)]
        shifts = table(
            ["Shift", "Hours", f"Cost ({cur} per person)"],
            [[s, data["length"][s], data["cost"][s]] for s in data["shifts"]],
        )
        t2_part0 = table(["Period start", f"{staff.capitalize()} needed"], rows)
        return {"t2_part0": t2_part0, "cap": cap, "kinds": kinds, "need": need, "ph": ph, "rule": rule, "shifts": shifts,
                "staff": staff}
