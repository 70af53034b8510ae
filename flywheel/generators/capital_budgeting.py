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
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, pick, register, replace_at
from solvers.ir import Model, VarType


@register
class CapitalBudgeting(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6x2 / 8x2 / 10x3 projects x years by difficulty, project names drawn from the domain's pool
        # (``spread``, ``drawn_names``); years stay in order, at least two (a multi-year budget). Five distinct projects
        # carry the logical rules.
        projects = drawn_names(rng, self.vocab[domain]["projects"], spread(rng, 4 + 2 * difficulty, 5), "Project")
        years = [f"Year{k}" for k in range(1, 1 + spread(rng, 1 + (difficulty + 1) // 2, 2))]
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
        b = self.builder(data)
        (projects,) = b.elements("projects")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        projects, years = data["projects"], data["years"]
        pre, post = data["requires"]
        one, two = data["exclusive"]
        must = data["mandatory"]
        rules = (
            f"{post} can only go ahead if {pre} is also funded. {one} and {two} exclude each other, so at "
            f"most one of them may be chosen. {must} must be funded because of {v['must']}."
        )
        spend = "; ".join(f"{p}: " + listing(data["cost"][p], years, "{v} in {k}") for p in projects)
        npv = listing(data["npv"], projects)
        budgets = listing(data["budget"], years, "{v} in {k}")
        header = ["Project", "NPV ($k)"] + [f"{y} spend ($k)" for y in years]
        rows = [[p, data["npv"][p]] + [data["cost"][p][y] for y in years] for p in projects]
        money = "; ".join(
            f"{p} needs " + ", ".join(f"${thousands(1000 * data['cost'][p][y])} in {y}" for y in years)
            for p in projects
        )
        worth = ", ".join(f"{p} ${thousands(1000 * data['npv'][p])}" for p in projects)
        caps = ", ".join(f"${thousands(1000 * data['budget'][y])} in {y}" for y in years)
        return {"budgets": budgets, "caps": caps, "header": header, "money": money, "npv": npv, "rows": rows, "rules": rules,
                "spend": spend, "worth": worth}
