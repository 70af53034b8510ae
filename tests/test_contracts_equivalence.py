"""Structural equivalence: the MPS reader against real solver writers, and each layer on known transformations
(the bench's transformations, over every generator family, on one seed each)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from contracts.equivalence import compare_models, from_ir, read_mps
from contracts.equivalence.canonical import canonicalize, exact_hash, wl_hash
from flywheel.generators.base import family_names, generate_problem
from flywheel.generators.testing import problem_with_truth
from solvers.ir import Constraint, Model, Objective, Variable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import equivalence as bench  # noqa: E402


def test_mps_reader_round_trips_the_ir_and_gurobi_output(tmp_path: Path) -> None:
    import gurobipy as gp

    p = problem_with_truth("multi_knapsack", 1)  # integer model: MARKER sections
    a = from_ir(p.ir)
    b = read_mps(p.ir.to_mps())
    assert (a.names, a.integer, a.lb, a.ub, a.lo, a.hi, a.obj, a.maximize) == \
        (b.names, b.integer, b.lb, b.ub, b.lo, b.hi, b.obj, b.maximize)
    path = tmp_path / "m.mps"
    path.write_text(p.ir.to_mps())
    with gp.Env(params={"OutputFlag": 0}) as env, gp.read(str(path), env=env) as g:
        g.write(str(tmp_path / "g.mps"))
        g.optimize()
        gurobi_obj = g.ObjVal
    c = read_mps((tmp_path / "g.mps").read_text())
    assert compare_models(p.ir, c).layer == "exact"
    # the reader's model, solved by HiGHS through the semantic layer's solver, gives Gurobi's optimum
    from contracts.equivalence.semantic import solve

    res = solve(canonicalize(c).model)
    assert -res.value == pytest.approx(gurobi_obj, rel=1e-9)  # canonical form minimises -profit


def test_quadratic_objective_parses_and_solves() -> None:
    fams = [f for f in family_names() if generate_problem(f, 0, 1).ir.objective.quadratic]
    if not fams:
        pytest.skip("no quadratic generator family")
    p = problem_with_truth(fams[0], 0, 1)
    a, b = from_ir(p.ir), read_mps(p.ir.to_mps())
    assert a.quad == pytest.approx(b.quad)
    from contracts.equivalence.semantic import solve

    res = solve(canonicalize(b).model)
    sign = -1 if b.maximize else 1
    # 1e-5 relative: HiGHS's QP solver stops at 1e-7-ish optimality; the ground truth came from other solvers.
    assert sign * res.value == pytest.approx(p.ground_truth.objective, rel=1e-5)


# Known recall misses (not precision errors) would be listed here, family -> reason, and marked xfail.
_KNOWN_MISSES: dict[str, str] = {}
# (ambulance_location was here from 2026-12-02 to 2026-12-05, blamed on presolve and the semantic layer's name
# mapping; the cause was the MPS writer: a site called "Old Mill" made "open_Old Mill" two fields, so every
# perturbed copy lost a column. IR.to_mps now writes whitespace-free, unique names, tests/test_ir.py; and the
# generator's site names no longer hold spaces, tests/test_generators.py.)
# Found when issue 20's families joined this grid (2026-12-02), fixed 2026-12-04:
# (constrained_least_squares: its boxed QP re-solve failed; a fully mapped point is now evaluated directly;
# economic_dispatch: HiGHS's QP solver ran to its time limit at its default regularisation, see semantic.solve)
# (flow_shop was here too: its boxed MILP re-solve of the reference optimum found no solution; see above)
# (hydro_scheduling and irrigation_allocation were here: flipping a balance equality to <= is absorbed by the
# zero-cost spill/loss column that appears only in that row, an equivalent model that the exact layer rightly
# accepts; the label check now compares feasible sets with such slacks projected out, bench.project_slacks.)


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.xfail(reason=_KNOWN_MISSES[f]))
                                    if f in _KNOWN_MISSES else f for f in family_names()])
def test_layers_on_transformations(family: str) -> None:
    ir = generate_problem(family, 11, difficulty=2).ir
    for name, fn in bench.EQUIVALENT.items():
        cand = fn(ir, np.random.default_rng(7))
        if cand is not None:
            res = compare_models(ir, cand.to_mps())
            assert res.equivalent, (name, res.reason)
    for name, fn in bench.DIFFERENT.items():
        cand = fn(ir, np.random.default_rng(7))
        if cand is not None and bench.really_different(ir, cand, _env()):
            res = compare_models(ir, cand.to_mps())
            assert not res.equivalent, (name, res.layer, res.reason)


def test_exact_layer_is_permutation_and_scale_invariant() -> None:
    ir = generate_problem("transportation", 3, difficulty=2).ir
    cand = bench.permuted_renamed(bench.rescaled_rows(ir, np.random.default_rng(1)), np.random.default_rng(2))
    ca, cb = canonicalize(from_ir(ir)), canonicalize(read_mps(cand.to_mps()))
    assert exact_hash(ca) == exact_hash(cb) and wl_hash(ca) == wl_hash(cb)
    flipped = bench.flipped_sense(ir, np.random.default_rng(0))
    assert exact_hash(ca) != exact_hash(canonicalize(from_ir(flipped)))


_ENV = []


def _env():  # noqa: ANN202
    import gurobipy as gp

    if not _ENV:
        _ENV.append(gp.Env(params={"OutputFlag": 0, "MIPGap": 1e-9, "Threads": 1}))
    return _ENV[0]


def _scaled(ir, k: float, name: str, constraint_k: float = 1.0, forget_row: int | None = None):  # noqa: ANN001, ANN202
    """x = k x' for one continuous variable, every row multiplied by ``constraint_k``; ``forget_row``: that row
    keeps x's old coefficient (a unit conversion forgotten in one place)."""
    variables = [v.model_copy(update={"lb": None if v.lb is None else v.lb / k,
                                      "ub": None if v.ub is None else v.ub / k}) if v.name == name else v
                 for v in ir.variables]
    cons = []
    for i, c in enumerate(ir.constraints):
        terms = tuple((n, a * (1.0 if (n == name and i == forget_row) else (k if n == name else 1.0)) * constraint_k)
                      for n, a in c.terms)
        cons.append(c.model_copy(update={"terms": terms, "rhs": c.rhs * constraint_k}))
    obj = ir.objective.model_copy(update={"terms": tuple((n, a * (k if n == name else 1.0))
                                                          for n, a in ir.objective.terms)})
    return ir.model_copy(update={"variables": tuple(variables), "constraints": tuple(cons), "objective": obj})


