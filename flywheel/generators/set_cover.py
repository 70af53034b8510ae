"""Set cover (IP, binary): the cheapest choice of candidates so every element is covered often enough.

Coverage is a 0/1 table ``covers[element, candidate]``; most elements need one cover, a few critical ones two. Each
element is covered by at least three candidates, so the instance is feasible. Infeasible variant: one element must
be covered more times than there are candidates that cover it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, join, listing, money, spread
from flywheel.generators.base import Family, exceed, pick, register
from solvers.ir import Model, VarType


@register
class SetCover(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 7x9 / 9x12 / 11x15 candidates x elements by difficulty, names drawn from the domain's pool
        # (``spread``, ``drawn_names``).
        cands = drawn_names(rng, vocab["candidates"], spread(rng, 5 + 2 * difficulty, 3), "Candidate")
        elems = drawn_names(rng, vocab["elements"], spread(rng, 6 + 3 * difficulty, 2), "Element")
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
        b = self.builder(data)
        (cands,) = b.elements("candidates")
        pick = b.add_vars("choose", ("candidates",), VarType.BINARY, description="1 if the candidate is chosen")
        b.add_constrs("cover", ("elements",), "every element is covered by enough chosen candidates",
                      lambda e: ([(pick[(c,)], data["covers"][e][c]) for c in cands], ">=", data["need"][e]))
        b.set_objective("minimize", [(pick[(c,)], data["cost"][c]) for c in cands], description="total cost")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        cands, elems, cur = data["candidates"], data["elements"], v["money"]
        costs = ", ".join(f"{c} {money(data['cost'][c], cur)}" for c in cands)
        reach = "; ".join(f"{c} {v['verb']} " + join([e for e in elems if data["covers"][e][c]]) for c in cands)
        twice = [e for e in elems if data["need"][e] != 1]
        needs = listing(data["need"], twice, "{k} must be covered at least {v} times", sep="; ") + ", " if twice else ""
        rule = f"{needs}every other {v['element']} at least 1 time"
        legend = "(1 = covered, 0 = not)"
        header = [v["element"].capitalize(), "Required"] + cands
        rows = [[e, data["need"][e]] + [data["covers"][e][c] for c in cands] for e in elems]
        rows.append([f"Cost ({cur})", ""] + [data["cost"][c] for c in cands])
        return {"cands": cands, "costs": costs, "elems": elems, "header": header, "legend": legend, "reach": reach, "rows":
                rows, "rule": rule}
