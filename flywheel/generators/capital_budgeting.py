"""Capital budgeting (IP, binary): which projects to fund to maximise total net present value, within each year's
budget, with logical rules: one project is mandatory, one may be funded only if its prerequisite is (if-then:
``x[b] <= x[a]``), and two are mutually exclusive (either-or: ``x[c] + x[d] <= 1``).

Feasible by construction: every budget covers the mandatory project's spending (and then some). Infeasible
variant: one year's budget is cut below what the mandatory project alone spends that year.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, pick, register, replace_at
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType

_DOMAINS: dict[str, dict[str, Any]] = {
    "venture fund": {
        "projects": ["Fintech", "Biotech", "Solar", "Robotics", "Logistics", "Gaming", "Payments", "Insurtech",
                     "AgriTech", "EdTech", "Security", "Mobility", "Retail"],
        "who": "an investment committee", "thing": "investment", "money": "$",
        "must": "a commitment made last year",
    },
    "city infrastructure": {
        "projects": ["Bridge", "Library", "Bikeway", "Clinic", "Park", "Sewer", "Tramline", "School", "Harbor",
                     "Depot", "Stadium", "Market", "Museum"],
        "who": "a city council", "thing": "public works project", "money": "$",
        "must": "a safety regulation",
    },
    "network upgrade": {
        "projects": ["Fibre_North", "Fibre_South", "Tower5G", "CoreRouter", "DataCentre", "Backbone", "SatLink",
                     "EdgeNodes", "Submarine", "Microwave", "Billing", "Firewall", "Exchange"],
        "who": "a telecom operator's planning office", "thing": "upgrade", "money": "$",
        "must": "the regulator's coverage obligation",
    },
}


@register
class CapitalBudgeting(Family):
    name = "capital_budgeting"
    problem_class = "IP"
    sectors = {"venture fund": "finance", "city infrastructure": "public services", "network upgrade": "telecom"}
    techniques = ("either_or_if_then",)
    template_styles = (("implied_integrality",), ("table", "implied_integrality"), ("story", "units"),
                       ("implied_integrality",))
    reorder_keys = ("projects",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        projects = names(_DOMAINS[domain]["projects"], 4 + 2 * difficulty, "Project")
        years = [f"Year{k}" for k in range(1, 2 + (difficulty + 1) // 2)]
        cost = {p: {y: int(rng.integers(10, 90)) for y in years} for p in projects}
        npv = {p: int(sum(cost[p].values()) * rng.uniform(0.3, 1.6)) + 5 for p in projects}
        must, pre, post, ex1, ex2 = (projects[int(i)] for i in rng.permutation(len(projects))[:5])
        # 45-65% of what funding everything would cost, never below the mandatory project's spending plus 10.
        budget = {y: max(cost[must][y] + 10, int(sum(cost[p][y] for p in projects) * rng.uniform(0.45, 0.65)))
                  for y in years}
        return {"projects": projects, "years": years, "cost": cost, "npv": npv, "budget": budget,
                "mandatory": must, "requires": [pre, post], "exclusive": [ex1, ex2]}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        y = pick(rng, data["years"])
        spend = data["cost"][data["mandatory"]][y]
        return replace_at(data, ("budget", y), int(spend - rng.integers(1, min(spend, 8))))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("capital_budgeting")
        projects = b.add_set("projects", data["projects"], "candidate projects")
        b.add_set("years", data["years"], "budget years")
        b.add_param("cost", data["cost"], ("projects", "years"),
                    "thousand money", "spending of a funded project in a year")
        b.add_param("npv", data["npv"], ("projects",), "thousand money", "net present value of a project")
        b.add_param("budget", data["budget"], ("years",), "thousand money", "budget of a year")
        x = b.add_vars("fund", ("projects",), VarType.BINARY, description="1 if the project is funded")
        b.add_constrs("budget", ("years",), "spending within each year's budget",
                      lambda y: ([(x[(p,)], data["cost"][p][y]) for p in projects], "<=", data["budget"][y]))
        pre, post = data["requires"]
        b.con_group("requires", (), "a project only with its prerequisite (if-then)")
        b.add_constr("requires", (), [(x[(post,)], 1), (x[(pre,)], -1)], "<=", 0)
        one, two = data["exclusive"]
        b.con_group("exclusive", (), "at most one of two mutually exclusive projects (either-or)")
        b.add_constr("exclusive", (), [(x[(one,)], 1), (x[(two,)], 1)], "<=", 1)
        b.con_group("mandatory", (), "the mandatory project is funded")
        b.add_constr("mandatory", (), [(x[(data["mandatory"],)], 1)], ">=", 1)
        b.set_objective("maximize", [(x[(p,)], data["npv"][p]) for p in projects], description="total NPV")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        projects, years = data["projects"], data["years"]
        pre, post = data["requires"]
        one, two = data["exclusive"]
        must = data["mandatory"]
        rules = (f"{post} can only go ahead if {pre} is also funded. {one} and {two} exclude each other, so at "
                 f"most one of them may be chosen. {must} must be funded because of {v['must']}.")
        spend = "; ".join(f"{p}: " + listing(data["cost"][p], years, "{v} in {k}") for p in projects)
        npv = listing(data["npv"], projects)
        budgets = listing(data["budget"], years, "{v} in {k}")
        if template == 0:
            return (f"{v['who'].capitalize()} is choosing which of {len(projects)} candidates to fund: {join(projects)}. "
                    f"Spending (thousand dollars) per year: {spend}. Net present values (thousand dollars): {npv}. "
                    f"The budgets are {budgets} (thousand dollars). {rules} Each {v['thing']} is either funded in "
                    "full or not at all. Which ones maximise the total net present value?")
        if template == 1:
            header = ["Project", "NPV ($k)"] + [f"{y} spend ($k)" for y in years]
            rows = [[p, data["npv"][p]] + [data["cost"][p][y] for y in years] for p in projects]
            return (f"Select {v['thing']}s for {domain} planning.\n\n{table(header, rows)}\n\n"
                    f"Budget per year ($k): {budgets}. {rules} Maximise total NPV.")
        if template == 2:
            money = "; ".join(f"{p} needs " + ", ".join(f"${thousands(1000 * data['cost'][p][y])} in {y}"
                                                        for y in years) for p in projects)
            worth = ", ".join(f"{p} ${thousands(1000 * data['npv'][p])}" for p in projects)
            caps = ", ".join(f"${thousands(1000 * data['budget'][y])} in {y}" for y in years)
            return (f"Every autumn {v['who']} meets to decide its {v['thing']} programme. This year it can spend "
                    f"{caps}. The candidates' spending is: {money}. Their net present values are: {worth}. {rules} "
                    "A project cannot be part-funded. Which portfolio should be approved to maximise the total net "
                    "present value?")
        return (f"Maximise the NPV of a {domain} portfolio. NPVs: {npv}. Spending by year: {spend}. Yearly limits: "
                f"{budgets}. {rules} All amounts are in thousands of dollars; each project is a yes/no decision.")
