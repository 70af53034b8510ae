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

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class Portfolio(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4 / 6 / 8 assets by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        assets = drawn_names(rng, self.vocab[domain]["assets"], spread(rng, 2 + 2 * difficulty, 3), "Asset")
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
        b = self.builder(data)
        (assets,) = b.elements("assets")
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

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        assets, cov = data["assets"], data["cov"]
        ret = data["expected_return"]
        rets = listing(ret, assets, "{k} {v}%")
        covs = table([""] + assets, [[a] + [cov[a][c] for c in assets] for a in assets])
        target = f"{number_text(data['target'])}%"
        share = "Shares are non-negative (no short positions) and add up to the whole budget."
        rows = [[a, ret[a]] + [cov[a][c] for c in assets] for a in assets]
        return {"covs": covs, "rets": rets, "rows": rows, "share": share, "target": target}
