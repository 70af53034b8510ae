"""Least-absolute-deviation forecast (LP): fit ``y ~ a + sum_j b_j x_j`` to observations minimising the sum of
absolute residuals. Each residual is split into two non-negative parts (``fit + over - under = y``, minimise
``over + under``): at an optimum at most one of them is positive, so their sum is the absolute value. Domain
knowledge fixes each slope's sign and caps its size, bounds the intercept, and asks the fitted model to forecast
at least a floor at a planning point.

Feasible by construction: the floor is at most half the largest forecast the coefficient box allows (the planning
point is non-negative, so that maximum is the intercept cap plus the positive slopes' caps times the point).
Infeasible variant: the floor is raised above that maximum, which no coefficients in the box can reach.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class LadForecast(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 8x1 / 10x1 / 12x2 observations x features by difficulty, features drawn from the domain's pool
        # (``spread``, ``drawn_names``); the observations stay in order.
        known = {f: s for f, s in v["features"]}
        features = drawn_names(rng, list(known), spread(rng, 1 + (difficulty - 1) // 2, high=len(known)), "Feature")
        obs = [f"{v['obs']}{t}" for t in range(1, 1 + spread(rng, 6 + 2 * difficulty, 3))]
        sign = {f: known[f] for f in features}
        cap = {f: int(rng.integers(3, 12)) for f in features}
        x = {t: {f: int(rng.integers(1, 20)) for f in features} for t in obs}
        true_a = int(rng.integers(20, 80))
        # The data's own slopes may fall outside the known box (wrong sign, too big): then the box binds.
        true_b = {f: (1 if sign[f] == "+" else -1) * float(rng.uniform(-0.3, 1.4)) * cap[f] for f in features}
        y = {t: max(1, int(true_a + sum(true_b[f] * x[t][f] for f in features) + rng.integers(-8, 9)))
             for t in obs}
        point = {f: int(rng.integers(1, 20)) for f in features}
        intercept_max = true_a + int(rng.integers(5, 40))
        return {"features": features, "obs": obs, "sign": sign, "cap": cap, "x": x, "y": y,
                "intercept_max": intercept_max, "point": point,
                "floor": int(self._most(sign, cap, point, intercept_max) * rng.uniform(0.2, 0.5))}

    @staticmethod
    def _most(sign: dict[str, str], cap: dict[str, int], point: dict[str, int], intercept_max: float) -> float:
        """The largest forecast at ``point`` any coefficients in the box can give (the point is >= 0)."""
        return intercept_max + sum(cap[f] * point[f] for f in cap if sign[f] == "+")

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = self._most(data["sign"], data["cap"], data["point"], data["intercept_max"])
        return {**data, "floor": int(most + rng.integers(1, 30))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        feats, obs = b.elements("features", "obs")
        a = b.add_var("intercept", description="fitted intercept")
        slope = b.add_vars("slope", ("features",), lb=None, description="fitted slope of a feature")
        over = b.add_vars("over", ("obs",), description="amount the fit exceeds an observation")
        under = b.add_vars("under", ("obs",), description="amount the fit falls short of an observation")
        b.con_group("fit", ("obs",), "fit plus residual parts equals the observation")
        for t in obs:
            b.add_constr("fit", (t,), [(a, 1), *((slope[(f,)], data["x"][t][f]) for f in feats),
                                       (under[(t,)], 1), (over[(t,)], -1)], "==", data["y"][t])
        b.con_group("sign", ("features",), "each slope has its known sign")
        b.con_group("size", ("features",), "each slope within its cap")
        for f in feats:
            s = 1 if data["sign"][f] == "+" else -1
            b.add_constr("sign", (f,), [(slope[(f,)], s)], ">=", 0)
            b.add_constr("size", (f,), [(slope[(f,)], s)], "<=", data["cap"][f])
        b.con_group("intercept_cap", (), "intercept within its cap")
        b.add_constr("intercept_cap", (), [(a, 1)], "<=", data["intercept_max"])
        b.con_group("floor", (), "the forecast at the planning point reaches the floor")
        b.add_constr("floor", (), [(a, 1), *((slope[(f,)], data["point"][f]) for f in feats)], ">=", data["floor"])
        b.set_objective("minimize", [(e[(t,)], 1) for e in (over, under) for t in obs],
                        description="sum of absolute residuals")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        obs = data["obs"]
        n, feats = number_text, data["features"]
        known = "; ".join(
            f"the {f} slope is {'non-negative' if data['sign'][f] == '+' else 'non-positive'} and "
            f"at most {n(data['cap'][f])} in size"
            for f in feats
        )
        rules = (
            f"Known from experience: {known}; the intercept ({v['base']}) lies between 0 and "
            f"{n(data['intercept_max'])}. The fitted model must forecast at least {n(data['floor'])} "
            f"{v['target']} at the planning point {listing(data['point'], feats, '{k} = {v}')}."
        )
        rows = "; ".join(f"{t}: {listing(data['x'][t], feats, '{k} {v}')}, {n(data['y'][t])}" for t in obs)
        model = f"{v['goal']} = intercept + " + " + ".join(f"slope_{f} * {f}" for f in feats)
        body = table(
            [v["obs"], *feats, f"Observed ({v['target']})"],
            [[t, *(data["x"][t][f] for f in feats), data["y"][t]] for t in obs],
        )
        return {"body": body, "feats": feats, "model": model, "rows": rows, "rules": rules}
