"""Set cover (IP, binary): the cheapest choice of candidates so every element is covered often enough.

Coverage is a 0/1 table ``covers[element, candidate]``; most elements need one cover, a few critical ones two. Each
element is covered by at least three candidates, so the instance is feasible. Infeasible variant: one element must
be covered more times than there are candidates that cover it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, money, names, table
from flywheel.generators.base import Family, exceed, pick, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType

_DOMAINS: dict[str, dict[str, Any]] = {
    "fire protection": {
        "candidate": "fire station site", "element": "district", "money": "thousand dollars", "verb": "reaches",
        "candidates": ["SiteA", "SiteB", "SiteC", "SiteD", "SiteE", "SiteF", "SiteG", "SiteH", "SiteI", "SiteJ",
                       "SiteK", "SiteL", "SiteM", "SiteN", "SiteO"],
        "elements": ["Downtown", "Docklands", "Hillside", "Meadows", "Northgate", "Southbank", "Westend",
                     "Eastfield", "Oldtown", "Newtown", "Parkside", "Riverside", "Lakeside", "Highlands", "Lowlands",
                     "Brookfield", "Greenwood", "Stonebridge", "Millbrook", "Ashford", "Kingsley"],
    },
    "mobile network": {
        "candidate": "tower location", "element": "village", "money": "thousand dollars", "verb": "covers",
        "candidates": ["Tower1", "Tower2", "Tower3", "Tower4", "Tower5", "Tower6", "Tower7", "Tower8", "Tower9",
                       "Tower10", "Tower11", "Tower12", "Tower13", "Tower14", "Tower15"],
        "elements": ["Alden", "Barrow", "Corby", "Dunmore", "Elston", "Felton", "Garth", "Hale", "Irby", "Jarrow",
                     "Kelso", "Lydd", "Marske", "Nelson", "Otley", "Penrith", "Quorn", "Ripon", "Selby", "Thirsk",
                     "Ulverston"],
    },
    "team hiring": {
        "candidate": "freelancer", "element": "skill", "money": "EUR", "verb": "has",
        "candidates": ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jade", "Kofi", "Luz",
                       "Milo", "Nia", "Omar"],
        "elements": ["Python", "SQL", "Design", "Testing", "DevOps", "Security", "Frontend", "Backend", "Mobile",
                     "Cloud", "Data", "ML", "Docs", "Support", "Network", "Audio", "Video", "Finance", "Legal",
                     "Sales", "Writing"],
    },
}


@register
class SetCover(Family):
    name = "set_cover"
    problem_class = "IP"
    sectors = {"fire protection": "public services", "mobile network": "telecom", "team hiring": "sports and education"}
    techniques = ("set_partitioning_covering",)
    template_styles = (("plain",), ("plain",), ("table",), ("plain",))

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = _DOMAINS[domain]
        cands = names(vocab["candidates"], 5 + 2 * difficulty, "Candidate")
        elems = names(vocab["elements"], 6 + 3 * difficulty, "Element")
        covers = {e: {c: int(rng.random() < 0.3) for c in cands} for e in elems}
        for e in elems:  # at least three covering candidates per element
            while sum(covers[e].values()) < 3:
                covers[e][pick(rng, cands)] = 1
        cost = {c: int(rng.integers(5, 40)) for c in cands}
        need = {e: 2 if rng.random() < 0.2 else 1 for e in elems}
        return {"candidates": cands, "elements": elems, "covers": covers, "cost": cost, "need": need}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        e = pick(rng, data["elements"])
        return exceed(data, "need", e, sum(data["covers"][e].values()), 1)

    def build(self, data: dict[str, Any]) -> Model:
        b = ModelBuilder("set_cover")
        cands = b.add_set("candidates", data["candidates"], "candidates that can be chosen")
        b.add_set("elements", data["elements"], "elements that must be covered")
        b.add_param("cost", data["cost"], ("candidates",), "money", "cost of choosing a candidate")
        b.add_param("covers", data["covers"],
                    ("elements", "candidates"), "0/1", "1 if the candidate covers the element")
        b.add_param("need", data["need"], ("elements",), "times", "how many chosen candidates must cover it")
        pick = b.add_vars("choose", ("candidates",), VarType.BINARY, description="1 if the candidate is chosen")
        b.add_constrs("cover", ("elements",), "every element is covered by enough chosen candidates",
                      lambda e: ([(pick[(c,)], data["covers"][e][c]) for c in cands], ">=", data["need"][e]))
        b.set_objective("minimize", [(pick[(c,)], data["cost"][c]) for c in cands], description="total cost")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        v = _DOMAINS[domain]
        cands, elems, cur = data["candidates"], data["elements"], v["money"]
        costs = ", ".join(f"{c} {money(data['cost'][c], cur)}" for c in cands)
        reach = "; ".join(f"{c} {v['verb']} " + join([e for e in elems if data["covers"][e][c]]) for c in cands)
        twice = [e for e in elems if data["need"][e] != 1]
        needs = (listing(data["need"], twice, "{k} must be covered at least {v} times", sep="; ") + ", "
                 if twice else "")
        rule = f"{needs}every other {v['element']} at least 1 time"
        legend = "(1 = covered, 0 = not)"
        if template == 0:
            return (f"For {domain}, choose {v['candidate']}s among {join(cands)} with costs {costs}. Coverage: "
                    f"{reach}. Coverage counts {legend}: {rule}. Find the cheapest choice.")
        if template == 1:
            return (f"Each {v['element']} ({join(elems)}) must be covered: {rule}. Coverage of each "
                    f"{v['candidate']} is binary {legend}: {reach}. Costs: {costs}. Minimise the total cost of the "
                    f"chosen {v['candidate']}s (each chosen at most once).")
        if template == 2:
            header = [v["element"].capitalize(), "Required"] + cands
            rows = [[e, data["need"][e]] + [data["covers"][e][c] for c in cands] for e in elems]
            rows.append([f"Cost ({cur})", ""] + [data["cost"][c] for c in cands])
            return (f"Set-covering problem ({domain}). A 1 in the table means the {v['candidate']} covers the "
                    f"{v['element']}, 0 means it does not.\n\n{table(header, rows)}\n\nChoose {v['candidate']}s so "
                    "each row is covered at least its required number of times, at minimum total cost.")
        return (f"Which {v['candidate']}s should be selected? Options and costs: {costs}. What each one covers "
                f"{legend}: {reach}. Requirement: {rule}. Spend as little as possible.")
