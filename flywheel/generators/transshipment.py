"""Transshipment (LP): ship from sources (each with a supply limit) through intermediate hubs (each charging a
handling fee and limited in throughput) to destinations with fixed demands, at least total cost; a few
source-destination pairs may also ship direct at a premium.

Flow conservation at every hub (in = handled = out), supply at most the limit, demand met exactly. Handling fees
are quoted in cents per unit and freight in dollars: the fee is charged on what a hub handles, in dollars (a
derived copy, fee / 100). Feasible by construction: supply and hub throughput each exceed total demand, and every
source reaches every hub and every hub every destination. Infeasible variant: one demand is raised so that total
demand exceeds total supply (all flow starts at a source).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, number_text


@register
class Transshipment(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 2x2x3 / 3x2x4 / 3x3x5 sources x hubs x destinations by difficulty, names drawn from the domain's
        # pool (``spread``, ``drawn_names``).
        sources = drawn_names(rng, v["sources"], spread(rng, 2 + difficulty // 2, 2), "Source")
        hubs = drawn_names(rng, v["hubs"], spread(rng, 2 + (difficulty - 1) // 2, 2), "Hub")
        dests = drawn_names(rng, v["dests"], spread(rng, 2 + difficulty, 2), "Dest")
        demand = {d: int(rng.integers(2, 20)) * 10 for d in dests}
        total = sum(demand.values())
        supply = {s: int(total * rng.uniform(1.1, 1.6) / len(sources)) + 10 for s in sources}
        capacity = {h: int(total * rng.uniform(1.1, 1.6) / len(hubs)) + 10 for h in hubs}
        inbound = {s: {h: int(rng.integers(2, 15)) for h in hubs} for s in sources}
        outbound = {h: {d: int(rng.integers(2, 15)) for d in dests} for h in hubs}
        pairs = [(s, d) for s in sources for d in dests]
        direct = {f"{s}__{d}": int(rng.integers(14, 30))
                  for s, d in (pairs[int(i)] for i in sorted(rng.permutation(len(pairs))[:difficulty]))}
        return {"sources": sources, "hubs": hubs, "dests": dests, "demand": demand, "supply": supply,
                "capacity": capacity, "fee": {h: int(rng.integers(20, 150)) for h in hubs},  # cents per unit
                "inbound": inbound, "outbound": outbound, "direct": direct}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        d = pick(rng, data["dests"])
        gap = sum(data["supply"].values()) - sum(data["demand"].values())
        return exceed(data, "demand", d, data["demand"][d] + gap, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        sources, hubs, dests = b.elements("sources", "hubs", "dests")
        direct = [tuple(k.split("__")) for k in data["direct"]]
        b.add_param("supply", data["supply"], ("sources",), "units", "most a source can ship")
        b.add_param("demand", data["demand"], ("dests",), "units", "demand of a destination")
        b.add_param("capacity", data["capacity"], ("hubs",), "units", "throughput limit of a hub")
        b.add_param("fee", data["fee"], ("hubs",), "cents per unit", "handling fee of a hub")
        b.add_param("fee_dollars", {h: data["fee"][h] / 100 for h in hubs}, ("hubs",), "dollars per unit",
                    "handling fee of a hub in dollars (100 cents to the dollar)", derived=True)
        b.add_param("inbound", data["inbound"], ("sources", "hubs"), "dollars per unit",
                    "freight from a source to a hub")
        b.add_param("outbound", data["outbound"], ("hubs", "dests"), "dollars per unit",
                    "freight from a hub to a destination")
        b.add_param("direct_cost", {(s, d): data["direct"][f"{s}__{d}"] for s, d in direct}, ("sources", "dests"),
                    "dollars per unit", "freight of a direct shipment")
        inb = b.add_vars("ship_in", ("sources", "hubs"), description="units from a source to a hub", unit="units")
        out = b.add_vars("ship_out", ("hubs", "dests"), description="units from a hub to a destination", unit="units")
        dir_ = b.add_vars("ship_direct", ("sources", "dests"), keys=direct, description="units shipped direct",
                          unit="units")
        handled = b.add_vars("handled", ("hubs",), description="units passing through a hub", unit="units")
        # Sources (destinations) with a direct lane have one more sum in their row: a group of their own, built by
        # the same row function (its direct-lane sum is empty for the others).
        senders, receivers = {s for s, _ in direct}, {d for _, d in direct}

        def supply(s: str) -> tuple[list[tuple[str, float]], str, float]:
            return ([(inb[(s, h)], 1) for h in hubs] + [(dir_[k], 1) for k in direct if k[0] == s], "<=",
                    data["supply"][s])

        def demand(d: str) -> tuple[list[tuple[str, float]], str, float]:
            return ([(out[(h, d)], 1) for h in hubs] + [(dir_[k], 1) for k in direct if k[1] == d], "==",
                    data["demand"][d])

        b.add_constrs("supply", ("sources",), "a source without direct lanes ships at most its supply", supply,
                      keys=[s for s in sources if s not in senders])
        b.add_constrs("supply_direct", ("sources",), "a source with direct lanes ships at most its supply", supply,
                      keys=[s for s in sources if s in senders])
        b.add_constrs("inflow", ("hubs",), "what enters a hub is what it handles",
                      lambda h: ([(inb[(s, h)], 1) for s in sources] + [(handled[(h,)], -1)], "==", 0))
        b.add_constrs("outflow", ("hubs",), "what a hub handles leaves it",
                      lambda h: ([(out[(h, d)], 1) for d in dests] + [(handled[(h,)], -1)], "==", 0))
        b.add_constrs("capacity", ("hubs",), "a hub handles at most its throughput",
                      lambda h: ([(handled[(h,)], 1)], "<=", data["capacity"][h]))
        b.add_constrs("demand", ("dests",), "a destination without direct lanes receives exactly its demand", demand,
                      keys=[d for d in dests if d not in receivers])
        b.add_constrs("demand_direct", ("dests",), "a destination with direct lanes receives exactly its demand",
                      demand, keys=[d for d in dests if d in receivers])
        b.set_objective("minimize", [(inb[(s, h)], data["inbound"][s][h]) for s in sources for h in hubs]
                        + [(out[(h, d)], data["outbound"][h][d]) for h in hubs for d in dests]
                        + [(dir_[k], data["direct"]["__".join(k)]) for k in direct]
                        + [(handled[(h,)], data["fee"][h] / 100) for h in hubs], description="freight plus handling")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        dests, hubs, sources = data["dests"], data["hubs"], data["sources"]
        unit, one = v["unit"], v["one"]
        supply = listing(data["supply"], sources)
        demand = listing(data["demand"], dests)
        hub_terms = ", ".join(
            f"{h} handles up to {number_text(data['capacity'][h])} {unit} at {number_text(data['fee'][h])} cents per {one}"
            for h in hubs
        )
        inbound = "; ".join(f"from {s}: " + listing(data["inbound"][s], hubs, "{k} ${v}") for s in sources)
        outbound = "; ".join(f"from {h}: " + listing(data["outbound"][h], dests, "{k} ${v}") for h in hubs)
        direct = ", ".join(
            (f"{k.split('__')[0]} to {k.split('__')[1]} at ${number_text(c)}" for k, c in data["direct"].items())
        )
        direct_s = f"Direct shipments (dollars per {one}) are possible only for {direct}."
        rows = [[s, h, data["inbound"][s][h]] for s in sources for h in hubs] + [
            [h, d, data["outbound"][h][d]] for h in hubs for d in dests
        ]
        t1_part0 = table(["From", "To", f"$ per {one}"], rows)
        return {"t1_part0": t1_part0, "demand": demand, "direct_s": direct_s, "hub_terms": hub_terms, "inbound": inbound,
                "one": one, "outbound": outbound, "supply": supply, "unit": unit}
