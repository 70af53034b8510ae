"""Structural identity of optimisation models: a hash that ignores names, order, row scaling and objective sense.

Two samples whose text differs completely can still be the same model (a benchmark item re-told as a different
story, or the same instance generated twice). This hash finds them, for an IR model or for MPS text (what a
program's solver call captured), so a model built by a program and the IR it was meant to build hash the same.

The hash is the contracts stage's Weisfeiler-Lehman hash of its canonical form (``contracts.equivalence``: names
and order removed, rows scaled, ``>=`` and sense flips normalised, a presolve that removes slack columns, singleton
rows and split equalities), so the contract that judges "same model" and the dedup that clusters by it agree.
Isomorphic models always hash equal; non-isomorphic models that colour refinement cannot tell apart (rare, highly
symmetric ones) collide, a false positive that dedup then treats as one model.
"""

from __future__ import annotations

import hashlib

from contracts.equivalence import to_std
from contracts.equivalence.canonical import canonicalize, wl_hash
from solvers.ir import Model

# Recorded in export manifests, so a shard says which notion of "same model" its dedup used. "contracts-2" (2026-12-05):
# the canonical form also undoes a column's change of origin or direction (x = s + x', y = 1 - y') and orients
# rows whose negation reads the same by their columns' full colours; models with such columns hash differently from
# "contracts", every other model as before. "contracts-3" (2026-12-05, later): a cost-free two-sided column whose
# rows name no direction takes it from the columns beside it, and a shifted two-sided column's range no longer
# orients it; models with such columns (storage levels, mode switches, routing orders) hash differently again.
# "contracts-4" (2026-12-07): the column scaling's least squares is refined on the dense path too, so the ridge term
# no longer pulls a model and its row-scaled copy apart (34 of 5,200 shuffled generator copies hashed apart before,
# 0 after: bench/structural_hash.py); models with a weakly anchored scaling direction hash differently. The same
# hasher tells integer columns' costs apart when a direction is read from the columns beside it (an orienteering miss
# of bench/equivalence.py), and its presolve runs to its fixpoint (it stopped after 20 passes; no generator instance
# needs more than 3 here, so no stored hash moved). compare_models' reformulations (parallel-column merge, defined
# variables, split columns) never enter this hash: it canonicalises without them. "contracts-5" (2026-12-07, session
# 30): the stable colouring is computed by splitting cells one splitter at a time (contracts/equivalence/partition.py,
# O(m log n); synchronous rounds took ~95 s on a 1,500-column chain) and the hash is that partition's certificate
# (label table, initial colours, every split with its labels) instead of a histogram of round-by-round colour
# strings: the same partition, other bytes, so every stored hash moved (nothing stores them: export and
# decontamination hash on the fly, and a shard's manifest names the hasher).
DEFAULT_HASHER = "contracts-5"


def structural_hash(model: Model | str, length: int = 16) -> str:
    """Structural hash of an IR model or MPS text: equal for renamed, reordered, row-scaled or sense-flipped copies,
    and equal for an IR and the MPS text written from it."""
    # The "contracts-wl" prefix keeps hashes equal to those already stored by earlier rounds.
    return hashlib.sha256(f"contracts-wl|{wl_hash(canonicalize(to_std(model)))}".encode()).hexdigest()[:length]
