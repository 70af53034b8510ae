"""Max flow (LP): the most flow from a source node to a sink node through capacitated directed arcs (the flow value,
a variable, is what leaves the source).

A guaranteed chain source -> ... -> sink keeps the network connected; a contract asks for at least half that
chain's bottleneck, so the instance is feasible. Infeasible variant: the contract asks for more than all arcs out of
the source can carry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

# In spec/max_flow.json, node names carry no underscore, so an arc name ``From_To`` reads unambiguously.


@register
class MaxFlow(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 4 / 6 / 8 middle nodes by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``).
        middle = drawn_names(rng, vocab["middle"], spread(rng, 2 + 2 * difficulty, 2), "Node")
        source, sink = vocab["source"], vocab["sink"]
        order = [middle[int(i)] for i in rng.permutation(len(middle))]
        chain = [source, *order[: max(2, len(order) // 3)], sink]
        arcs = set(zip(chain[:-1], chain[1:], strict=True))
        for u in [source, *middle]:
            for w in [*middle, sink]:
                if u != w and (w, u) not in arcs and rng.random() < 0.3:
                    arcs.add((u, w))
        ordered = sorted(arcs, key=lambda a: ([source, *middle, sink].index(a[0]), [*middle, sink].index(a[1])))
        capacity = {f"{u}_{w}": int(rng.integers(5, 50)) for u, w in ordered}
        bottleneck = min(capacity[f"{u}_{w}"] for u, w in zip(chain[:-1], chain[1:], strict=True))
        return {"source": source, "sink": sink, "middle": middle, "arcs": [list(a) for a in ordered],
                "capacity": capacity, "min_delivery": max(1, bottleneck // 2)}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        out = sum(data["capacity"][f"{u}_{w}"] for u, w in data["arcs"] if u == data["source"])
        return {**data, "min_delivery": int(out + rng.integers(1, 20))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        src, snk = data["source"], data["sink"]
        b.add_set("nodes", [src, *data["middle"], snk], "network nodes (source first, sink last)")
        middle = b.add_set("inner_nodes", data["middle"], "nodes where flow is conserved")
        b.add_set("sources", [src], "the source")
        b.add_set("sinks", [snk], "the sink")
        arcs = [(u, w) for u, w in data["arcs"]]
        b.add_param("capacity", {(u, w): data["capacity"][f"{u}_{w}"] for u, w in arcs}, ("nodes", "nodes"), "units",
                    "most flow an arc carries")
        b.add_param("min_delivery", data["min_delivery"], (), "units", "flow the sink must receive at least")
        flow = b.add_vars("flow", ("nodes", "nodes"), keys=arcs, description="flow on each arc", unit="units")
        total = b.add_var("total_flow", description="net flow out of the source", unit="units")
        into = {n: [flow[(u, w)] for u, w in arcs if w == n] for n in (*middle, snk)}
        out = {n: [flow[(u, w)] for u, w in arcs if u == n] for n in (src, *middle)}
        # No arc enters the source or leaves the sink (sample). An inner node that no arc enters (or leaves) has
        # a one-sided row: a group of its own, so that each group is uniform.
        b.add_constrs("conservation", ("inner_nodes",), "what enters an inner node leaves it",
                      lambda n: ([(x, 1) for x in into[n]] + [(x, -1) for x in out[n]], "==", 0),
                      keys=[n for n in middle if into[n] and out[n]])
        b.add_constrs("no_exit", ("inner_nodes",), "an inner node that no arc leaves receives nothing",
                      lambda n: ([(x, 1) for x in into[n]], "==", 0),
                      keys=[n for n in middle if into[n] and not out[n]])
        b.add_constrs("no_entry", ("inner_nodes",), "an inner node that no arc enters sends nothing",
                      lambda n: ([(x, 1) for x in out[n]], "==", 0),
                      keys=[n for n in middle if out[n] and not into[n]])
        b.add_constrs("capacity", ("nodes", "nodes"), "arc flow within arc capacity",
                      lambda u, w: ([(flow[(u, w)], 1)], "<=", data["capacity"][f"{u}_{w}"]), keys=arcs)
        b.add_constrs("flow_value", ("sources",), "the flow value is what leaves the source",
                      lambda s: ([(x, 1) for x in out[s]] + [(total, -1)], "==", 0))
        b.add_constrs("min_delivery", ("sinks",), "the contracted minimum reaches the sink",
                      lambda t: ([(x, 1) for x in into[t]], ">=", data["min_delivery"]))
        b.set_objective("maximize", [(total, 1)], description="net flow out of the source")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        src, snk, unit = data["source"], data["sink"], v["unit"]
        links = "; ".join((f"{u} to {w} {number_text(data['capacity'][f'{u}_{w}'])}" for u, w in data["arcs"]))
        least = number_text(data["min_delivery"])
        rows = [[u, w, data["capacity"][f"{u}_{w}"]] for u, w in data["arcs"]]
        t2_part0 = table(["From", "To", f"Capacity ({unit})"], rows)
        return {"t2_part0": t2_part0, "least": least, "links": links, "snk": snk, "src": src, "unit": unit}
