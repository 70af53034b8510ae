"""Dense two-set tables written one row per line (``ParamPlan.row_table``, the default ``tables="rows"``).

The row layout must be the same data as the cell layout for every family (it is only another way to type the
dict), must fail loudly when a row is short (a dropped number is an error, not a silent 0 or a missing key that a
sum skips), and must fall back to cells wherever rows would not follow the question.
"""

from __future__ import annotations

import re

import pytest

from flywheel.generators.base import derive_seed, family_names, generate_problem
from solvers.errors import UnknownNameError
from solvers.ir import Parameter
from solvers.render import render
from solvers.render.plan import plan
from solvers.render.shapes import ParamPlan, SetPlan


def _data(model, question: str, tables: str) -> dict:
    namespace: dict = {}
    exec("\n".join(plan(model).data_lines(question=question, tables=tables)), namespace)  # noqa: S102
    namespace.pop("__builtins__")
    return namespace


def test_row_tables_hold_the_same_data_as_cells_in_every_family() -> None:
    with_rows = set()
    for family in family_names():
        for d in (1, 2, 3):
            p = generate_problem(family, derive_seed(11, d), d, 0.0)
            rows, cells = _data(p.ir, p.question, "rows"), _data(p.ir, p.question, "cells")
            assert rows == cells, (family, d)
            text = "\n".join(plan(p.ir).data_lines(question=p.question))
            if ".items() for " in text:
                with_rows.add(family)
    # Dense tables are common: the speedrun's three families and a good share of the rest write rows.
    assert {"production_planning", "transportation", "diet"} <= with_rows
    assert len(with_rows) >= 15, sorted(with_rows)


def test_a_short_row_is_an_error_not_a_missing_cell() -> None:
    p = generate_problem("transportation", derive_seed(11, 0), 2, 0.0)
    code = render(p.ir, "gurobipy", p.question)
    first_row = re.search(r'^    "[^"]+": \[([^\]]*)\],$', code, re.M)
    assert first_row, code
    short = first_row.group(1).rsplit(", ", 1)[0]  # the model dropped the row's last number
    broken = code.replace(first_row.group(1), short, 1)
    with pytest.raises(ValueError, match="zip"):
        exec(broken.split("m = gp.Model")[0], {})  # noqa: S102


def _table(values: dict[str, float], a: tuple[str, ...] = ("x", "y"), b: tuple[str, ...] = ("p", "q", "r"),
            same_set: bool = False) -> tuple[ParamPlan, dict[str, SetPlan]]:
    index = ("A", "A") if same_set else ("A", "B")
    param = Parameter(name="t", index=index, values=values)
    keys = {tuple(k.split(",")): float(v) for k, v in values.items()}
    sets = {"A": SetPlan("rows_a", "A", a, ""), "B": SetPlan("cols_b", "B", b, "")}
    return ParamPlan("t", param, keys), sets


def _grid(order: list[tuple[str, str]]) -> dict[str, float]:
    return {f"{i},{j}": float(n) for n, (i, j) in enumerate(order)}


def test_rows_follow_the_grouping_of_the_entries() -> None:
    by_a = [(i, j) for i in ("x", "y") for j in ("p", "q", "r")]
    table, sets = _table(_grid(by_a))
    text = table.row_table(None, sets, set())
    assert text is not None and '"x": [0, 1, 2],' in text and "zip(cols_b, row, strict=True)" in text
    by_b = [(i, j) for j in ("p", "q", "r") for i in ("x", "y")]  # the question lists the table column-wise
    table, sets = _table(_grid(by_b))
    text = table.row_table(None, sets, set())
    assert text is not None and '"p": [0, 1],' in text and "zip(rows_a, row, strict=True)" in text
    loops = set(re.findall(r"for (\w+), ", text))
    assert "rows_a" not in loops and "cols_b" not in loops  # loop names never shadow the sets they read
    # The question states every row's columns in another order than the set's: the row follows the question and
    # names its columns, so it is still copied left to right.
    by_question = [(i, j) for i in ("x", "y") for j in ("q", "r", "p")]
    table, sets = _table(_grid(by_question))
    text = table.row_table(None, sets, set())
    assert text is not None and '"x": [0, 1, 2],' in text and 'zip(["q", "r", "p"], row, strict=True)' in text
    namespace = {"cols_b": sets["B"].elements}
    assert eval(text, namespace) == {k: float(n) for n, k in enumerate(by_question)}  # noqa: S307


