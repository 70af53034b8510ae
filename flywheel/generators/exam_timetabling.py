"""Exam timetabling (IP): every exam gets exactly one time slot; the exams of a slot fit the seats of the rooms
open in it; two conflicting exams (they share people) never share a slot; minimise the penalty of the disliked
slots, charged per person sitting in them.

``take[e, t]`` binary; one slot per exam is a set-partitioning row; a conflict is an either-or row
``take[e, t] + take[f, t] <= 1`` in every slot; the seats of a slot are its rooms times the seats per room.
Feasible by construction: a hidden timetable is drawn first, conflicts only join exams it puts in different slots,
and every slot opens enough rooms for its hidden exams. Infeasible variant: one exam's head count exceeds the
seats of every slot, so no slot can take it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flywheel.generators._text import join, listing, names, table
from flywheel.generators.base import Family, exceed, register
from solvers.builder import ModelBuilder
from solvers.ir import Model, VarType, number_text

_SLOTS = ["MonAM", "MonPM", "TueAM", "TuePM", "WedAM", "WedPM", "ThuAM", "ThuPM"]
_DOMAINS: dict[str, dict[str, Any]] = {
    "university exams": {
        "exams": ["Calculus", "Physics", "Chemistry", "Biology", "History", "Economics", "Statistics", "Law",
                  "French", "Geology", "Music", "Ethics", "Drama", "Finance", "Botany"],
        "item": "exam", "people": "students", "room": "exam hall", "shared": "students who take both",
    },
    "court hearings": {
        "exams": ["Adler", "Brandt", "Costa", "Dunn", "Ellis", "Foster", "Grant", "Hale", "Irwin", "Keller", "Lowe",
                  "Moreno", "Nash", "Ortiz", "Price"],
        "item": "hearing", "people": "attendees", "room": "courtroom", "shared": "the same judge or counsel",
    },
    "clinic appointments": {
        "exams": ["Diabetes", "Asthma", "Physio", "Antenatal", "Cardiac", "Memory", "Smoking", "Nutrition",
                  "Podiatry", "Hearing", "Sleep", "Stroke", "Weight", "Vaccines", "Wound"],
        "item": "group session", "people": "patients", "room": "consulting suite", "shared": "the same clinician",
    },
}


@register
class ExamTimetabling(Family):
    name = "exam_timetabling"
    version = "1"
    problem_class = "IP"
    domains = tuple(_DOMAINS)
    sectors = {"university exams": "sports and education", "court hearings": "public services",
               "clinic appointments": "health care"}
    techniques = ("set_partitioning_covering", "either_or_if_then")
    template_styles = (("units",), ("table", "units"), ("story", "units"), ("implied_integrality",))
    reorder_keys = ("exams",)

    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        exams = names(_DOMAINS[domain]["exams"], 5 + difficulty, "Item")
        slots = _SLOTS[: 3 + difficulty // 2]
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
        b = ModelBuilder("exam_timetabling")
        exams = b.add_set("exams", data["exams"], "exams (items) to timetable")
        slots = b.add_set("slots", data["slots"], "time slots")
        b.add_param("size", data["size"], ("exams",), "people", "head count of an exam")
        b.add_param("seats", data["seats"], (), "seats", "seats per room")
        b.add_param("rooms", data["rooms"], ("slots",), "rooms", "rooms open in a slot")
        b.add_param("penalty", data["penalty"], ("slots",), "points per person", "dislike of a slot")
        x = b.add_vars("take", ("exams", "slots"), VarType.BINARY, description="1 if the exam is in the slot")
        b.con_group("one_slot", ("exams",), "every exam in exactly one slot (set partitioning)")
        for e in exams:
            b.add_constr("one_slot", (e,), [(x[(e, t)], 1) for t in slots], "==", 1)
        b.con_group("seats", ("slots",), "the exams of a slot fit its rooms x seats per room")
        for t in slots:
            b.add_constr("seats", (t,), [(x[(e, t)], data["size"][e]) for e in exams], "<=",
                         data["rooms"][t] * data["seats"])
        b.add_set("conflicts", [f"{e}__{f}" for e, f in data["conflicts"]], "pairs sharing people")
        b.con_group("apart", ("conflicts", "slots"), "two conflicting exams not in the same slot (either-or)")
        for e, f in data["conflicts"]:
            for t in slots:
                b.add_constr("apart", (f"{e}__{f}", t), [(x[(e, t)], 1), (x[(f, t)], 1)], "<=", 1)
        b.set_objective("minimize", [(x[(e, t)], data["penalty"][t] * data["size"][e]) for e in exams for t in slots],
                        description="penalty points (per person in a disliked slot)")
        return b.build()

    def question(self, data: dict[str, Any], template: int, domain: str) -> str:
        n = number_text
        v = _DOMAINS[domain]
        exams, slots, item, people = data["exams"], data["slots"], v["item"], v["people"]
        sizes = listing(data["size"], exams, "{k} {v} " + people)
        rooms = listing(data["rooms"], slots, "{v} in " + "{k}")
        pens = listing(data["penalty"], slots)
        clash = ", ".join(f"{e} and {f}" for e, f in data["conflicts"])
        rules = (f"Each {v['room']} seats {n(data['seats'])} {people}; the {v['room']}s open per slot are {rooms}. "
                 f"These pairs involve {v['shared']} and may not share a slot: {clash}.")
        if template == 0:
            return (f"Timetable the {item}s {join(exams)} into the slots {join(slots)}, one slot each. Head counts: "
                    f"{sizes}. {rules} Every person placed in a slot costs its penalty points ({pens}). Minimise "
                    "the total penalty.")
        if template == 1:
            rows = [[t, data["rooms"][t], data["penalty"][t]] for t in slots]
            return (f"{item.capitalize()} timetabling ({domain}).\n\n{table(['Slot', 'Rooms', 'Penalty per person'], rows)}"
                    f"\n\nHead counts: {sizes}. Each {v['room']} has {n(data['seats'])} seats. Never in the same "
                    f"slot: {clash}. Each {item} takes exactly one slot; minimise the penalty summed over all "
                    f"{people}.")
        if template == 2:
            return (f"The office is drawing up next week's {item} timetable. {len(exams)} {item}s ({sizes}) must "
                    f"each be placed in one of {join(slots)}. {rules} Some slots are unpopular: each person sitting "
                    f"in one costs {pens} points. Which timetable has the fewest penalty points?")
        return (f"Assign every {item} to a slot. {rules} Expected {people}: {sizes}. Penalty per person by slot: "
                f"{pens}. Minimise total penalty; no {item} may be split across slots.")
