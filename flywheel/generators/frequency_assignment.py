"""Frequency assignment (MILP): give every transmitter a channel number, keep each interfering pair far enough
apart, and use as few channels as possible: minimise the highest channel used (min-max: ``top >= channel[i]``).

Separations are stated in MHz and channels a fixed number of MHz apart, so a pair needs ``sep / width`` channels
between them: ``|channel[a] - channel[b]| >= d``. An absolute value bounded *below* is not convex; it takes an
either-or binary ``above`` per pair: ``channel[a] - channel[b] >= d - M * above`` and ``channel[b] - channel[a] >=
d - M * (1 - above)``, with ``M = top_channel + largest d`` (a derived parameter: no difference of two channels in
1..top_channel is below ``1 - top_channel``). Feasible by construction: transmitter k on channel ``1 + k * D``
(D the largest separation in channels) separates every pair, and the top channel allows it. Infeasible variant:
the top channel is cut to at most one pair's separation ``d``; two channels in 1..d differ by at most ``d - 1``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from flywheel.generators._text import listing, names, table
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


def _pair(a: str, b: str) -> str:
    return f"{a}__{b}"


@register
class FrequencyAssignment(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        sites = names(self.vocab[domain]["sites"], 3 + 2 * difficulty, "Site")
        width = int(pick(rng, [5, 10, 20]))  # MHz between neighbouring channels
        pairs = [(a, b) for a, b in combinations(sites, 2) if rng.random() < 0.4] or [(sites[0], sites[1])]
        sep = {_pair(a, b): width * int(rng.integers(1, 4)) for a, b in pairs}
        spread = max(sep.values()) // width
        return {"sites": sites, "width": width, "separation": sep,
                "top_channel": 1 + (len(sites) - 1) * spread + int(rng.integers(0, 5))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        key = pick(rng, sorted(data["separation"]))
        return {**data, "top_channel": data["separation"][key] // data["width"]}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (sites,) = b.elements("sites")
        pairs = b.add_set("pairs", list(data["separation"]), "interfering pairs of transmitters")
        b.add_param("width", data["width"], (), "MHz", "spacing between neighbouring channels")
        b.add_param("separation", data["separation"], ("pairs",), "MHz", "least spacing of an interfering pair")
        b.add_param("top_channel", data["top_channel"], (), "channel", "highest channel number available")
        need = {p: data["separation"][p] / data["width"] for p in pairs}
        big_m = data["top_channel"] + max(need.values())
        b.add_param("big_m", big_m, (), "channels", "top channel plus the largest separation", derived=True)
        ch = b.add_vars("channel", ("sites",), VarType.INTEGER, lb=1, ub=data["top_channel"],
                        description="channel number of a transmitter")
        top = b.add_var("top", description="highest channel used", unit="channel")
        above = b.add_vars("above", ("pairs",), VarType.BINARY,
                           description="1 if the second transmitter of the pair takes the higher channel")
        b.con_group("top", ("sites",), "the highest channel used is at least every channel (min-max)")
        for s in sites:
            b.add_constr("top", (s,), [(top, 1), (ch[(s,)], -1)], ">=", 0)
        b.con_group("first_higher", ("pairs",), "the first is d channels above the second, or ...")
        b.con_group("second_higher", ("pairs",), "... the second is d channels above the first")
        for p in pairs:
            a, c = p.split("__")
            b.add_constr("first_higher", (p,), [(ch[(a,)], 1), (ch[(c,)], -1), (above[(p,)], big_m)], ">=", need[p])
            b.add_constr("second_higher", (p,), [(ch[(c,)], 1), (ch[(a,)], -1), (above[(p,)], -big_m)], ">=",
                         need[p] - big_m)
        b.set_objective("minimize", [(top, 1)], description="highest channel used")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        sites = data["sites"]
        site = v["site"]
        order = {s: i for i, s in enumerate(sites)}
        keys = sorted(data["separation"], key=lambda p: tuple(sorted(order[x] for x in p.split("__"))))
        pairs = listing({p.replace("__", " and "): data["separation"][p] for p in keys}, None, "{k} {v} MHz", "; ")
        band = f"The {v['band']} has channels 1 to {number_text(data['top_channel'])}, neighbouring channels {number_text(data['width'])} MHz apart."
        rows = [[*p.split("__"), data["separation"][p]] for p in keys]
        t1_part0 = table([f"{site.capitalize()} A", f"{site.capitalize()} B", "Least spacing (MHz)"], rows)
        return {"t1_part0": t1_part0, "band": band, "pairs": pairs, "site": site}
