"""The small helpers every family shares (issue 15): listing phrases, the make_infeasible levers, the default
domains, and the phrasing vocabulary read from package data."""

from __future__ import annotations

import json
import re
from importlib import resources

import numpy as np
import pytest

from flywheel.generators._phrasing import APPLICATION_DOMAINS, articles, distractor_facts, story_intro, tidy
from flywheel.generators._text import drawn_names, listing, spread
from flywheel.generators.base import (
    FAMILIES,
    derive_seed,
    exceed,
    family_names,
    generate_problem,
    get_family,
    replace_at,
)


def test_listing_formats_each_key_with_shared_fields():
    cost = {"Oats": 3, "Milk": 2.5, "Rice": 10.0}
    assert listing(cost) == "Oats 3, Milk 2.5, Rice 10"
    assert listing(cost, ["Rice", "Oats"], "{v} {unit} of {k}", sep="; ", unit="kg") == "10 kg of Rice; 3 kg of Oats"


def test_replace_at_copies_only_the_path_and_leaves_the_input_alone():
    data = {"demand": {"A": {"t1": 1, "t2": 2}, "B": {"t1": 3}}, "cap": {"t1": 9}, "p": 2}
    out = replace_at(data, ("demand", "A", "t2"), 7)
    assert out == {"demand": {"A": {"t1": 1, "t2": 7}, "B": {"t1": 3}}, "cap": {"t1": 9}, "p": 2}
    assert data["demand"]["A"]["t2"] == 2  # the input is unchanged
    assert out["demand"]["B"] is data["demand"]["B"] and out["cap"] is data["cap"]  # off the path: shared
    assert replace_at(data, ("p",), 0)["p"] == 0
    assert exceed(data, "cap", "t1", 9, np.int64(4)) == {**data, "cap": {"t1": 13}}


def test_domains_default_to_the_keys_of_sectors_in_order():
    for name in family_names():
        cls = FAMILIES[name]
        assert cls.domains == tuple(cls.sectors) and len(cls.domains) >= 3


def test_phrasing_vocabulary_ships_as_package_data_for_every_application_domain():
    vocab = json.loads(resources.files("flywheel.generators").joinpath("phrasing_vocab.json").read_text("utf-8"))
    assert set(vocab["stories"]) == set(APPLICATION_DOMAINS) and "*" in vocab["facts"]
    rng = np.random.default_rng(0)
    intro = story_intro("energy", rng)
    assert any(intro.startswith(n) for n in vocab["stories"]["energy"]["names"])
    sentences, values = distractor_facts("retail", rng, avoid=set(), k=2)
    templates = [t for t, _, _ in vocab["facts"]["retail"] + vocab["facts"]["*"]]
    assert len(sentences) == 2 and all(any(s == t.format(n=int(v)) for t in templates)
                                       for s, v in zip(sentences, values, strict=True))


def test_drawn_names_and_spread_sizes_vary_within_a_difficulty():
    rng = np.random.default_rng(0)
    pool = ["A", "B", "C", "D", "E"]
    drawn = [drawn_names(rng, pool, 3, "X") for _ in range(40)]
    assert all(len(set(d)) == 3 and set(d) <= set(pool) for d in drawn)  # without replacement, from the pool
    assert len({tuple(d) for d in drawn}) > 10  # subsets and orders both vary
    assert drawn_names(rng, pool, 7, "X")[5:] == ["X6", "X7"] and sorted(drawn_names(rng, pool, 7, "X")[:5]) == pool
    sizes = {spread(rng, 3) for _ in range(60)}
    assert sizes == {2, 3, 4}
    assert {spread(rng, 2, low=2) for _ in range(60)} == {2, 3}


def test_the_lp_families_read_list_lengths_and_names_from_the_instance():
    """The speedrun's three families once had one size and the pool's first names per difficulty, so a model
    learned a list's length by heart; now a difficulty's sizes overlap the next one's and names are drawn."""
    for family, key in (("transportation", "dests"), ("diet", "foods"), ("production_planning", "products")):
        lengths = {1: set(), 2: set()}
        firsts = set()
        for i in range(30):
            for d in (1, 2):
                data = generate_problem(family, derive_seed(5, i), d).params
                lengths[d].add(len(data[key]))
                firsts.add(data[key][0])
        assert len(lengths[1]) >= 2 and len(lengths[2]) >= 2, (family, lengths)
        assert lengths[1] & lengths[2], (family, lengths)  # difficulty 1's largest lists are difficulty 2's smallest
        assert max(lengths[2]) > max(lengths[1]), (family, lengths)
        assert len(firsts) >= 4, (family, firsts)


