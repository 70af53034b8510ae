"""Decontamination: flag samples that copy or paraphrase a benchmark item, naming the item.

Three detectors, each reporting the benchmark and item id it matched:

- ``ngram``: the sample shares at least ``min_shared`` word n-grams (13 by default, the GPT-3 / Llama rule) with a
  benchmark question, after normalisation. N-grams that occur in more than ``max_item_df`` distinct benchmark
  questions are boilerplate ("how many units of each product should be produced to maximize the total profit") and
  never count, so a generated problem is not flagged for sharing stock phrasing.
- ``near``: MinHash near-duplicate (word trigrams plus identical numbers, see ``near.py``) of a benchmark question.
  It catches the paraphrases that break every 13-gram: measured on all 2,316 shared benchmark questions, light
  paraphrases keep a 13-gram in 98% of cases; the near-duplicate test (threshold 0.3) recovers the rest.
- ``structural``: the sample's model has the structural hash of a benchmark reference model (same model up to
  names, order, scaling and sense), for benchmarks that ship reference models.

The index keeps no benchmark text: n-grams are 64-bit hashes, numbers are hashed too, and the MinHash signatures are
computed when an item is added. So an item can also be added from those hashes alone (``add_hashed``): that is how the
contamination index shipped inside the package (``contam_index.py``) works on a machine with no benchmark pulled.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from flywheel.curation.near import NearDupParams, filter_numbers, number_tokens, pairs_from_signatures, signatures
from flywheel.curation.normalize import ngrams, tokenize
from solvers.errors import unknown_name

KINDS = ("ngram", "near", "structural")


class DecontamParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(13, ge=3, description="word n-gram length of the overlap test")
    min_shared: int = Field(1, ge=1, description="shared n-grams with one benchmark question that flag a sample")
    max_item_df: int = Field(5, ge=1, description="n-grams in more distinct benchmark questions are boilerplate")
    min_distinct_words: int = Field(4, ge=0, description="n-grams with fewer distinct words are enumerations")
    near: bool = Field(True, description="also flag near-duplicates of benchmark questions (MinHash)")
    # More sensitive than dedup's 0.4: measured on 400 planted paraphrases of the shared benchmark questions, 0.4
    # finds 97% and 0.3 finds 100%, while 0 of 96 generated problems (16 families) are flagged at either; the
    # number check keeps the lower threshold safe.
    near_params: NearDupParams = Field(default_factory=lambda: NearDupParams(threshold=0.3))
    structural: bool = Field(True, description="also flag models structurally equal to benchmark reference models")


class BenchmarkHit(BaseModel):
    """One reason a sample is contaminated: which benchmark item it matched, how, and how strongly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark: str
    item_id: str
    kind: str  # ngram | near | structural
    shared_ngrams: int = 0
    overlap: float = 0.0  # share of the benchmark question's n-grams found in the sample (ngram) or similarity (near)


def text_hash(text: str) -> int:
    """64-bit hash of an n-gram, a number token or a normalised question: stable across processes and machines.

    64 bits because the check is membership in a set of ~10^6 benchmark n-grams: a sample's few hundred n-grams then
    collide by chance with probability ~10^-11, where 32 bits would wrongly flag a few per cent of samples.
    """
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def text_hashes(question: str, n: int) -> tuple[list[int], list[int], int]:
    """(n-gram hashes, number hashes, question key) of one benchmark question."""
    tokens = tokenize(question)
    grams = sorted({text_hash(g) for g in ngrams(tokens, n)})
    numbers = sorted({text_hash(t) for t in tokens if t[0].isdigit()})
    return grams, numbers, text_hash(" ".join(tokens))


def item_hashes(question: str, n: int, params: NearDupParams) -> tuple[list[int], list[int], int, np.ndarray]:
    """(n-gram hashes, number hashes, question key, MinHash signature) of one benchmark question: all an index keeps."""
    return (*text_hashes(question, n), signatures([question], params)[0])


