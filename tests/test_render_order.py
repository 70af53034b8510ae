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
    """Each dict literal of the data block: its values in written order."""
    block = code[code.index("from gurobipy import GRB\n"):code.index("m = gp.Model")].split("\n", 1)[1]
    out = {}
    for node in ast.parse(block).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            values = [round(float(ast.literal_eval(v)), 9) for v in node.value.values]
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
