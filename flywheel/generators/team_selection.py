"""Team selection (IP, binary): pick a squad with exactly the required number of people in every position (a
partitioning of the squad by position: ``sum_{p in position} pick[p] = required``), within a budget, maximising the
total rating, under three logical rules: if A is picked then B is (``pick[A] <= pick[B]``), not both C and D
(``pick[C] + pick[D] <= 1``), and at least one of E and F (a cover: ``pick[E] + pick[F] >= 1``).

Feasible by construction: a planted squad fills every position and obeys the rules (A, B, C and E in it, D out),
and the budget covers it. Infeasible variant: the budget is cut below the cheapest way to fill the positions at
all (the rules only make it dearer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._phrasing import thousands
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


@register
class TeamSelection(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        v = self.vocab[domain]
        # Sizes around 3 / 3 / 4 positions, each with its required number plus 2 / 3 / 4 candidates, by difficulty;
        # positions drawn from the domain's pool (``spread``, ``drawn_names``), candidates numbered within a position.
        n_pos = spread(rng, 3 + difficulty // 3, 2, high=len(v["positions"]))
        positions = drawn_names(rng, list(v["positions"]), n_pos, "Position")
        required = {q: int(rng.integers(1, 4)) for q in positions}
        roster = {q: [f"{v['positions'][q]}{k}" for k in range(1, required[q] + spread(rng, 1 + difficulty) + 1)]
                  for q in positions}
        people = [p for q in positions for p in roster[q]]
        position = {p: q for q in positions for p in roster[q]}
        picked = [p for q in positions for p in [roster[q][int(i)] for i in rng.permutation(len(roster[q]))][
            : required[q]]]
        out = [p for p in people if p not in picked]
        a, b, c, e = (picked[int(i)] for i in rng.permutation(len(picked))[:4]) if len(picked) >= 4 else (
            picked * 4)[:4]
        d, f = (out[int(i)] for i in rng.permutation(len(out))[:2])
        cost = {p: 10 * int(rng.integers(5, 60)) for p in people}
        return {"positions": positions, "required": required, "people": people, "position": position,
                "rating": {p: int(rng.integers(40, 100)) for p in people}, "cost": cost,
                "budget": sum(cost[p] for p in picked) + 10 * int(rng.integers(0, 40)),
                "if_then": [a, b], "not_both": [c, d], "at_least_one": [e, f]}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        cheapest = sum(sum(sorted(data["cost"][p] for p in data["people"] if data["position"][p] == q)
                           [: data["required"][q]]) for q in data["positions"])
        return {**data, "budget": int(cheapest - 10 * rng.integers(1, 5))}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        people, positions = b.elements("people", "positions")
        x = b.add_vars("pick", ("people",), VarType.BINARY, description="1 if the candidate is picked")
        b.con_group("position", ("positions",), "exactly the required number in each position")
        for q in positions:
            b.add_constr("position", (q,), [(x[(p,)], 1) for p in people if data["position"][p] == q], "==",
                         data["required"][q])
        b.con_group("budget", (), "total cost within the budget")
        b.add_constr("budget", (), [(x[(p,)], data["cost"][p]) for p in people], "<=", data["budget"])
        a, c = data["if_then"]
        b.con_group("if_then", (), "if the first is picked, so is the second")
        b.add_constr("if_then", (), [(x[(a,)], 1), (x[(c,)], -1)], "<=", 0)
        b.con_group("not_both", (), "at most one of two rivals (either-or)")
        b.add_constr("not_both", (), [(x[(p,)], 1) for p in data["not_both"]], "<=", 1)
        b.con_group("at_least_one", (), "at least one of two (a cover)")
        b.add_constr("at_least_one", (), [(x[(p,)], 1) for p in data["at_least_one"]], ">=", 1)
        b.set_objective("maximize", [(x[(p,)], data["rating"][p]) for p in people], description="total rating")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        people = data["people"]
        person = v["person"]
        (a, b), (c, d), (e, f) = (data["if_then"], data["not_both"], data["at_least_one"])
        need = listing(data["required"], data["positions"])
        rules = f"If {a} is picked, {b} must be picked too. {c} and {d} cannot both be picked. At least one of {e} and {f} must be picked."
        pool = "; ".join(
            f"{p} ({data['position'][p]}, {v['rating']} {number_text(data['rating'][p])}, {v['cost']} {number_text(data['cost'][p])})"
            for p in people
        )
        budget = f"The budget is {number_text(data['budget'])} thousand dollars."
        rows = [[p, data["position"][p], data["rating"][p], data["cost"][p]] for p in people]
        header = [person.capitalize(), "Position", v["rating"].capitalize(), f"{v['cost'].capitalize()} ($k)"]
        fees = "; ".join(
            f"{p}, a {data['position'][p]}, rated {number_text(data['rating'][p])} for ${thousands(1000 * data['cost'][p])}"
            for p in people
        )
        return {"budget": budget, "fees": fees, "header": header, "need": need, "person": person, "pool": pool, "rows": rows,
                "rules": rules}
