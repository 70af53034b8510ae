"""Sets written as a dict's keys (``solvers.render.shapes.derived_sets``): ``products = list(profit)``.

A set whose elements are exactly the keys of a one-index parameter, in that order, is written once, in the data,
as ``list(param)`` right after it; every other set stays a literal list. The data a derived set yields must equal
the literal list it replaces, in every family and difficulty, and a table that reads the set (``zip(set, row)``)
must never come before the set exists.
"""

from __future__ import annotations

import re

from flywheel.evaluate.anatomy import classify, data_literals
from flywheel.generators.base import derive_seed, family_names, generate_problem
from solvers.render import render
from solvers.render.plan import plan
from solvers.render.shapes import derived_sets


def _run_data(lines: list[str]) -> dict:
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # noqa: S102  (the renderer's own data block)
    namespace.pop("__builtins__")
    return namespace


def test_derived_sets_hold_the_literal_lists_in_every_family() -> None:
    derived_families = set()
    for family in family_names():
        for d in (1, 2, 3):
            p = generate_problem(family, derive_seed(13, d), d, 0.0)
            pl = plan(p.ir)
            lines = pl.data_lines(question=p.question)
            data = _run_data(lines)  # a table reading a set before it exists raises NameError here
            for s in pl.sets:
                assert data[s.ident] == list(s.elements), (family, d, s.name)
            derived = [line for line in lines if re.fullmatch(r"\w+ = list\(\w+\)", line)]
            if any(line.split(" = ")[0] in {s.ident for s in pl.sets} for line in derived):
                derived_families.add(family)
    # The speedrun's product and food lists come from their first 1-D dict (profit, cost).
    assert {"production_planning", "diet"} <= derived_families


def test_a_set_is_derived_from_its_first_full_dict_and_stays_literal_after_a_table() -> None:
    p = generate_problem("production_planning", 5, 1)
    code = render(p.ir, "gurobipy", p.question)
    head = code.split("m = gp.Model")[0]
    # profit covers every product in the products' order and comes first; the usage table reads `resources`
    # before capacity (the first full dict over resources) is written, so resources stays a literal list.
    assert "products = list(profit)" in head and head.index("profit = {") < head.index("products = list(profit)")
    assert re.search(r'^resources = \["', head, re.M)
    assert head.index("resources = [") < head.index("zip(resources, row")
    assert code.count("products = ") == 1


def test_a_dict_in_another_order_or_over_part_of_the_set_does_not_define_it() -> None:
    pl = plan(generate_problem("production_planning", 5, 1).ir)
    prof = next(pp for pp in pl.params if pp.ident == "profit")
    in_order = [(pp, None) for pp in pl.params]
    assert [s.name for g in derived_sets(pl.sets, in_order).values() for s in g] == ["products"]
    # The same dict written in the reverse order: list(profit) would reorder the set, so it stays literal.
    reverse = [(pp, list(range(len(prof.keys)))[::-1] if pp is prof else None) for pp in pl.params]
    assert "products" not in [s.name for g in derived_sets(pl.sets, reverse).values() for s in g]
    # min_output names only some products: it never defines the set, whatever comes first.
    minimum = next(pp for pp in pl.params if pp.ident == "min_output")
    only_minimum = [(minimum, None)] + [(pp, None) for pp in pl.params if pp is not prof and pp is not minimum]
    assert len(minimum.keys) < len(pl.sets[0].elements)
    assert "products" not in [s.name for g in derived_sets(pl.sets, only_minimum).values() for s in g]


def test_miss_anatomy_reads_a_derived_set_as_its_dicts_names() -> None:
    p = generate_problem("production_planning", 5, 1)
    reference = render(p.ir, "gurobipy", p.question)
    data = data_literals(reference)
    assert data is not None and data["products"][0] == list(data["profit"][0])
    assert {"usage", "capacity", "min_output"} <= set(data) and "m" not in data  # read past list(profit)
    first = re.search(r'profit = \{"([^"]+)": ', reference)
    assert first is not None
    dropped = re.sub(r'profit = \{"[^"]+": [^,]+, ', "profit = {", reference, count=1)
    ran = {"exec_status": "ok", "solve_status": "optimal", "miss_class": "formulation"}
    kind, detail = classify(ran, dropped, reference)
    assert kind == "entities" and first.group(1) in detail, (kind, detail)
