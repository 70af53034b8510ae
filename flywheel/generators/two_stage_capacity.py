"""Two-stage stochastic capacity planning (LP, scenario-based): build capacity now (first stage, before demand is
known), then in each demand scenario produce up to that capacity or buy the shortfall at a premium (second stage),
minimising build cost plus the probability-weighted (expected) recourse cost. The deterministic equivalent: one
copy of the recourse variables per scenario.

Scenario probabilities are stated in percent (the coefficient is percent / 100). Feasible by construction
(buying covers any shortfall). Infeasible variant: a scenario's demand exceeds what the largest allowed capacity
plus the buying limit can cover.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register, replace_at
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "wind farm operator": {"sites": ["Ridge", "Coast", "Valley", "Plateau", "Harbour"], "good": "MWh",
                           "build": "turbine capacity", "buy": "buy power on the spot market"},
    "grain cooperative": {"sites": ["Wheat", "Barley", "Corn", "Oats", "Rye"], "good": "tonnes",
                          "build": "silo capacity", "buy": "buy grain from neighbours"},
    "vaccine maker": {"sites": ["LineA", "LineB", "LineC", "LineD", "LineE"], "good": "thousand doses",
                      "build": "production line capacity", "buy": "buy doses from a partner"},
}
_SCENARIOS = ["Low", "Medium", "High", "Surge", "Slump", "Boom"]


@register
class TwoStageCapacity(Family):
    name = "two_stage_capacity"
    problem_class = "LP"
    sectors = {"wind farm operator": "energy", "grain cooperative": "agriculture", "vaccine maker": "health care"}
    techniques = ("scenario_stochastic", "ratio_percentage")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("units",))
    reorder_keys = ("sites", "scenarios")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        sites = names(_DOMAINS[domain]["sites"], 1 + (difficulty + 1) // 2, "Site")
        scenarios = _SCENARIOS[:2 + difficulty // 2 + (difficulty > 3)]
        cuts = sorted(int(x) for x in rng.choice(np.arange(5, 100, 5), size=len(scenarios) - 1, replace=False))
        prob = [b - a for a, b in zip([0, *cuts], [*cuts, 100], strict=True)]
        cap_max = {s: int(rng.integers(50, 200)) for s in sites}
        buy_max = int(rng.integers(30, 120))
        demand = {(sc, s): int(cap_max[s] * rng.uniform(0.2, 0.9)) for sc in scenarios for s in sites}
        return {"sites": sites, "scenarios": scenarios, "prob": dict(zip(scenarios, prob, strict=True)),
                "build_cost": {s: int(rng.integers(5, 30)) for s in sites}, "cap_max": cap_max,
                "make_cost": {s: int(rng.integers(2, 15)) for s in sites}, "buy_cost": int(rng.integers(40, 90)),
                "buy_max": buy_max,
                "demand": {sc: {s: demand[(sc, s)] for s in sites} for sc in scenarios}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        sc, s = data["scenarios"][-1], data["sites"][0]
        # Each site's demand is served by its own capacity plus shared buying: the site's cap + buy_max + 1 fails.
        return replace_at(data, ("demand", sc, s), int(data["cap_max"][s] + data["buy_max"] + rng.integers(1, 20)))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("two_stage_capacity")
        sites = b.add_set("sites", data["sites"], "where capacity can be built")
        scen = b.add_set("scenarios", data["scenarios"], "demand scenarios")
        b.add_param("prob", data["prob"], ("scenarios",), "percent", "probability of a scenario")
        b.add_param("build_cost", data["build_cost"], ("sites",), "money per unit", "cost of one unit of capacity")
        b.add_param("cap_max", data["cap_max"], ("sites",), "units", "most capacity that can be built")
        b.add_param("make_cost", data["make_cost"], ("sites",), "money per unit", "cost of using capacity")
        b.add_param("buy_cost", data["buy_cost"], (), "money per unit", "cost of buying a unit")
        b.add_param("buy_max", data["buy_max"], (), "units", "most that can be bought per scenario")
        b.add_param("demand", data["demand"], ("scenarios", "sites"), "units", "demand at a site in a scenario")
        cap = b.add_vars("capacity", ("sites",), description="capacity built now (first stage)")
        make = b.add_vars("make", ("scenarios", "sites"), description="output in a scenario (recourse)")
        buy = b.add_vars("buy", ("scenarios", "sites"), description="units bought in a scenario (recourse)")
        b.add_constrs("cap_max", ("sites",), "capacity within its limit",
                      lambda s: ([(cap[(s,)], 1)], "<=", data["cap_max"][s]))
        b.con_group("use", ("scenarios", "sites"), "output within the capacity built")
        b.con_group("meet", ("scenarios", "sites"), "output plus purchases meet the demand")
        b.con_group("buy_limit", ("scenarios",), "purchases within the limit in each scenario")
        for sc in scen:
            for s in sites:
                b.add_constr("use", (sc, s), [(make[(sc, s)], 1), (cap[(s,)], -1)], "<=", 0)
                b.add_constr("meet", (sc, s), [(make[(sc, s)], 1), (buy[(sc, s)], 1)], ">=", data["demand"][sc][s])
            b.add_constr("buy_limit", (sc,), [(buy[(sc, s)], 1) for s in sites], "<=", data["buy_max"])
        terms = [(cap[(s,)], data["build_cost"][s]) for s in sites]
        for sc in scen:
            p = data["prob"][sc] / 100
            terms += [(make[(sc, s)], p * data["make_cost"][s]) for s in sites]
            terms += [(buy[(sc, s)], p * data["buy_cost"]) for s in sites]
        b.set_objective("minimize", terms, description="build cost plus expected recourse cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        sites, scen, good = data["sites"], data["scenarios"], v["good"]
        probs = listing(data["prob"], scen, "{k} {v}%")
        dem = "; ".join(f"{sc}: " + listing(data["demand"][sc], sites) for sc in scen)
        build = ", ".join(f"{s} ${n(data['build_cost'][s])} per {good} (at most {n(data['cap_max'][s])})"
                          for s in sites)
        use = listing(data["make_cost"], sites, "{k} ${v}")
        buy = (f"Any shortfall can be covered if the firm chooses to {v['buy']} at ${n(data['buy_cost'])} per {good}, "
               f"up to {n(data['buy_max'])} {good} in total per scenario.")
        if template == 0:
            return (f"A {domain} must decide how much {v['build']} to build at {join(sites)} before demand is known. "
                    f"Building costs {build}. Demand ({good}) depends on the scenario, with probabilities {probs}: "
                    f"{dem}. Once the scenario is known, producing costs {use} per {good}. {buy} Minimise building "
                    "cost plus expected operating and buying cost.")
        if template == 1:
            rows = [[sc, f"{n(data['prob'][sc])}%"] + [data["demand"][sc][s] for s in sites] for sc in scen]
            plant = table(["Site", f"Build ($/{good})", f"Max build ({good})", f"Produce ($/{good})"],
                          [[s, data["build_cost"][s], data["cap_max"][s], data["make_cost"][s]] for s in sites])
            return (f"Two-stage planning at a {domain}.\n\n{plant}\n\n"
                    f"{table(['Scenario', 'Probability'] + [f'{s} demand ({good})' for s in sites], rows)}\n\n"
                    f"{buy} Capacity is chosen first; production and purchases adapt to the scenario. Minimise the "
                    "expected total cost.")
        if template == 2:
            return (f"Next season is uncertain for a {domain}. Analysts give {probs} as the chances of their "
                    f"scenarios, with these demands in {good}: {dem}. Capacity must be committed now: {build}. "
                    f"Running it later costs {use} per {good}. {buy} How much capacity should be built?")
        return (f"Stochastic capacity problem ({domain}). Scenario probabilities: {probs}. Demands: {dem}. Build "
                f"costs and limits: {build}. Production costs: {use}. {buy} Minimise expected cost.")
