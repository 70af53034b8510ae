"""The IR: validation errors, deterministic JSON and content hash, MPS export read back by highspy (LP, MILP,
QP, maximisation with a constant and a free variable), evaluation and violations."""

from __future__ import annotations

import highspy
import pytest

from flywheel.generators.base import generate_problem
from solvers.builder import ModelBuilder
from solvers.errors import ModelError
from solvers.ground_truth import solve_with
from solvers.ir import Constraint, Model, Objective, Variable, VarType
from solvers.records import SolveStatus


def _model(**over) -> Model:
    fields = dict(
        name="m",
        variables=(Variable(name="x", group="x"), Variable(name="y", group="y", vtype=VarType.INTEGER, ub=4)),
        constraints=(Constraint(name="c", group="c", terms=(("x", 1.0), ("y", 2.0)), sense="<=", rhs=5.0),),
        objective=Objective(sense="maximize", terms=(("x", 1.0), ("y", 1.0))),
    )
    fields.update(over)
    return Model(**fields)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"variables": (Variable(name="x", group="x"), Variable(name="x", group="x"))}, "duplicate variable"),
        ({"constraints": (Constraint(name="c", group="c", terms=(("z", 1.0),), sense="<=", rhs=1.0),)},
         "unknown variable z"),
        ({"constraints": (Constraint(name="c", group="c", terms=(("x", float("nan")),), sense="<=", rhs=1.0),)},
         "non-finite coefficient"),
        ({"constraints": (Constraint(name="c", group="c", terms=(("x", 1.0),), sense="<=", rhs=float("inf")),)},
         "non-finite rhs"),
        ({"constraints": (Constraint(name="c", group="c", terms=(("x", 1.0),), sense="<=", rhs=1.0),
                          Constraint(name="c", group="c", terms=(("x", 1.0),), sense=">=", rhs=0.0))},
         "duplicate constraint"),
        ({"variables": (Variable(name="x", group="x", ub=float("inf")), Variable(name="y", group="y"))},
         "not finite"),
        ({"objective": Objective(sense="minimize", terms=(("w", 1.0),))}, "objective uses unknown variable"),
        ({"objective": Objective(sense="minimize", quadratic=(("x", "w", 1.0),))}, "objective uses unknown"),
    ],
)
def test_validation_errors_name_the_problem(override: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message) as info:
        _model(**override)
    assert info.value.culprit == "model m"


def test_model_is_immutable() -> None:
    m = _model()
    with pytest.raises(Exception):  # noqa: B017 (pydantic raises its ValidationError for frozen models)
        m.name = "other"  # type: ignore[misc]


def test_json_is_deterministic_and_round_trips() -> None:
    a = generate_problem("production_planning", 11, 3).ir
    b = generate_problem("production_planning", 11, 3).ir
    assert a.to_json() == b.to_json() and a.content_hash() == b.content_hash()
    assert Model.from_json(a.to_json()) == a
    assert Model.from_json(a.to_json()).to_json() == a.to_json()
    changed = a.model_copy(update={"constraints": (a.constraints[0].model_copy(update={"rhs": a.constraints[0].rhs
                                                                                       + 1}),
                                                   *a.constraints[1:])})
    assert changed.content_hash() != a.content_hash()
    assert len(a.content_hash()) == 16 and len(a.content_hash(32)) == 32


def _constant_free_max() -> Model:
    b = ModelBuilder("free_max")
    x = b.add_var("x", ub=3)
    y = b.add_var("y", lb=None)
    z = b.add_var("z", lb=-2, ub=2, vtype=VarType.INTEGER)
    b.add_constr("c1", (), [(x, 1), (y, 1)], "<=", 4)
    b.add_constr("c2", (), [(x, 1), (y, 3), (z, 1)], "<=", 6)
    b.add_constr("c3", (), [(y, 1), (z, -1)], "==", 0.5)
    b.set_objective("maximize", [(x, 3), (y, 2), (z, -1)], constant=5)
    return b.build()


MPS_CASES = {
    "lp": lambda: generate_problem("production_planning", 5, 2).ir,
    "milp": lambda: generate_problem("facility_location", 5, 2).ir,
    "qp": lambda: generate_problem("portfolio", 5, 2).ir,
    "max_constant_free_int": _constant_free_max,
    "names_with_spaces": lambda: _awkward_names(),
}