@pytest.mark.parametrize(("k", "constraint_k"), [(60.0, 1.0), (1 / 1000, 1.0), (60.0, 7.0), (1.0, 0.001)])
def test_scaled_variables_and_constraints_are_equivalent_and_a_near_miss_is_not(k: float,
                                                                                constraint_k: float) -> None:
    """Hours vs minutes (x = 60 x'), units vs thousands, and every row rescaled: the exact layer still matches
    (continuous columns are rescaled in canonicalisation); forgetting the conversion in one row does not."""
    from solvers.ir import VarType

    ir = generate_problem("production_planning", 5, difficulty=2).ir
    used = [n for c in ir.constraints for n, _ in c.terms]
    name = next(v.name for v in ir.variables if v.vtype == VarType.CONTINUOUS and used.count(v.name) >= 2)
    res = compare_models(ir, _scaled(ir, k, name, constraint_k).to_mps())
    assert res.equivalent and res.layer == "exact", res.reason
    row = next(i for i, c in enumerate(ir.constraints) if name in dict(c.terms) and len(c.terms) >= 2)
    if k != 1.0:
        miss = compare_models(ir, _scaled(ir, k, name, constraint_k, forget_row=row).to_mps())
        assert not miss.equivalent, miss.reason


def test_integer_variables_are_not_rescaled() -> None:
    """x = 2 x' for an integer x changes the model (x' integer means x even): judged different."""
    from solvers.ir import VarType

    ir = generate_problem("multi_knapsack", 2, difficulty=2).ir
    v = next(v for v in ir.variables if v.vtype != VarType.CONTINUOUS)
    cand = _scaled(ir, 2.0, v.name)
    cand = cand.model_copy(update={"variables": tuple(
        x.model_copy(update={"vtype": VarType.INTEGER}) if x.name == v.name else x for x in cand.variables)})
    assert not compare_models(ir, cand.to_mps()).equivalent


@pytest.mark.parametrize("kind", ["objective_as_variable", "split_free_variable"])
def test_substitution_and_free_split_are_undone_by_the_exact_layer(kind: str) -> None:
    """z = c.x + k as a variable and an equality (here the objective), and x = x+ - x-: the canonical forms become
    identical (issue 18;
    on main only the semantic layer's re-solves could judge these, and only where its name mapping works)."""
    decided = 0
    for family in ("transportation", "diet", "production_planning", "cash_flow_matching", "blending"):
        ir = generate_problem(family, 5, difficulty=2).ir
        cand = bench.EQUIVALENT[kind](ir, np.random.default_rng(3))
        if cand is None:
            continue
        res = compare_models(ir, cand.to_mps(), layers=("exact",))
        assert res.equivalent and res.layer == "exact", (family, res.reason)
        decided += 1
    assert decided >= 4


def test_a_split_that_is_not_a_negated_pair_stays_different() -> None:
    """Precision: x+ and x- must be exact negatives everywhere; one coefficient off and the models differ."""
    ir = generate_problem("diet", 5, difficulty=2).ir
    cand = bench.split_free_variable(ir, np.random.default_rng(3))
    i = next(k for k, c in enumerate(cand.constraints) if any(n.endswith("_m") for n, _ in c.terms))
    c = cand.constraints[i]
    off = c.model_copy(update={"terms": tuple((n, a * 1.5 if n.endswith("_m") else a) for n, a in c.terms)})
    bad = cand.model_copy(update={"constraints": (*cand.constraints[:i], off, *cand.constraints[i + 1:])})
    assert compare_models(ir, cand.to_mps(), layers=("exact",)).equivalent
    assert not compare_models(ir, bad.to_mps(), layers=("exact", "wl")).equivalent


def _lp(rows: list[tuple[dict[str, float], str, float]], extra: tuple[str, ...] = ()):
    from solvers.ir import ConSense, Constraint, Model, Objective, ObjSense, VarGroup, Variable

    sense = {"<=": ConSense.LE, ">=": ConSense.GE, "==": ConSense.EQ}
    names = ("x1", "x2", *extra)
    return Model(name="m", var_groups=(VarGroup(name="x"),),
                 variables=tuple(Variable(name=n, group="x", lb=None if n in extra else 0.0) for n in names),
                 constraints=tuple(Constraint(name=f"c{i}", group="c", terms=tuple(t.items()), sense=sense[s], rhs=b)
                                   for i, (t, s, b) in enumerate(rows)),
                 objective=Objective(sense=ObjSense.MAXIMIZE, terms=(("x1", 2.0), ("x2", 1.0))))


