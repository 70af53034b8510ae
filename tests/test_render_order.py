"""Data in question-mention order (``render(model, api, question)``): every parameter's numbers are written in
the order the question states them, so copying them is a left-to-right walk through the question. (That the
reordered programs still reproduce the ground truth is ``test_render_matrix``: it renders with the question.)"""

from __future__ import annotations

import ast
import re

import pytest

from flywheel.generators.base import derive_seed, generate_problem
from solvers.render import render

_NUM = re.compile(r"(?<![A-Za-z_\d.])-?\d+(?:\.\d+)?(?!\d)")


def _values(text: str) -> list[float]:
    return [round(float(t), 9) for t in _NUM.findall(text)]


def _is_subsequence(part: list[float], whole: list[float]) -> bool:
    it = iter(whole)
    return all(any(x == y for y in it) for x in part)


def _param_literals(code: str) -> dict[str, list[float]]:
    """Each dict literal of the data block (a cell dict, or a row table's rows): its values in written order."""
    block = code[code.index("from gurobipy import GRB\n"):code.index("m = gp.Model")].split("\n", 1)[1]
    out = {}
    for node in ast.parse(block).body:
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        if isinstance(value, ast.DictComp):  # {(i, j): x for i, row in {...}.items() for j, x in zip(...)}
            value = value.generators[0].iter.func.value  # type: ignore[attr-defined]
            out[node.targets[0].id] = [round(float(x), 9) for row in ast.literal_eval(value).values() for x in row]  # type: ignore[attr-defined]
        elif isinstance(value, ast.Dict):
            values = [round(float(ast.literal_eval(v)), 9) for v in value.values]
            out[node.targets[0].id] = values  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("family", ["production_planning", "transportation", "diet", "blending", "multi_knapsack"])
def test_each_parameter_follows_the_question(family: str) -> None:
    checked = 0
    for i in range(8):  # several seeds: the generators pick different phrasings (prose, tables)
        p = generate_problem(family, derive_seed(3, i), 1, 0.0)
        question = _values(p.question)
        for name, values in _param_literals(render(p.ir, "gurobipy", p.question)).items():
            stated = [v for v in values if v in question]
            if len(stated) < len(values):
                continue  # a number the question does not write (derived, or a default): no order to follow
            assert _is_subsequence(stated, question), (family, i, name, stated, p.question)
            checked += 1
    assert checked >= 8  # most parameters' numbers are all written in the question


def test_without_the_question_the_ir_order_is_kept() -> None:
    p = generate_problem("production_planning", derive_seed(3, 0), 1, 0.0)
    plain, ordered = render(p.ir, "gurobipy"), render(p.ir, "gurobipy", p.question)
    usage = next(x for x in p.ir.params if x.name == "usage")
    assert _param_literals(plain)["usage"] == [round(float(v), 9) for v in usage.values.values()]  # IR order
    assert sorted(_values(plain)) == sorted(_values(ordered))  # the same numbers, only the reading order moves


def _names(e: str, text: str) -> bool:
    return any(re.search(rf"(?<!\w){re.escape(f)}(?!\w)", text) for f in {e, e.replace("_", " ")})


def _tables(question: str) -> list[list[list[str]]]:
    out: list[list[list[str]]] = []
    cur: list[list[str]] = []
    for line in [*question.splitlines(), ""]:
        if line.startswith("|"):
            cur.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif cur:
            out.append(cur)
            cur = []
    return out


def _cell(key: tuple[str, str], tables: list[list[list[str]]]) -> tuple[int, int, int] | None:
    """Where the question's tables state ``key``: (table, body row, column) of the cell whose row label and
    column header name its two elements (the key's own orientation first)."""
    for a, b in (key, key[::-1]):
        for ti, t in enumerate(tables):
            for ri, row in enumerate(t[1:]):
                for j in range(1, min(len(row), len(t[0]))):
                    if _names(a, row[0]) and _names(b, t[0][j]):
                        return ti, ri, j
    return None


def test_a_table_is_written_in_its_reading_order() -> None:
    """A 2-D parameter the question gives as a markdown table is written row by row, column by column: with
    equal numbers in one row (``| Bread | 33 | 3 | 3 |``) the nearest-mention pass alone swapped keys, so one table
    row came out (Butter, Flour) and the next (Flour, Butter). Over every family with a table, 131 such
    parameters at these seeds: 57% in order before the table pass, 98.5% with it (the rest are symmetric
    covariance entries whose two cells hold the same number)."""
    from flywheel.generators.base import family_names

    total, in_order, lp3 = 0, 0, []
    for family in family_names():
        for i in range(12):
            p = generate_problem(family, derive_seed(7, i), 1, 0.0)
            tables = _tables(p.question)
            if not tables:
                continue
            # The cell layout shows each entry's place; the row layout (the default) is built from that order.
            block = render(p.ir, "gurobipy", p.question, tables="cells").split("\nm = gp")[0]
            for node in ast.parse(block).body:
                if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and node.value.keys
                        and all(isinstance(k, ast.Tuple) and len(k.elts) == 2 for k in node.value.keys)):
                    continue
                cells = [_cell(ast.literal_eval(k), tables) for k in node.value.keys]  # type: ignore[arg-type]
                if None in cells:
                    continue  # not (all) in a table
                total += 1
                ok = cells == sorted(cells)  # type: ignore[type-var]
                in_order += ok
                if family in ("production_planning", "diet", "transportation"):
                    lp3.append((family, i, ok))
    assert total >= 100
    assert in_order / total >= 0.95, (in_order, total)
    assert lp3 and all(ok for _, _, ok in lp3), lp3  # the speedrun's families: every table in order
