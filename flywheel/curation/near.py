"""Near-duplicate detection: MinHash signatures, LSH banding, and a check of every candidate pair.

Two backends sit behind one function, registered by name:

- ``numpy`` (default): our own MinHash. Each distinct word is hashed once, every word n-gram of every document is
  hashed in a few array operations from its words' hashes, the permutations are multiply-shift universal hashing
  (Dietzfelbinger et al.: ``(a*x + b) >> 32`` with odd 64-bit ``a``), the per-document minimum is one
  ``np.minimum.reduceat``, and LSH buckets and candidate checks are array operations too. It exists because it is
  measured 3.3x faster than datasketch at the same recall (``bench/dedup.py``).
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

from flywheel.curation.normalize import jaccard, number_set, tokenize, tokens_and_numbers
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
    # In an LSH bucket each member is paired with its next (this - 1) neighbours and, beyond that, with the bucket's
    # first member only: a thousand copies of one template cost ~64 thousand checks, not half a million.
    max_bucket_pairs: int = Field(64, ge=2)


def shingle_tokens(text: str, n: int) -> list[str]:
    """Word n-gram shingles as strings (the datasketch backend and exact-Jaccard references use these)."""
    return _string_shingles(tokenize(text), n)


def _string_shingles(tokens: list[str], n: int) -> list[str]:
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


_TOKEN_HASH: dict[str, int] = {}
# Odd 64-bit multipliers that combine the hashes of the n tokens of a shingle (position matters: "a b" != "b a").
_POSITION_MULTIPLIERS = np.random.default_rng(20240607).integers(1, 2**62, size=64, dtype=np.uint64) * 2 + 1


def _token_hashes(flat_tokens: list[str]) -> np.ndarray:
    """crc32 of every token, memoised per distinct word: stable across processes (Python's ``hash`` is salted).

    ``map(dict.get, ...)`` runs the lookups in C; only words never seen before are hashed in Python.
    """
    found = list(map(_TOKEN_HASH.get, flat_tokens))
    if None in found:
        for t in set(flat_tokens).difference(_TOKEN_HASH):
            _TOKEN_HASH[t] = zlib.crc32(t.encode())
        found = list(map(_TOKEN_HASH.__getitem__, flat_tokens))
    return np.array(found, dtype=np.uint64)


def shingle_hashes(token_docs: Sequence[Sequence[str]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of every word n-gram of every document, concatenated, and the count per document.

    Each token is hashed once; an n-gram's hash is sum_m A_m * h(token_{i+m}) mod 2**64, computed for all n-grams of
    all documents in a few vectorised operations instead of building and hashing one string per n-gram. A document
    shorter than ``n`` tokens gets one shingle made of all its tokens.
    """
    if n > len(_POSITION_MULTIPLIERS):
        raise ValueError(f"shingle length {n} is above {len(_POSITION_MULTIPLIERS)}")
    lengths = np.fromiter((len(d) for d in token_docs), dtype=np.int64, count=len(token_docs))
    tokens = _token_hashes([t for d in token_docs for t in d])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    # Positions whose n-gram stays inside its document: the last n - 1 positions of each document are cut off.
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    doc_of = np.repeat(np.arange(len(token_docs)), counts)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = starts[doc_of] + (np.arange(int(counts.sum())) - first[doc_of])
    out = np.zeros(pos.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for m in range(n):
            within = pos + m < starts[doc_of] + lengths[doc_of]  # False only for short documents' missing tokens
            out += np.where(within, tokens[np.minimum(pos + m, tokens.size - 1)], 0) * _POSITION_MULTIPLIERS[m]
    return out, counts


def minhash_signatures(hashes: np.ndarray, counts: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """uint32 MinHash signatures, shape (len(counts), num_perm); a document without shingles gets all-max.

    ``hashes`` holds every document's shingle hashes back to back, ``counts`` how many belong to each document.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    sig = np.full((len(counts), num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    nonempty = np.flatnonzero(counts)
    if nonempty.size == 0:
        return sig
    keys = (hashes >> np.uint64(32)) ^ (hashes & np.uint64(0xFFFFFFFF))  # fold to 32 bits for multiply-shift
    offsets = np.concatenate(([0], np.cumsum(counts[nonempty])[:-1]))
    # Chunks of permutations bound the (chunk x total shingles) temporary to a few tens of MB.
    chunk = max(1, int(4_000_000 // max(1, keys.size)))
    with np.errstate(over="ignore"):
        for start in range(0, num_perm, chunk):
            stop = min(num_perm, start + chunk)
            mixed = (a[start:stop, None] * keys[None, :] + b[start:stop, None]) >> np.uint64(32)
            sig[nonempty, start:stop] = np.minimum.reduceat(mixed, offsets, axis=1).T.astype(np.uint32)
    return sig


def _candidate_pairs(
    sig: np.ndarray, bands: int, rows: int, valid: np.ndarray, max_bucket: int, cross_at: int | None
) -> np.ndarray:
    """Distinct candidate pairs (i < j) as an (m, 2) int64 array: rows sharing all ``rows`` values of some band.

    Within a bucket, members are paired with their next ``max_bucket - 1`` neighbours in sorted order (all pairs of
    a bucket up to that size); members further along are linked only to the bucket's first member, so a thousand
    copies of one template cost a thousand checks, not half a million.
    """
    idx = np.flatnonzero(valid)
    found: list[np.ndarray] = []
    for band in range(bands):
        block = np.ascontiguousarray(sig[idx, band * rows : (band + 1) * rows])
        keys = block.view(np.dtype((np.void, block.dtype.itemsize * rows))).ravel()
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        same = sorted_keys[1:] == sorted_keys[:-1]
        if not same.any():
            continue
        members = idx[order]
        group_start = np.maximum.accumulate(np.where(np.concatenate(([True], ~same)), np.arange(len(keys)), 0))
        for d in range(1, max_bucket):
            if d >= len(keys):
                break
            hit = group_start[d:] == group_start[:-d]
            if not hit.any():
                break
            found.append(np.stack([members[:-d][hit], members[d:][hit]], axis=1))
        far = np.arange(len(keys)) - group_start >= max_bucket
        if far.any():
            found.append(np.stack([members[group_start[far]], members[far]], axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.sort(np.concatenate(found), axis=1).astype(np.int64)
    if cross_at is not None:
        pairs = pairs[(pairs[:, 0] < cross_at) & (pairs[:, 1] >= cross_at)]
    return np.unique(pairs, axis=0)


def signatures(texts: Sequence[str], params: NearDupParams) -> np.ndarray:
    """MinHash signatures of ``texts`` (numpy backend), for callers that reuse one side of a comparison."""
    return _signatures([tokenize(t) for t in texts], params)


def _signatures(token_docs: Sequence[Sequence[str]], params: NearDupParams) -> np.ndarray:
    hashes, counts = shingle_hashes(token_docs, params.shingle)
    return minhash_signatures(hashes, counts, params.num_perm, params.seed)


def pairs_from_signatures(sig: np.ndarray, params: NearDupParams, cross_at: int | None = None) -> list[Pair]:
    """LSH candidates over signature rows, kept when the signature agreement reaches the threshold.

    With ``cross_at``, only pairs (i, j) with i < cross_at <= j are considered: rows before it are one collection
    (say, benchmark questions), rows from it on another (samples), and pairs within a collection are not wanted.
    """
    bands, rows = lsh_bands(params.threshold, params.num_perm, params.false_negative_weight)
    valid = ~np.all(sig == np.iinfo(np.uint32).max, axis=1)
    cand = _candidate_pairs(sig, bands, rows, valid, params.max_bucket_pairs, cross_at)
    sims = np.empty(len(cand))
    for start in range(0, len(cand), 65536):  # bounded (chunk x num_perm) temporaries
        part = cand[start : start + 65536]
        sims[start : start + len(part)] = (sig[part[:, 0]] == sig[part[:, 1]]).mean(axis=1)
    keep = sims >= params.threshold
    return [(int(i), int(j), float(s)) for (i, j), s in zip(cand[keep], sims[keep], strict=True)]


def _numpy_backend(token_docs: Sequence[Sequence[str]], params: NearDupParams) -> list[Pair]:
    return pairs_from_signatures(_signatures(token_docs, params), params)


# ---- datasketch backend ----------------------------------------------------------------------------------------


def _datasketch_backend(token_docs: Sequence[Sequence[str]], params: NearDupParams) -> list[Pair]:
    from datasketch import MinHash, MinHashLSH

    fnw = params.false_negative_weight
    lsh = MinHashLSH(threshold=params.threshold, num_perm=params.num_perm, weights=(1 - fnw, fnw))
    sketches: list[MinHash | None] = []
    for i, tokens in enumerate(token_docs):
        doc = _string_shingles(list(tokens), params.shingle)
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
    parsed = [tokens_and_numbers(t) for t in texts]
    pairs = backend([tokens for tokens, _ in parsed], params)
    return filter_numbers(pairs, [numbers for _, numbers in parsed], params)


def filter_numbers(pairs: list[Pair], numbers: Sequence[set[str]], params: NearDupParams) -> list[Pair]:
    """Keep the pairs whose number-token sets agree (see the module docstring); all of them without a threshold."""
    if params.number_threshold is None:
        return pairs
    return [(i, j, s) for i, j, s in pairs if jaccard(numbers[i], numbers[j]) >= params.number_threshold]


def number_tokens(text: str) -> set[str]:
    """The distinct numbers of a text, as normalised tokens ("1,000.0" and "1000" agree)."""
    return number_set(text)
