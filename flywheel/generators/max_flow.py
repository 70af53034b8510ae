"""Max flow (LP): the most flow from a source node to a sink node through capacitated directed arcs.

A guaranteed chain source -> ... -> sink keeps the network connected; a contract asks for at least half that
chain's bottleneck, so the instance is feasible. Infeasible variant: the contract asks for more than all arcs out of
the source can carry.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, names, table
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

# Node names carry no underscore, so an arc name ``From_To`` reads unambiguously.
_DOMAINS: dict[str, dict[str, Any]] = {
    "oil pipeline": {
        "source": "Oilfield", "sink": "Refinery", "node": "pumping station", "unit": "thousand barrels per day",
        "what": "crude oil", "middle": ["StationA", "StationB", "StationC", "StationD", "StationE", "StationF",
                                        "StationG", "StationH", "StationI", "StationJ"],
    },
    "evacuation planning": {
        "source": "Stadium", "sink": "Shelter", "node": "road junction", "unit": "vehicles per hour",
        "what": "traffic", "middle": ["Elm", "Oak", "Pine", "Maple", "Cedar", "Birch", "Ash", "Willow", "Poplar",
                                      "Spruce"],
    },
    "computer network": {
        "source": "Server", "sink": "Client", "node": "router", "unit": "Mbps", "what": "data",
        "middle": ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9", "R10"],
    },
}


@register
class MaxFlow(Family):
    name = "max_flow"
    problem_class = "LP"
    sectors = {"oil pipeline": "energy", "evacuation planning": "public services", "computer network": "telecom"}
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
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
        b = ModelBuilder("max_flow")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        src, snk, unit = data["source"], data["sink"], v["unit"]
        links = "; ".join(f"{u} to {w} {n(data['capacity'][f'{u}_{w}'])}" for u, w in data["arcs"])
        least = n(data["min_delivery"])
        if template == 0:
            return (f"In this {domain} problem, {v['what']} moves from {src} to {snk} through {v['node']}s "
                    f"{join(data['middle'])}. The one-way links and their capacities ({unit}) are: {links}. Flow is "
                    f"conserved at every {v['node']}. At least {least} {unit} must reach {snk}. What is the largest "
                    f"possible flow from {src} to {snk}?")
        if template == 1:
            return (f"Maximise the {v['what']} flow from {src} to {snk}. Directed link capacities in {unit}: "
                    f"{links}. Intermediate nodes ({join(data['middle'])}) neither create nor absorb flow. A "
                    f"contract requires a delivery of no less than {least} {unit}.")
        if template == 2:
            rows = [[u, w, data["capacity"][f"{u}_{w}"]] for u, w in data["arcs"]]
            return (f"Maximum-flow problem ({domain}). Source: {src}; sink: {snk}.\n\n"
                    f"{table(['From', 'To', f'Capacity ({unit})'], rows)}\n\nFlow in equals flow out at every other "
                    f"node, and at least {least} {unit} must arrive at {snk}. Find the maximum flow.")
        return (f"How much {v['what']} can be pushed from {src} to {snk} per period? Links (one-way, capacity in "
                f"{unit}): {links}. The {v['node']}s {join(data['middle'])} only relay flow. The plan must deliver "
                f"{least} {unit} or more.")