def test_one_misplaced_number_does_not_undo_a_table() -> None:
    """The question's placement of a number can be ambiguous (a cost of 22 next to a demand of 22): one entry out
    of place still gives the table its rows, in the question's order."""
    order = [(i, j) for i in ("x", "y", "z") for j in ("p", "q", "r")]
    order.insert(0, order.pop(7))  # (z, q) placed first
    table, sets = _table(_grid(order), a=("x", "y", "z"))
    text = table.row_table(None, sets, set())
    assert text is not None and "zip(cols_b, row, strict=True)" in text
    assert text.index('"x"') < text.index('"y"') < text.index('"z"')


@pytest.mark.parametrize("case", ["interleaved", "columns reordered", "sparse", "one set twice"])
def test_tables_that_rows_would_misread_stay_cells(case: str) -> None:
    order = [(i, j) for i in ("x", "y") for j in ("p", "q", "r")]
    if case == "interleaved":
        order = [order[0], order[3], order[1], order[2], order[4], order[5]]  # x, y, x, x, y, y
    elif case == "columns reordered":
        order = [("x", "p"), ("x", "q"), ("x", "r"), ("y", "q"), ("y", "p"), ("y", "r")]  # no common order
    elif case == "sparse":
        order = order[:-1]
    table, sets = _table(_grid(order), same_set=case == "one set twice")
    if case == "one set twice":
        sets["A"] = SetPlan("rows_a", "A", ("x", "y", "p", "q", "r"), "")
    assert table.row_table(None, sets, set()) is None


def test_an_unknown_table_layout_names_the_choices() -> None:
    p = generate_problem("diet", derive_seed(11, 0), 1, 0.0)
    with pytest.raises(UnknownNameError, match="cells"):
        render(p.ir, "gurobipy", p.question, tables="grid")


@pytest.mark.parametrize("layout", ["prose", "table"])
def test_a_single_resource_keeps_the_orientation_of_many(layout: str) -> None:
    """One resource: a question that names it next to each number, or as a table's column, gets a row per
    product (as it would with two resources); one that states it once before its numbers gets one row."""
    values = {"Reactor,Solvent": 5, "Reactor,Resin": 2, "Reactor,Coating": 7}
    param = Parameter(name="usage", index=("resources", "products"), values=values)
    keys = {tuple(k.split(",")): float(v) for k, v in values.items()}
    sets = {"resources": SetPlan("resources", "resources", ("Reactor",), ""),
            "products": SetPlan("products", "products", ("Solvent", "Resin", "Coating"), "")}
    table = ParamPlan("usage", param, keys)
    if layout == "prose":
        each = ("Each unit of Solvent needs 5 hours of Reactor; each unit of Resin needs 2 hours of Reactor; each unit "
                "of Coating needs 7 hours of Reactor.")
    else:
        each = "| Product | Reactor (h/unit) |\n|---|---|\n| Solvent | 5 |\n| Resin | 2 |\n| Coating | 7 |"
    text = table.row_table(None, sets, set(), each)
    assert text is not None and '"Solvent": [5],' in text and "zip(resources, row, strict=True)" in text
    once = "Hours of Reactor per unit: Solvent 5, Resin 2, Coating 7."
    text = table.row_table(None, sets, set(), once)
    assert text is not None and '"Reactor": [5, 2, 7],' in text and "zip(products, row, strict=True)" in text
