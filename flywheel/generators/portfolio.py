"""Portfolio (convex QP, Markowitz): the fully invested, long-only mix of least variance that reaches a target
expected return.

The covariance is ``B B^T + diag(d)`` with small integer ``B`` and positive integer ``d``: integer entries (no
rounding at all) and positive definite by construction, which ``sample`` still checks. Returns are in percent with one
decimal, so variances are in percent squared. The target lies between the lowest and highest expected return, so
the instance is feasible. Infeasible variant: the target exceeds every asset's expected return.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "equity fund": {
        "asset": "stock", "who": "a fund manager", "horizon": "per year",
        "assets": ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay", "Tyrell",
                   "Cyberdyne", "Soylent", "Wonka"],
    },
    "pension fund": {
        "asset": "asset class", "who": "a pension fund's investment committee", "horizon": "per year",
        "assets": ["GovBonds", "CorpBonds", "Equities", "RealEstate", "Gold", "Infrastructure", "EmergingMkts",
                   "PrivateEquity", "Commodities", "HighYield", "Inflation", "Cash"],
    },
    "farm planning": {
        "asset": "crop", "who": "a farmer dividing land between crops", "horizon": "per season",
        "assets": ["Wheat", "Corn", "Soybeans", "Barley", "Canola", "Potatoes", "Sunflower", "Oats", "Rye",
                   "Lentils", "Peas", "Sorghum"],
    },
}


@register
class Portfolio(Family):
    name = "portfolio"
    problem_class = "QP"
    sectors = {"equity fund": "finance", "pension fund": "finance", "farm planning": "agriculture"}
    techniques = ("quadratic_objective",)
    template_styles = (("table",), ("table",), ("table",), ("table",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        assets = names(_DOMAINS[domain]["assets"], 2 + 2 * difficulty, "Asset")
        k = len(assets)
        loadings = rng.integers(-3, 6, size=(k, 2))
        cov = loadings @ loadings.T + np.diag(rng.integers(4, 30, size=k))
        if np.linalg.eigvalsh(cov.astype(float)).min() <= 0:  # cannot happen (diag > 0); guard the invariant
            raise AssertionError("covariance is not positive definite")
        ret = {a: round(float(rng.uniform(2, 12)), 1) for a in assets}
        lo, hi = min(ret.values()), max(ret.values())
        target = round(float(rng.uniform(lo + 0.3 * (hi - lo), lo + 0.8 * (hi - lo))), 1)
        return {"assets": assets, "expected_return": ret, "target": target,
                "cov": {a: {b: int(cov[i, j]) for j, b in enumerate(assets)} for i, a in enumerate(assets)}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "target": round(max(data["expected_return"].values()) + float(rng.uniform(0.5, 3)), 1)}

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("portfolio")
        assets = b.add_set("assets", data["assets"], "assets that can be held")
        b.add_param("expected_return", data["expected_return"], ("assets",), "percent", "expected return")
        b.add_param("cov", data["cov"], ("assets", "assets"), "percent squared", "covariance of returns")
        b.add_param("target", data["target"], (), "percent", "minimum expected portfolio return")
        w = b.add_vars("weight", ("assets",), description="share of the budget in each asset", unit="fraction")
        b.con_group("budget", (), "the whole budget is allocated")
        b.add_constr("budget", (), [(w[(a,)], 1) for a in assets], "==", 1)
        b.con_group("target_return", (), "expected return reaches the target")
        b.add_constr("target_return", (), [(w[(a,)], data["expected_return"][a]) for a in assets], ">=",
                     data["target"])
        # w' C w = sum_i C_ii w_i^2 + sum_{i<j} 2 C_ij w_i w_j
        quad = [(w[(a,)], w[(c,)], data["cov"][a][c] * (1 if i == j else 2))
                for i, a in enumerate(assets) for j, c in enumerate(assets) if i <= j]
        b.set_objective("minimize", [], quadratic=quad, description="portfolio variance")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        assets, ret, cov = data["assets"], data["expected_return"], data["cov"]
        rets = listing(ret, assets, "{k} {v}%")
        covs = table([""] + assets, [[a] + [cov[a][c] for c in assets] for a in assets])
        target = f"{n(data['target'])}%"
        share = "Shares are non-negative (no short positions) and add up to the whole budget."
        if template == 0:
            return (f"{v['who'].capitalize()} splits a budget among the {v['asset']}s {join(assets)}. Expected "
                    f"returns {v['horizon']}: {rets}. The covariance matrix of returns (in percent squared) is:\n\n"
                    f"{covs}\n\n{share} Find the shares that minimise the variance of the return while the "
                    f"expected return is at least {target}.")
        if template == 1:
            return (f"Markowitz problem ({domain}): minimise portfolio variance subject to an expected return of "
                    f"no less than {target} {v['horizon']}. Expected returns: {rets}. {share} Covariances (%^2):\n\n"
                    f"{covs}")
        if template == 2:
            rows = [[a, ret[a]] + [cov[a][c] for c in assets] for a in assets]
            return (f"Data for {len(assets)} {v['asset']}s ({domain}); returns in % {v['horizon']}, covariances in "
                    f"%^2:\n\n{table([v['asset'].capitalize(), 'Expected return (%)'] + assets, rows)}\n\n"
                    f"Choose portfolio weights that reach an expected return of {target} or more with the smallest "
                    f"variance. {share}")
        return (f"What is the least risky allocation for {v['who']} that still expects to earn {target} "
                f"{v['horizon']}? Risk is the variance of the return, w' C w, with C (percent squared):\n\n{covs}\n\n"
                f"The {v['asset']}s' expected returns are {rets}. {share}")
