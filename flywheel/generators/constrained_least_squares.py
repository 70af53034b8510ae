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

from flywheel.generators._text import join, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "price response": {"buckets": ["Budget", "Value", "Regular", "Plus", "Premium", "Luxury", "Collector"],
                       "up": False, "level": "weekly units sold", "bucket": "price point",
                       "who": "a retailer's pricing analyst", "obs": "store-weeks"},
    "load curve": {"buckets": ["Freezing", "Cold", "Cool", "Mild", "Warm", "Hot", "Scorching"], "up": True,
                   "level": "peak load in MW", "bucket": "temperature band", "who": "a utility's load forecaster",
                   "obs": "days"},
    "dose response": {"buckets": ["Placebo", "Micro", "Low", "Medium", "High", "Higher", "Maximum"], "up": True,
                      "level": "response score", "bucket": "dose level", "who": "a clinical trial statistician",
                      "obs": "patients"},
}


@register
class ConstrainedLeastSquares(Family):
    name = "constrained_least_squares"
    version = "1"
    problem_class = "QP"
    domains = tuple(_DOMAINS)
    sectors = {"price response": "retail", "load curve": "energy", "dose response": "health care"}
    techniques = ("quadratic_objective",)
    template_styles = (("table",), ("plain",), ("story",), ("plain",))
    reorder_keys = ()  # buckets are ordered: the direction of the response depends on it

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        buckets = v["buckets"][:2 + difficulty]
        reps = [f"R{r}" for r in range(1, 3 + difficulty // 2)]
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
        b = ModelBuilder("constrained_least_squares")
        buckets = b.add_set("buckets", data["buckets"], "ordered buckets, one level each")
        reps = b.add_set("reps", data["reps"], "repeated observations of a bucket")
        b.add_param("obs", {(k, r): data["obs"][k][r] for k in buckets for r in reps}, ("buckets", "reps"), "",
                    "an observed value")
        b.add_param("lower", data["lower"], (), "", "least allowed level")
        b.add_param("upper", data["upper"], (), "", "largest allowed level")
        b.add_param("min_step", data["min_step"], (), "", "least change between neighbouring buckets")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        n, buckets, reps = number_text, data["buckets"], data["reps"]
        way = "rises" if data["direction"] == "up" else "falls"
        seen = "; ".join(f"{k}: " + ", ".join(n(data["obs"][k][r]) for r in reps) for k in buckets)
        known = (f"The true {v['level']} {way} from each {v['bucket']} to the next (in the order {join(buckets)}) "
                 f"by at least {n(data['min_step'])}, and every level lies between {n(data['lower'])} and "
                 f"{n(data['upper'])}.")
        goal = "Minimise the sum of squared differences between the observations and their bucket's level."
        if template == 0:
            body = table([v["bucket"].capitalize(), *(f"Obs {r[1:]}" for r in reps)],
                         [[k, *(data["obs"][k][r] for r in reps)] for k in buckets])
            return (f"Calibrate one {v['level']} per {v['bucket']} from {len(reps)} {v['obs']} each.\n\n{body}\n\n"
                    f"{known} {goal}")
        if template == 1:
            return (f"Constrained least squares ({domain}): fit a level to each {v['bucket']} given the observations "
                    f"{seen}. {known} {goal}")
        if template == 2:
            return (f"{v['who'].capitalize()} has noisy measurements: {seen}. Taken at face value the averages may "
                    f"contradict what everyone knows. {known} Which levels fit the data best in the least-squares "
                    "sense while respecting that knowledge?")
        return (f"Estimate the {v['level']} for each {v['bucket']}. Observations per {v['bucket']}: {seen}. "
                f"{known} {goal} Report the fitted levels.")

