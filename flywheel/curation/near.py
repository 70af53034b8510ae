"""Near-duplicate detection: MinHash signatures, LSH banding, and a check of every candidate pair.

Two backends sit behind one function, registered by name:

- ``numpy`` (default): our own MinHash. All shingles of all documents are hashed at once with multiply-shift
  universal hashing (Dietzfelbinger et al.: ``(a*x + b) >> 32`` with odd 64-bit ``a`` is 2-universal), the
  per-document minimum is one ``np.minimum.reduceat``, and LSH buckets come from ``np.unique`` over each band.
  It exists because it is measured faster than datasketch at equal recall (``bench/dedup.py``).
- ``datasketch``: the well-kept library (``MinHash`` + ``MinHashLSH``), kept as the reference.

Both return the same thing: pairs ``(i, j, similarity)`` with ``i < j`` whose estimated Jaccard similarity of word
n-gram shingles is at least the threshold. Candidates from LSH are always re-checked against the signatures, so a
band collision alone never makes a pair.

A second test then asks that the two texts carry the same numbers (Jaccard of their number-token sets at least
``number_threshold``). Measured on real benchmark questions and generated problems: a light paraphrase keeps every
number (number Jaccard 1.0 on all 600 planted paraphrases) while two instances of one generator template share up to
0.6 of their word trigrams but at most 0.55 of their numbers. Text similarity alone cannot separate those two cases;
text plus numbers does, because in an OR word problem the numbers are the instance.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flywheel.curation.normalize import jaccard, tokenize
from solvers.errors import unknown_name

Pair = tuple[int, int, float]


class NearDupParams(BaseModel):
    """Knobs of near-duplicate detection; the defaults are the ones ``bench/dedup.py`` measures."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shingle: int = Field(3, ge=1, description="word n-gram length of a shingle")
    threshold: float = Field(0.4, gt=0, le=1, description="estimated Jaccard similarity of shingles for a near-dup")
    number_threshold: float | None = Field(
        0.8, ge=0, le=1, description="Jaccard similarity of number-token sets also required; None = text only"
    )
    num_perm: int = Field(128, ge=16, description="MinHash permutations (signature length)")
    seed: int = Field(0, ge=0, description="seed of the hash permutations")
    backend: str = Field("numpy", description="numpy | datasketch")
    # LSH band choice weighs missed pairs (false negatives) against extra candidates (false positives). Candidates
    # are re-checked anyway, so a miss costs more than a candidate: 0.9 puts the band-collision probability at the
    # default threshold near 0.94 where equal weights give 0.56.
    false_negative_weight: float = Field(0.9, gt=0, lt=1)
    # Buckets larger than this link every member to the first one instead of all pairs, so a thousand copies of
    # one template cost a thousand checks, not half a million.
    max_bucket_pairs: int = Field(64, ge=2)


