"""Network capacity design (MILP): route every demand (a multi-commodity flow over undirected links) while buying
link capacity in whole modules; a link carries traffic only once it is built (a fixed installation cost, binary
``build``) and then at most ``max_modules`` modules (integer ``modules``), each at its own cost. Minimise the
installation plus module costs.

Demands are stated in the small unit (Mbps, kW, kg) and module capacity in the large one (Gbps, MW, tonnes):
``flow in both directions <= 1000 * capacity * modules``. The indicator ``modules <= max_modules * build`` is the
big-M link between the two kinds of cost. Feasible by construction: the links contain a ring through every node
and one link at its module limit carries the sum of all demands, so every demand can follow the ring.
Infeasible variant: one demand exceeds what all links at its origin could carry together (every unit of it must
leave its origin over one of them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, spread
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


@register
class NetworkCapacityDesign(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 4x2 / 5x3 / 6x3 nodes x demands by difficulty (at least four nodes: a ring plus distinct
        # chords), node names drawn from the domain's pool (``spread``, ``drawn_names``); demands are numbered.
        nodes = drawn_names(rng, self.vocab[domain]["nodes"], spread(rng, 3 + difficulty, 4), "Node")
        links = [f"{a}__{b}" for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True)]
        links += [f"{nodes[i]}__{nodes[i + 2]}" for i in range(len(nodes) - 2) if rng.random() < 0.5]
        demands = [f"D{k}" for k in range(1, 1 + spread(rng, 2 + difficulty // 2, 2))]
        ends = {d: [nodes[int(i)] for i in rng.permutation(len(nodes))[:2]] for d in demands}
        amount = {d: 100 * int(rng.integers(3, 30)) for d in demands}
        capacity = int(pick(rng, [1, 2, 5]))
        return {"nodes": nodes, "links": links, "demands": demands, "origin": {d: ends[d][0] for d in demands},
                "destination": {d: ends[d][1] for d in demands}, "amount": amount, "capacity": capacity,
                "max_modules": math.ceil(sum(amount.values()) / (1000 * capacity)) + int(rng.integers(0, 3)),
                "module_cost": {e: int(rng.integers(4, 20)) for e in links},
                "build_cost": {e: 10 * int(rng.integers(2, 12)) for e in links}}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        d = pick(rng, data["demands"])
        at_origin = sum(data["origin"][d] in e.split("__") for e in data["links"])
        most = at_origin * data["max_modules"] * 1000 * data["capacity"]
        return {**data, "amount": {**data["amount"], d: int(most + 100 * rng.integers(1, 5))}}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        nodes, demands = b.elements("nodes", "demands")
        links = [tuple(e.split("__")) for e in data["links"]]
        arcs = [arc for i, j in links for arc in ((i, j), (j, i))]
        origin, destination, amount = data["origin"], data["destination"], data["amount"]
        b.add_param("amount", amount, ("demands",), "small unit", "size of a demand")
        b.add_param("max_modules", data["max_modules"], (), "modules", "most modules on one link")
        b.add_param("capacity", data["capacity"], (), "large unit", "capacity of one module")
        b.add_param("module_size", 1000 * data["capacity"], (), "small unit",
                    "capacity of one module in the small unit (1000 per large unit)", derived=True)
        b.add_param("build_cost", {(i, j): data["build_cost"][f"{i}__{j}"] for i, j in links}, ("nodes", "nodes"),
                    "thousand dollars", "cost of building a link")
        b.add_param("module_cost", {(i, j): data["module_cost"][f"{i}__{j}"] for i, j in links},
                    ("nodes", "nodes"), "thousand dollars", "cost of one module")
        b.add_param("supply", {(d, v): amount[d] * ((v == origin[d]) - (v == destination[d]))
                               for d in demands for v in nodes}, ("demands", "nodes"), "small unit",
                    "net supply of a demand at a node: its size at the origin, minus it at the destination",
                    derived=True)
        flow = b.add_vars("flow", ("demands", "nodes", "nodes"), keys=[(d, i, j) for d in demands for i, j in arcs],
                          description="amount of a demand on a link direction")
        built = b.add_vars("build", ("nodes", "nodes"), VarType.BINARY, keys=links,
                           description="1 if the link is built")
        modules = b.add_vars("modules", ("nodes", "nodes"), VarType.INTEGER, keys=links,
                             description="modules installed on a link")
        b.con_group("balance", ("demands", "nodes"), "flow out minus flow in: the demand at its origin, minus it "
                    "at its destination, zero elsewhere")
        for d in demands:
            for v in nodes:
                b.add_constr("balance", (d, v), [(flow[(d, i, j)], (i == v) - (j == v)) for i, j in arcs], "==",
                             amount[d] * ((v == origin[d]) - (v == destination[d])))
        b.con_group("capacity", ("nodes", "nodes"), "traffic both ways within the installed modules (1000 small "
                    "units per large unit)")
        b.con_group("indicator", ("nodes", "nodes"), "modules only on a built link (big-M = max_modules)")
        for i, j in links:
            b.add_constr("capacity", (i, j), [(flow[(d, *arc)], 1) for d in demands for arc in ((i, j), (j, i))]
                         + [(modules[(i, j)], -1000 * data["capacity"])], "<=", 0)
            b.add_constr("indicator", (i, j), [(modules[(i, j)], 1), (built[(i, j)], -data["max_modules"])], "<=", 0)
        # Valid but redundant given the two groups above; they tighten the LP bound (the relaxation otherwise
        # builds a sliver of every link) and keep difficulty 5 well inside the solve-time budget.
        b.add_constrs("strong", ("demands", "nodes", "nodes"), "a demand uses a link only if it is built",
                      lambda d, i, j: ([(flow[(d, i, j)], 1), (flow[(d, j, i)], 1), (built[(i, j)], -amount[d])],
                                       "<=", 0), keys=[(d, i, j) for d in demands for i, j in links])
        b.set_objective("minimize", [(modules[k], data["module_cost"]["__".join(k)]) for k in links]
                        + [(built[k], data["build_cost"]["__".join(k)]) for k in links],
                        description="building plus modules")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        links = data["links"]
        mod, small = v["module"], v["small"]
        link = {e: e.replace("__", "-") for e in links}
        needs = "; ".join(
            f"{number_text(data['amount'][d])} {small} from {data['origin'][d]} to {data['destination'][d]}"
            for d in data["demands"]
        )
        costs = "; ".join(
            f"{link[e]} {number_text(data['build_cost'][e])} to build plus {number_text(data['module_cost'][e])} per {mod}"
            for e in links
        )
        rule = f"Each {mod} adds {number_text(data['capacity'])} {v['big']}, shared by both directions, and a built {v['link']} takes at most {number_text(data['max_modules'])} {mod}s."
        rows = [[link[e], data["build_cost"][e], data["module_cost"][e]] for e in links]
        header = [v["link"].capitalize(), "Build cost ($k)", f"Cost per {mod} ($k)"]
        return {"costs": costs, "header": header, "mod": mod, "needs": needs, "rows": rows, "rule": rule}
