"""Shift staffing (IP): how many staff start each shift type at each period of a cyclic day so every period is
covered, at least cost and within a headcount cap.

Shifts wrap around midnight. Difficulty refines the periods (4 h, 2 h, 1 h) and adds shift types. The headcount cap
is at least what tiling the day with full shifts would need, so the instance is feasible. Infeasible variant: the
cap falls below the busiest period's demand, and every person works one shift.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import money, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "call centre": {"staff": "agents", "money": "$", "place": "a 24-hour customer call centre"},
    "hospital emergency department": {"staff": "nurses", "money": "$", "place": "a hospital emergency department"},
    "city police": {"staff": "officers", "money": "EUR", "place": "a city police patrol unit"},
}
# difficulty -> (hours per period, shift types used); shift types are (name, hours), all multiples of the period.
_LEVELS = {1: (4, 1), 2: (4, 2), 3: (2, 2), 4: (2, 3), 5: (1, 3)}
_SHIFTS = (("Full", 8), ("Half", 4), ("Long", 12))


@register
class ShiftStaffing(Family):
    name = "shift_staffing"
    problem_class = "IP"
    sectors = {"call centre": "telecom", "hospital emergency department": "health care", "city police": "public services"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))
    reorder_keys = ("shifts",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        period_hours, n_types = _LEVELS[difficulty]
        periods = [f"h{h:02d}" for h in range(0, 24, period_hours)]
        shifts = [name for name, _ in _SHIFTS[:n_types]]
        length = {name: hours for name, hours in _SHIFTS[:n_types]}
        # Busy in the day, quiet at night: a smooth profile plus noise.
        demand = {p: int(max(1, round(8 + 6 * np.sin((h - 8) * np.pi / 12) + rng.integers(-2, 3))))
                  for p, h in zip(periods, range(0, 24, period_hours), strict=True)}
        cost = {name: int(length[name] * rng.integers(18, 30) + rng.integers(0, 20)) for name in shifts}
        # Witness: Full shifts starting every 8 h, each staffed for the busiest period it covers.
        per = 8 // period_hours
        witness = sum(max(demand[periods[(k + j) % len(periods)]] for j in range(per))
                      for k in range(0, len(periods), per))
        return {"periods": periods, "period_hours": period_hours, "shifts": shifts, "length": length,
                "demand": demand, "cost": cost, "max_staff": witness + int(rng.integers(0, 6))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "max_staff": max(data["demand"].values()) - 1}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("shift_staffing")
        periods = b.add_set("periods", data["periods"], "periods of the cyclic day, named by start hour")
        shifts = b.add_set("shifts", data["shifts"], "shift types")
        b.add_param("period_hours", data["period_hours"], (), "hours", "length of one period")
        b.add_param("length", data["length"], ("shifts",), "hours", "length of a shift")
        b.add_param("demand", data["demand"], ("periods",), "staff", "staff needed on duty in a period")
        b.add_param("cost", data["cost"], ("shifts",), "money per person", "pay for one shift")
        b.add_param("max_staff", data["max_staff"], (), "staff", "headcount available for the day")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        staff, ph, cur = v["staff"], data["period_hours"], v["money"]
        hours = [int(p[1:]) for p in data["periods"]]
        need = ", ".join(f"{n(data['demand'][p])} from {h:02d}:00" for h, p in zip(hours, data["periods"], strict=True))
        kinds = "; ".join(f"a {s} shift lasts {n(data['length'][s])} consecutive hours and costs "
                          f"{money(data['cost'][s], cur)} per person" for s in data["shifts"])
        cap = n(data["max_staff"])
        rule = (f"Shifts may start at the beginning of any {n(ph)}-hour period and may run past midnight into the "
                "next day (the schedule repeats daily).")
        if template == 0:
            return (f"{v['place'].capitalize()} plans its daily roster. The day is split into {n(ph)}-hour periods; "
                    f"the number of {staff} needed in the period starting at each time is: {need}. Shift types: "
                    f"{kinds}. {rule} At most {cap} {staff} can be scheduled in total. How many {staff} should start "
                    "each shift type at each period to minimise the wage bill?")
        if template == 1:
            return (f"Minimise daily staffing cost for {v['place']}. Minimum {staff} on duty per {n(ph)}-hour period "
                    f"(by start time): {need}. {kinds[0].upper() + kinds[1:]}. {rule} The pool has {cap} {staff}; "
                    "each works at most one shift. Head counts are whole numbers.")
        if template == 2:
            rows = [[f"{h:02d}:00", data["demand"][p]] for h, p in zip(hours, data["periods"], strict=True)]
            shifts = table(["Shift", "Hours", f"Cost ({cur} per person)"],
                           [[s, data["length"][s], data["cost"][s]] for s in data["shifts"]])
            return (f"Staffing problem ({domain}). Periods are {n(ph)} hours long.\n\n"
                    f"{table(['Period start', f'{staff.capitalize()} needed'], rows)}\n\n{shifts}\n\n{rule} "
                    f"Total headcount cannot exceed {cap}. Choose integer numbers of {staff} per shift and start time "
                    "at minimum cost.")
        return (f"How many {staff} should begin work at each {n(ph)}-hour mark so that coverage never falls below "
                f"demand ({need}) while spending as little as possible? {kinds[0].upper() + kinds[1:]}. {rule} "
                f"No more than {cap} {staff} are available.")
