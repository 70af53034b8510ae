"""ModelBuilder: rows with no terms, and the regression they caused (pyomo rejects a constraint that is just True)."""

from __future__ import annotations

import pytest

from flywheel.generators.base import generate_problem
from solvers.builder import ModelBuilder
from solvers.render import render
from solvers.sandbox import Program, run_program


@pytest.mark.parametrize(("sense", "rhs", "kept"), [("==", 0, False), ("<=", 3, False), (">=", -1, False),
                                                     (">=", 5, True), ("==", 2, True), ("<=", -1, True)])
def test_empty_rows_are_dropped_only_when_they_always_hold(sense: str, rhs: float, kept: bool):
    b = ModelBuilder("m")
    x = b.add_var("x", ub=4)
    b.add_constr("cap", (), [(x, 1)], "<=", 4)
    b.add_constr("empty", (), [(x, 0)], sense, rhs)
    b.set_objective("maximize", [(x, 1)])
    names = [c.name for c in b.build().constraints]
    assert ("empty" in names) is kept and "cap" in names


def test_network_node_without_arcs_renders_for_pyomo():
    # max_flow seed 23 has a node with no arcs: its conservation row used to be `0 == 0` and broke pyomo.
    problem = generate_problem("max_flow", 23)
    assert all(c.terms for c in problem.ir.constraints)
    execution = run_program(Program(program_id="max_flow-23", code=render(problem.ir, "pyomo")))
    assert execution.status == "ok", execution.error
