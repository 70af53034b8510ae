"""Index tracking (convex QP): weights of a few assets (fully invested, each under its cap) whose portfolio return
follows a benchmark index as closely as possible, measured as the sum over past periods of the squared tracking
deviation ``dev[t] = sum_i ret[i,t] w[i] - index[t]`` (free deviation variables, quadratic objective).

Feasible by construction: every cap is at least 30% and there are at least five assets, so the caps sum past 100%.
Infeasible variant: every cap is cut so that the caps sum to less than 100%, so full investment is impossible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model


@register
class IndexTracking(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 5x6 / 6x8 / 7x10 by difficulty, asset names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the periods keep their order. At least 4 assets: the caps (30-60%) must reach 100%; always
        # more periods than assets (around difficulty more), so that no mix of the assets tracks the index exactly.
        assets = drawn_names(rng, v["assets"], spread(rng, 4 + difficulty, 4), "Asset")
        periods = [f"{v['period']}{k}" for k in range(1, len(assets) + spread(rng, difficulty) + 1)]
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
        b = self.builder(data)
        assets, periods = b.elements("assets", "periods")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        assets, periods = data["assets"], data["periods"]
        hist = "; ".join(f"{a}: " + listing(data["ret"][a], periods, "{v}% in {k}") for a in assets)
        idx = listing(data["index"], periods, "{v}% in {k}")
        caps = listing(data["cap"], assets, "{k} at most {v}%")
        goal = (
            "minimise the sum over the periods of the squared difference between the portfolio return "
            "(the weighted sum of the asset returns) and the index return"
        )
        header = [v["period"]] + [f"{a} (%)" for a in assets] + ["Index (%)"]
        rows = [[t] + [data["ret"][a][t] for a in assets] + [data["index"][t]] for t in periods]
        return {"caps": caps, "goal": goal, "header": header, "hist": hist, "idx": idx, "rows": rows}
