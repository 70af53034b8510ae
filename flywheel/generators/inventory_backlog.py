"""Multi-period production and inventory with backlogs (LP): meet each period's demand from production, stock
or late (backlogged, at a penalty per unit per period), within production capacity; all backlog must be cleared
by the end. Each period balances: ``stock[t] - backlog[t] = stock[t-1] - backlog[t-1] + make[t] - demand[t]``.

Holding cost is quoted as a percentage of the unit's value per period (coefficient value * percent / 100).
Feasible by construction: total capacity exceeds total demand. Infeasible variant: the last period's demand
grows beyond everything the plant can make over the horizon (plus the opening stock).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, table
from flywheel.generators.base import Family, exceed, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "toy manufacturer": {"periods": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct"],
                         "good": "toys", "period": "month"},
    "seed supplier": {"periods": ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10"],
                      "good": "seed bags", "period": "quarter"},
    "sports equipment maker": {"periods": ["Wk1", "Wk2", "Wk3", "Wk4", "Wk5", "Wk6", "Wk7", "Wk8", "Wk9", "Wk10"],
                               "good": "bicycles", "period": "week"},
}


@register
class InventoryBacklog(Family):
    name = "inventory_backlog"
    problem_class = "LP"
    sectors = {"toy manufacturer": "manufacturing", "seed supplier": "agriculture",
               "sports equipment maker": "sports and education"}
    techniques = ("multi_period_balance", "ratio_percentage")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("units",))
    reorder_keys = ()  # periods are in time order: never shuffled

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        periods = _DOMAINS[domain]["periods"][:2 + 2 * difficulty]
        demand = {t: int(rng.integers(20, 120)) for t in periods}
        avg = sum(demand.values()) / len(periods)
        capacity = {t: int(avg * rng.uniform(0.8, 1.4)) + 5 for t in periods}
        return {"periods": periods, "demand": demand, "capacity": capacity,
                "make_cost": {t: int(rng.integers(5, 20)) for t in periods}, "value": int(rng.integers(20, 80)),
                "hold_pct": int(rng.choice([2, 3, 4, 5, 8, 10])), "backlog_cost": int(rng.integers(3, 15)),
                "opening": int(rng.integers(0, 40))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        last = data["periods"][-1]
        others = sum(v for t, v in data["demand"].items() if t != last)
        most = sum(data["capacity"].values()) + data["opening"] - others
        return exceed(data, "demand", last, most, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("inventory_backlog")
        periods = b.add_set("periods", data["periods"], "planning periods, in order")
        b.add_param("demand", data["demand"], ("periods",), "units", "demand of a period")
        b.add_param("capacity", data["capacity"], ("periods",), "units", "most that can be made in a period")
        b.add_param("make_cost", data["make_cost"], ("periods",), "money per unit", "production cost per unit")
        b.add_param("value", data["value"], (), "money per unit", "value of one unit (base of the holding cost)")
        b.add_param("hold_pct", data["hold_pct"], (), "percent per period", "holding cost as % of value")
        b.add_param("backlog_cost", data["backlog_cost"], (), "money per unit per period", "penalty of a late unit")
        b.add_param("opening", data["opening"], (), "units", "stock at the start")
        make = b.add_vars("make", ("periods",), description="units made in a period")
        stock = b.add_vars("stock", ("periods",), description="units in stock at the end of a period")
        late = b.add_vars("backlog", ("periods",), description="units owed to customers at the end of a period")
        b.con_group("balance", ("periods",), "stock minus backlog carries over, plus production, minus demand")
        b.con_group("capacity", ("periods",), "production within capacity")
        for i, t in enumerate(periods):
            prev = [(stock[(periods[i - 1],)], -1), (late[(periods[i - 1],)], 1)] if i else []
            rhs = -data["demand"][t] + (0 if i else data["opening"])
            b.add_constr("balance", (t,), [(stock[(t,)], 1), (late[(t,)], -1), (make[(t,)], -1)] + prev, "==", rhs)
            b.add_constr("capacity", (t,), [(make[(t,)], 1)], "<=", data["capacity"][t])
        b.con_group("clear", (), "no backlog left at the end")
        b.add_constr("clear", (), [(late[(periods[-1],)], 1)], "<=", 0)
        hold = data["value"] * data["hold_pct"] / 100
        b.set_objective("minimize", [(make[(t,)], data["make_cost"][t]) for t in periods]
                        + [(stock[(t,)], hold) for t in periods]
                        + [(late[(t,)], data["backlog_cost"]) for t in periods],
                        description="production, holding and backlog cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        periods, good, per = data["periods"], v["good"], v["period"]
        dem = listing(data["demand"], periods)
        cap = listing(data["capacity"], periods)
        cost = listing(data["make_cost"], periods, "{k} ${v}")
        terms = (f"Each of the {good} is valued at ${n(data['value'])}, and keeping one in stock costs "
                 f"{n(data['hold_pct'])}% of its value per {per}. Demand that is not met on time can be delivered "
                 f"later at a penalty of ${n(data['backlog_cost'])} per unit per {per}, but every order must be "
                 f"delivered by the end of {periods[-1]}. The opening stock is {n(data['opening'])} {good}.")
        if template == 0:
            return (f"A {domain} plans production over {join(periods)}. Demand ({good}): {dem}. Capacity: {cap}. "
                    f"Production cost per unit: {cost}. {terms} Fractional quantities are fine. Find the cheapest "
                    "plan.")
        if template == 1:
            rows = [[t, data["demand"][t], data["capacity"][t], data["make_cost"][t]] for t in periods]
            return (f"Production plan for a {domain}.\n\n"
                    f"{table([per.capitalize(), f'Demand ({good})', f'Capacity ({good})', 'Cost ($/unit)'], rows)}"
                    f"\n\n{terms} Minimise total production, holding and backlog cost (continuous quantities).")
        if template == 2:
            return (f"Sales of a {domain} are seasonal, and the planner must decide how many {good} to make each "
                    f"{per}. Forecast demand: {dem}. The plant can make at most {cap}. Making one costs {cost}. "
                    f"{terms} What plan minimises total cost? Treat quantities as continuous.")
        return (f"Minimise cost for a {domain} over {len(periods)} {per}s. Demand: {dem}; capacity: {cap}; unit cost: "
                f"{cost}. {terms} Quantities are continuous.")
