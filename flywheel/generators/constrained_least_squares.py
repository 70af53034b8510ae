"""Constrained least squares (convex QP): calibrate one level per ordered bucket (price points, temperature bands,
dose levels) to repeated noisy observations, minimising the sum of squared residuals
(``residual[b,r] = obs[b,r] - level[b]``), subject to what is known about the response: it moves in one direction
across the buckets by at least a minimum step each time (a monotone, isotonic-style fit) and stays within bounds.

Feasible by construction: the minimum steps over all buckets take at most half the room between the bounds.
Infeasible variant: the minimum step is raised until the steps over the buckets need more than the whole room
between the bounds (the first and the last level would have to differ by more than the bounds allow).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text


@register
class ConstrainedLeastSquares(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3x2 / 4x3 / 5x3 by difficulty (``spread``); buckets and repetitions keep their natural order.
        buckets = v["buckets"][:spread(rng, 2 + difficulty, 2)]
        reps = [f"R{r}" for r in range(1, spread(rng, 2 + difficulty // 2, 2) + 1)]
        lo, span = int(rng.integers(5, 40)), int(rng.integers(60, 150))
        trend = np.linspace(0.15, 0.85, len(buckets)) * span + lo
        trend = trend if v["up"] else trend[::-1]
        noise = span // 4  # large enough that the raw bucket means often break the known direction
        obs = {bk: {r: int(trend[k] + rng.integers(-noise, noise + 1)) for r in reps} for k, bk in enumerate(buckets)}
        return {"buckets": buckets, "reps": reps, "obs": obs, "direction": "up" if v["up"] else "down", "lower": lo, "upper": lo + span,
                "min_step": int(rng.integers(0, span // (2 * (len(buckets) - 1)) + 1))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        room = data["upper"] - data["lower"]
        return {**data, "min_step": room // (len(data["buckets"]) - 1) + int(rng.integers(1, 5))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        buckets, reps = b.elements("buckets", "reps")
        level = b.add_vars("level", ("buckets",), lb=data["lower"], ub=data["upper"],
                           description="calibrated level of a bucket")
        resid = b.add_vars("residual", ("buckets", "reps"), lb=None, description="observation minus its level")
        b.con_group("residual_def", ("buckets", "reps"), "residual is the observation minus the level")
        for k in buckets:
            for r in reps:
                b.add_constr("residual_def", (k, r), [(resid[(k, r)], 1), (level[(k,)], 1)], "==", data["obs"][k][r])
        # Known direction: rising buckets need level[k+1] - level[k] >= step, falling ones the reverse.
        up = 1 if data["direction"] == "up" else -1
        b.con_group("monotone", ("buckets",), "the response moves in its known direction by the minimum step")
        for prev, k in zip(buckets, buckets[1:], strict=False):
            b.add_constr("monotone", (k,), [(level[(k,)], up), (level[(prev,)], -up)], ">=", data["min_step"])
        b.set_objective("minimize", [], quadratic=[(resid[key], resid[key], 1) for key in resid],
                        description="sum of squared residuals")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        buckets, reps = data["buckets"], data["reps"]
        n = number_text
        way = "rises" if data["direction"] == "up" else "falls"
        seen = "; ".join(f"{k}: " + ", ".join(n(data["obs"][k][r]) for r in reps) for k in buckets)
        known = (
            f"The true {v['level']} {way} from each {v['bucket']} to the next (in the order {join(buckets)}) "
            f"by at least {n(data['min_step'])}, and every level lies between {n(data['lower'])} and "
            f"{n(data['upper'])}."
        )
        goal = "Minimise the sum of squared differences between the observations and their bucket's level."
        body = table(
            [v["bucket"].capitalize(), *(f"Obs {r[1:]}" for r in reps)],
            [[k, *(data["obs"][k][r] for r in reps)] for k in buckets],
        )
        return {"body": body, "goal": goal, "known": known, "seen": seen}
