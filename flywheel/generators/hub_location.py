"""Single-allocation hub location (MILP): open hubs (a fixed cost each, in thousands of dollars) and assign every
origin, with its whole volume, to exactly one open hub (a partitioning row per origin), paying a collection cost per
unit; a hub handles its capacity, plus up to a limited amount of extra capacity (overtime, rented space: a
continuous quantity at a premium per unit) only if it is open.

``sum_h x[o,h] = 1``; ``x[o,h] <= y[h]``; ``sum_o v[o] x[o,h] <= cap[h] y[h] + extra[h]``;
``extra[h] <= ext[h] y[h]`` (big-M: none at a closed hub). Feasible by construction: the capacities sum to at
least total volume plus (number of hubs) x (largest volume), so first-fit with every hub open assigns every origin
without extra capacity. Infeasible variant: one origin's volume exceeds every hub's capacity plus its extra limit,
and an origin cannot be split between hubs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import listing, names, plural, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "parcel collection": {"origins": ["Alton", "Bourne", "Cleve", "Dunmow", "Eynsham", "Fakenham", "Garstang",
                                      "Hexham", "Ilkley", "Jarrow", "Keswick", "Louth", "Marlow", "Norton"],
                          "hubs": ["HubMidway", "HubRiver", "HubJunction", "HubAirfield"], "unit": "parcels a day",
                          "one": "parcel", "origin": "town", "hub": "sorting hub", "who": "a courier company"},
    "mobile backhaul": {"origins": ["Cell01", "Cell02", "Cell03", "Cell04", "Cell05", "Cell06", "Cell07", "Cell08",
                                    "Cell09", "Cell10", "Cell11", "Cell12", "Cell13", "Cell14"],
                        "hubs": ["AggNorth", "AggSouth", "AggCore", "AggHarbour"], "unit": "Mbps", "one": "Mbps",
                        "origin": "cell site", "hub": "aggregation hub", "who": "a mobile operator"},
    "lockbox banking": {"origins": ["RegionNE", "RegionSE", "RegionMW", "RegionSW", "RegionNW", "RegionPlains",
                                    "RegionGulf", "RegionLakes", "RegionDelta", "RegionBasin", "RegionCoast",
                                    "RegionValley", "RegionHills", "RegionBay"],
                        "hubs": ["LockboxAtlanta", "LockboxDenver", "LockboxChicago", "LockboxDallas"],
                        "unit": "cheques a day", "one": "cheque", "origin": "customer region", "hub": "lockbox",
                        "who": "a bank's treasury department"},
}


@register
class HubLocation(Family):
    name = "hub_location"
    version = "1"
    problem_class = "MILP"
    domains = tuple(_DOMAINS)
    sectors = {"parcel collection": "logistics", "mobile backhaul": "telecom", "lockbox banking": "finance"}
    techniques = ("fixed_charge", "set_partitioning_covering")
    template_styles = (("plain",), ("table",), ("story", "units"), ("plain",))
    reorder_keys = ("origins", "hubs")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        origins = names(v["origins"], 4 + 2 * difficulty, "Origin")
        hubs = names(v["hubs"], 2 + difficulty // 3, "Hub")
        volume = {o: int(rng.integers(2, 20)) * 10 for o in origins}
        total, top = sum(volume.values()), max(volume.values())
        capacity = {h: math.ceil(total / len(hubs) * rng.uniform(0.8, 1.4)) + top for h in hubs}
        if sum(capacity.values()) < total + len(hubs) * top:  # keep the first-fit guarantee
            capacity[hubs[0]] += total + len(hubs) * top - sum(capacity.values())
        where = {k: rng.uniform(0, 100, size=2) for k in origins + hubs}
        cost = {o: {h: 1 + int(np.linalg.norm(where[o] - where[h]) // 8) for h in hubs} for o in origins}
        return {"origins": origins, "hubs": hubs, "volume": volume, "capacity": capacity, "cost": cost,
                "fixed": {h: int(rng.integers(2, 12)) for h in hubs},  # thousand dollars
                "extra": {h: int(capacity[h] * rng.uniform(0.1, 0.3)) for h in hubs},
                "premium": {h: int(rng.integers(3, 12)) for h in hubs}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = max(data["capacity"][h] + data["extra"][h] for h in data["hubs"])
        return exceed(data, "volume", pick(rng, data["origins"]), most, rng.integers(1, 30))

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("hub_location")
        origins = b.add_set("origins", data["origins"], "origins, each assigned whole to one hub")
        hubs = b.add_set("hubs", data["hubs"], "candidate hubs")
        b.add_param("volume", data["volume"], ("origins",), "units", "volume of an origin")
        b.add_param("capacity", data["capacity"], ("hubs",), "units", "regular capacity of a hub")
        b.add_param("cost", {(o, h): data["cost"][o][h] for o in origins for h in hubs}, ("origins", "hubs"),
                    "dollars per unit", "collection cost from an origin to a hub")
        b.add_param("fixed", data["fixed"], ("hubs",), "thousand dollars", "fixed cost of opening a hub")
        b.add_param("extra", data["extra"], ("hubs",), "units", "most extra capacity at an open hub")
        b.add_param("premium", data["premium"], ("hubs",), "dollars per unit", "cost of a unit of extra capacity")
        x = b.add_vars("assign", ("origins", "hubs"), VarType.BINARY, description="1 if the origin uses the hub")
        y = b.add_vars("open", ("hubs",), VarType.BINARY, description="1 if the hub is opened")
        e = b.add_vars("extra_used", ("hubs",), description="extra capacity bought at a hub", unit="units")
        b.con_group("assign", ("origins",), "every origin to exactly one hub (partitioning)")
        for o in origins:
            b.add_constr("assign", (o,), [(x[(o, h)], 1) for h in hubs], "==", 1)
        b.con_group("open_only", ("origins", "hubs"), "only open hubs take origins")
        for o in origins:
            for h in hubs:
                b.add_constr("open_only", (o, h), [(x[(o, h)], 1), (y[(h,)], -1)], "<=", 0)
        b.con_group("capacity", ("hubs",), "assigned volume within capacity of an open hub plus extra")
        b.con_group("extra_limit", ("hubs",), "extra capacity only at an open hub, up to its limit (big-M)")
        for h in hubs:
            b.add_constr("capacity", (h,), [(x[(o, h)], data["volume"][o]) for o in origins]
                         + [(y[(h,)], -data["capacity"][h]), (e[(h,)], -1)], "<=", 0)
            b.add_constr("extra_limit", (h,), [(e[(h,)], 1), (y[(h,)], -data["extra"][h])], "<=", 0)
        b.set_objective("minimize", [(y[(h,)], 1000 * data["fixed"][h]) for h in hubs]
                        + [(e[(h,)], data["premium"][h]) for h in hubs]
                        + [(x[(o, h)], data["cost"][o][h] * data["volume"][o]) for o in origins for h in hubs],
                        description="fixed costs plus collection plus extra capacity, in dollars")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        num = number_text
        v = _DOMAINS[domain]
        origins, hubs, d, unit, one = data["origins"], data["hubs"], data, v["unit"], v["one"]
        hubs_word, origins_word = plural(v["hub"]), plural(v["origin"])
        volumes = listing(d["volume"], origins)
        hub_terms = "; ".join(f"{h}: opening costs {num(d['fixed'][h])} thousand dollars, capacity "
                              f"{num(d['capacity'][h])}, plus up to {num(d['extra'][h])} extra at "
                              f"${num(d['premium'][h])} per {one}" for h in hubs)
        costs = "; ".join(f"{o}: " + listing(d["cost"][o], hubs, "{k} ${v}") for o in origins)
        rule = (f"Each {v['origin']} must be served by exactly one open {v['hub']}, with all of its volume; extra "
                f"capacity exists only at an open {v['hub']}.")
        if template == 0:
            return (f"{v['who'].capitalize()} is choosing which {hubs_word} to open. {v['origin'].capitalize()} "
                    f"volumes ({unit}): {volumes}. Candidate {hubs_word}: {hub_terms}. Collection cost in dollars "
                    f"per {one}: {costs}. {rule} Which {hubs_word} should open, and which serves each "
                    f"{v['origin']}, to minimise the daily total cost?")
        if template == 1:
            rows = [[o, d["volume"][o]] + [d["cost"][o][h] for h in hubs] for o in origins]
            header = [v["origin"].capitalize(), f"Volume ({unit})"] + [f"{h} ($/{one})" for h in hubs]
            return (f"Hub location for {v['who']}.\n\n{table(header, rows)}\n\n{hub_terms}. {rule} Minimise the "
                    "total of opening, collection and extra-capacity costs.")
        if template == 2:
            fixed = ", ".join(f"{h} ${thousands(1000 * d['fixed'][h])}" for h in hubs)
            return (f"After a merger, {v['who']} is redrawing its network of {hubs_word}. Opening one costs "
                    f"{fixed} a day. Each handles its regular capacity ({listing(d['capacity'], hubs)} {unit}) and "
                    f"can stretch by up to {listing(d['extra'], hubs)} at a premium of "
                    f"{listing(d['premium'], hubs, '{k} ${v}')} per {one}. The {origins_word} send {volumes}, and "
                    f"collecting costs {costs} per {one}. {rule} What is the cheapest network?")
        return (f"Minimise opening plus collection plus extra-capacity cost for a {domain} network. Volumes: "
                f"{volumes}. Hubs: {hub_terms}. Unit costs: {costs}. {rule} Opening and assignment are yes/no "
                "decisions.")
