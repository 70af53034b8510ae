"""Capacitated vehicle routing (MILP): identical vehicles leave one depot, every customer is served by exactly
one of them, no vehicle carries more than its capacity, and the total distance driven is as small as possible.

Miller-Tucker-Zemlin load variables: ``load[c]`` in [demand[c], Q] is what a vehicle has delivered once it leaves
customer ``c``; a used leg ``i -> j`` between customers forces ``load[j] >= load[i] + demand[j]`` (a big-M row
with M = Q, active only when the leg is driven). At most ``vehicles`` legs leave the depot, and at least ``ceil(total demand / Q)`` (a valid cut). The capacity is stated
in a larger unit (tonnes, hours, dozens) than the demands; Q is the converted copy (derived). Feasible by
construction: ``vehicles`` is at least the number of trips a next-fit packing of the demands in list order needs.
Infeasible variant: fewer vehicles than ``ceil(total demand / Q)``; every customer lies on a route from the depot
(the load rows forbid depot-free cycles, demands being positive), and each route carries at most Q.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators import _routing as rt
from flywheel.generators._text import listing, names
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
        customers = names(v["customers"], 2 + difficulty, "Customer")
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
        customers = b.add_set("customers", data["customers"], "customers, each served by one vehicle")
        x = rt.legs(b, places, data["dist"], "dist", "distance", "length of a leg")
        b.add_param("demand", data["demand"], ("customers",), "small unit", "what a customer needs")
        b.add_param("capacity", data["capacity"], (), "large unit", "what one vehicle can carry")
        b.add_param("vehicles", data["vehicles"], (), "vehicles", "vehicles available")
        q = _q(data)
        b.add_param("capacity_small", q, (), "small unit", "the capacity in the demands' unit (Q)", derived=True)
        load = b.add_vars("load", ("customers",), ub=q, description="delivered so far when leaving a customer",
                          unit="small unit")
        rt.degree(b, x, places, customers)
        b.con_group("load_min", ("customers",), "a vehicle leaving a customer has delivered at least its demand")
        for c in customers:
            b.add_constr("load_min", (c,), [(load[(c,)], 1)], ">=", data["demand"][c])
        rt.mtz(b, x, load, customers, data["demand"], q, "if leg i -> j is driven, load[j] >= load[i] + demand[j]")
        b.con_group("fleet", (), "at most the available vehicles leave the depot")
        departures = [(x[(places[0], c)], 1) for c in customers]
        b.add_constr("fleet", (), departures, "<=", data["vehicles"])
        # A valid cut (each trip carries at most Q): without it the LP bound is weak and proving a short fleet
        # infeasible takes HiGHS seconds at 8 customers.
        trips = math.ceil(sum(data["demand"].values()) / q)
        b.add_param("min_trips", trips, (), "vehicles", "ceil(total demand / Q): trips any plan needs", derived=True)
        b.con_group("min_trips", (), "enough trips leave the depot to carry the total demand")
        b.add_constr("min_trips", (), departures, ">=", trips)
        b.set_objective("minimize", [(x[p], data["dist"][p[0]][p[1]]) for p in x], description="total distance")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        customers, depot = data["customers"], data["depot"]
        veh = v["vehicle"]
        places = [depot, *customers]
        cap = f"{number_text(data['capacity'])} {v['large']}"
        needs = listing(data["demand"], customers, "{k} {v} " + v["small"])
        fleet = f"There are {number_text(data['vehicles'])} identical {veh}s, each with a capacity of {cap}; every route starts and ends at {depot}, and a {veh} need not be used."
        legs = rt.pairs_text(places, data["dist"])
        needs_semi = listing(data["demand"], customers, "{k} {v} " + v["small"], "; ")
        return {"fleet": fleet, "legs": legs, "needs": needs, "needs_semi": needs_semi, "places": places, "veh": veh}