def shingle_tokens(text: str, n: int) -> list[str]:
    tokens = tokenize(text)
    if len(tokens) < n:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def lsh_bands(threshold: float, num_perm: int, false_negative_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) minimising the weighted false-positive + false-negative area around ``threshold``.

    The probability that two documents of similarity s share a band is 1 - (1 - s**r)**b; the integrals of that
    curve below and of its complement above the threshold are the two error areas (the rule datasketch uses).
    """
    best, best_err = (1, num_perm), float("inf")
    s_lo = np.linspace(0.0, threshold, 200)
    s_hi = np.linspace(threshold, 1.0, 200)
    for b in range(1, num_perm + 1):
        r = num_perm // b
        if r == 0:
            break
        fp = np.trapezoid(1 - (1 - s_lo**r) ** b, s_lo)
        fn = np.trapezoid((1 - s_hi**r) ** b, s_hi)
        err = (1 - false_negative_weight) * fp + false_negative_weight * fn
        if err < best_err:
            best, best_err = (b, r), err
    return best


# ---- numpy backend ---------------------------------------------------------------------------------------------


def minhash_signatures(docs: Sequence[Sequence[str]], num_perm: int, seed: int) -> np.ndarray:
    """uint32 MinHash signatures, shape (len(docs), num_perm); a document without shingles gets all-max."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
    sig = np.full((len(docs), num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    nonempty = np.flatnonzero(lengths)
    if nonempty.size == 0:
        return sig
    hashes = np.fromiter(
        (zlib.crc32(s.encode()) for i in nonempty for s in docs[i]), dtype=np.uint64, count=int(lengths.sum())
    )
    offsets = np.concatenate(([0], np.cumsum(lengths[nonempty])[:-1]))
    # Chunks of permutations bound the (chunk x total shingles) temporary to a few tens of MB.
    chunk = max(1, int(4_000_000 // max(1, hashes.size)))
    with np.errstate(over="ignore"):
        for start in range(0, num_perm, chunk):
            stop = min(num_perm, start + chunk)
            mixed = (a[start:stop, None] * hashes[None, :] + b[start:stop, None]) >> np.uint64(32)
            sig[nonempty, start:stop] = np.minimum.reduceat(mixed, offsets, axis=1).T.astype(np.uint32)
    return sig


def _candidate_pairs(
    sig: np.ndarray, bands: int, rows: int, valid: np.ndarray, max_bucket: int, cross_at: int | None
) -> set[tuple[int, int]]:
    pairs: set[tuple[int, int]] = set()
    idx = np.flatnonzero(valid)
    for band in range(bands):
        block = np.ascontiguousarray(sig[idx, band * rows : (band + 1) * rows])
        keys = block.view(np.dtype((np.void, block.dtype.itemsize * rows))).ravel()
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        if counts.max(initial=0) < 2:
            continue
        order = np.argsort(inverse, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(counts)))
        for g in np.flatnonzero(counts > 1):
            members = idx[order[bounds[g] : bounds[g + 1]]]
            if cross_at is not None:
                left, right = members[members < cross_at], members[members >= cross_at]
                pairs.update((int(x), int(y)) for x in left for y in right)
            elif len(members) <= max_bucket:
                pairs.update((int(x), int(y)) for k, x in enumerate(members) for y in members[k + 1 :])
            else:
                first = int(members[0])
                pairs.update((first, int(y)) for y in members[1:])
    return pairs


def signatures(texts: Sequence[str], params: NearDupParams) -> np.ndarray:
    """MinHash signatures of ``texts`` (numpy backend), for callers that reuse one side of a comparison."""
    return minhash_signatures([shingle_tokens(t, params.shingle) for t in texts], params.num_perm, params.seed)


def pairs_from_signatures(sig: np.ndarray, params: NearDupParams, cross_at: int | None = None) -> list[Pair]:
    """LSH candidates over signature rows, kept when the signature agreement reaches the threshold.

    With ``cross_at``, only pairs (i, j) with i < cross_at <= j are considered: rows before it are one collection
    (say, benchmark questions), rows from it on another (samples), and pairs within a collection are not wanted.
    """
    bands, rows = lsh_bands(params.threshold, params.num_perm, params.false_negative_weight)
    valid = ~np.all(sig == np.iinfo(np.uint32).max, axis=1)
    out: list[Pair] = []
    for i, j in sorted(_candidate_pairs(sig, bands, rows, valid, params.max_bucket_pairs, cross_at)):
        sim = float(np.mean(sig[i] == sig[j]))
        if sim >= params.threshold:
            out.append((i, j, sim))
    return out


def _numpy_backend(docs: Sequence[Sequence[str]], params: NearDupParams) -> list[Pair]:
    return pairs_from_signatures(minhash_signatures(docs, params.num_perm, params.seed), params)


# ---- datasketch backend ----------------------------------------------------------------------------------------


def _datasketch_backend(docs: Sequence[Sequence[str]], params: NearDupParams) -> list[Pair]:
    from datasketch import MinHash, MinHashLSH

    fnw = params.false_negative_weight
    lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm, weights=(1 - fnw, fnw))
    sketches: list[MinHash | None] = []
    for i, doc in enumerate(docs):
        if not doc:
            sketches.append(None)
            continue
        m = MinHash(num_perm=params.num_perm, seed=params.seed)
        m.update_batch([s.encode() for s in doc])
        lsh.insert(i, m)
        sketches.append(m)
    out: list[Pair] = []
    for i, m in enumerate(sketches):
        if m is None:
            continue
        for j in lsh.query(m):
            if j > i:
                other = sketches[j]
                assert other is not None
                sim = float(m.jaccard(other))
                if sim >= params.threshold:
                    out.append((i, j, sim))
    return sorted(out)


BACKENDS: dict[str, Callable[[Sequence[Sequence[str]], NearDupParams], list[Pair]]] = {
    "numpy": _numpy_backend,
    "datasketch": _datasketch_backend,
}


def near_duplicate_pairs(texts: Sequence[str], params: NearDupParams | None = None) -> list[Pair]:
    """Pairs ``(i, j, estimated_jaccard)``, ``i < j``, of texts whose shingle sets are near-duplicates."""
    params = params or NearDupParams()
    backend = BACKENDS.get(params.backend)
    if backend is None:
        raise unknown_name("near-dup backend", params.backend, list(BACKENDS))
    docs = [shingle_tokens(t, params.shingle) for t in texts]
    return filter_numbers(backend(docs, params), [number_tokens(t) for t in texts], params)


def filter_numbers(pairs: list[Pair], numbers: Sequence[set[str]], params: NearDupParams) -> list[Pair]:
    """Keep the pairs whose number-token sets agree (see the module docstring); all of them without a threshold."""
    if params.number_threshold is None:
        return pairs
    return [(i, j, s) for i, j, s in pairs if jaccard(numbers[i], numbers[j]) >= params.number_threshold]


def number_tokens(text: str) -> set[str]:
    """The distinct numbers of a text, as normalised tokens ("1,000.0" and "1000.0" agree)."""
    return {t for t in tokenize(text) if t[0].isdigit()}
