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
from flywheel.generators._text import join, listing, names
from flywheel.generators.base import Family, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, number_text

# factor: small units per large unit; step: the capacity is a multiple of step large units.
_DOMAINS: dict[str, dict[str, Any]] = {
    "parcel delivery": {
        "depot": "Hub", "customers": ["Bakery", "Pharmacy", "Florist", "Garage", "Bookshop", "Cafe", "Tailor",
                                      "Optician", "Butcher", "Deli"],
        "vehicle": "van", "small": "kg", "large": "tonnes", "factor": 1000, "step": 0.1, "dist": "km",
        "demand": (40, 400), "load": "parcels",
    },
    "home care visits": {
        "depot": "Clinic", "customers": ["Adams", "Baker", "Chen", "Dubois", "Evans", "Fischer", "Garcia", "Hughes",
                                         "Ibrahim", "Jones"],
        "vehicle": "nurse", "small": "minutes", "large": "hours", "factor": 60, "step": 0.5, "dist": "km",
        "demand": (20, 90), "load": "care",
    },
    "store replenishment": {
        "depot": "Warehouse", "customers": ["Northgate", "Riverside", "Oldtown", "Harbour", "Westfield", "Uptown",
                                            "Lakeside", "Millbrook", "Eastend", "Parkview"],
        "vehicle": "truck", "small": "cases", "large": "dozen cases", "factor": 12, "step": 1, "dist": "miles",
        "demand": (10, 60), "load": "stock",
    },
}


def _q(data: dict[str, Any]) -> float:
    """The capacity in the demands' unit (rounded: 1.1 tonnes is 1100 kg, not 1100.0000000000002)."""
    factor = next(v["factor"] for v in _DOMAINS.values() if v["depot"] == data["depot"])
    return round(data["capacity"] * factor, 6)


@register
class CVRP(Family):
    name = "cvrp"
    version = "1"
    problem_class = "MILP"
    domains = tuple(_DOMAINS)
    sectors = {"parcel delivery": "logistics", "home care visits": "health care", "store replenishment": "retail"}
    techniques = ("subtour_elimination", "big_m_indicator")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("implied_integrality", "units"))
    reorder_keys = ("customers",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
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
        b = ModelBuilder("cvrp")
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

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        depot, customers, veh = data["depot"], data["customers"], v["vehicle"]
        places = [depot, *customers]
        cap = f"{n(data['capacity'])} {v['large']}"
        needs = listing(data["demand"], customers, "{k} {v} " + v["small"])
        fleet = (f"There are {n(data['vehicles'])} identical {veh}s, each with a capacity of {cap}; every route "
                 f"starts and ends at {depot}, and a {veh} need not be used.")
        legs = rt.pairs_text(places, data["dist"])
        needs_semi = listing(data["demand"], customers, "{k} {v} " + v["small"], "; ")
        if template == 0:
            return (f"Plan the {domain} from {depot}. Each of {join(customers)} is served by exactly one {veh}, in "
                    f"one stop. Demands: {needs}. {fleet} Distances in {v['dist']} (both directions alike): {legs}. "
                    "Minimise the total distance driven.")
        if template == 1:
            return (f"Capacitated vehicle routing for {domain}. Distances ({v['dist']}, row = from, column = to):"
                    f"\n\n{rt.grid(places, data['dist'])}\n\n{fleet} Demands ({v['small']}): {needs}. Each customer "
                    "gets one visit. Find routes of least total length.")
        if template == 2:
            return (f"Every morning the {v['load']} for {len(customers)} customers is assigned to {veh}s at {depot}. "
                    f"Today's demands are {needs}. {fleet} A customer's {v['load']} cannot be split between {veh}s. "
                    f"The road distances ({v['dist']}) are {legs}. Which routes cover everyone with the least "
                    "driving?")
        return (f"What is the shortest total distance for serving {join(customers)} from {depot}? {fleet} Each "
                f"customer is visited once and needs {needs_semi}. Legs in {v['dist']}: {legs}.")
