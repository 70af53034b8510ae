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
from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "university department": {
        "items": ["Calculus", "Statistics", "Programming", "Databases", "Networks", "Ethics", "Algebra", "Physics",
                  "Writing", "Economics", "Robotics", "Design"],
        "unit": "section", "who": "the head of department", "happy": "student satisfaction",
        "slots": "lecture-room slots", "staff": "lecturers",
    },
    "library outreach": {
        "items": ["Reading", "Coding", "Genealogy", "Crafts", "Languages", "Podcasting", "ChessClub", "Homework",
                  "Seniors", "Toddlers", "Careers", "Photography"],
        "unit": "workshop", "who": "the council's library service", "happy": "resident approval",
        "slots": "meeting-room bookings", "staff": "librarians",
    },
    "clinic staffing": {
        "items": ["Triage", "Vaccination", "Diabetes", "Prenatal", "Wound", "Physio", "Dental", "Mental",
                  "Pediatric", "Cardio", "Eye", "Hearing"],
        "unit": "clinic session", "who": "the clinic's nursing manager", "happy": "patient satisfaction",
        "slots": "consulting-room slots", "staff": "nurses",
    },
}

# The deviation variables the objective penalises: (variable, weight key, what it measures).
_PENALISED = (("hours_under", "w_hours_under", "hours below the goal"),
              ("hours_over", "w_hours_over", "hours above the goal"),
              ("budget_over", "w_budget", "thousand dollars above the budget goal"),
              ("score_under", "w_score", "satisfaction points below the goal"))


@register
class CourseGoals(Family):
    name = "course_goals"
    version = "1"
    problem_class = "IP"
    domains = tuple(_DOMAINS)
    sectors = {"university department": "sports and education", "library outreach": "public services",
               "clinic staffing": "health care"}
    techniques = ("goal_programming_weighted",)
    template_styles = (("units", "implied_integrality"), ("table", "units"), ("story", "units"),
                       ("units", "implied_integrality"))
    reorder_keys = ("items",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        items = names(_DOMAINS[domain]["items"], 2 + 2 * difficulty, "Offering")
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
        b = ModelBuilder("course_goals")
        items = b.add_set("items", data["items"], "offerings that can run sections")
        for key, unit, desc in (("minutes", "minutes", "weekly length of one section"),
                                ("cost", "thousand dollars", "cost of one section"),
                                ("score", "points", "satisfaction points of one section"),
                                ("min_sections", "sections", "fewest sections of an offering"),
                                ("max_sections", "sections", "most sections of an offering")):
            b.add_param(key, data[key], ("items",), unit, desc)
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        items, unit = data["items"], v["unit"]
        length = listing(data["minutes"], items, "{k} {v} minutes")
        cost = listing(data["cost"], items, "{k} ${v} thousand")
        score = listing(data["score"], items, "{k} {v}")
        limits = ", ".join(f"{c} {n(data['min_sections'][c])} to {n(data['max_sections'][c])}" for c in items)
        slots = f"There are {n(data['slots'])} {v['slots']} in total, one per {unit}."
        goals = (f"The goals: {n(data['hours_goal'])} hours a week for the {v['staff']}, a budget of "
                 f"${n(data['budget_goal'])} thousand, and at least {n(data['score_goal'])} points of {v['happy']}. "
                 f"Penalties: {n(data['w_hours_under'])} per hour short of the hours goal, {n(data['w_hours_over'])} "
                 f"per hour beyond it, {n(data['w_budget'])} per thousand dollars over budget and {n(data['w_score'])} "
                 f"per {v['happy']} point short.")
        if template == 0:
            return (f"{v['who'].capitalize()} plans {unit}s of {join(items)}. Weekly length of one {unit}: {length}. "
                    f"Cost of one {unit}: {cost}. {v['happy'].capitalize()} points per {unit}: {score}. Each offering "
                    f"runs this many {unit}s: {limits}. {slots} {goals} How many {unit}s of each should run to "
                    "minimise the total penalty?")
        if template == 1:
            header = ["Offering", "Minutes/week", "Cost ($k)", "Points", f"Min {unit}s", f"Max {unit}s"]
            rows = [[c, data["minutes"][c], data["cost"][c], data["score"][c], data["min_sections"][c],
                     data["max_sections"][c]] for c in items]
            return (f"Weighted goal programme ({domain}).\n\n{table(header, rows)}\n\n{slots} {goals} "
                    f"Choose a whole number of {unit}s per offering that minimises the weighted deviations.")
        if template == 2:
            money = ", ".join(f"${thousands(1000 * data['cost'][c])} for {c}" for c in items)
            return (f"Every term {v['who']} argues over the timetable. Three wishes pull against each other: {goals} "
                    f"A {unit} costs {money}; it lasts {length} a week and earns {score} points. Allowed {unit}s: "
                    f"{limits}. {slots} Count {unit}s in whole numbers. Which timetable keeps the penalty smallest?")
        return (f"Minimise the weighted goal deviations of this timetable ({domain}). {goals} Per {unit}: lengths "
                f"{length}; costs {cost}; points {score}. Range of {unit}s: {limits}. {slots}")