class DecontamIndex:
    """An index of benchmark questions (and reference-model hashes) that samples are checked against."""

    def __init__(self, params: DecontamParams | None = None) -> None:
        self.params = params or DecontamParams()
        self._grams: dict[int, list[int]] = defaultdict(list)  # n-gram hash -> item keys
        self._items: list[tuple[str, str]] = []  # item key -> (benchmark, item id)
        self._question_key: list[int] = []  # item key -> hash of its normalised question
        self._n_grams: list[int] = []
        self._structural: dict[str, list[int]] = defaultdict(list)
        self._signature_rows: list[np.ndarray | None] = []  # MinHash signature of each item (None: still pending)
        self._pending: dict[int, str] = {}  # item key -> question whose signature is computed on first near check
        self._signatures: np.ndarray | None = None  # the rows stacked, on first near check
        self._numbers: list[set[int]] = []  # hashed number tokens of each item

    def __len__(self) -> int:
        return len(self._items)

    def benchmarks(self) -> list[str]:
        return sorted({b for b, _ in self._items})

    def add(self, benchmark: str, item_id: str, question: str, structural_hash: str | None = None) -> None:
        grams, numbers, key = text_hashes(question, self.params.n)
        self._pending[len(self._items)] = question  # signatures are computed in one batch, when first needed
        self.add_hashed(benchmark, item_id, grams, numbers, key, None, structural_hash)

    def add_hashed(self, benchmark: str, item_id: str, gram_hashes: Sequence[int], number_hashes: Sequence[int],
                   question_key: int, signature: np.ndarray | None, structural_hash: str | None = None) -> None:
        """Add an item from its hashes (see ``item_hashes``): what the shipped contamination index holds."""
        key = len(self._items)
        self._items.append((benchmark, item_id))
        self._numbers.append(set(number_hashes))
        self._signature_rows.append(None if signature is None else np.asarray(signature, dtype=np.uint32))
        self._signatures = None
        self._n_grams.append(len(gram_hashes))
        self._question_key.append(int(question_key))
        for g in gram_hashes:
            self._grams[int(g)].append(key)
        if structural_hash:
            self._structural[structural_hash].append(key)

    def check_many(
        self,
        texts: Sequence[str],
        structural_hashes: Sequence[str | None] | None = None,
        kinds: Collection[str] = KINDS,
    ) -> list[list[BenchmarkHit]]:
        """Hits per text (empty list: clean). ``structural_hashes`` aligns with ``texts`` (None where unknown).

        ``kinds`` restricts the detectors (each still subject to its switch in the params). A benchmark item found
        by n-grams is not reported again as a near-duplicate.
        """
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise unknown_name("decontamination detector", sorted(unknown)[0], list(KINDS))
        hits: list[list[BenchmarkHit]] = [self._ngram_hits(t) if "ngram" in kinds else [] for t in texts]
        if self.params.near and "near" in kinds and self._items and texts:
            for i, sample, sim in self._near_pairs(texts):
                bench, item = self._items[i]
                if not any(h.item_id == item for h in hits[sample]):
                    hits[sample].append(BenchmarkHit(benchmark=bench, item_id=item, kind="near", overlap=sim))
        if self.params.structural and "structural" in kinds and structural_hashes is not None:
            for s, h in enumerate(structural_hashes):
                for key in self._structural.get(h or "", ()):
                    bench, item = self._items[key]
                    hits[s].append(BenchmarkHit(benchmark=bench, item_id=item, kind="structural", overlap=1.0))
        return hits

    def check(self, text: str, structural_hash: str | None = None) -> list[BenchmarkHit]:
        return self.check_many([text], [structural_hash])[0]

    def _near_pairs(self, texts: Sequence[str]) -> list[tuple[int, int, float]]:
        """(benchmark item key, sample index, similarity) of near-duplicates; benchmark signatures are cached."""
        p = self.params.near_params
        if self._pending:
            keys = list(self._pending)
            for k, sig in zip(keys, signatures([self._pending[k] for k in keys], p), strict=True):
                self._signature_rows[k] = sig
            self._pending.clear()
        if self._signatures is None:
            self._signatures = np.stack(self._signature_rows)  # type: ignore[arg-type]
        n = len(self._items)
        sig = np.concatenate([self._signatures, signatures(texts, p)])
        pairs = pairs_from_signatures(sig, p, cross_at=n)
        sample_numbers = [{text_hash(t) for t in number_tokens(text)} for text in texts]
        pairs = filter_numbers(pairs, [*self._numbers, *sample_numbers], p)  # type: ignore[arg-type]
        return [(i, j - n, s) for i, j, s in pairs]

    def _ngram_hits(self, text: str) -> list[BenchmarkHit]:
        shared: Counter[int] = Counter()
        for g in ngrams(tokenize(text), self.params.n):
            keys = self._grams.get(text_hash(g))
            if keys and self._informative(g, keys):
                shared.update(set(keys))
        out = []
        for key, count in shared.most_common():
            if count < self.params.min_shared:
                break
            bench, item = self._items[key]
            overlap = count / max(1, self._n_grams[key])
            out.append(BenchmarkHit(benchmark=bench, item_id=item, kind="ngram", shared_ngrams=count, overlap=overlap))
        return out

    def _informative(self, gram: str, keys: list[int]) -> bool:
        """An n-gram counts unless it is boilerplate or an enumeration.

        Boilerplate: it occurs in more than ``max_item_df`` distinct benchmark questions (distinct questions, not
        items: one question shipped in three variants of a benchmark is one question). Enumeration: fewer than
        ``min_distinct_words`` distinct words, such as the table header "tower 1 tower 2 tower 3 ..." that a
        generated set-cover table and a benchmark table share without one copying the other.
        """
        words = {t for t in gram.split() if not t[0].isdigit()}  # the sample's gram: its text is at hand
        if len(words) < self.params.min_distinct_words:
            return False
        return len({self._question_key[k] for k in keys}) <= self.params.max_item_df
