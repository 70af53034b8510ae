"""The small helpers every family shares (issue 15): listing phrases, the make_infeasible levers, the default
domains, and the phrasing vocabulary read from package data."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from flywheel.generators._phrasing import APPLICATION_DOMAINS, distractor_facts, story_intro
from flywheel.generators._text import listing
from flywheel.generators.base import FAMILIES, exceed, family_names, replace_at


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
