"""The equitable partition behind the exact and WL hashes (``contracts/equivalence/partition.py``): the same stable
partition as synchronous colour refinement (the former implementation, kept as ``refine``, is the oracle here),
colours and certificate that no renaming or reordering changes, a certificate that sees what the partition's shape
does not, and work that grows as m log n on the chains that took synchronous rounds minutes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from contracts.equivalence import from_ir
from contracts.equivalence.canonical import (
    canonicalize,
    discrete,
    equitable,
    exact_hash,
    initial_colours,
    refine,
    wl_hash,
)
from contracts.equivalence.stdform import INF, StdModel
from flywheel.generators.base import family_names, generate_problem


def _blocks(colours: list) -> set[frozenset[int]]:
    by: dict = {}
    for v, c in enumerate(colours):
        by.setdefault(c, set()).add(v)
    return {frozenset(b) for b in by.values()}


def _random_model(seed: int, n: int = 30, m: int = 20) -> StdModel:
    """Sparse rows over few distinct coefficients and bounds (so refinement has ties to split), some quadratic
    terms including squares: the graph shapes canonical.py feeds the partition."""
    rng = np.random.default_rng(seed)
    rows = [{int(j): float(rng.choice([1.0, 2.0, -1.0])) for j in rng.choice(n, rng.integers(1, 5), replace=False)}
            for _ in range(m)]
    quad = {}
    for _ in range(rng.integers(0, 6)):
        a, b = sorted(int(x) for x in rng.choice(n, 2))
        quad[(a, b)] = float(rng.choice([1.0, 3.0]))
    return StdModel([f"x{j}" for j in range(n)], [bool(rng.integers(2)) for _ in range(n)], [0.0] * n,
                    [float(rng.choice([1.0, 5.0])) for _ in range(n)], rows, [-INF] * m,
                    [float(rng.choice([4.0, 6.0])) for _ in range(m)],
                    {int(j): 1.0 for j in rng.choice(n, 3, replace=False)}, quad=quad)


def _shuffled(mod: StdModel, seed: int) -> tuple[StdModel, list[int], list[int]]:
    """A copy with columns and rows permuted: column j of ``mod`` is column ``pc[j]`` of the copy, row i is ``pr[i]``."""
    rng = np.random.default_rng(seed)
    pc, pr = [int(x) for x in rng.permutation(mod.n_vars)], [int(x) for x in rng.permutation(mod.n_rows)]
    inv_c, inv_r = np.argsort(pc), np.argsort(pr)
    c = StdModel([mod.names[j] for j in inv_c], [mod.integer[j] for j in inv_c], [mod.lb[j] for j in inv_c],
                 [mod.ub[j] for j in inv_c], [{pc[j]: a for j, a in mod.rows[i].items()} for i in inv_r],
                 [mod.lo[i] for i in inv_r], [mod.hi[i] for i in inv_r], {pc[j]: a for j, a in mod.obj.items()},
                 quad={tuple(sorted((pc[a], pc[b]))): q for (a, b), q in mod.quad.items()})
    return c, pc, pr


_GENERATED = [from_ir(generate_problem(f, 0, 2).ir) for f in family_names()[::4]]


@pytest.mark.parametrize("mod", [_random_model(s) for s in range(12)] + _GENERATED,
                         ids=[f"random{s}" for s in range(12)] + family_names()[::4])
def test_the_partition_is_the_stable_partition_of_synchronous_refinement(mod: StdModel) -> None:
    var, row = refine(mod, *initial_colours(mod))
    e_var, e_row = equitable(mod, *initial_colours(mod)).colours()
    assert _blocks(e_var) == _blocks(var)
    assert _blocks(e_row) == _blocks(row)


@pytest.mark.parametrize("seed", range(6))
def test_colours_and_certificate_follow_a_renaming_and_reordering(seed: int) -> None:
    mod = _random_model(100 + seed)
    copy, pc, pr = _shuffled(mod, seed)
    a, b = equitable(mod, *initial_colours(mod)), equitable(copy, *initial_colours(copy))
    (av, ar), (bv, br) = a.colours(), b.colours()
    assert a.certificate == b.certificate
    assert [bv[pc[j]] for j in range(mod.n_vars)] == av  # the same canonical cell, not only the same blocks
    assert [br[pr[i]] for i in range(mod.n_rows)] == ar
    assert exact_hash(canonicalize(mod)) == exact_hash(canonicalize(copy))
    assert wl_hash(canonicalize(mod)) == wl_hash(canonicalize(copy))


def _regular(per_row: int) -> StdModel:
    """6 columns, 6 rows, row i holds columns i..i+per_row-1 (cyclically): every column in ``per_row`` rows, so the
    initial partition is already equitable and nothing ever splits."""
    rows = [{(i + k) % 6: 1.0 for k in range(per_row)} for i in range(6)]
    return StdModel([f"x{j}" for j in range(6)], [False] * 6, [0.0] * 6, [1.0] * 6, rows, [-INF] * 6, [2.0] * 6, {})


def test_the_certificate_sees_the_quotient_where_nothing_splits() -> None:
    a, b = equitable(_regular(2), *initial_colours(_regular(2))), equitable(_regular(3), *initial_colours(_regular(3)))
    assert _blocks(a.colours()[0]) == _blocks(b.colours()[0]) == {frozenset(range(6))}
    assert a.certificate != b.certificate
    # and a coefficient the partition does not depend on
    c = _regular(2)
    c.rows = [{j: 2.0 for j in row} for row in c.rows]
    assert equitable(c, *initial_colours(c)).certificate != a.certificate


def _chain(n: int, end_cost: float) -> StdModel:
    """x0 - x1 - ... - x(n-1), every link the same row, costs at both ends only: synchronous refinement needs ~n/2
    rounds (each end's difference travels one link per round); presolve has no slack to fold."""
    return StdModel([f"x{i}" for i in range(n)], [False] * n, [0.0] * n, [100.0] * n,
                    [{i: 1.0, i + 1: 1.0} for i in range(n - 1)], [-INF] * (n - 1), [5.0] * (n - 1),
                    {0: -3.7, n - 1: end_cost})


@pytest.mark.parametrize(("end_cost", "cells"), [(2.1, 200), (-3.7, 100)])
def test_a_chain_splits_from_its_ends_as_synchronous_refinement_does(end_cost: float, cells: int) -> None:
    """Different end costs: every column its own cell; equal ones: the chain folds onto itself (x_i ~ x_(n-1-i))."""
    mod = _chain(200, end_cost)
    var, _ = refine(mod, *initial_colours(mod))
    e_var, _ = equitable(mod, *initial_colours(mod)).colours()
    assert len(set(e_var)) == cells
    assert _blocks(e_var) == _blocks(var)


@pytest.mark.parametrize("n", [1000, 8000])
def test_refinement_work_grows_as_m_log_n_on_a_chain(n: int) -> None:
    """Synchronous rounds read all m adjacency entries ~n/2 times (m n / 2: 16M at n = 8,000); splitting by one
    cell at a time reads each vertex's entries O(log n) times. The bound 2 m log2 n is the algorithm's, with room."""
    mod = _chain(n, 2.1)
    e = equitable(mod, *initial_colours(mod))
    m = 2 * sum(len(r) for r in mod.rows)  # adjacency entries, both directions
    assert len(set(e.colours()[0])) == n
    assert e.work <= 2 * m * math.log2(n)


def test_an_identical_items_model_is_ordered_in_near_linear_work() -> None:
    """2,000 interchangeable binaries in one row: exact_hash individualises 1,999 of them. Each step splits one
    column off and reads its one row, so the total stays near m (synchronous refinement re-read the whole model
    after each one: ~2,000 x m)."""
    n = 2000
    mod = StdModel([f"x{i}" for i in range(n)], [True] * n, [0.0] * n, [1.0] * n, [{i: 3.0 for i in range(n)}],
                   [-INF], [float(n)], {i: -1.0 for i in range(n)})
    copy, _, _ = _shuffled(mod, 0)
    c1, c2 = canonicalize(mod), canonicalize(copy)
    e = discrete(c1.model)
    assert len(set(e.colours()[0])) == n
    assert e.work <= 4 * 2 * n
    assert exact_hash(c1) == exact_hash(c2) is not None


def _cycles(edges: list[tuple[int, int]], n: int) -> StdModel:
    """Max sum x over binaries with x_a + x_b <= 1 per edge: every column in two rows, every row two columns."""
    return StdModel([f"x{i}" for i in range(n)], [True] * n, [0.0] * n, [1.0] * n,
                    [{a: 1.0, b: 1.0} for a, b in edges], [-INF] * len(edges), [1.0] * len(edges),
                    {i: -1.0 for i in range(n)})


_HEXAGON = [(i, (i + 1) % 6) for i in range(6)]
_TRIANGLES = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]


