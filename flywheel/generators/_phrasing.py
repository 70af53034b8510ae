"""Phrasings that read like benchmark questions: stories about a named business, distractor numbers, data in a
different order, integrality implied by the nouns, and unit conversions.

A family writes its own templates (``Family.question``); ``Family.phrase`` adds the generic variants built here
on top of them (see ``GENERIC_VARIANTS``). Everything is deterministic: the randomness of a phrasing comes from
``text_rng`` (a hash of the family, the data and the template), never from global state, so the same problem
always reads the same.

The leading underscore keeps ``family_names()`` from importing this module as a family.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from importlib import resources
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

# The stories and distractor facts are vocabulary, not logic: they live in phrasing_vocab.json (package data).
# stories: application domain -> business names, kind of outfit, situation; facts: application domain ("*": any)
# -> [sentence with {n}, low, high], numbers that play no part in any model.
_VOCAB = json.loads(resources.files("flywheel.generators").joinpath("phrasing_vocab.json").read_text("utf-8"))
_STORY: dict[str, dict[str, list[str]]] = _VOCAB["stories"]
_FACTS: dict[str, list[list[Any]]] = _VOCAB["facts"]

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


# "a" before a word that starts with a vowel sound. Templates write ``a {{ v['unit'] }}`` for whatever noun the
# domain's vocabulary holds, so "a ambulance base", "a exam" and "A officer" came out of ten families.
_ARTICLE = re.compile(r"(?<![\w'-])(a|A) ([A-Za-z][\w-]*)")
_CONSONANT_SOUND = ("uni", "use", "usu", "uti", "ure", "uro", "eu", "ewe", "one", "once", "ubiq")
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
# "A is ...", "Plan A and B": the letter is a name, not an article, when a function word follows it.
_FUNCTION_WORDS = frozenset("and or is in on at of if as are also into onto up each every all any only over under "
                            "until after above across among against either even ever".split())


def articles(text: str) -> str:
    """``a``/``A`` made ``an``/``An`` before a vowel sound: "an ambulance base", "an hour", but "a unit", "a
    one-off". A capital ``A`` is an article only where a sentence starts (mid-sentence it is a name: "Plan A")."""

    def fix(m: re.Match[str]) -> str:
        article, word = m.group(1), m.group(2)
        low = word.lower()
        vowel = (low[0] in "aeiou" and not low.startswith(_CONSONANT_SOUND)) or low.startswith(_SILENT_H)
        if not vowel or low in _FUNCTION_WORDS:
            return m.group(0)
        before = text[:m.start()].rstrip(" ")
        if article == "A" and before and before[-1] not in ".!?:\n":
            return m.group(0)
        return f"{article}n {word}"

    return _ARTICLE.sub(fix, text)


# "1 hours", "1 units of Flour": templates write ``{n} {unit}s`` for any count. The plural units the families write.
_SINGULAR = {w + "s": w for w in (
    "hour", "unit", "point", "litre", "hectolitre", "tonne", "bag", "dollar", "metre", "kilometre", "pallet", "tenth",
    "bike", "circuit", "dose", "piece", "cent", "wavelength", "minute", "day", "week", "month", "crate", "shift",
    "truck", "seat", "slot", "lane", "lot", "order", "trip", "vehicle", "nurse", "worker", "job", "item", "copy")}
_SINGULAR |= {"batches": "batch", "boxes": "box", "inches": "inch", "lorries": "lorry", "deliveries": "delivery"}
_ONE_PLURAL = re.compile(r"(?<![\d.,/$-])\b1 (" + "|".join(sorted(_SINGULAR, key=len, reverse=True)) + r")\b")


def tidy(text: str) -> str:
    """Grammar the templates cannot know in advance: ``articles``, and a unit after the count 1 in the singular
    ("1 hour", "1 unit of Flour"; "0/1 decisions", "21 hours" and "1.5 hours" stay)."""
    return _ONE_PLURAL.sub(lambda m: "1 " + _SINGULAR[m.group(1)], articles(text))


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
