"""Max flow (LP): the most flow from a source node to a sink node through capacitated directed arcs.

A guaranteed chain source -> ... -> sink keeps the network connected; a contract asks for at least half that
chain's bottleneck, so the instance is feasible. Infeasible variant: the contract asks for more than all arcs out of
the source can carry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import names, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

# In spec/max_flow.json, node names carry no underscore, so an arc name ``From_To`` reads unambiguously.


@register
class MaxFlow(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        middle = names(vocab["middle"], 2 + 2 * difficulty, "Node")
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
        arcs = b.add_set("arcs", [f"{u}_{w}" for u, w in data["arcs"]], "directed arcs From_To")
        b.add_param("capacity", data["capacity"], ("arcs",), "units", "most flow an arc carries")
        b.add_param("min_delivery", data["min_delivery"], (), "units", "flow the sink must receive at least")
        flow = b.add_vars("flow", ("arcs",), description="flow on each arc", unit="units")
        ends = dict(zip(arcs, data["arcs"], strict=True))
        b.con_group("conservation", ("inner_nodes",), "what enters an inner node leaves it")
        for node in middle:
            b.add_constr("conservation", (node,), [(flow[(a,)], 1) for a in arcs if ends[a][1] == node]
                         + [(flow[(a,)], -1) for a in arcs if ends[a][0] == node], "==", 0)
        b.add_constrs("capacity", ("arcs",), "arc flow within arc capacity",
                      lambda a: ([(flow[(a,)], 1)], "<=", data["capacity"][a]))
        net_out = ([(flow[(a,)], 1) for a in arcs if ends[a][0] == src]
                   + [(flow[(a,)], -1) for a in arcs if ends[a][1] == src])
        b.con_group("min_delivery", (), "the contracted minimum reaches the sink")
        b.add_constr("min_delivery", (), [(flow[(a,)], 1) for a in arcs if ends[a][1] == snk]
                     + [(flow[(a,)], -1) for a in arcs if ends[a][0] == snk], ">=", data["min_delivery"])
        b.set_objective("maximize", net_out, description="net flow out of the source")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        src, snk, unit = data["source"], data["sink"], v["unit"]
        links = "; ".join((f"{u} to {w} {number_text(data['capacity'][f'{u}_{w}'])}" for u, w in data["arcs"]))
        least = number_text(data["min_delivery"])
        rows = [[u, w, data["capacity"][f"{u}_{w}"]] for u, w in data["arcs"]]
        t2_part0 = table(["From", "To", f"Capacity ({unit})"], rows)
        return {"t2_part0": t2_part0, "least": least, "links": links, "snk": snk, "src": src, "unit": unit}