@pytest.mark.parametrize(("coef", "equivalent"), [(2.0, True), (2.2, False)])
def test_a_defined_variable_is_substituted_before_containment(coef: float, equivalent: bool) -> None:
    """y = x1 + coef x2 used twice (y <= 21, y + x1 <= 25) in place of x1 + 2 x2 <= 21 and 2 x1 + 2 x2 <= 25.
    Same unique optimum (max 2 x1 + x2: x = (10, 0)) either way, so only containment can tell; at 2.2 the point
    (0, 10) is feasible in the reference and not in the candidate. y sits in two rows, so presolve keeps it, and
    the rows on y used to be skipped as unmapped, which let the tighter candidate through."""
    ref = _lp([({"x1": 1.0, "x2": 1.0}, "<=", 10.0), ({"x1": 1.0, "x2": 2.0}, "<=", 21.0),
               ({"x1": 2.0, "x2": 2.0}, "<=", 25.0)])
    cand = _lp([({"x1": 1.0, "x2": 1.0}, "<=", 10.0), ({"y": 1.0}, "<=", 21.0), ({"y": 1.0, "x1": 1.0}, "<=", 25.0),
                ({"y": 1.0, "x1": -1.0, "x2": -coef}, "==", 0.0)], extra=("y",))
    res = compare_models(ref, cand.to_mps(), layers=("exact", "wl", "semantic"))
    assert res.equivalent is equivalent, (res.layer, res.reason)
    if not equivalent:
        assert res.layer == "semantic" and "not implied" in res.reason, res.reason


def test_label_check_projects_single_row_slacks_out() -> None:
    """A zero-cost slack in one row: flipping its row's sense is equivalent (``a x <= b`` either way), changing its
    right-hand side is not; a slack with a cost, or in two rows, is a decision variable and stays."""
    from solvers.ir import ConSense, Constraint, Model, Objective, ObjSense, Variable

    def model(sense: ConSense, rhs: float = 5.0, spill_cost: float = 0.0) -> Model:
        return Model(name="m", variables=(Variable(name="x", group="x"), Variable(name="y", group="y"),
                                          Variable(name="spill", group="spill")),
                     constraints=(Constraint(name="bal", group="bal", terms=(("x", 1.0), ("y", 1.0), ("spill", 1.0)),
                                             sense=sense, rhs=rhs),
                                  Constraint(name="cap", group="cap", terms=(("x", 1.0),), sense=ConSense.LE, rhs=4.0)),
                     objective=Objective(sense=ObjSense.MAXIMIZE, terms=(("x", 3.0), ("y", 2.0),
                                                                         ("spill", spill_cost))))

    projected = bench.project_slacks(model(ConSense.EQ))
    assert [v.name for v in projected.variables] == ["x", "y"]
    assert projected.constraints[0].sense == ConSense.LE and dict(projected.constraints[0].terms) == {"x": 1, "y": 1}
    assert not bench.really_different(model(ConSense.EQ), model(ConSense.LE), _env())
    assert bench.really_different(model(ConSense.EQ), model(ConSense.EQ, rhs=6.0), _env())
    # >= with the slack absorbing the excess: the row no longer binds x + y, so the flip changes the model.
    assert bench.really_different(model(ConSense.EQ), model(ConSense.GE), _env())
    costly = bench.project_slacks(model(ConSense.EQ, spill_cost=-1.0))
    assert [v.name for v in costly.variables] == ["x", "y", "spill"]


def test_a_number_on_a_rounding_boundary_does_not_split_equivalent_models() -> None:
    """Canonical labels are rounded to 9 digits; the column scaling's float error (~1e-12 relative) put a number of
    a rescaled min_cost_flow copy on the other side of that rounding (0.53578588849999 vs 0.5357858885017). The
    exact layer then falls back to 7 digits; a real change (5th digit) is still not exact-equal."""
    from solvers.ir import ConSense, Constraint, Model, Objective, ObjSense, Variable

    def model(a: float) -> Model:
        return Model(name="m", variables=(Variable(name="x", group="x", vtype="integer"),
                                          Variable(name="y", group="y", vtype="integer")),
                     constraints=(Constraint(name="c", group="c", terms=(("x", a), ("y", 1.0)), sense=ConSense.LE,
                                             rhs=7.0),),
                     objective=Objective(sense=ObjSense.MAXIMIZE, terms=(("x", 2.0), ("y", 1.0))))

    lo, hi = model(0.53578588849999), model(0.5357858885017)
    res = compare_models(lo, hi)
    assert res.equivalent and res.layer == "exact" and "7 significant digits" in res.reason
    far = compare_models(lo, model(0.53579))
    assert not (far.equivalent and far.layer == "exact")


