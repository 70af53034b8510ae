"""Course goals (IP, weighted goal programming): how many sections (workshops, clinic sessions) of each offering a
department runs, coming as close as it can to three goals at once: a teaching-hours goal (hours over or under
both penalised), a budget goal (only overspending penalised) and a satisfaction goal (only a shortfall penalised).
Each goal is an equality ``achieved + under - over = goal`` with integer deviation variables, and the objective
is the weighted sum of the unwanted deviations.

Every section lasts a whole number of hours stated in minutes (the modeller divides by 60) and costs a whole number
of thousand dollars, so every goal expression is an integer and integer deviations lose nothing. Hard rules: each
offering runs between its minimum and maximum number of sections, and all sections fit the rooms' slots.
Feasible by construction: the slots cover the sum of the minimums (every goal can be missed, never violated).
Infeasible variant: the slots are cut below the sum of the minimum sections.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text

# The deviation variables the objective penalises: (variable, weight key, what it measures).
_PENALISED = (("hours_under", "w_hours_under", "hours below the goal"),
              ("hours_over", "w_hours_over", "hours above the goal"),
              ("budget_over", "w_budget", "thousand dollars above the budget goal"),
              ("score_under", "w_score", "satisfaction points below the goal"))


@register
class CourseGoals(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4 / 6 / 8 offerings by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        items = drawn_names(rng, self.vocab[domain]["items"], spread(rng, 2 + 2 * difficulty, 2), "Offering")
        minutes = {c: 60 * int(rng.integers(1, 5)) for c in items}  # whole hours, stated in minutes
        cost = {c: int(rng.integers(2, 12)) for c in items}  # thousand dollars per section
        score = {c: int(rng.integers(3, 30)) for c in items}
        low = {c: int(rng.integers(0, 3)) for c in items}
        high = {c: low[c] + int(rng.integers(2, 6)) for c in items}
        mid = {c: (low[c] + high[c]) / 2 for c in items}
        # Goals near what a middling plan achieves, so they pull against each other rather than all being met.
        return {"items": items, "minutes": minutes, "cost": cost, "score": score, "min_sections": low,
                "max_sections": high, "slots": sum(low.values()) + int(rng.integers(2, 3 + 2 * len(items))),
                "hours_goal": int(sum(minutes[c] / 60 * mid[c] for c in items) * rng.uniform(0.8, 1.2)),
                "budget_goal": int(sum(cost[c] * mid[c] for c in items) * rng.uniform(0.6, 0.9)),
                "score_goal": int(sum(score[c] * mid[c] for c in items) * rng.uniform(1.0, 1.3)),
                "w_hours_under": int(rng.integers(2, 9)), "w_hours_over": int(rng.integers(1, 5)),
                "w_budget": int(rng.integers(3, 12)), "w_score": int(rng.integers(1, 4))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        need = sum(data["min_sections"].values())
        return {**data, "slots": int(need - rng.integers(1, 3))} if need >= 2 else {
            **data, "min_sections": {**data["min_sections"], data["items"][0]: 3}, "slots": 2}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (items,) = b.elements("items")
        for key, unit, desc in (("slots", "sections", "room slots for all sections"),
                                ("hours_goal", "hours", "weekly teaching-hours goal"),
                                ("budget_goal", "thousand dollars", "budget goal"),
                                ("score_goal", "points", "satisfaction goal"),
                                *((w, "points", f"penalty per unit of {what}") for _, w, what in _PENALISED)):
            b.add_param(key, data[key], (), unit, desc)
        x = b.add_vars("sections", ("items",), VarType.INTEGER, description="sections of each offering run")
        dev = {v: b.add_var(v, VarType.INTEGER, description=what) for v, _, what in _PENALISED}
        dev |= {v: b.add_var(v, VarType.INTEGER, description=what)
                for v, what in (("budget_under", "thousand dollars below the budget goal (free)"),
                                ("score_over", "satisfaction points above the goal (free)"))}
        goals = (("hours_goal", lambda c: data["minutes"][c] / 60, "hours"),
                 ("budget_goal", lambda c: data["cost"][c], "budget"), ("score_goal", lambda c: data["score"][c], "score"))
        for key, coef, stem in goals:
            b.con_group(key, (), f"{stem} achieved plus shortfall minus excess equals the goal")
            b.add_constr(key, (), [(x[(c,)], coef(c)) for c in items] + [(dev[f"{stem}_under"], 1),
                                                                          (dev[f"{stem}_over"], -1)],
                         "==", data[key])
        b.con_group("min_sections", ("items",), "each offering runs at least its minimum")
        b.con_group("max_sections", ("items",), "each offering runs at most its maximum")
        for c in items:
            b.add_constr("min_sections", (c,), [(x[(c,)], 1)], ">=", data["min_sections"][c])
            b.add_constr("max_sections", (c,), [(x[(c,)], 1)], "<=", data["max_sections"][c])
        b.con_group("slots", (), "all sections fit the room slots")
        b.add_constr("slots", (), [(x[(c,)], 1) for c in items], "<=", data["slots"])
        b.set_objective("minimize", [(dev[v], data[w]) for v, w, _ in _PENALISED],
                        description="weighted unwanted deviations from the goals")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        items = data["items"]
        unit = v["unit"]
        length = listing(data["minutes"], items, "{k} {v} minutes")
        cost = listing(data["cost"], items, "{k} ${v} thousand")
        score = listing(data["score"], items, "{k} {v}")
        limits = ", ".join(
            f"{c} {number_text(data['min_sections'][c])} to {number_text(data['max_sections'][c])}" for c in items
        )
        slots = f"There are {number_text(data['slots'])} {v['slots']} in total, one per {unit}."
        goals = f"The goals: {number_text(data['hours_goal'])} hours a week for the {v['staff']}, a budget of ${number_text(data['budget_goal'])} thousand, and at least {number_text(data['score_goal'])} points of {v['happy']}. Penalties: {number_text(data['w_hours_under'])} per hour short of the hours goal, {number_text(data['w_hours_over'])} per hour beyond it, {number_text(data['w_budget'])} per thousand dollars over budget and {number_text(data['w_score'])} per {v['happy']} point short."
        header = ["Offering", "Minutes/week", "Cost ($k)", "Points", f"Min {unit}s", f"Max {unit}s"]
        rows = [
            [c, data["minutes"][c], data["cost"][c], data["score"][c], data["min_sections"][c], data["max_sections"][c]]
            for c in items
        ]
        money = ", ".join(f"${thousands(1000 * data['cost'][c])} for {c}" for c in items)
        return {"cost": cost, "goals": goals, "header": header, "length": length, "limits": limits, "money": money, "rows":
                rows, "score": score, "slots": slots, "unit": unit}
