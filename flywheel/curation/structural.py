"""Structural identity of optimisation models: a hash that ignores names, order, row scaling and objective sense.

Two samples whose text differs completely can still be the same model (a benchmark item re-told as a different
story, or the same instance generated twice). This hash finds them. It is computed on a plain linear form that both
the IR and MPS text (what a program's solver call captured) reduce to, so a model built by a program and the IR it
was meant to build hash the same.

Canonical form, before hashing:
- every row is scaled so its largest |coefficient| is 1; a ``>=`` row is negated into a ``<=`` row; an ``==`` row
  gets the sign that makes its sorted coefficient vector lexicographically largest;
- a maximisation becomes a minimisation of the negated objective; integer variables with bounds [0, 1] are binary;
- numbers are compared at 10 significant digits, so an MPS round trip (which prints shortest-repr floats) and
  row scaling by non-powers of two cannot change the hash.

Names and order are removed by colour refinement (Weisfeiler-Lehman) on the bipartite variable-constraint graph with
coefficients on the edges: three rounds, then the sorted multisets of colours are hashed. Isomorphic models always
hash equal; non-isomorphic models that colour refinement cannot tell apart (rare, highly symmetric ones) collide, a
false positive that dedup then treats as one model.

Which hasher runs: the contracts stage's canonical form (``contracts.equivalence``: the same invariances plus a
presolve that also removes slack columns, singleton rows and split equalities) when it is importable, because the
contract that judges "same model" and the dedup that clusters by it should agree; this module's own form otherwise.
Both are registered in ``HASHERS``; ``structural_hash(model, hasher=...)`` picks one explicitly.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import dataclass, field

from solvers.errors import ModelError, unknown_name
from solvers.ir import ConSense, Model, ObjSense, VarType

WL_ROUNDS = 3
_INF = 1e30  # HiGHS and MPS use 1e30 (or inf) for "no bound"


@dataclass
class LinearForm:
    """A model as numbers only: what survives when names are dropped."""

    minimize: bool
    obj: list[float]
    vtype: list[str]  # "C" | "I" | "B"
    lb: list[float | None]
    ub: list[float | None]
    rows: list[tuple[dict[int, float], str, float]] = field(default_factory=list)  # (coefs, "<=" | "==", rhs)
    quad: list[tuple[int, int, float]] = field(default_factory=list)  # coef * x_i * x_j of the objective
    constant: float = 0.0


def _num(x: float | None) -> str:
    if x is None or abs(x) >= _INF:
        return "inf" if x is not None and x > 0 else ("-inf" if x is not None else "none")
    return f"{x + 0.0:.10g}"  # + 0.0 turns -0.0 into 0.0


def _h(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


def from_model(model: Model) -> LinearForm:
    """The linear form of an IR model."""
    index = {v.name: i for i, v in enumerate(model.variables)}
    obj = [0.0] * len(model.variables)
    for name, coef in model.objective.terms:
        obj[index[name]] += coef
    vtype = [{VarType.CONTINUOUS: "C", VarType.INTEGER: "I", VarType.BINARY: "B"}[v.vtype] for v in model.variables]
    form = LinearForm(
        minimize=model.objective.sense == ObjSense.MINIMIZE,
        obj=obj,
        vtype=vtype,
        lb=[v.lb for v in model.variables],
        ub=[v.ub for v in model.variables],
        quad=[(index[a], index[b], c) for a, b, c in model.objective.quadratic],
        constant=model.objective.constant,
    )
    for c in model.constraints:
        coefs: dict[int, float] = {}
        for name, coef in c.terms:
            coefs[index[name]] = coefs.get(index[name], 0.0) + coef
        sense = {ConSense.LE: "<=", ConSense.GE: ">=", ConSense.EQ: "=="}[c.sense]
        form.rows.append((coefs, sense, c.rhs))
    return form


def from_mps(mps_text: str) -> LinearForm:
    """The linear form of a model given as MPS text (read by HiGHS)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    fd, path = tempfile.mkstemp(suffix=".mps")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(mps_text)
        if h.readModel(path) != highspy.HighsStatus.kOk:
            raise ModelError("HiGHS cannot read this MPS text", culprit="model_mps")
    finally:
        os.unlink(path)
    lp = h.getLp()
    n = lp.num_col_
    integrality = list(lp.integrality_) if len(lp.integrality_) else [highspy.HighsVarType.kContinuous] * n
    vtype = ["C" if t == highspy.HighsVarType.kContinuous else "I" for t in integrality]
    bound = [(lo if lo > -_INF else None) for lo in lp.col_lower_], [(up if up < _INF else None) for up in lp.col_upper_]
    form = LinearForm(
        minimize=lp.sense_ == highspy.ObjSense.kMinimize,
        obj=list(lp.col_cost_),
        vtype=vtype,
        lb=bound[0],
        ub=bound[1],
        constant=lp.offset_,
    )
    a = lp.a_matrix_
    rows: list[dict[int, float]] = [{} for _ in range(lp.num_row_)]
    if a.format_ == highspy.MatrixFormat.kColwise:
        for j in range(n):
            for k in range(a.start_[j], a.start_[j + 1]):
                rows[a.index_[k]][j] = a.value_[k]
    else:
        for i in range(lp.num_row_):
            for k in range(a.start_[i], a.start_[i + 1]):
                rows[i][a.index_[k]] = a.value_[k]
    for i, coefs in enumerate(rows):
        lo, up = lp.row_lower_[i], lp.row_upper_[i]
        if lo > -_INF and up < _INF and math.isclose(lo, up, rel_tol=0, abs_tol=0):
            form.rows.append((coefs, "==", up))
            continue
        if up < _INF:
            form.rows.append((coefs, "<=", up))
        if lo > -_INF:
            form.rows.append((coefs, ">=", lo))
    hessian = h.getModel().hessian_
    if hessian.dim_:
        # HiGHS stores the lower triangle of Q in 0.5 x'Qx: diagonal q_ii is 2 * coef(x_i^2), off-diagonal q_ij is
        # coef(x_i x_j).
        for j in range(hessian.dim_):
            for k in range(hessian.start_[j], hessian.start_[j + 1]):
                i, q = hessian.index_[k], hessian.value_[k]
                form.quad.append((i, j, q / 2 if i == j else q))
    return form