def test_two_triangles_are_not_a_hexagon_though_their_wl_hashes_agree() -> None:
    """Colour refinement cannot tell them apart (every vertex has two neighbours of its one colour), but their optima
    differ (3 vs 2 independent vertices): equal WL hashes used to decide "equivalent" on their own."""
    from contracts.equivalence import compare_models
    from contracts.equivalence.canonical import isomorphic

    hexagon, triangles = _cycles(_HEXAGON, 6), _cycles(_TRIANGLES, 6)
    a, b = canonicalize(hexagon, reformulate=True), canonicalize(triangles, reformulate=True)
    assert wl_hash(a) == wl_hash(b)
    assert isomorphic(a, b) is False
    res = compare_models(hexagon, triangles)
    assert not res.equivalent and res.layer == "semantic" and res.evidence["wl_isomorphism"] == "none exists"
    assert not compare_models(hexagon, triangles, layers=("exact", "wl")).equivalent


def test_a_copy_whose_first_column_lies_elsewhere_is_found_by_the_search() -> None:
    """A hexagon beside two triangles (12 columns, one stable cell). exact_hash individualises the first column by
    index: in the model a hexagon vertex, in the copy (triangles renumbered first) a triangle vertex, so the two
    orders differ and the exact layer misses; the search tries the copy's other columns and finds the isomorphism."""
    from contracts.equivalence import compare_models
    from contracts.equivalence.canonical import isomorphic

    model = _cycles(_HEXAGON + [(a + 6, b + 6) for a, b in _TRIANGLES], 12)
    copy = _cycles(_TRIANGLES + [(a + 6, b + 6) for a, b in _HEXAGON], 12)
    a, b = canonicalize(model, reformulate=True), canonicalize(copy, reformulate=True)
    assert exact_hash(a) != exact_hash(b)
    assert isomorphic(a, b) is True
    assert isomorphic(a, b, budget=10) is None  # a spent budget is "unknown", never a verdict
    res = compare_models(model, copy, layers=("exact", "wl"))
    assert res.equivalent and res.layer == "wl" and res.evidence["wl_isomorphism"] == "found"
