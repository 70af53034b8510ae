"""Two-stage stochastic capacity planning (LP, scenario-based): build capacity now (first stage, before demand is
known), then in each demand scenario produce up to that capacity or buy the shortfall at a premium (second stage),
minimising build cost plus the probability-weighted (expected) recourse cost. The deterministic equivalent: one
copy of the recourse variables per scenario.

Scenario probabilities are stated in percent (``prob``, derived, is percent / 100); ``recourse[s]`` is a scenario's
output and buying cost, so the objective is ``sum build_cost * capacity + sum_s prob[s] * recourse[s]``. Feasible by
construction (buying covers any shortfall). Infeasible variant: a scenario's demand exceeds what the largest allowed
capacity plus the buying limit can cover.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register, replace_at
from solvers.ir import Model, number_text

_SCENARIOS = ["Low", "Medium", "High", "Surge", "Slump", "Boom"]


@register
class TwoStageCapacity(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 2x2 / 2x3 / 3x3 (sites x scenarios) by difficulty, site names drawn from the domain's pool
        # (``spread``, ``drawn_names``); the scenarios keep their order.
        sites = drawn_names(rng, self.vocab[domain]["sites"], spread(rng, 1 + (difficulty + 1) // 2, 2), "Site")
        scenarios = _SCENARIOS[:spread(rng, 2 + difficulty // 2 + (difficulty > 3), 2)]
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
        b = self.builder(data)
        sites, scen = b.elements("sites", "scenarios")
        b.add_param("prob", {sc: data["prob"][sc] / 100 for sc in scen}, ("scenarios",), "fraction",
                    "probability of a scenario (the percentage / 100)", derived=True)
        cap = b.add_vars("capacity", ("sites",), description="capacity built now (first stage)")
        make = b.add_vars("make", ("scenarios", "sites"), description="output in a scenario (recourse)")
        buy = b.add_vars("buy", ("scenarios", "sites"), description="units bought in a scenario (recourse)")
        recourse = b.add_vars("recourse", ("scenarios",), description="output and buying cost in a scenario",
                              unit="money")
        b.add_constrs("cap_max", ("sites",), "capacity within its limit",
                      lambda s: ([(cap[(s,)], 1)], "<=", data["cap_max"][s]))
        b.add_constrs("use", ("scenarios", "sites"), "output within the capacity built",
                      lambda sc, s: ([(make[(sc, s)], 1), (cap[(s,)], -1)], "<=", 0))
        b.add_constrs("meet", ("scenarios", "sites"), "output plus purchases meet the demand",
                      lambda sc, s: ([(make[(sc, s)], 1), (buy[(sc, s)], 1)], ">=", data["demand"][sc][s]))
        b.add_constrs("buy_limit", ("scenarios",), "purchases within the limit in each scenario",
                      lambda sc: ([(buy[(sc, s)], 1) for s in sites], "<=", data["buy_max"]))
        b.add_constrs("recourse_cost", ("scenarios",), "a scenario's output and buying cost",
                      lambda sc: ([(recourse[(sc,)], 1)] + [(make[(sc, s)], -data["make_cost"][s]) for s in sites]
                                  + [(buy[(sc, s)], -data["buy_cost"]) for s in sites], "==", 0))
        b.set_objective("minimize", [(cap[(s,)], data["build_cost"][s]) for s in sites]
                        + [(recourse[(sc,)], data["prob"][sc] / 100) for sc in scen],
                        description="build cost plus expected recourse cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        sites = data["sites"]
        scen, good = data["scenarios"], v["good"]
        probs = listing(data["prob"], scen, "{k} {v}%")
        dem = "; ".join(f"{sc}: " + listing(data["demand"][sc], sites) for sc in scen)
        build = ", ".join(
            f"{s} ${number_text(data['build_cost'][s])} per {good} (at most {number_text(data['cap_max'][s])})"
            for s in sites
        )
        use = listing(data["make_cost"], sites, "{k} ${v}")
        buy = f"Any shortfall can be covered if the firm chooses to {v['buy']} at ${number_text(data['buy_cost'])} per {good}, up to {number_text(data['buy_max'])} {good} in total per scenario."
        rows = [[sc, f"{number_text(data['prob'][sc])}%"] + [data["demand"][sc][s] for s in sites] for sc in scen]
        plant = table(
            ["Site", f"Build ($/{good})", f"Max build ({good})", f"Produce ($/{good})"],
            [[s, data["build_cost"][s], data["cap_max"][s], data["make_cost"][s]] for s in sites],
        )
        t1_part0 = table(["Scenario", "Probability"] + [f"{s} demand ({good})" for s in sites], rows)
        return {"t1_part0": t1_part0, "build": build, "buy": buy, "dem": dem, "good": good, "plant": plant, "probs": probs,
                "use": use}
