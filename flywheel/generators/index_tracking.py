"""Index tracking (convex QP): weights of a few assets (fully invested, each under its cap) whose portfolio return
follows a benchmark index as closely as possible, measured as the sum over past periods of the squared tracking
deviation ``dev[t] = sum_i ret[i,t] w[i] - index[t]`` (free deviation variables, quadratic objective).

Feasible by construction: every cap is at least 30% and there are at least five assets, so the caps sum past 100%.
Infeasible variant: every cap is cut so that the caps sum to less than 100%, so full investment is impossible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model

_DOMAINS: dict[str, dict[str, Any]] = {
    "equity index fund": {
        "assets": ["Alcor", "Brenton", "Castell", "Dunmore", "Elbrook", "Fairhold", "Greyson", "Hartwell",
                   "Ivanhoe", "Jardine", "Kelso", "Larkspur", "Monarch"],
        "who": "a passive fund manager", "thing": "stock", "index": "the national stock index",
        "period": "Month",
    },
    "pension replication": {
        "assets": ["GovBond", "CorpBond", "Equity", "RealEstate", "Infrastructure", "Commodities", "Cash",
                   "EmergingMkts", "HighYield", "Inflation", "Private", "Gold", "Utilities"],
        "who": "a pension fund's liability team", "thing": "asset class", "index": "the liability benchmark",
        "period": "Quarter",
    },
    "commodity tracker": {
        "assets": ["Brent", "WTI", "NatGas", "Copper", "Aluminium", "Wheat", "Corn", "Soybeans", "Coffee",
                   "Sugar", "Silver", "Platinum", "Cattle"],
        "who": "an exchange-traded product desk", "thing": "futures contract", "index": "a broad commodity index",
        "period": "Week",
    },
}


@register
class IndexTracking(Family):
    name = "index_tracking"
    problem_class = "QP"
    sectors = {"equity index fund": "finance", "pension replication": "finance", "commodity tracker": "finance"}
    techniques = ("quadratic_objective", "ratio_percentage")
    template_styles = (("plain",), ("table",), ("story",), ("plain",))
    reorder_keys = ("assets",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        assets = names(v["assets"], 4 + difficulty, "Asset")
        periods = [f"{v['period']}{k}" for k in range(1, 5 + 2 * difficulty)]
        ret = {a: {t: round(float(rng.normal(0.5, 3.0)), 1) for t in periods} for a in assets}
        # The index is a hidden mix of the assets plus noise: trackable, never exactly.
        mix = rng.dirichlet(np.ones(len(assets)))
        index = {t: round(float(sum(m * ret[a][t] for m, a in zip(mix, assets, strict=True)) + rng.normal(0, 0.4)), 1)
                 for t in periods}
        cap = {a: int(rng.integers(30, 61)) for a in assets}
        return {"assets": assets, "periods": periods, "ret": ret, "index": index, "cap": cap}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        share = max(1, 100 // len(data["assets"]) - int(rng.integers(1, 4)))
        return {**data, "cap": {a: min(data["cap"][a], share) for a in data["assets"]}}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("index_tracking")
        assets = b.add_set("assets", data["assets"], "assets that may be held")
        periods = b.add_set("periods", data["periods"], "past periods of return history")
        b.add_param("ret", data["ret"], ("assets", "periods"), "percent", "return of an asset in a period")
        b.add_param("index", data["index"], ("periods",), "percent", "return of the index in a period")
        b.add_param("cap", data["cap"], ("assets",), "percent", "largest share of the portfolio in an asset")
        w = b.add_vars("weight", ("assets",), description="share of the portfolio in each asset", unit="fraction")
        dev = b.add_vars("deviation", ("periods",), lb=None, description="portfolio minus index return",
                         unit="percent")
        b.con_group("invested", (), "the weights sum to one (fully invested)")
        b.add_constr("invested", (), [(w[(a,)], 1) for a in assets], "==", 1)
        b.add_constrs("cap", ("assets",), "no asset above its cap (percent of the portfolio)",
                      lambda a: ([(w[(a,)], 1)], "<=", data["cap"][a] / 100))
        b.add_constrs("deviation", ("periods",), "tracking deviation of each period",
                      lambda t: ([(w[(a,)], data["ret"][a][t]) for a in assets] + [(dev[(t,)], -1)], "==",
                                 data["index"][t]))
        b.set_objective("minimize", [], quadratic=[(dev[(t,)], dev[(t,)], 1) for t in periods],
                        description="sum of squared tracking deviations")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        assets, periods = data["assets"], data["periods"]
        hist = "; ".join(f"{a}: " + listing(data["ret"][a], periods, "{v}% in {k}") for a in assets)
        idx = listing(data["index"], periods, "{v}% in {k}")
        caps = listing(data["cap"], assets, "{k} at most {v}%")
        goal = ("minimise the sum over the periods of the squared difference between the portfolio return "
                "(the weighted sum of the asset returns) and the index return")
        if template == 0:
            return (f"{v['who'].capitalize()} wants to replicate {v['index']} with {len(assets)} "
                    f"{v['thing']}s: {join(assets)}. Historical returns: {hist}. Index returns: {idx}. The "
                    f"portfolio must be fully invested, with {caps} of its value. Choose the weights to {goal}.")
        if template == 1:
            header = [v["period"]] + [f"{a} (%)" for a in assets] + ["Index (%)"]
            rows = [[t] + [data["ret"][a][t] for a in assets] + [data["index"][t]] for t in periods]
            return (f"Past returns of each {v['thing']} and of {v['index']}:\n\n{table(header, rows)}\n\n"
                    f"Position limits (share of the portfolio): {caps}. Weights are non-negative and sum to 100%. "
                    f"Find the weights that {goal}.")
        if template == 2:
            return (f"Clients of {v['who']} pay for a product that should move with {v['index']}, not beat it. "
                    f"Over the last {len(periods)} periods the index returned {idx}, while the candidate "
                    f"{v['thing']}s returned {hist}. Risk rules allow {caps}. No short selling, and all money "
                    f"must be invested. Which weights {goal}?")
        return (f"Tracking-error problem: {goal}. Weights w (fractions of the portfolio, no shorting) must sum to "
                f"1. Caps: {caps}. Returns by period: {hist}. Benchmark: {idx}.")
