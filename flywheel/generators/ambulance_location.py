"""Ambulance / fire-station location (IP, set covering): open the cheapest set of candidate stations so that every
district has at least its required number of open stations within the response-time standard (in minutes);
high-priority districts need two. Coverage is derived from the stated travel times.

Feasible by construction: every district has at least two candidate sites within the standard. Infeasible
variant: every travel time to one district is raised above the standard, so nothing can cover it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, pick, register, replace_at
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_DOMAINS: dict[str, dict[str, Any]] = {
    "ambulance service": {
        "sites": ["Northgate", "Riverside", "Hilltop", "Old Mill", "Harbour", "Eastfield", "Parkway", "Station Rd",
                  "Westend", "Kingsway"],
        "districts": ["Abbey", "Bridgeton", "Cedars", "Docklands", "Elmwood", "Fernhill", "Glebe", "Holloway",
                      "Ivybridge", "Juniper", "Kirkby", "Lowfield", "Marsh", "Newtown", "Oakley", "Priory"],
        "who": "the regional ambulance trust", "unit": "ambulance base", "money": "thousand dollars a year",
    },
    "fire brigade": {
        "sites": ["Central", "Quarry", "Airport", "Canal", "Forest", "Market", "Ridge", "Lakeside", "Depot",
                  "Brickworks"],
        "districts": ["Ashby", "Bramley", "Colton", "Dunstan", "Easton", "Fulford", "Garston", "Heaton", "Ilford",
                      "Jarrow", "Keswick", "Langley", "Milton", "Norbury", "Orton", "Pelham"],
        "who": "the county fire service", "unit": "fire station", "money": "thousand dollars a year",
    },
    "rural clinics": {
        "sites": ["Crossroads", "Mission", "Valley", "Plateau", "Riverbend", "Saltpan", "Timberline", "Wellspring",
                  "Junction", "Outpost"],
        "districts": ["Village1", "Village2", "Village3", "Village4", "Village5", "Village6", "Village7",
                      "Village8", "Village9", "Village10", "Village11", "Village12", "Village13", "Village14",
                      "Village15", "Village16"],
        "who": "a provincial health department", "unit": "mobile clinic post", "money": "thousand dollars a year",
    },
}


@register
class AmbulanceLocation(Family):
    name = "ambulance_location"
    problem_class = "IP"
    sectors = {"ambulance service": "public services", "fire brigade": "public services",
               "rural clinics": "health care"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("implied_integrality",), ("table", "implied_integrality"), ("story",), ("plain",))
    reorder_keys = ("sites", "districts")

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = _DOMAINS[domain]
        sites = names(v["sites"], 3 + difficulty, "Site")
        districts = names(v["districts"], 4 + 2 * difficulty, "District")
        standard = int(rng.choice([8, 10, 12, 15]))
        time = {d: {s: int(rng.integers(3, 2 * standard + 6)) for s in sites} for d in districts}
        for d in districts:  # two sites within the standard for every district
            for s in rng.choice(sites, size=2, replace=False):
                time[d][str(s)] = min(time[d][str(s)], int(rng.integers(2, standard + 1)))
        cost = {s: int(rng.integers(40, 200)) for s in sites}
        priority = [str(d) for d in rng.choice(districts, size=max(1, len(districts) // 4), replace=False)]
        return {"sites": sites, "districts": districts, "time": time, "standard": standard, "cost": cost,
                "priority": sorted(priority, key=districts.index)}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        d = pick(rng, data["districts"])
        far = {s: max(t, data["standard"] + int(rng.integers(1, 6))) for s, t in data["time"][d].items()}
        return replace_at(data, ("time", d), far)

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("ambulance_location")
        sites = b.add_set("sites", data["sites"], "candidate station sites")
        districts = b.add_set("districts", data["districts"], "districts to be covered")
        b.add_param("time", data["time"], ("districts", "sites"), "minutes", "travel time from a site to a district")
        b.add_param("standard", data["standard"], (), "minutes", "response-time standard")
        b.add_param("cost", data["cost"], ("sites",), "thousand money per year", "cost of opening a site")
        need = {d: 2 if d in data["priority"] else 1 for d in districts}
        b.add_param("need", need, ("districts",), "stations", "stations required within the standard",
                    derived=True)
        x = b.add_vars("open", ("sites",), VarType.BINARY, description="1 if a station opens at the site")
        b.con_group("cover", ("districts",), "enough open stations within the standard of each district")
        for d in districts:
            near = [(x[(s,)], 1) for s in sites if data["time"][d][s] <= data["standard"]]
            b.add_constr("cover", (d,), near, ">=", need[d])
        b.set_objective("minimize", [(x[(s,)], data["cost"][s]) for s in sites], description="total opening cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        sites, districts, std = data["sites"], data["districts"], data["standard"]
        times = "; ".join(f"{d}: " + listing(data["time"][d], sites) for d in districts)
        costs = listing(data["cost"], sites)
        rule = (f"A district counts as covered by a station if the travel time is at most {n(std)} minutes. Every "
                f"district must be covered by at least one open station, and the high-priority districts "
                f"({join(data['priority'])}) by at least two.")
        if template == 0:
            return (f"{v['who'].capitalize()} can open a {v['unit']} at any of {join(sites)}. Opening costs "
                    f"({v['money']}): {costs}. Travel times in minutes from each site to each district: {times}. "
                    f"{rule} Each site is either opened or not. Which sites minimise the total cost?")
        if template == 1:
            header = ["District"] + [f"{s} (min)" for s in sites]
            rows = [[d] + [data["time"][d][s] for s in sites] for d in districts]
            return (f"Travel times from candidate {v['unit']} sites:\n\n{table(header, rows)}\n\nOpening cost "
                    f"({v['money']}): {costs}. {rule} Each site is a yes/no decision. Minimise the total "
                    "opening cost.")
        if template == 2:
            return (f"After a report on slow response times, {v['who']} is redesigning where its "
                    f"{v['unit']}s stand. The candidates are {join(sites)}, costing {costs} ({v['money']}). "
                    f"Driving times to the districts (minutes) are: {times}. {rule} What is the cheapest set of "
                    f"{v['unit']}s to open?")
        return (f"Set covering: choose {v['unit']} sites at minimum cost ({v['money']}: {costs}). {rule} "
                f"Times (minutes), per district: {times}. Sites are opened whole.")