@pytest.mark.parametrize("k1,k2", [(3.0, 0.1), (60.0, 7.0), (0.5, 0.5)])
def test_columns_without_costs_are_rescaled_to_one_representative(k1: float, k2: float) -> None:
    """Columns that no cost and no integer column pin (a cost-free flow network beside the objective) are scaled
    only up to a common factor; the canonical form fixes it from the bounds and row sides, so a copy in other units
    (x = k x') hashes equal. Before, the least-squares ridge picked the factor from the input scales."""
    from solvers.ir import ConSense, Constraint, Model, Objective, ObjSense, Variable

    def model(k1: float, k2: float) -> Model:
        return Model(name="m", variables=(Variable(name="x1", group="x", ub=10.0 / k1),
                                          Variable(name="x2", group="x", ub=20.0 / k2),
                                          Variable(name="z", group="z", vtype="integer", ub=3.0)),
                     constraints=(Constraint(name="a", group="c", terms=(("x1", k1), ("x2", k2)), sense=ConSense.LE,
                                             rhs=25.0),
                                  Constraint(name="b", group="c", terms=(("x1", k1), ("x2", -2.0 * k2)),
                                             sense=ConSense.GE, rhs=-5.0)),
                     objective=Objective(sense=ObjSense.MAXIMIZE, terms=(("z", 1.0),)))

    def h(m: Model) -> str | None:
        return exact_hash(canonicalize(from_ir(m), reformulate=True))

    assert h(model(1.0, 1.0)) == h(model(k1, k2))
    tighter = model(k1, k2).model_copy(update={"constraints": (model(k1, k2).constraints[0].model_copy(
        update={"rhs": 24.0}), model(k1, k2).constraints[1])})
    assert h(model(1.0, 1.0)) != h(tighter)


