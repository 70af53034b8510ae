"""Stochastic generation planning (MILP, two-stage): commit dispatchable units now, paying each committed unit's
fixed cost (first stage, binary); once the scenario (free renewable supply and demand) is known, dispatch the
committed units up to their capacity (``p[s,u] <= cap[u] * on[u]``), use the free supply and shed what is still
missing at a penalty, within a shedding limit (second stage). Minimise fixed cost plus the expected
variable and shedding cost.

Scenario probabilities are stated as frequencies ("9 of the 40 recorded days"): with ``records`` (derived) the total
count, ``records * expected = sum_s count[s] * scen_cost[s]`` where ``scen_cost[s]`` is a scenario's dispatch and
shortfall cost. Feasible by construction: every scenario's demand is at most the units' total capacity. Infeasible
variant: one scenario's demand exceeds all capacity plus its free supply plus the shedding limit, which bounds what
any plan can serve.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, VarType, number_text


@register
class StochasticGeneration(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 3x2 / 4x3 / 5x3 units x scenarios by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        units = drawn_names(rng, self.vocab[domain]["units"], spread(rng, 2 + difficulty, 2), "Unit")
        pool = self.vocab[domain]["scen"]
        scenarios = drawn_names(rng, pool, spread(rng, 1 + (difficulty + 2) // 2, 2, high=len(pool)), "Scenario")
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
        b = self.builder({**data, "records": sum(data["count"].values())})
        units, scen = b.elements("units", "scenarios")
        on = b.add_vars("commit", ("units",), VarType.BINARY, description="1 if the unit is committed (first stage)")
        out = b.add_vars("output", ("scenarios", "units"), description="dispatch of a unit in a scenario")
        used = b.add_vars("free_used", ("scenarios",), description="free supply used in a scenario")
        shed = b.add_vars("shortfall", ("scenarios",), ub=data["shed_max"], description="demand left unserved")
        cost = b.add_vars("scen_cost", ("scenarios",), description="dispatch and shortfall cost in a scenario",
                          unit="money")
        expected = b.add_var("expected", description="expected dispatch and shortfall cost", unit="money")
        b.add_constrs("capacity", ("scenarios", "units"), "only committed units produce, up to capacity",
                      lambda s, u: ([(out[(s, u)], 1), (on[(u,)], -data["cap"][u])], "<=", 0))
        b.add_constrs("free_limit", ("scenarios",), "free supply used within what the scenario brings",
                      lambda s: ([(used[(s,)], 1)], "<=", data["free"][s]))
        b.add_constrs("balance", ("scenarios",), "output, free supply and shortfall meet demand",
                      lambda s: ([(out[(s, u)], 1) for u in units] + [(used[(s,)], 1), (shed[(s,)], 1)], "==",
                                 data["demand"][s]))
        b.add_constrs("scen_cost_sum", ("scenarios",), "a scenario's dispatch cost plus its shortfall penalty",
                      lambda s: ([(cost[(s,)], 1)] + [(out[(s, u)], -data["marginal"][u]) for u in units]
                                 + [(shed[(s,)], -data["penalty"])], "==", 0))
        b.add_constrs("expectation", (), "records times the expected cost = the count-weighted scenario costs",
                      lambda: ([(expected, sum(data["count"].values()))]
                               + [(cost[(s,)], -data["count"][s]) for s in scen], "==", 0))
        b.set_objective("minimize", [(on[(u,)], data["fixed"][u]) for u in units] + [(expected, 1)],
                        description="commitment cost plus expected dispatch and shortfall cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        units = data["units"]
        n, q, scen = number_text, v["q"], data["scenarios"]
        records = sum(data["count"].values())
        seen = listing(data["count"], scen, "{k} on {v} " + v["record"])
        history = f"Of the last {n(records)} {v['record']} on record, the scenarios occurred as follows: {seen}."
        per_scen = "; ".join(
            f"{s}: {v['free']} {n(data['free'][s])} {q}, demand {n(data['demand'][s])} {q}" for s in scen
        )
        fleet = "; ".join(
            f"{u} up to {n(data['cap'][u])} {q} at ${n(data['marginal'][u])} per {v['per']}, "
            f"${n(data['fixed'][u])} to commit"
            for u in units
        )
        short = (
            f"Any demand not met counts as {v['short']}, costing ${n(data['penalty'])} per {v['per']}, and no more "
            f"than {n(data['shed_max'])} {q} of it is acceptable in any scenario."
        )
        rows = [[u, data["cap"][u], data["marginal"][u], data["fixed"][u]] for u in units]
        srows = [[s, data["count"][s], data["free"][s], data["demand"][s]] for s in scen]
        head = ["Scenario", f"{v['record'].capitalize()} observed", v["free"].capitalize(), "Demand"]
        return {"fleet": fleet, "head": head, "history": history, "per_scen": per_scen, "q": q, "rows": rows, "short": short,
                "srows": srows}
