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


@pytest.mark.parametrize("family", family_names())
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
