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


def _two_by_two() -> tuple[ModelBuilder, dict[tuple[str, ...], str]]:
    b = ModelBuilder("m")
    b.add_set("rows", ["r1", "r2"])
    b.add_set("cols", ["c1", "c2"])
    x = b.add_vars("x", ("rows", "cols"), ub=1)
    return b, x


def test_add_constrs_equals_the_hand_written_loop():
    # The same rows, names, order and group as con_group + a loop of add_constr, over the product of the sets.
    b, x = _two_by_two()
    b.add_constrs("cap", ("rows", "cols"), "one cell at most its row number",
                  lambda r, c: ([(x[(r, c)], 2)], "<=", int(r[1])))
    b.set_objective("maximize", [(v, 1) for v in x.values()])
    h, y = _two_by_two()
    h.con_group("cap", ("rows", "cols"), "one cell at most its row number")
    for r in ("r1", "r2"):
        for c in ("c1", "c2"):
            h.add_constr("cap", (r, c), [(y[(r, c)], 2)], "<=", int(r[1]))
    h.set_objective("maximize", [(v, 1) for v in y.values()])
    built = b.build()
    assert built == h.build()
    assert [c.name for c in built.constraints] == ["cap_r1_c1", "cap_r1_c2", "cap_r2_c1", "cap_r2_c2"]
    assert built.con_groups[0].description == "one cell at most its row number"


def test_add_constrs_keys_pick_a_subset_and_may_be_single_names():
    b, x = _two_by_two()
    b.add_constrs("pairs", ("rows", "cols"), "", lambda r, c: ([(x[(r, c)], 1)], "==", 0), keys=[["r2", "c1"]])
    b.add_constrs("row", ("rows",), "", lambda r: ([(x[(r, "c2")], 1)], ">=", 1), keys=["r2"])
    b.set_objective("minimize", [(v, 1) for v in x.values()])
    cons = b.build().constraints
    assert [(c.name, c.index) for c in cons] == [("pairs_r2_c1", ("r2", "c1")), ("row_r2", ("r2",))]
    assert cons[1].terms == (("x_r2_c2", 1.0),) and cons[1].rhs == 1.0


def test_add_param_reads_nested_dicts_in_set_order():
    # values[row][col] gives the same parameter as the flat {(row, col): v} dict, in the sets' order, whatever the
    # order of the nested dict's keys.
    b, _ = _two_by_two()
    b.add_param("nested", {"r2": {"c2": 4, "c1": 3}, "r1": {"c1": 1, "c2": 2}}, ("rows", "cols"))
    b.add_param("flat", {(r, c): 2 * (r == "r2") + int(c[1]) for r in ("r1", "r2") for c in ("c1", "c2")},
                ("rows", "cols"))
    nested, flat = b._params
    assert nested.values == flat.values == {"r1,c1": 1.0, "r1,c2": 2.0, "r2,c1": 3.0, "r2,c2": 4.0}
    assert list(nested.values) == ["r1,c1", "r1,c2", "r2,c1", "r2,c2"]