def _awkward_names() -> Model:
    """Names free MPS cannot hold as they are: a site called "Old Mill" (read as two fields, it used to shift every
    column entry: ambulance_location's seed 11 lost a variable and fixed another), a name that collides with the
    first once its space is replaced, and a constraint called like the objective row."""
    v = (Variable(name="open_Old Mill", group="open", vtype=VarType.BINARY),
         Variable(name="open_Old_Mill", group="open", vtype=VarType.BINARY),
         Variable(name="flow to  Harbour", group="flow", lb=-2.0, ub=6.0),
         Variable(name="x", group="x", vtype=VarType.INTEGER, lb=1.0))
    c = (Constraint(name="cover Abbey", group="cover", terms=(("open_Old Mill", 1.0), ("open_Old_Mill", 1.0)),
                    sense=">=", rhs=1.0),
         Constraint(name="obj", group="o", terms=(("flow to  Harbour", 1.0), ("x", 1.0)), sense=">=", rhs=3.5),
         Constraint(name="cap Old Mill", group="cap", terms=(("flow to  Harbour", 1.0), ("open_Old Mill", -4.0)),
                    sense="<=", rhs=0.0))
    return Model(name="awkward names", variables=v, constraints=c,
                 objective=Objective(sense="minimize", terms=(("open_Old Mill", 3.0), ("open_Old_Mill", 5.0),
                                                              ("flow to  Harbour", 1.0), ("x", 2.0))))


def test_mps_names_replace_whitespace_and_stay_unique() -> None:
    from solvers.mps_names import mps_names

    names = ["a b", "a_b", "c", "obj", "d\te  f", "a  b"]
    out = mps_names(names, frozenset({"obj"}))
    assert out[1:3] == ["a_b", "c"]  # names that need no change keep it
    assert len(set(out)) == len(out) and not any(ch.isspace() for n in out for ch in n)
    assert out[0].startswith("a_b~") and out[3].startswith("obj~") and out[4] == "d_e__f"  # each whitespace character, as OR-Tools writes it
    assert mps_names(names, frozenset({"obj"})) == out  # deterministic


@pytest.mark.parametrize("case", sorted(MPS_CASES))
def test_mps_round_trip_through_highspy(case: str, tmp_path) -> None:
    model = MPS_CASES[case]()
    path = tmp_path / f"{case}.mps"
    path.write_text(model.to_mps())
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", 1e-9)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    lp = h.getLp()
    assert lp.num_col_ == len(model.variables) and lp.num_row_ == len(model.constraints)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    direct = solve_with(model, "highs")
    assert direct.status == SolveStatus.OPTIMAL
    # Same solver, same model by two routes: agreement to solver precision (1e-9 relative).
    assert h.getInfo().objective_function_value == pytest.approx(direct.objective, rel=1e-9, abs=1e-9)


def test_evaluate_and_violations() -> None:
    model = _constant_free_max()
    run = solve_with(model, "gurobi")
    assert run.status == SolveStatus.OPTIMAL
    assert model.evaluate(run.solution) == pytest.approx(run.objective, rel=1e-9)
    assert model.violations(run.solution) == []
    bad = {**run.solution, "x": 10.0}  # breaks c1 and x's upper bound 3
    assert set(model.violations(bad)) >= {"c1", "ub:x"}
    assert "int:z" in model.violations({**run.solution, "z": 0.5})
    assert "lb:z" in model.violations({**run.solution, "z": -3.0})
    assert "c3" in model.violations({**run.solution, "y": run.solution["y"] + 0.1})
    # A missing variable counts as 0: the objective is then only what the others and the constant give.
    assert model.evaluate({}) == 5.0


def test_quadratic_evaluate_and_problem_class() -> None:
    model = generate_problem("portfolio", 5, 2).ir
    assert model.problem_class == "QP"
    run = solve_with(model, "highs")
    assert model.evaluate(run.solution) == pytest.approx(run.objective, rel=1e-7)
    assert _constant_free_max().problem_class == "MILP"
    assert generate_problem("multi_knapsack", 5, 2).ir.problem_class == "IP"
    assert generate_problem("diet", 5, 2).ir.problem_class == "LP"


def test_metrics_count_the_model() -> None:
    m = _constant_free_max().metrics()
    assert m == {"n_vars": 3, "n_continuous": 2, "n_integer": 1, "n_binary": 0, "n_constraints": 3,
                 "n_nonzeros": 7, "n_quadratic_terms": 0}
