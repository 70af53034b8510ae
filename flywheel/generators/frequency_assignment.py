"""Frequency assignment (MILP): give every transmitter a channel number, keep each interfering pair far enough
apart, and use as few channels as possible: minimise the highest channel used (min-max: ``top >= channel[i]``).

Separations are stated in MHz and channels a fixed number of MHz apart; ``freq[i] = width * channel[i]`` and a pair
needs ``|freq[a] - freq[b]| >= sep``. An absolute value bounded *below* is not convex; it takes an either-or pair of
binaries ``above + below = 1``: ``freq[a] - freq[b] >= sep - M * below`` and ``freq[b] - freq[a] >= sep - M *
above``, with ``M = width * top_channel + largest sep`` (a derived parameter: no difference of two frequencies in
the band is below ``width - width * top_channel``). Feasible by construction: transmitter k on channel ``1 + k * D``
(D the largest separation in channels) separates every pair, and the top channel allows it. Infeasible variant:
the top channel is cut to at most one pair's separation ``d``; two channels in 1..d differ by at most ``d - 1``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


def _pair(a: str, b: str) -> str:
    return f"{a}__{b}"


@register
class FrequencyAssignment(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 5 / 7 / 9 sites by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        sites = drawn_names(rng, self.vocab[domain]["sites"], spread(rng, 3 + 2 * difficulty, 2), "Site")
        width = int(pick(rng, [5, 10, 20]))  # MHz between neighbouring channels
        pairs = [(a, b) for a, b in combinations(sites, 2) if rng.random() < 0.4] or [(sites[0], sites[1])]
        sep = {_pair(a, b): width * int(rng.integers(1, 4)) for a, b in pairs}
        span = max(sep.values()) // width
        return {"sites": sites, "width": width, "separation": sep,
                "top_channel": 1 + (len(sites) - 1) * span + int(rng.integers(0, 5))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        key = pick(rng, sorted(data["separation"]))
        return {**data, "top_channel": data["separation"][key] // data["width"]}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        (sites,) = b.elements("sites")
        sep = {tuple(p.split("__")): v for p, v in data["separation"].items()}
        b.add_param("width", data["width"], (), "MHz", "spacing between neighbouring channels")
        b.add_param("separation", sep, ("sites", "sites"), "MHz", "least spacing of an interfering pair")
        b.add_param("top_channel", data["top_channel"], (), "channel", "highest channel number available")
        big_m = data["width"] * data["top_channel"] + max(sep.values())
        b.add_param("big_m", big_m, (), "MHz", "top frequency plus the largest separation", derived=True)
        ch = b.add_vars("channel", ("sites",), VarType.INTEGER, lb=1, ub=data["top_channel"],
                        description="channel number of a transmitter")
        freq = b.add_vars("freq", ("sites",), description="frequency of a transmitter above the band's base",
                          unit="MHz")
        top = b.add_var("top", description="highest channel used", unit="channel")
        above = b.add_vars("above", ("sites", "sites"), VarType.BINARY, keys=sep,
                           description="1 if the first transmitter of the pair takes the higher channel")
        below = b.add_vars("below", ("sites", "sites"), VarType.BINARY, keys=sep,
                           description="1 if the first transmitter of the pair takes the lower channel")
        b.add_constrs("top", ("sites",), "the highest channel used is at least every channel (min-max)",
                      lambda s: ([(top, 1), (ch[(s,)], -1)], ">=", 0))
        b.add_constrs("freq", ("sites",), "a channel's frequency: channel number x spacing",
                      lambda s: ([(freq[(s,)], 1), (ch[(s,)], -data["width"])], "==", 0))
        b.add_constrs("one_side", ("sites", "sites"), "of an interfering pair, one takes the higher channel",
                      lambda a, c: ([(above[(a, c)], 1), (below[(a, c)], 1)], "==", 1), keys=sep)
        b.add_constrs("first_higher", ("sites", "sites"), "the first is the separation above the second, unless below",
                      lambda a, c: ([(freq[(a,)], 1), (freq[(c,)], -1), (below[(a, c)], big_m)], ">=", sep[(a, c)]),
                      keys=sep)
        b.add_constrs("second_higher", ("sites", "sites"), "the second is the separation above the first, unless above",
                      lambda a, c: ([(freq[(c,)], 1), (freq[(a,)], -1), (above[(a, c)], big_m)], ">=", sep[(a, c)]),
                      keys=sep)
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
