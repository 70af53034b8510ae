"""Exam timetabling (IP): every exam gets exactly one time slot; the exams of a slot fit the seats of the rooms
open in it; two conflicting exams (they share people) never share a slot; minimise the penalty of the disliked
slots, charged per person sitting in them.

``take[e, t]`` binary; one slot per exam is a set-partitioning row; a conflict is an either-or row
``take[e, t] + take[f, t] <= 1`` in every slot; ``people[t]`` counts the head counts of a slot's exams, and fits
its seats (rooms times the seats per room); the penalty is charged on it.
Feasible by construction: a hidden timetable is drawn first, conflicts only join exams it puts in different slots,
and every slot opens enough rooms for its hidden exams. Infeasible variant: one exam's head count exceeds the
seats of every slot, so no slot can take it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import Family, exceed, register
from solvers.ir import Model, VarType, number_text

_SLOTS = ["MonAM", "MonPM", "TueAM", "TuePM", "WedAM", "WedPM", "ThuAM", "ThuPM"]


@register
class ExamTimetabling(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        # Sizes around 6x3 / 7x4 / 8x4 by difficulty, exam names drawn from the domain's pool (``spread``,
        # ``drawn_names``); the slots keep their weekly order and at least 3 (with 2, all exams often share one).
        exams = drawn_names(rng, self.vocab[domain]["exams"], spread(rng, 5 + difficulty, 2), "Item")
        slots = _SLOTS[: spread(rng, 3 + difficulty // 2, 3)]
        size = {e: int(rng.integers(3, 25)) * 5 for e in exams}
        hidden = {e: slots[int(rng.integers(len(slots)))] for e in exams}
        pairs = [(e, f) for i, e in enumerate(exams) for f in exams[i + 1:] if hidden[e] != hidden[f]]
        picked = rng.permutation(len(pairs))[: max(1, len(pairs) // 3)]
        seats = int(rng.integers(4, 9)) * 10
        # One or two spare rooms per slot: with none the seat rows make a tight bin packing that HiGHS needs
        # seconds to close at 10 exams; the conflicts and penalties still make the choice.
        rooms = {t: math.ceil(sum(size[e] for e in exams if hidden[e] == t) / seats) + int(rng.integers(1, 3))
                 for t in slots}
        return {"exams": exams, "slots": slots, "size": size, "seats": seats, "rooms": rooms,
                "penalty": {t: int(rng.choice([0, 0, 1, 2, 3])) for t in slots},
                "conflicts": sorted([list(pairs[int(i)]) for i in picked])}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        most = max(data["rooms"].values()) * data["seats"]
        return exceed(data, "size", data["exams"][int(rng.integers(len(data["exams"])))], most, 5)

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        exams, slots = b.elements("exams", "slots")
        x = b.add_vars("take", ("exams", "slots"), VarType.BINARY, description="1 if the exam is in the slot")
        people = b.add_vars("people", ("slots",), VarType.INTEGER, description="people sitting in the slot",
                            unit="people")
        b.add_constrs("one_slot", ("exams",), "every exam in exactly one slot (set partitioning)",
                      lambda e: ([(x[(e, t)], 1) for t in slots], "==", 1))
        b.add_constrs("count", ("slots",), "the people of a slot: the head counts of its exams",
                      lambda t: ([(people[(t,)], 1)] + [(x[(e, t)], -data["size"][e]) for e in exams], "==", 0))
        b.add_constrs("seats", ("slots",), "the people of a slot fit its rooms x seats per room",
                      lambda t: ([(people[(t,)], 1)], "<=", data["rooms"][t] * data["seats"]))
        b.add_constrs("apart", ("exams", "exams", "slots"), "two conflicting exams not in the same slot (either-or)",
                      lambda e, f, t: ([(x[(e, t)], 1), (x[(f, t)], 1)], "<=", 1),
                      keys=[(e, f, t) for e, f in data["conflicts"] for t in slots])
        b.set_objective("minimize", [(people[(t,)], data["penalty"][t]) for t in slots],
                        description="penalty points (per person in a disliked slot)")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        exams, slots = data["exams"], data["slots"]
        item, people = v["item"], v["people"]
        sizes = listing(data["size"], exams, "{k} {v} " + people)
        rooms = listing(data["rooms"], slots, "{v} in " + "{k}")
        pens = listing(data["penalty"], slots)
        clash = ", ".join((f"{e} and {f}" for e, f in data["conflicts"]))
        rules = f"Each {v['room']} seats {number_text(data['seats'])} {people}; the {v['room']}s open per slot are {rooms}. These pairs involve {v['shared']} and may not share a slot: {clash}."
        rows = [[t, data["rooms"][t], data["penalty"][t]] for t in slots]
        return {"clash": clash, "item": item, "pens": pens, "people": people, "rows": rows, "rules": rules, "sizes": sizes}