def test_sparse_scaling_solve_matches_the_dense_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above DENSE_SCALE_MAX unknowns the column scaling's least squares goes through sparse normal equations; on a
    model small enough for both, the scaled matrices agree to float error (1e-12 relative: the two solves differ by
    a few ulps, far inside the 9-digit labels) and give the same exact hash."""
    import contracts.equivalence.canonical as can

    for family in ("transportation", "min_cost_flow", "blending"):
        ir = generate_problem(family, 3, difficulty=3).ir
        dense = canonicalize(from_ir(ir))
        monkeypatch.setattr(can, "DENSE_SCALE_MAX", 0)
        sparse = canonicalize(from_ir(ir))
        monkeypatch.undo()
        for ra, rb in zip(dense.model.rows, sparse.model.rows, strict=True):
            assert ra.keys() == rb.keys()
            assert all(abs(ra[j] - rb[j]) <= 1e-12 * (1 + abs(ra[j])) for j in ra)
        assert exact_hash(dense) == exact_hash(sparse)


def test_large_models_are_decided_by_wl() -> None:
    """Above the exact layer's 3,000 columns (it refuses), a rescaled copy of a large LP is equal by WL (at 7 digits
    when a number sits on a 9-digit rounding boundary) and a near miss is not; the scaling solve is sparse there
    (the dense one took minutes at this size)."""
    ref = bench.tiled("transportation", 0)
    assert len(ref.variables) > bench.EXACT_MAX_VARS
    same = compare_models(ref, bench.scaled_variables(ref, np.random.default_rng(1)).to_mps())
    assert same.equivalent and same.layer == "wl", same.reason
    assert same.evidence["ref_exact"] is None  # the exact layer refused
    assert same.evidence["wl_isomorphism"] == "found"  # equal WL hashes alone do not decide (two triangles, a hexagon)
    miss = compare_models(ref, bench.scaled_near_miss(ref, np.random.default_rng(1)).to_mps())
    assert not miss.equivalent


def test_split_columns_merge_whatever_their_units() -> None:
    """x = x+ - x- where x- is written in other units (thousandths): the columns are negatives up to a factor, and
    the merge must see that, or a flow network with a 2-cycle canonicalises differently once one arc is rescaled
    (found on bench/equivalence.py's large max_flow models: 6 of 106 pairs missed)."""
    from solvers.ir import Constraint, Model, Objective, Variable

    def model(k: float) -> Model:
        v = (Variable(name="p", group="p", ub=8.0), Variable(name="q", group="q", ub=14.0 * k),
             Variable(name="a", group="a", ub=20.0), Variable(name="b", group="b", ub=20.0))
        c = (Constraint(name="n1", group="n", terms=(("p", 1.0), ("q", -1.0 / k), ("a", 1.0)), sense="==", rhs=5.0),
             Constraint(name="n2", group="n", terms=(("p", -1.0), ("q", 1.0 / k), ("b", 1.0)), sense="==", rhs=3.0),
             Constraint(name="cap", group="c", terms=(("a", 1.0), ("b", 2.0)), sense="<=", rhs=30.0))
        return Model(name="cycle", variables=v, constraints=c,
                     objective=Objective(sense="minimize", terms=(("a", 3.0), ("b", 1.0))))

    same, scaled = canonicalize(from_ir(model(1.0)), reformulate=True), canonicalize(from_ir(model(1000.0)),
                                                                                     reformulate=True)
    assert same.model.n_vars == scaled.model.n_vars == 3  # p and q merged into one net flow in both
    assert exact_hash(same) == exact_hash(scaled)
    assert compare_models(model(1.0), model(1000.0).to_mps()).layer == "exact"


def test_float_noise_at_zero_is_zero() -> None:
    """A row side of -3e-12 where the other model has 0 (left by substituting a defined variable out, as in a large
    blending model of the large-model slice) is the same model: no 9- or 7-digit rounding can make it 0, so the
    labels read any number below 1e-10 in magnitude (after unit row scaling) as 0."""
    from solvers.ir import Constraint, Model, Objective, Variable

    def model(side: float) -> Model:
        return Model(name="m", variables=(Variable(name="x", group="x", ub=5.0), Variable(name="y", group="y")),
                     constraints=(Constraint(name="r", group="r", terms=(("x", 2.0), ("y", -1.0)), sense=">=",
                                             rhs=side),),
                     objective=Objective(sense="maximize", terms=(("x", 1.0), ("y", 1.0))))

    assert exact_hash(canonicalize(from_ir(model(0.0)))) == exact_hash(canonicalize(from_ir(model(-3e-12))))
    assert wl_hash(canonicalize(from_ir(model(0.0)))) == wl_hash(canonicalize(from_ir(model(-3e-12))))
    assert exact_hash(canonicalize(from_ir(model(0.0)))) != exact_hash(canonicalize(from_ir(model(-3e-6))))


def test_a_row_that_reads_the_same_negated_is_oriented_by_its_columns() -> None:
    """x1 + x2 - x3 - x4 = 0 (a flow balance) has the same sorted coefficients and sides as its negation, so its
    sign comes from its columns' colours. x1, x2 share one colour and x3, x4 another: the rule that looked only at
    the smallest colour found two columns there and kept the program's sign, so a program that wrote the balance as
    x3 + x4 - x1 - x2 = 0 hashed differently (a network_capacity_design pair of the held-out bench)."""
    from solvers.ir import Constraint, Model, Objective, Variable

    def model(sign: float) -> Model:
        # integer columns: the column scaling leaves them as written, so the row stays +-1 (a tie)
        v = tuple(Variable(name=f"x{k}", group="x", ub=10.0, vtype="integer") for k in range(1, 5))
        balance = Constraint(name="b", group="b", terms=tuple((f"x{k}", sign * (1.0 if k < 3 else -1.0))
                                                             for k in range(1, 5)), sense="==", rhs=0.0)
        need = Constraint(name="n", group="n", terms=(("x1", 1.0), ("x2", 1.0)), sense=">=", rhs=3.0)
        return Model(name="m", variables=v, constraints=(balance, need),
                     objective=Objective(sense="minimize", terms=(("x1", 1.0), ("x2", 1.0), ("x3", 2.0),
                                                                  ("x4", 2.0))))

    a, b = canonicalize(from_ir(model(1.0))), canonicalize(from_ir(model(-1.0)))
    assert exact_hash(a) == exact_hash(b) and wl_hash(a) == wl_hash(b)
    assert compare_models(model(1.0), model(-1.0).to_mps()).layer == "exact"


def test_a_weakly_anchored_large_model_and_its_rescaled_copy_are_equal() -> None:
    """The large-model slice's last miss: a 3,005-column production plan whose scaling problem has a direction pinned
    by little (eigenvalue ~1e-7 of A'A), where the ridge term's pull left a model and its rescaled copy equal only to
    6 digits. The sparse solve's proximal refinement removes the pull."""
    ref = bench.tiled("production_planning", 100)
    name = "scaled_variables"
    cand = bench.HELD_OUT_EQUIVALENT[name](ref, np.random.default_rng([1, len(name)]))
    res = compare_models(ref, cand.to_mps())
    assert res.equivalent and res.layer == "wl", res.reason


def test_presolve_runs_to_its_fixpoint_on_a_large_split_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiled max-flow plan (~2,700 columns) substitutes its defined flows a few per pass; a copy with two
    variables split needs two passes more than the reference (20 against 18 now that slack chains fold in one pass;
    22 against 20 before). Under a pass cap the reference just meets, the copy keeps a one-variable row that the
    reference turned into a bound, and the pair hashes apart (the large slice's max_flow seed-1 miss under the old
    cap of 20)."""
    import contracts.equivalence.canonical as can

    ref = bench.tiled("max_flow", 100)
    name = "split_then_reordered"
    cand = bench.HELD_OUT_EQUIVALENT[name](ref, np.random.default_rng([1, len(name)])).to_mps()
    res = compare_models(ref, cand)
    assert res.equivalent and res.layer == "exact", res.reason
    monkeypatch.setattr(can, "_MAX_PASSES", 18)
    assert compare_models(ref, cand, layers=("exact",)).equivalent is False  # the pair does need the passes


@pytest.mark.parametrize("seed, name", [(0, "scaled_variables"), (1, "scaled_vars_with_slacks")])
def test_a_cost_cancelled_by_a_substitution_vanishes_in_any_units(seed: int, name: str) -> None:
    """A tiled min-cost-flow plan whose defined flows are substituted: one arc's cost cancels. In the reference it
    cancelled to 0, in the copy counted in other units to 1.8e-12, which an absolute 1e-12 threshold kept, and the
    column scaling then treated the arc as costed (the large slice's two min_cost_flow misses)."""
    ref = bench.tiled("min_cost_flow", 100 * seed)
    cand = bench.HELD_OUT_EQUIVALENT[name](ref, np.random.default_rng([seed, len(name)]))
    res = compare_models(ref, cand.to_mps())
    assert res.equivalent and res.layer == "exact", res.reason


def test_a_model_presolved_to_bounds_alone_still_scales_its_columns() -> None:
    """Presolve can leave no row (a small flow plan whose balances all substitute away): the column scaling used to
    stop there, so x in [0, 15] at cost 5 and the same x counted in sixtieths, [0, 0.25] at cost 300, hashed apart.
    An integer column keeps its units."""
    from contracts.equivalence.stdform import StdModel

    def one(lb: float, ub: float, cost: float, integer: bool = False) -> str | None:
        return exact_hash(canonicalize(StdModel(["x"], [integer], [lb], [ub], [], [], [], {0: cost})))

    assert one(0.0, 15.0, 5.0) == one(0.0, 0.25, 300.0)
    assert one(0.0, 15.0, 5.0) != one(0.0, 15.0, 4.0)  # not the same model: its optimum is -60 against -75
    assert one(0.0, 15.0, 5.0, integer=True) != one(0.0, 3.0, 25.0, integer=True)


@pytest.mark.parametrize("family", ["blending", "min_cost_flow"])
def test_scaled_and_reordered_copies_of_models_that_presolve_away_are_equal(family: str) -> None:
    """The with-test-kinds slice's last two misses: seed 3 of each reduces to one or two costed columns."""
    name = "scaled_vars_rows_reordered"
    ref = generate_problem(family, 3, difficulty=1).ir
    cand = bench.HELD_OUT_EQUIVALENT[name](ref, np.random.default_rng([3, len(name)]))
    res = compare_models(ref, cand.to_mps())
    assert res.equivalent and res.layer == "exact", res.reason


def test_a_long_chain_of_cost_free_flows_folds_away_in_one_pass() -> None:
    """x0 -> x1 -> ... -> x1499 with a cost on x0 only: the tail is a slack of its row, the row is then a bound on
    the next column, which is a slack in turn. Presolve folds the whole chain into x0's bound; it used to fold one
    link per two passes, so its pass cap left a long chain half done (and a 1,000-link chain took 11 s)."""
    from contracts.equivalence.stdform import INF, StdModel

    n = 1500
    rng = np.random.default_rng(0)
    loss, ub, rhs = rng.uniform(1.1, 1.9, n), rng.integers(10, 99, n), rng.integers(1, 50, n)

    def chain(s: float) -> StdModel:
        return StdModel([f"x{i}" for i in range(n)], [False] * n, [0.0] * n, [float(u) for u in ub],
                        [{i: float(loss[i] * s), i + 1: -s} for i in range(n - 1)], [-INF] * (n - 1),
                        [float(rhs[i] * s) for i in range(n - 1)], {0: -3.7})

    c = canonicalize(chain(1.0))
    assert (c.model.n_vars, c.model.n_rows) == (1, 0)
    # x0's bound: min(ub0, (rhs0 + ub1') / loss0) where ub1' is x1's bound after the chain behind it folded
    bound = float(ub[-1])
    for i in range(n - 2, -1, -1):
        bound = min(float(ub[i]), (float(rhs[i]) + bound) / float(loss[i]))
    assert canonicalize(chain(1.0), scale_columns=False).model.ub[0] == pytest.approx(bound, rel=1e-12)
    assert exact_hash(c) == exact_hash(canonicalize(chain(3.0)))


def _loss_chain(n: int, seed: int, scaled: bool):  # noqa: ANN202 - a StdModel
    """Flows x_0 -> x_1 -> ... -> x_0 with loss factors and one cost at the head: a scaling direction that only the
    far end of the chain anchors. ``scaled`` multiplies every row by 0.5, 2, 3 or 7 (the same model). The chain is
    closed into a ring: an open chain's cost-free tail sits in one row only, so presolve folds it into that row as a
    slack, then the next, until one column is left (it did so only partly while presolve stopped after 20 passes)."""
    from contracts.equivalence.stdform import INF, StdModel

    rng = np.random.default_rng(seed)
    loss, ub, rhs = rng.uniform(1.1, 1.9, n), rng.integers(10, 99, n), rng.integers(1, 50, n)
    s = rng.choice([0.5, 2.0, 3.0, 7.0], n) if scaled else np.ones(n)
    return StdModel([f"x{i}" for i in range(n)], [False] * n, [0.0] * n, [float(u) for u in ub],
                    [{i: float(loss[i] * s[i]), (i + 1) % n: float(-s[i])} for i in range(n)], [-INF] * n,
                    [float(rhs[i] * s[i]) for i in range(n)], {0: -3.7})


def test_a_weakly_anchored_small_model_and_its_row_scaled_copy_hash_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same pull on the dense path (small models): the ridge term is not invariant under row scaling, so in a
    weakly anchored direction it moved a model and its row-scaled copy 1e-11 to 1e-5 apart, and 9-digit labels split
    them (34 of 5,200 shuffled generator copies: bench/structural_hash.py). With the refinement every chain hashes
    equal; without it (hasher contracts-3) 17 of these 24 rings do not, so the test can see it."""
    import contracts.equivalence.canonical as can

    def misses() -> int:
        return sum(exact_hash(canonicalize(_loss_chain(n, seed, False)))
                   != exact_hash(canonicalize(_loss_chain(n, seed, True)))
                   for n in (10, 30, 60) for seed in range(8))

    assert misses() == 0
    monkeypatch.setattr(can, "_REFINE_STEPS", 0)
    assert misses() > 0  # the chains do exercise the pull


def test_parallel_continuous_columns_merge_into_one() -> None:
    """x + 2 x' (same rows, cost in the same ratio) is one column over the sum of the ranges; with other costs, or
    for integer columns, the two stay apart."""
    from contracts.equivalence.stdform import INF, StdModel

    def model(cols: list[tuple[float, float, float, float]], integer: bool = False) -> StdModel:
        # columns (scale, lb, ub, cost) in rows y + s x <= 10 and y - s x >= -4, y integer in [0, 5] costing 1
        n = len(cols) + 1
        rows = [{0: 1.0, **{k + 1: c[0] for k, c in enumerate(cols)}}, {0: 1.0, **{k + 1: -c[0] for k, c in enumerate(cols)}}]
        return StdModel([f"v{k}" for k in range(n)], [True] + [integer] * len(cols), [0.0] + [c[1] for c in cols],
                        [5.0] + [c[2] for c in cols], rows, [-INF, -4.0], [10.0, INF],
                        {0: 1.0, **{k + 1: c[3] for k, c in enumerate(cols)}})

    def h(m: StdModel) -> str | None:
        return exact_hash(canonicalize(m, reformulate=True))

    one = h(model([(1.0, 1.0, 7.0, -3.0)]))  # x in [1, 3] plus 2 x' with x' in [0, 2]: one column in [1, 7]
    assert h(model([(1.0, 1.0, 3.0, -3.0), (2.0, 0.0, 2.0, -6.0)])) == one
    assert h(model([(1.0, 1.0, 3.0, -3.0), (2.0, 0.0, 2.0, -5.0)])) != one  # x' costs less: not one column
    assert h(model([(1.0, 1.0, 3.0, -3.0), (1.0, 0.0, 4.0, -3.0)], integer=True)) != \
        h(model([(1.0, 1.0, 7.0, -3.0)], integer=True))  # integer columns stay apart


@pytest.mark.parametrize("kind", ["split_then_reordered", "shifted_variables"])
def test_an_orienteering_order_difference_survives_a_split_and_a_shift(kind: str) -> None:
    """The bench's last two misses (generator v2): the tour-order difference between two stops sits between two
    visit binaries of one pattern. Split, the merge kept x- and left a column parallel to its partner; shifted, its
    direction came from the range's lean (not shift-invariant) because the sign-only colours could not tell the two
    visits apart. Their prizes (integer costs) do."""
    ref = generate_problem("orienteering", 0, difficulty=1).ir
    cand = bench.HELD_OUT_EQUIVALENT[kind](ref, np.random.default_rng([0, len(kind)]))
    res = compare_models(ref, cand.to_mps())
    assert res.equivalent and res.layer == "exact", res.reason


@pytest.mark.parametrize("family, kind", [("production_planning", "shifted_variables"),
                                          ("blending", "shifted_variables"),
                                          ("facility_location", "complemented_binaries"),
                                          ("capital_budgeting", "complemented_binaries")])
def test_a_change_of_origin_or_direction_is_undone_by_the_exact_layer(family: str, kind: str) -> None:
    """x = x' + s (counted above a minimum) and y = 1 - y' (a site closed instead of open) are the same model: the
    canonical form counts each column with a cost from the end that makes the cost positive, and a one-sided column
    from its bound. Before, every such pair went to the semantic layer, which maps solutions by variable and missed
    them (shifted copies: 5 of 92 equal)."""
    ir = generate_problem(family, 1, difficulty=2).ir
    cand = bench.HELD_OUT_EQUIVALENT[kind](ir, np.random.default_rng(3))
    assert cand is not None
    res = compare_models(ir, cand.to_mps())
    assert res.equivalent and res.layer == "exact", res.reason


def test_a_shift_forgotten_in_one_row_is_a_different_model() -> None:
    ir = generate_problem("production_planning", 1, difficulty=2).ir
    miss = bench.shifted_near_miss(ir, np.random.default_rng(3))
    assert not compare_models(ir, miss.to_mps()).equivalent


def _substituted(m: Model, moves: dict[str, tuple[float, float]]) -> Model:
    """The same model with x = s + sigma x' for each named column (``moves``: name -> (s, sigma)): x' gets the
    bounds (lb - s) / sigma .. (ub - s) / sigma, every row and the objective take sigma a and move a s to the side."""
    def bound(v: Variable, b: float | None) -> float | None:
        return None if b is None else (b - moves[v.name][0]) / moves[v.name][1]

    variables = []
    for v in m.variables:
        if v.name in moves:
            lo, hi = bound(v, v.lb), bound(v, v.ub)
            lo, hi = (lo, hi) if moves[v.name][1] > 0 else (hi, lo)
            v = v.model_copy(update={"name": v.name + "_p", "lb": lo, "ub": hi})
        variables.append(v)

    def terms(ts: tuple) -> tuple:
        return tuple((n + "_p", a * moves[n][1]) if n in moves else (n, a) for n, a in ts)

    def shift(ts: tuple) -> float:
        return sum(a * moves[n][0] for n, a in ts if n in moves)

    cons = tuple(c.model_copy(update={"terms": terms(c.terms), "rhs": c.rhs - shift(c.terms)}) for c in m.constraints)
    o = m.objective
    obj = o.model_copy(update={"terms": terms(o.terms), "constant": o.constant + shift(o.terms)})
    return m.model_copy(update={"variables": tuple(variables), "constraints": cons, "objective": obj})


def _battery(hours: int = 3) -> Model:
    """Charge c_t, discharge d_t >= 0 (costed), a storage level s_t in [0, 10] and a mode switch y_t (cost-free):
    s_t = s_{t-1} + 0.9 c_t - d_t / 0.9 from s_0 = 5 (only the first balance row has a side), c_t <= 5 y_t,
    d_t <= 5 (1 - y_t). The rows of s_2.. and of every y_t name no direction by their sides."""
    price = [3.0, 7.0, 4.0, 9.0, 2.0][:hours]
    v, cons, obj = [], [], []
    for t in range(hours):
        v += [Variable(name=f"c{t}", group="c"), Variable(name=f"d{t}", group="d"),
              Variable(name=f"s{t}", group="s", ub=10.0), Variable(name=f"y{t}", group="y", ub=1.0, vtype="binary")]
        prev = ((f"s{t - 1}", -1.0),) if t else ()
        cons += [Constraint(name=f"bal{t}", group="bal", terms=((f"s{t}", 1.0), *prev, (f"c{t}", -0.9),
                                                                  (f"d{t}", 1 / 0.9)), sense="==",
                            rhs=5.0 if t == 0 else 0.0),
                 Constraint(name=f"ch{t}", group="ch", terms=((f"c{t}", 1.0), (f"y{t}", -5.0)), sense="<=", rhs=0.0),
                 Constraint(name=f"dis{t}", group="dis", terms=((f"d{t}", 1.0), (f"y{t}", 5.0)), sense="<=",
                            rhs=5.0)]
        obj += [(f"c{t}", price[t]), (f"d{t}", -price[t])]
    return Model(name="battery", variables=tuple(v), constraints=tuple(cons),
                 objective=Objective(sense="minimize", terms=tuple(obj)))


def _mtz_orders() -> Model:
    """Visiting order u_i in [1, 3] (cost-free) with u_i - u_j + 3 x_ij <= 2 over arcs x_ij (costed): every u
    appears with +1 and -1 alike, so neither its rows' sides nor its neighbours' signs name a direction."""
    nodes = (1, 2, 3)
    v = [Variable(name=f"u{i}", group="u", lb=1.0, ub=3.0) for i in nodes]
    v += [Variable(name=f"x{i}{j}", group="x", ub=1.0, vtype="binary") for i in nodes for j in nodes if i != j]
    cons = [Constraint(name=f"mtz{i}{j}", group="mtz", terms=((f"u{i}", 1.0), (f"u{j}", -1.0), (f"x{i}{j}", 3.0)),
                       sense="<=", rhs=2.0) for i in nodes for j in nodes if i != j]
    cons += [Constraint(name=f"out{i}", group="out", terms=tuple((f"x{i}{j}", 1.0) for j in nodes if j != i),
                        sense="==", rhs=1.0) for i in nodes]
    cost = {(i, j): float(3 * i + 2 * j + (i * j) % 4) for i in nodes for j in nodes if i != j}
    return Model(name="mtz", variables=tuple(v), constraints=tuple(cons),
                 objective=Objective(sense="minimize", terms=tuple((f"x{i}{j}", c) for (i, j), c in cost.items())))


@pytest.mark.parametrize("build, moves", [
    # storage levels shifted and mirrored: s2 from the balance rows beside it (s1, c, d), s1 from the first side
    (_battery, {"s1": (7.0, 1.0), "s2": (10.0, -1.0)}),
    # mode switches complemented (y' = 1 - y: "discharging" instead of "charging"): -1 beside c, +1 beside d
    (_battery, {"y0": (1.0, -1.0), "y2": (1.0, -1.0)}),
    # ... with the charge in other units too (x = 60 x'): the neighbours' colours must not read coefficient sizes
    (_battery, {"y0": (1.0, -1.0), "c0": (0.0, 60.0), "d1": (0.0, 0.001), "s2": (10.0, -1.0)}),
    # a visiting order counted from 32 ([-31, -29]): its range now leans negative, [1, 3] did not
    (_mtz_orders, {"u1": (32.0, 1.0)}),
])
def test_cost_free_columns_whose_rows_name_no_direction(build, moves) -> None:  # noqa: ANN001
    """The held-out bench's 13 last misses (battery, storage, routing order): a cost-free two-sided column whose
    rows' sides give no direction took it from the way the program wrote it (and from whether its range leaned
    negative), so a shifted or complemented copy hashed differently."""
    ref = build()
    cand = _substituted(ref, moves)
    a, b = canonicalize(from_ir(ref), reformulate=True), canonicalize(read_mps(cand.to_mps()), reformulate=True)
    assert exact_hash(a) == exact_hash(b)
    res = compare_models(ref, cand.to_mps())
    assert res.equivalent and res.layer == "exact", res.reason


@pytest.mark.parametrize("dense_max", [1500, 0])
def test_the_column_scaling_solves_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch, dense_max: int) -> None:
    """OpenBLAS's threads spinning for cores that other work holds made a small SVD ~300x slower on a loaded 2-core
    machine (2.3 s vs 6 ms); one thread also keeps the last bits, and so the hashes, the same on any core count.
    Both paths: the dense SVD (numpy's OpenBLAS) and the sparse SuperLU (scipy's own)."""
    from threadpoolctl import threadpool_info

    import contracts.equivalence.canonical as canonical

    seen: list[list[int]] = []
    solve = canonical._log_scale_solve_1

    def spy(*args):  # noqa: ANN002, ANN202
        blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
        # the dense path runs on numpy's OpenBLAS (scipy's, loaded by other tests, is not used there)
        used = [i for i in blas if "numpy" in i["filepath"]] if dense_max else blas
        seen.append([i["num_threads"] for i in used or blas])
        return solve(*args)

    monkeypatch.setattr(canonical, "_log_scale_solve_1", spy)
    monkeypatch.setattr(canonical, "DENSE_SCALE_MAX", dense_max)
    ir = generate_problem("production_planning", 3, 2).ir
    assert exact_hash(canonicalize(from_ir(ir))) is not None
    assert seen and all(threads and set(threads) == {1} for threads in seen)
