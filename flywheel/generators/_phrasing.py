"""Phrasings that read like benchmark questions: stories about a named business, distractor numbers, data in a
different order, integrality implied by the nouns, and unit conversions.

A family writes its own templates (``Family.question``); ``Family.phrase`` adds the generic variants built here
on top of them (see ``GENERIC_VARIANTS``). Everything is deterministic: the randomness of a phrasing comes from
``text_rng`` (a hash of the family, the data and the template), never from global state, so the same problem
always reads the same.

The leading underscore keeps ``family_names()`` from importing this module as a family.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from solvers.ir import number_text
from solvers.records import canonical_json, content_hash

# The fixed vocabularies a family's metadata is checked against (tests/test_generators.py).
TECHNIQUES = (
    "big_m_indicator", "fixed_charge", "either_or_if_then", "piecewise_linear", "min_max", "absolute_value",
    "ratio_percentage", "multi_period_balance", "set_partitioning_covering", "subtour_elimination",
    "precedence_disjunctive", "scenario_stochastic", "goal_programming_weighted", "quadratic_objective",
)
APPLICATION_DOMAINS = (
    "manufacturing", "logistics", "energy", "finance", "health care", "agriculture", "telecom", "retail",
    "public services", "sports and education",
)
# What a phrasing can do; each template of a family declares the ones it has (``Family.template_styles``).
STYLES = ("plain", "story", "table", "units", "implied_integrality", "distractors", "reordered")


class Question(str):
    """A question's text, carrying the numbers in it that play no part in the model (``distractors``) and the
    styles of its phrasing. Behaves as ``str`` everywhere; string operations return plain ``str``."""

    distractors: tuple[float, ...]
    styles: frozenset[str]

    def __new__(cls, text: str, distractors: Iterable[float] = (), styles: Iterable[str] = ()) -> Question:
        obj = super().__new__(cls, text)
        obj.distractors = tuple(float(x) for x in distractors)
        obj.styles = frozenset(styles)
        return obj


def text_rng(*parts: Any) -> np.random.Generator:
    """A Generator seeded by the content of ``parts`` (JSON-able): the same inputs always phrase the same way."""
    return np.random.default_rng(int(content_hash(canonical_json(list(parts)), 15), 16))


# ---- stories -------------------------------------------------------------------------------------------------

# Per application domain: business names, what kind of outfit it is, and the situation that prompts the question.
_STORY: dict[str, dict[str, list[str]]] = {
    "manufacturing": {
        "names": ["Harlow Components", "Brightline Fabrication", "Kestrel Works", "Orchard Metalcraft",
                  "Tidewater Plastics", "Norcross Assembly"],
        "kind": ["a mid-sized manufacturer", "a family-owned factory", "a contract manufacturer"],
        "situation": ["Its operations manager is drawing up next month's plan",
                      "After a costly quarter, the plant manager wants the plan checked by a model",
                      "The planning team meets on Monday and needs a recommendation"],
    },
    "logistics": {
        "names": ["Swiftway Freight", "Blue Harbor Logistics", "Crossdock Express", "Meridian Haulage",
                  "Northstar Couriers", "Pinecrest Distribution"],
        "kind": ["a regional carrier", "a third-party logistics firm", "a parcel company"],
        "situation": ["Its dispatcher is preparing tomorrow's plan",
                      "Fuel prices have risen and the logistics lead wants the cheapest plan",
                      "A new contract starts next week and the network plan must be redone"],
    },
    "energy": {
        "names": ["Greenvale Power", "Ridgeline Energy", "Solstice Utilities", "Cobalt Grid", "Windmere Power Co",
                  "Lakeshore Electric"],
        "kind": ["a regional utility", "an independent power producer", "a municipal energy company"],
        "situation": ["The control room is scheduling the next day",
                      "Its planning engineer must submit a plan to the grid operator",
                      "With demand forecasts in hand, the dispatch team needs a plan"],
    },
    "finance": {
        "names": ["Ashford Capital", "Beacon Wealth Partners", "Silverline Investments", "Copperleaf Advisors",
                  "Granite Trust", "Harbourview Asset Management"],
        "kind": ["a boutique investment firm", "a pension fund", "a family office"],
        "situation": ["Its investment committee meets this week",
                      "A client has asked for a recommendation before the year ends",
                      "The risk team wants the allocation decided by a model"],
    },
    "health care": {
        "names": ["St. Brigid's Hospital", "Riverside Medical Centre", "Maple Grove Clinic", "Westfield Health",
                  "Sunrise Care Network", "Lakeview General"],
        "kind": ["a regional hospital", "a community health network", "a private clinic group"],
        "situation": ["Its administrator is planning the coming weeks",
                      "After complaints about waiting times, management wants a better plan",
                      "The board has asked the operations team for an optimised plan"],
    },
    "agriculture": {
        "names": ["Willowbrook Farms", "Golden Acre Cooperative", "Hillside Orchards", "Prairie Wind Ranch",
                  "Clearwater Growers", "Redfield Agri"],
        "kind": ["a family farm", "a farming cooperative", "a commercial grower"],
        "situation": ["The season is about to start and the farm manager must decide",
                      "Its agronomist wants to plan the season with a model",
                      "Input prices changed this year, so the plan is being redone"],
    },
    "telecom": {
        "names": ["Skylink Networks", "Fibrewave Telecom", "Nimbus Mobile", "Relay Communications",
                  "Orbital Broadband", "Signalpoint"],
        "kind": ["a regional network operator", "a broadband provider", "a mobile carrier"],
        "situation": ["Its network planners are preparing the next roll-out",
                      "The engineering team must justify the plan to the finance department",
                      "A new coverage target was announced and the plan must be revised"],
    },
    "retail": {
        "names": ["Corner Basket Grocers", "Urban Threads", "Fresh Lane Markets", "Brightside Home Goods",
                  "Maplewood Bakery", "Cityline Electronics"],
        "kind": ["a chain of stores", "an online retailer", "a neighbourhood shop"],
        "situation": ["The store manager is planning the coming period",
                      "Ahead of the holiday season, the owner wants a careful plan",
                      "Margins are thin, so the buyer wants the plan optimised"],
    },
    "public services": {
        "names": ["the City of Eastbridge", "Northfield County", "the Harbor Transit Authority",
                  "Westvale Municipal Services", "the Lakeside School District", "Greenford Council"],
        "kind": ["a local government", "a public agency", "a municipal service"],
        "situation": ["The council must approve a plan next month",
                      "Residents asked for better service within the same budget",
                      "The agency's analyst is preparing a recommendation"],
    },
    "sports and education": {
        "names": ["Riverside Athletic Club", "Oakmont Academy", "Summit University", "Eagle Ridge Sports Centre",
                  "Brookfield College", "Pioneer High School"],
        "kind": ["a sports club", "a private school", "a university department"],
        "situation": ["The coordinator is preparing the coming term",
                      "The director wants the plan decided fairly and optimally",
                      "Budgets are tight this year, so the plan is being optimised"],
    },
}

# Distractor facts: (sentence with {n}, low, high). Their numbers play no part in any model.
_FACTS: dict[str, list[tuple[str, int, int]]] = {
    "*": [("The business was founded {n} years ago.", 3, 95), ("It employs {n} people in total.", 12, 900),
          ("Last year it served about {n} customers.", 300, 9000),
          ("Its head office is on the {n}th floor of a city building.", 4, 40),
          ("The planning meeting is booked for {n} minutes.", 25, 90)],
    "manufacturing": [("The plant has {n} parking spaces for staff.", 30, 400),
                      ("Its oldest machine was installed {n} years ago.", 6, 45)],
    "logistics": [("The company's fleet logo was redesigned {n} years ago.", 3, 20),
                  ("Its depot has {n} loading docks, all of them free today.", 5, 60)],
    "energy": [("The control room has {n} monitors on its video wall.", 6, 48),
               ("The utility has been publicly listed for {n} years.", 5, 70)],
    "finance": [("The firm manages {n} client accounts overall.", 40, 900),
                ("Its analysts have on average {n} years of experience.", 4, 25)],
    "health care": [("The hospital has {n} beds in its maternity ward.", 12, 80),
                    ("Its cafeteria serves about {n} meals a day.", 150, 1500)],
    "agriculture": [("The farmhouse was built {n} years ago.", 40, 180),
                    ("The farm keeps {n} chickens for its own use.", 10, 300)],
    "telecom": [("The company's call centre takes about {n} calls a day.", 200, 6000),
                ("Its oldest tower is {n} metres tall.", 20, 90)],
    "retail": [("The store has {n} checkout lanes.", 3, 30),
               ("Its loyalty programme has {n} members.", 400, 20000)],
    "public services": [("The district has {n} registered voters.", 2000, 90000),
                        ("The town hall was renovated {n} years ago.", 4, 60)],
    "sports and education": [("The stadium seats {n} spectators.", 800, 30000),
                             ("The library holds {n} books.", 3000, 90000)],
}

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def numbers_in(text: str) -> set[float]:
    """Every number token of ``text`` (not glued to a letter, digit or dot: the 1 of ``Plant1`` is no number)."""
    return {float(x) for x in _NUMBER.findall(text)}


def story_intro(sector: str, rng: np.random.Generator) -> str:
    """Two sentences that set a named business of ``sector`` in its situation."""
    s = _STORY[sector]
    name = s["names"][int(rng.integers(len(s["names"])))]
    kind = s["kind"][int(rng.integers(len(s["kind"])))]
    situation = s["situation"][int(rng.integers(len(s["situation"])))]
    return f"{name[0].upper() + name[1:]} is {kind}. {situation}."


def distractor_facts(sector: str, rng: np.random.Generator, avoid: set[float], k: int = 2) -> tuple[list[str],
                                                                                                   list[float]]:
    """``k`` irrelevant sentences for ``sector`` and their numbers, none equal to a number in ``avoid`` (the
    model's numbers, so a coverage check can tell a distractor from data) nor to each other."""
    pool = _FACTS.get(sector, []) + _FACTS["*"]
    order = rng.permutation(len(pool))[:k]
    sentences, values = [], []
    taken = set(avoid)
    for i in order:
        template, low, high = pool[int(i)]
        for _ in range(50):
            n = int(rng.integers(low, high + 1))
            if float(n) not in taken:
                break
        else:  # every candidate collides: skip this fact rather than state an ambiguous number
            continue
        taken.add(float(n))
        sentences.append(template.format(n=n))
        values.append(float(n))
    return sentences, values


# ---- sentence surgery ------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_INTEGRALITY = re.compile(r"\b(integer|integers|integral|whole[- ]numbers?|whole)\b", re.IGNORECASE)
_CONTINUITY = re.compile(r"\b(fraction|fractional|continuous)\b", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (a decimal point is not an end: it is never followed by a space)."""
    return [s for s in _SENTENCE_END.split(text) if s]


def drop_integrality(text: str) -> tuple[str, bool]:
    """``text`` without the sentences that state integrality outright ("must be whole numbers"), so the nouns
    ("trucks", "nurses") imply it; sentences allowing fractions stay. Returns (text, whether anything went)."""
    out, dropped = [], False
    for paragraph in text.split("\n"):
        kept = []
        for s in sentences(paragraph):
            if _INTEGRALITY.search(s) and not _CONTINUITY.search(s) and not s.lstrip().startswith("|"):
                dropped = True
                continue
            kept.append(s)
        out.append(" ".join(kept))
    return "\n".join(out), dropped


def insert_before_last(text: str, extra: Sequence[str]) -> str:
    """``extra`` sentences inserted before the last sentence of the last paragraph (where the question is asked),
    or appended when the text ends in a table."""
    if not extra:
        return text
    head, _, last = text.rpartition("\n")
    if last.lstrip().startswith("|") or not last.strip():
        return text + "\n\n" + " ".join(extra)
    parts = sentences(last)
    body = " ".join([*parts[:-1], *extra, parts[-1]]) if len(parts) > 1 else " ".join([*extra, last])
    return f"{head}\n{body}" if head else body


def reorder(data: dict[str, Any], keys: Sequence[str], rng: np.random.Generator) -> dict[str, Any]:
    """A copy of ``data`` whose lists under ``keys`` are permuted (and never left in their order when they have
    two or more entries): the question states the same data in a different order."""
    out = dict(data)
    for key in keys:
        items = list(data.get(key) or [])
        if len(items) < 2:
            continue
        perm = [int(i) for i in rng.permutation(len(items))]
        if perm == sorted(perm):
            perm = perm[1:] + perm[:1]
        out[key] = [items[i] for i in perm]
    return out


def reorder_sentences(text: str, rng: np.random.Generator) -> str:
    """The sentences of the first paragraph between its first and its last in another order (the opening sets
    the scene and the last asks the question, so they stay); other paragraphs (tables) are kept as they are."""
    head, sep, rest = text.partition("\n")
    parts = sentences(head)
    if len(parts) < 4:
        return text
    middle = parts[1:-1]
    perm = [int(i) for i in rng.permutation(len(middle))]
    if perm == sorted(perm):
        perm = perm[1:] + perm[:1]
    return " ".join([parts[0], *(middle[i] for i in perm), parts[-1]]) + sep + rest


# ---- units -----------------------------------------------------------------------------------------------------

def minutes(hours: float) -> str:
    """``1.5`` hours as ``90 minutes``."""
    return f"{number_text(round(hours * 60, 6))} minutes"


def percent(fraction: float) -> str:
    """``0.35`` as ``35%``."""
    return f"{number_text(round(fraction * 100, 6))}%"


def per_dozen(unit_price: float, currency: str = "$") -> str:
    """A unit price stated per dozen: ``0.5`` -> ``$6 per dozen``."""
    dozen = number_text(round(unit_price * 12, 6))
    return f"${dozen} per dozen" if currency == "$" else f"{dozen} {currency} per dozen"


def thousands(x: float) -> str:
    """``12000`` as ``12 thousand`` (``12.5 thousand`` for 12500)."""
    return f"{number_text(round(x / 1000, 6))} thousand"