def _named_lists(params: dict) -> dict[str, tuple[str, ...]]:
    """The instance's named sets: list parameters whose items are all strings."""
    return {k: tuple(v) for k, v in params.items()
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v)}


# Families whose only named set is ordered (hours H1..Hn): the names stay in natural order and only the count varies.
ORDERED_ONLY = {"battery_arbitrage"}


def test_every_family_draws_its_sizes_and_names_per_instance():
    """Generator version 2: within one difficulty some named set's length varies and (unless every set is ordered)
    some set's names vary, so a model has to read them from the question instead of learning them by heart.
    Sampled without solving (``Family.sample``), 24 instances per family at difficulty 2 over its domains."""
    for name in family_names():
        fam = get_family(name)
        lengths: dict[str, set[int]] = {}
        contents: dict[str, set[tuple[str, ...]]] = {}
        for i in range(24):
            rng = np.random.default_rng(derive_seed(11, i))
            domain = fam.domains[i % len(fam.domains)]
            for key, items in _named_lists(fam.sample(rng, 2, domain)).items():
                lengths.setdefault(key, set()).add(len(items))
                contents.setdefault(key, set()).add(items)
        assert lengths, f"{name}: no named list among its parameters"
        assert max(len(s) for s in lengths.values()) >= 2, f"{name}: every list has one length at difficulty 2"
        if name not in ORDERED_ONLY:
            assert max(len(s) for s in contents.values()) >= 6, f"{name}: names barely vary: {contents}"


@pytest.mark.parametrize(("text", "expected"), [
    ("can open a ambulance base", "can open an ambulance base"),  # ambulance_location's template and vocabulary
    ("Shifts. A officer works", "Shifts. An officer works"),  # a capital article where a sentence starts
    ("a Expert, a Analyst", "an Expert, an Analyst"),  # team_selection's role names
    ("a unit, a one-off, a university, a euro", "a unit, a one-off, a university, a euro"),  # a consonant sound
    ("within a hour", "within an hour"),  # a silent h
    ("Plan A earns more than Plan A", "Plan A earns more than Plan A"),  # mid-sentence "A" is a name
    ("A and B. A is open", "A and B. A is open"),  # a function word after it: a name again
    ("| A | 3 |", "| A | 3 |"),  # a table cell
])
def test_articles_before_a_vowel_sound(text: str, expected: str) -> None:
    assert articles(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("MainHall (1 hours), Annexe (2 hours)", "MainHall (1 hour), Annexe (2 hours)"),
    ("needs 1 units of Flour and 21 units of Oats", "needs 1 unit of Flour and 21 units of Oats"),
    ("(0/1 decisions) within 1.5 hours at $1 times", "(0/1 decisions) within 1.5 hours at $1 times"),
    ("1 batches in Week1 for a exam", "1 batch in Week1 for an exam"),
])
def test_tidy_writes_one_unit_in_the_singular(text: str, expected: str) -> None:
    assert tidy(text) == expected


def test_no_family_writes_a_before_a_vowel_or_one_hours():
    """"a ambulance base", "A officer", "a exam" came out of ten families whose templates write ``a {{ noun }}``,
    "1 hours" and "1 units of Flour" out of sixteen that write ``{n} {unit}s``, "data network network" out of
    min_cost_flow; every phrasing now goes through ``tidy``."""
    bad = re.compile(r"(?<![\w'-])a (?!unit|one|use|usu|uni|uti|eu)[aeiouAEIOU]|(?<![\d.,/$-])\b1 (?:hours|units)\b"
                     r"|\bnetwork network\b")
    for name in family_names():
        for difficulty in (1, 2, 3):
            for seed in range(6):
                question = str(generate_problem(name, seed=seed, difficulty=difficulty).question)
                hit = bad.search(question)
                assert hit is None, f"{name} seed {seed} d{difficulty}: ...{question[max(0, hit.start() - 30):hit.end() + 20]}..."
