"""Capacitated vehicle routing (MILP): identical vehicles leave one depot, every customer is served by exactly
one of them, no vehicle carries more than its capacity, and the total distance driven is as small as possible.

Single-commodity flow (Gavish-Graves): ``flow[i, j]`` is the load a vehicle carries along leg ``i -> j``, at most Q
and only on a driven leg; every customer keeps its demand of what is brought in (flow in - flow out = demand). A
cycle avoiding the depot would have to lose load all the way round (demands being positive), so none exists, and a
route carries at most Q out of the depot. At most ``vehicles`` legs leave the depot. The capacity is stated in a
larger unit (tonnes, hours, dozens) than the demands; Q is the converted copy (derived). Feasible by construction:
``vehicles`` is at least the number of trips a next-fit packing of the demands in list order needs. Infeasible
variant: fewer vehicles than ``ceil(total demand / Q)``: summing the customers' rows, the flow out of the depot is
at least the total demand, and it is at most Q times the legs leaving the depot (already the LP relaxation fails).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators import _routing as rt
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, number_text

# factor: small units per large unit; step: the capacity is a multiple of step large units.


def _q(data: dict[str, Any]) -> float:
    """The capacity in the demands' unit (rounded: 1.1 tonnes is 1100 kg, not 1100.0000000000002)."""
    factor = next(v["factor"] for v in CVRP.vocab.values() if v["depot"] == data["depot"])
    return round(data["capacity"] * factor, 6)


@register
class CVRP(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3 / 4 / 5 customers by difficulty, names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the depot stays first. From difficulty 3 up only the lower side: 6 customers at
        # difficulty 3 took up to 3 s for the ground truth (5: well under 1 s).
        base = 2 + difficulty
        customers = drawn_names(rng, v["customers"], spread(rng, base, 2, high=base + (difficulty < 3)), "Customer")
        dist = rt.euclidean(rng, [v["depot"], *customers])
        demand = {c: int(rng.integers(*v["demand"])) for c in customers}
        # A capacity of a third to a half of the total demand (never below the largest), rounded up to the step.
        need = max(max(demand.values()), sum(demand.values()) / rng.uniform(2.0, 3.0))
        grain = v["step"] * v["factor"]
        capacity = round(math.ceil(need / grain) * v["step"], 1)
        trips, room = 0, 0.0
        for c in customers:  # next-fit packing: an upper bound on the vehicles needed
            if demand[c] > room:
                trips, room = trips + 1, capacity * v["factor"]
            room -= demand[c]
        return {"depot": v["depot"], "customers": customers, "dist": dist, "demand": demand,
                "capacity": capacity, "vehicles": trips + int(rng.integers(0, 2))}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        return {**data, "vehicles": math.ceil(sum(data["demand"].values()) / _q(data)) - 1}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        places = b.add_set("places", [data["depot"], *data["customers"]], "the depot (first) and the customers")
        b.add_set("depot", places[:1], "where every route starts and ends")
        b.add_set("customers", data["customers"], "customers, each served by one vehicle")
        x = rt.legs(b, places, data["dist"], "dist", "distance", "length of a leg")
        b.add_param("demand", data["demand"], ("customers",), "small unit", "what a customer needs")
        b.add_param("vehicles", data["vehicles"], (), "vehicles", "vehicles available")
        b.add_param("capacity", data["capacity"], (), "large unit", "what one vehicle can carry")
        q = _q(data)
        b.add_param("capacity_small", q, (), "small unit", "the capacity in the demands' unit (Q)", derived=True)
        flow = b.add_vars("flow", ("places", "places"), keys=list(x), unit="small unit",
                          description="load a vehicle carries along a leg")
        rt.degree(b, x, places, "customers")
        b.add_constrs("deliver", ("customers",), "a customer keeps its demand of the load brought in",
                      lambda c: ([(flow[(a, c)], 1) for a in places if a != c]
                                 + [(flow[(c, a)], -1) for a in places if a != c], "==", data["demand"][c]))
        b.add_constrs("load", ("places", "places"), "only a driven leg carries load, at most Q",
                      lambda a, c: ([(flow[(a, c)], 1), (x[(a, c)], -q)], "<=", 0), keys=list(x))
        b.add_constrs("fleet", ("depot",), "at most the available vehicles leave the depot",
                      lambda d: ([(x[(d, c)], 1) for c in places if c != d], "<=", data["vehicles"]))
        b.set_objective("minimize", [(x[p], data["dist"][p[0]][p[1]]) for p in x], description="total distance")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        customers, depot = data["customers"], data["depot"]
        veh = v["vehicle"]
        places = [depot, *customers]
        cap = f"{number_text(data['capacity'])} {v['large']}"
        needs = listing(data["demand"], customers, "{k} {v} " + v["small"])
        if data["vehicles"] == 1:
            fleet = f"There is {number_text(data['vehicles'])} {veh}, with a capacity of {cap}; its route starts and ends at {depot}."
        else:
            fleet = f"There are {number_text(data['vehicles'])} identical {veh}s, each with a capacity of {cap}; every route starts and ends at {depot}, and a {veh} need not be used."
        legs = rt.pairs_text(places, data["dist"])
        needs_semi = listing(data["demand"], customers, "{k} {v} " + v["small"], "; ")
        return {"fleet": fleet, "legs": legs, "needs": needs, "needs_semi": needs_semi, "places": places, "veh": veh}
