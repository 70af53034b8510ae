"""Stochastic generation planning (MILP, two-stage): commit dispatchable units now, paying each committed unit's
fixed cost (first stage, binary); once the scenario (free renewable supply and demand) is known, dispatch the
committed units up to their capacity (``p[s,u] <= cap[u] * on[u]``), use the free supply and shed what is still
missing at a penalty, within a shedding limit (second stage). Minimise fixed cost plus the expected
variable and shedding cost.

Scenario probabilities are stated as frequencies ("9 of the 40 recorded days"): the coefficient is the count over
the total. Feasible by construction: every scenario's demand is at most the units' total capacity. Infeasible
variant: one scenario's demand exceeds all capacity plus its free supply plus the shedding limit, which bounds
what any plan can serve.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "island grid": {"units": ["Diesel1", "Diesel2", "GasTurbine", "Biogas", "Engine5", "Engine6", "Engine7"],
                    "q": "MW", "per": "MWh", "scen": ["Calm", "Breezy", "Peak", "Storm", "Lull"], "free": "wind output", "short": "load shedding", "record": "days",
                    "unit": "generator", "who": "the operator of an island power grid"},
    "irrigation district": {"units": ["PumpNorth", "PumpSouth", "PumpRiver", "PumpWell", "PumpCanal", "PumpHill",
                                      "PumpLake"],
                            "q": "megalitres", "per": "megalitre",
                            "scen": ["Dry", "Average", "Wet", "Drought", "Monsoon"], "free": "rainfall", "short": "crop water deficit",
                            "record": "seasons", "unit": "pump station", "who": "an irrigation district manager"},
    "contract manufacturer": {"units": ["LineA", "LineB", "LineC", "LineD", "LineE", "LineF", "LineG"],
                              "q": "pallets", "per": "pallet",
                              "scen": ["Quiet", "Steady", "Rush", "Promotion", "Slump"], "free": "stock already in the warehouse",
                              "short": "unmet orders", "record": "weeks", "unit": "production line",
                              "who": "the planner of a contract manufacturer"},
}


@register
class StochasticGeneration(Family):
    name = "stochastic_generation"
    version = "1"
    problem_class = "MILP"
    domains = tuple(_DOMAINS)
    sectors = {"island grid": "energy", "irrigation district": "agriculture", "contract manufacturer": "manufacturing"}
    techniques = ("scenario_stochastic", "fixed_charge")
    template_styles = (("units", "implied_integrality"), ("table", "units"), ("story", "units"), ("units",))
    reorder_keys = ("units", "scenarios")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        units = names(_DOMAINS[domain]["units"], 2 + difficulty, "Unit")
        scenarios = _DOMAINS[domain]["scen"][:1 + (difficulty + 2) // 2]
        cap = {u: int(rng.integers(20, 90)) for u in units}
        total = sum(cap.values())
        marginal = {u: int(rng.integers(10, 60)) for u in units}
        return {"units": units, "scenarios": scenarios, "cap": cap, "marginal": marginal,
                "fixed": {u: int(rng.integers(100, 900)) for u in units},
                "count": {s: int(rng.integers(2, 15)) for s in scenarios},
                "free": {s: int(rng.integers(0, total // 3)) for s in scenarios},
                "demand": {s: int(total * rng.uniform(0.4, 1.0)) for s in scenarios},
                "penalty": max(marginal.values()) + int(rng.integers(20, 200)),
                "shed_max": int(rng.integers(5, 30))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        s = data["scenarios"][-1]
        most = sum(data["cap"].values()) + data["free"][s] + data["shed_max"]
        return exceed(data, "demand", s, most, rng.integers(1, 25))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("stochastic_generation")
        units = b.add_set("units", data["units"], "dispatchable units that may be committed")
        scen = b.add_set("scenarios", data["scenarios"], "supply and demand scenarios")
        b.add_param("cap", data["cap"], ("units",), "quantity", "capacity of a committed unit")
        b.add_param("marginal", data["marginal"], ("units",), "money per quantity", "variable cost of output")
        b.add_param("fixed", data["fixed"], ("units",), "money", "cost of committing a unit")
        b.add_param("count", data["count"], ("scenarios",), "occurrences", "how often the scenario was recorded")
        b.add_param("free", data["free"], ("scenarios",), "quantity", "free supply in a scenario")
        b.add_param("demand", data["demand"], ("scenarios",), "quantity", "demand in a scenario")
        b.add_param("penalty", data["penalty"], (), "money per quantity", "cost of each unit of shortfall")
        b.add_param("shed_max", data["shed_max"], (), "quantity", "most shortfall allowed in a scenario")
        on = b.add_vars("commit", ("units",), VarType.BINARY, description="1 if the unit is committed (first stage)")
        out = b.add_vars("output", ("scenarios", "units"), description="dispatch of a unit in a scenario")
        used = b.add_vars("free_used", ("scenarios",), description="free supply used in a scenario")
        shed = b.add_vars("shortfall", ("scenarios",), ub=data["shed_max"], description="demand left unserved")
        b.con_group("capacity", ("scenarios", "units"), "only committed units produce, up to capacity")
        b.con_group("free_limit", ("scenarios",), "free supply used within what the scenario brings")
        b.con_group("balance", ("scenarios",), "output, free supply and shortfall meet demand")
        records = sum(data["count"].values())
        objective = [(on[(u,)], data["fixed"][u]) for u in units]
        for s in scen:
            weight = data["count"][s] / records
            for u in units:
                b.add_constr("capacity", (s, u), [(out[(s, u)], 1), (on[(u,)], -data["cap"][u])], "<=", 0)
                objective.append((out[(s, u)], weight * data["marginal"][u]))
            b.add_constr("free_limit", (s,), [(used[(s,)], 1)], "<=", data["free"][s])
            b.add_constr("balance", (s,), [(out[(s, u)], 1) for u in units] + [(used[(s,)], 1), (shed[(s,)], 1)],
                         "==", data["demand"][s])
            objective.append((shed[(s,)], weight * data["penalty"]))
        b.set_objective("minimize", objective, description="commitment cost plus expected dispatch and shortfall cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        n, q, units, scen = number_text, v["q"], data["units"], data["scenarios"]
        records = sum(data["count"].values())
        seen = listing(data["count"], scen, "{k} on {v} " + v["record"])
        history = f"Of the last {n(records)} {v['record']} on record, the scenarios occurred as follows: {seen}."
        per_scen = "; ".join(f"{s}: {v['free']} {n(data['free'][s])} {q}, demand {n(data['demand'][s])} {q}"
                             for s in scen)
        fleet = "; ".join(f"{u} up to {n(data['cap'][u])} {q} at ${n(data['marginal'][u])} per {v['per']}, "
                          f"${n(data['fixed'][u])} to commit" for u in units)
        short = (f"Any demand not met counts as {v['short']}, costing ${n(data['penalty'])} per {v['per']}, and no more "
                 f"than {n(data['shed_max'])} {q} of it is acceptable in any scenario.")
        if template == 0:
            return (f"{v['who'].capitalize()} must choose now which of {join(units)} to commit; each {v['unit']} is "
                    f"either committed or not. {fleet}. {history} Per scenario: {per_scen}. After the scenario is "
                    f"known, committed units are dispatched and the {v['free']} is used at no cost. {short} Minimise "
                    "commitment cost plus expected operating and shortfall cost.")
        if template == 1:
            rows = [[u, data["cap"][u], data["marginal"][u], data["fixed"][u]] for u in units]
            srows = [[s, data["count"][s], data["free"][s], data["demand"][s]] for s in scen]
            head = ["Scenario", f"{v['record'].capitalize()} observed", v["free"].capitalize(), "Demand"]
            return (f"Two-stage planning ({domain}); quantities in {q}.\n\n"
                    f"{table([v['unit'].capitalize(), 'Capacity', 'Cost per unit ($)', 'Commitment ($)'], rows)}\n\n"
                    f"{table(head, srows)}\n\nScenario probabilities are the observed frequencies. {short} Only "
                    "committed units may run. Minimise the expected total cost.")
        if template == 2:
            return (f"Nobody knows yet what tomorrow brings for {v['who']}. {history} The scenarios differ in "
                    f"{v['free']} and demand: {per_scen}. The {v['unit']}s available are: {fleet}. Committing is "
                    f"decided first; dispatch follows once the scenario is known. {short} Which {v['unit']}s "
                    "should be committed, and how should they run, to minimise the expected cost?")
        return (f"Scenario-based commitment ({domain}). Units: {fleet}. {history} Scenarios: {per_scen}. {short} "
                "Commit binary decisions first, then dispatch per scenario, minimising fixed plus expected cost.")
