"""Structural equivalence of two optimisation models, layered cheapest first: exact -> WL -> semantic.

``compare_models(reference, candidate)`` takes IR models, MPS text or ``StdModel``s and says whether they are the
same model, which layer decided, and the evidence. Exact equality is decisive; WL equality is decisive once an
isomorphism search confirms it (two non-isomorphic models can share a stable colouring: two triangles and a
hexagon); otherwise the semantic layer decides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from contracts.equivalence.canonical import canonicalize, exact_hash, isomorphic, wl_hash
from contracts.equivalence.mps import read_mps
from contracts.equivalence.semantic import semantic_equivalent
from contracts.equivalence.stdform import StdModel, from_ir
from solvers.ir import Model

ModelLike = Model | StdModel | str


@dataclass
class EquivalenceResult:
    equivalent: bool
    layer: str  # exact | wl | semantic
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"equivalent": self.equivalent, "layer": self.layer, "reason": self.reason, "evidence": self.evidence}


def to_std(model: ModelLike, sense: str | None = None) -> StdModel:
    if isinstance(model, StdModel):
        return model
    if isinstance(model, Model):
        return from_ir(model)
    return read_mps(model, sense=sense)


COARSE_DIGITS = 7


def compare_models(reference: ModelLike, candidate: ModelLike, *, candidate_sense: str | None = None,
                   layers: tuple[str, ...] = ("exact", "wl", "semantic")) -> EquivalenceResult:
    """Decide equivalence; ``layers`` restricts which layers may decide (the bench measures each alone)."""
    t0 = time.perf_counter()
    ref_std, cand_std = to_std(reference), to_std(candidate, candidate_sense)
    ref, cand = canonicalize(ref_std, reformulate=True), canonicalize(cand_std, reformulate=True)
    ev: dict[str, Any] = {"ref_size": [ref.model.n_vars, ref.model.n_rows],
                          "cand_size": [cand.model.n_vars, cand.model.n_rows]}
    if "exact" in layers:
        ha, hb = exact_hash(ref), exact_hash(cand)
        ev.update(ref_exact=ha, cand_exact=hb)
        if ha is not None and ha == hb:
            return _done(True, "exact", "canonical forms are identical", ev, t0)
        # Labels are rounded to 9 significant digits; the column scaling's least squares moves a number by ~1e-12
        # relative, so one that lies on a rounding boundary (0.53578588849999 vs ...88850017) splits two equivalent
        # models. Boundaries at 9 and at COARSE_DIGITS digits rarely coincide: agreement at 7 digits (every
        # number equal to ~5e-8 relative, far inside a solver's 1e-6 feasibility tolerance) is accepted too.
        if ha is not None and hb is not None and \
                exact_hash(ref, digits=COARSE_DIGITS) == exact_hash(cand, digits=COARSE_DIGITS):
            return _done(True, "exact", f"canonical forms are identical to {COARSE_DIGITS} significant digits",
                         ev, t0)
    if "wl" in layers:
        wa, wb = wl_hash(ref), wl_hash(cand)
        ev.update(ref_wl=wa, cand_wl=wb)
        # Equal WL hashes are necessary, not sufficient (two triangles and a hexagon hash equal): an isomorphism
        # search decides, and where it finds none or runs out of budget the semantic layer does. The coarse digits
        # are the exact layer's rounding-boundary case (above): in a model of thousands of numbers, one of them
        # sits on a 9-digit boundary more often than not.
        coarse = wa != wb and wl_hash(ref, digits=COARSE_DIGITS) == wl_hash(cand, digits=COARSE_DIGITS)
        if wa == wb or coarse:
            iso = isomorphic(ref, cand, digits=COARSE_DIGITS) if coarse else isomorphic(ref, cand)
            ev["wl_isomorphism"] = {True: "found", False: "none exists", None: "search budget spent"}[iso]
            if iso:
                at = f" to {COARSE_DIGITS} significant digits" if coarse else ""
                return _done(True, "wl", f"Weisfeiler-Lehman hashes are equal{at} and an isomorphism was found",
                             ev, t0)
    if "semantic" in layers:
        # in the programs' own units: the semantic layer maps solutions across by variable name
        sem = semantic_equivalent(canonicalize(ref_std, scale_columns=False),
                                  canonicalize(cand_std, scale_columns=False))
        ev.update(sem.evidence)
        return _done(sem.equivalent, "semantic", sem.reason, ev, t0)
    return _done(False, layers[-1] if layers else "none", "no enabled layer found them equal", ev, t0)


def _done(eq: bool, layer: str, reason: str, ev: dict[str, Any], t0: float) -> EquivalenceResult:
    ev["seconds"] = round(time.perf_counter() - t0, 6)
    return EquivalenceResult(eq, layer, reason, ev)


__all__ = ["EquivalenceResult", "StdModel", "compare_models", "from_ir", "read_mps", "to_std"]
