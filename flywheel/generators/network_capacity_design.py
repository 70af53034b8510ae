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

from flywheel.generators._text import names
from flywheel.generators.base import Family, pick, register
from solvers.ir import Model, VarType, number_text


@register
class NetworkCapacityDesign(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        nodes = names(self.vocab[domain]["nodes"], 3 + difficulty, "Node")
        links = [f"{a}__{b}" for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True)]
        links += [f"{nodes[i]}__{nodes[i + 2]}" for i in range(len(nodes) - 2) if rng.random() < 0.5]
        demands = [f"D{k}" for k in range(1, 3 + difficulty // 2)]
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
        nodes, links, demands = b.elements("nodes", "links", "demands")
        arcs = b.add_set("arcs", [f"{e}__{s}" for e in links for s in ("fwd", "back")], "links in each direction")
        b.add_param("amount", data["amount"], ("demands",), "small unit", "size of a demand")
        b.add_param("capacity", data["capacity"], (), "large unit", "capacity of one module")
        b.add_param("max_modules", data["max_modules"], (), "modules", "most modules on one link")
        b.add_param("module_cost", data["module_cost"], ("links",), "thousand dollars", "cost of one module")
        b.add_param("build_cost", data["build_cost"], ("links",), "thousand dollars", "cost of building a link")
        flow = b.add_vars("flow", ("demands", "arcs"), description="amount of a demand on a link direction")
        built = b.add_vars("build", ("links",), VarType.BINARY, description="1 if the link is built")
        modules = b.add_vars("modules", ("links",), VarType.INTEGER, description="modules installed on a link")
        ends = {a: a.split("__")[:2] if a.endswith("fwd") else a.split("__")[1::-1] for a in arcs}
        b.con_group("balance", ("demands", "nodes"), "flow out minus flow in: the demand at its origin, minus it "
                    "at its destination, zero elsewhere")
        for d in demands:
            for v in nodes:
                net = data["amount"][d] * ((v == data["origin"][d]) - (v == data["destination"][d]))
                b.add_constr("balance", (d, v), [(flow[(d, a)], (ends[a][0] == v) - (ends[a][1] == v))
                                                 for a in arcs], "==", net)
        b.con_group("capacity", ("links",), "traffic both ways within the installed modules (1000 small units "
                    "per large unit)")
        b.con_group("indicator", ("links",), "modules only on a built link (big-M = max_modules)")
        for e in links:
            b.add_constr("capacity", (e,), [(flow[(d, f"{e}__{s}")], 1) for d in demands for s in ("fwd", "back")]
                         + [(modules[(e,)], -1000 * data["capacity"])], "<=", 0)
            b.add_constr("indicator", (e,), [(modules[(e,)], 1), (built[(e,)], -data["max_modules"])], "<=", 0)
        # Valid but redundant given the two groups above; they tighten the LP bound (the relaxation otherwise
        # builds a sliver of every link) and keep difficulty 5 well inside the solve-time budget.
        b.con_group("strong", ("demands", "links"), "a demand uses a link only if it is built")
        for d in demands:
            for e in links:
                b.add_constr("strong", (d, e), [(flow[(d, f"{e}__{s}")], 1) for s in ("fwd", "back")]
                             + [(built[(e,)], -data["amount"][d])], "<=", 0)
        b.set_objective("minimize", [(modules[(e,)], data["module_cost"][e]) for e in links]
                        + [(built[(e,)], data["build_cost"][e]) for e in links], description="building plus modules")
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
