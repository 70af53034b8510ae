"""Min-cost flow (LP): move goods from sources through hubs to sinks over capacitated arcs at least cost.

The network is built around a flow that routes every sink's demand from one source through one hub, with arc
capacities at least that flow and supplies at least what it uses, so the instance is feasible by construction.
Infeasible variant: one sink demands more than the total capacity of the arcs into it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, plural, spread, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, number_text

# In spec/min_cost_flow.json, node names carry no underscore, so an arc name ``From_To`` reads unambiguously.


@register
class MinCostFlow(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 2x2x2 / 2x3x3 / 3x4x4 by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        sources = drawn_names(rng, vocab["sources"], spread(rng, 1 + (difficulty + 1) // 2), "Source")
        hubs = drawn_names(rng, vocab["hubs"], spread(rng, 1 + difficulty), "Hub")
        sinks = drawn_names(rng, vocab["sinks"], spread(rng, 1 + difficulty, 2), "Sink")
        demand = {k: int(rng.integers(10, 60)) for k in sinks}
        flow: dict[tuple[str, str], int] = {}
        used = dict.fromkeys(sources, 0)
        for k in sinks:  # the witness flow: all of k's demand from one source through one hub
            s, h = pick(rng, sources), pick(rng, hubs)
            flow[(s, h)] = flow.get((s, h), 0) + demand[k]
            flow[(h, k)] = flow.get((h, k), 0) + demand[k]
            used[s] += demand[k]
        candidates = ([(s, h) for s in sources for h in hubs] + [(h, g) for h in hubs for g in hubs if h < g]
                      + [(h, k) for h in hubs for k in sinks] + [(s, k) for s in sources for k in sinks])
        arcs = [a for a in candidates if a in flow or rng.random() < 0.35]
        capacity = {a: flow.get(a, 0) + int(rng.integers(5, 40)) for a in arcs}
        cost = {a: int(rng.integers(1, 20)) for a in arcs}
        supply = {s: used[s] + int(rng.integers(5, 30)) for s in sources}
        return {"sources": sources, "hubs": hubs, "sinks": sinks, "arcs": [list(a) for a in arcs],
                "capacity": {f"{u}_{v}": c for (u, v), c in capacity.items()},
                "cost": {f"{u}_{v}": c for (u, v), c in cost.items()}, "supply": supply, "demand": demand}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        k = pick(rng, data["sinks"])
        inflow = sum(data["capacity"][f"{u}_{v}"] for u, v in data["arcs"] if v == k)
        return exceed(data, "demand", k, inflow, rng.integers(1, 20))

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        sources, hubs, sinks = b.elements("sources", "hubs", "sinks")
        b.add_set("nodes", [*sources, *hubs, *sinks], "every node")
        arcs = [(u, v) for u, v in data["arcs"]]
        b.add_param("supply", data["supply"], ("sources",), "units", "most a source can send")
        b.add_param("demand", data["demand"], ("sinks",), "units", "what a sink must receive")
        b.add_param("capacity", {(u, v): data["capacity"][f"{u}_{v}"] for u, v in arcs}, ("nodes", "nodes"), "units",
                    "most flow an arc carries")
        b.add_param("cost", {(u, v): data["cost"][f"{u}_{v}"] for u, v in arcs}, ("nodes", "nodes"),
                    "money per unit", "cost of one unit on an arc")
        flow = b.add_vars("flow", ("nodes", "nodes"), keys=arcs, description="flow on each arc", unit="units")
        into = {n: [flow[(u, v)] for u, v in arcs if v == n] for n in (*hubs, *sinks)}
        out = {n: [flow[(u, v)] for u, v in arcs if u == n] for n in (*sources, *hubs)}
        b.add_constrs("supply", ("sources",), "a source sends at most its supply",
                      lambda s: ([(x, 1) for x in out[s]], "<=", data["supply"][s]))
        # A hub that no arc enters (or leaves) has a one-sided row: a group of its own, so each group is uniform.
        b.add_constrs("conservation", ("hubs",), "what enters a hub leaves it",
                      lambda h: ([(x, 1) for x in into[h]] + [(x, -1) for x in out[h]], "==", 0),
                      keys=[h for h in hubs if into[h] and out[h]])
        b.add_constrs("no_exit", ("hubs",), "a hub that no arc leaves receives nothing",
                      lambda h: ([(x, 1) for x in into[h]], "==", 0), keys=[h for h in hubs if into[h] and not out[h]])
        b.add_constrs("no_entry", ("hubs",), "a hub that no arc enters sends nothing",
                      lambda h: ([(x, 1) for x in out[h]], "==", 0), keys=[h for h in hubs if out[h] and not into[h]])
        b.add_constrs("demand", ("sinks",), "a sink receives exactly its demand",
                      lambda k: ([(x, 1) for x in into[k]], "==", data["demand"][k]))
        b.add_constrs("capacity", ("nodes", "nodes"), "arc flow within arc capacity",
                      lambda u, v: ([(flow[(u, v)], 1)], "<=", data["capacity"][f"{u}_{v}"]), keys=arcs)
        b.set_objective("minimize", [(flow[a], data["cost"]["_".join(a)]) for a in arcs],
                        description="total flow cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        src, hub, snk = v["kinds"]
        unit = v["unit"]
        supply = listing(data["supply"], data["sources"])
        demand = listing(data["demand"], data["sinks"])
        links = "; ".join(
            (
                f"{u} to {w}: capacity {number_text(data['capacity'][f'{u}_{w}'])}, cost {number_text(data['cost'][f'{u}_{w}'])}"
                for u, w in data["arcs"]
            )
        )
        nodes = f"{plural(src)} {join(data['sources'])}, {plural(hub)} {join(data['hubs'])} and {plural(snk)} {join(data['sinks'])}"
        rows = [[u, w, data["capacity"][f"{u}_{w}"], data["cost"][f"{u}_{w}"]] for u, w in data["arcs"]]
        rows_t = table(["From", "To", f"Capacity ({unit})", f"Cost ({v['money']})"], rows)
        return {"demand": demand, "hub": hub, "links": links, "nodes": nodes, "rows_t": rows_t, "snk": snk, "src": src,
                "supply": supply, "unit": unit}