def _canonical_row(coefs: dict[int, float], sense: str, rhs: float) -> tuple[dict[int, float], str, float]:
    coefs = {j: c for j, c in coefs.items() if c != 0.0}
    if not coefs:
        return coefs, sense, rhs
    scale = max(abs(c) for c in coefs.values())
    if sense == ">=":
        scale, sense = -scale, "<="
    elif sense == "==":
        # An equation and its negation are the same row: keep the sign whose sorted coefficients are larger,
        # and for a symmetric row (sorted coefficients equal their negation) the sign that makes rhs >= 0.
        pos = sorted(_num(c / scale) for c in coefs.values())
        neg = sorted(_num(-c / scale) for c in coefs.values())
        if neg > pos or (neg == pos and rhs < 0):
            scale = -scale
    return {j: c / scale for j, c in coefs.items()}, sense, rhs / scale


def structural_hash_of(form: LinearForm, length: int = 16) -> str:
    """The structural hash of a linear form (see the module docstring for what it is invariant to)."""
    sign = 1.0 if form.minimize else -1.0
    n = len(form.obj)
    vtype = [
        "B" if t == "I" and form.lb[j] is not None and form.ub[j] is not None and form.lb[j] == 0 and form.ub[j] == 1
        else t
        for j, t in enumerate(form.vtype)
    ]
    quad_of: list[list[str]] = [[] for _ in range(n)]
    for i, j, q in form.quad:
        quad_of[i].append(_num(sign * q))
        if i != j:
            quad_of[j].append(_num(sign * q))
    var_colour = [
        _h(vtype[j], _num(form.lb[j]), _num(form.ub[j]), _num(sign * form.obj[j]), sorted(quad_of[j])) for j in range(n)
    ]
    rows = [_canonical_row(*r) for r in form.rows]
    con_colour = [_h(sense, _num(rhs), len(coefs)) for coefs, sense, rhs in rows]
    incident: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    for r, (coefs, _, _) in enumerate(rows):
        for j, c in coefs.items():
            incident[j].append((r, _num(c)))
    for _ in range(WL_ROUNDS):
        new_con = [
            _h(con_colour[r], sorted(f"{c}:{var_colour[j]}" for j, c in ((j, _num(c)) for j, c in coefs.items())))
            for r, (coefs, _, _) in enumerate(rows)
        ]
        new_var = [_h(var_colour[j], sorted(f"{c}:{con_colour[r]}" for r, c in incident[j])) for j in range(n)]
        var_colour, con_colour = new_var, new_con
    quad_pairs = sorted(f"{_num(sign * q)}:{'.'.join(sorted((var_colour[i], var_colour[j])))}" for i, j, q in form.quad)
    digest = _h("v1", _num(sign * form.constant), sorted(var_colour), sorted(con_colour), quad_pairs)
    return digest[:length]


def _own_hash(model: Model | str, length: int) -> str:
    form = from_model(model) if isinstance(model, Model) else from_mps(model)
    return structural_hash_of(form, length)


def _contracts_hash(model: Model | str, length: int) -> str:
    from contracts.equivalence import to_std
    from contracts.equivalence.canonical import canonicalize, wl_hash

    return _h("contracts-wl", wl_hash(canonicalize(to_std(model))))[:length]


def _contracts_available() -> bool:
    try:
        import contracts.equivalence.canonical  # noqa: F401
    except ImportError:
        return False
    return True


HASHERS = {"curation": _own_hash, "contracts": _contracts_hash}
DEFAULT_HASHER = "contracts" if _contracts_available() else "curation"


def structural_hash(model: Model | str, length: int = 16, hasher: str | None = None) -> str:
    """Structural hash of an IR model or MPS text: equal for renamed, reordered, row-scaled or sense-flipped copies,
    and equal for an IR and the MPS text written from it."""
    name = hasher or DEFAULT_HASHER
    if name not in HASHERS:
        raise unknown_name("structural hasher", name, list(HASHERS))
    return HASHERS[name](model, length)
