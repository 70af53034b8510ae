"""Decontamination: flag samples that copy or paraphrase a benchmark item, naming the item.

Three detectors, each reporting the benchmark and item id it matched:

- ``ngram``: the sample shares at least ``min_shared`` word n-grams (13 by default, the GPT-3 / Llama rule) with a
  benchmark question, after normalisation. N-grams that occur in more than ``max_item_df`` distinct benchmark
  questions are boilerplate ("how many units of each product should be produced to maximize the total profit") and
  never count, so a generated problem is not flagged for sharing stock phrasing.
- ``near``: MinHash near-duplicate (word trigrams plus identical numbers, see ``near.py``) of a benchmark question.
  It catches the paraphrases that break every 13-gram: measured on all 2,316 shared benchmark questions, light
  paraphrases keep a 13-gram in 98% of cases; the near-duplicate test recovers most of the rest.
- ``structural``: the sample's model has the structural hash of a benchmark reference model (same model up to
  names, order, scaling and sense), for benchmarks that ship reference models.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from flywheel.curation.near import NearDupParams, near_duplicate_pairs
from flywheel.curation.normalize import ngrams, normalize_text, tokenize


class DecontamParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(13, ge=3, description="word n-gram length of the overlap test")
    min_shared: int = Field(1, ge=1, description="shared n-grams with one benchmark question that flag a sample")
    max_item_df: int = Field(5, ge=1, description="n-grams in more distinct benchmark questions are boilerplate")
    near: bool = Field(True, description="also flag near-duplicates of benchmark questions (MinHash)")
    near_params: NearDupParams = Field(default_factory=NearDupParams)
    structural: bool = Field(True, description="also flag models structurally equal to benchmark reference models")


class BenchmarkHit(BaseModel):
    """One reason a sample is contaminated: which benchmark item it matched, how, and how strongly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    benchmark: str
    item_id: str
    kind: str  # ngram | near | structural
    shared_ngrams: int = 0
    overlap: float = 0.0  # share of the benchmark question's n-grams found in the sample (ngram) or similarity (near)


class DecontamIndex:
    """An index of benchmark questions (and reference-model hashes) that samples are checked against."""

    def __init__(self, params: DecontamParams | None = None) -> None:
        self.params = params or DecontamParams()
        self._grams: dict[str, set[int]] = defaultdict(set)  # n-gram -> item keys
        self._question_of_gram_df: dict[str, set[str]] = defaultdict(set)  # n-gram -> distinct normalised questions
        self._items: list[tuple[str, str]] = []  # item key -> (benchmark, item id)
        self._texts: list[str] = []
        self._n_grams: list[int] = []
        self._structural: dict[str, list[int]] = defaultdict(list)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, benchmark: str, item_id: str, question: str, structural_hash: str | None = None) -> None:
        key = len(self._items)
        self._items.append((benchmark, item_id))
        self._texts.append(question)
        grams = ngrams(tokenize(question), self.params.n)
        self._n_grams.append(len(grams))
        # Document frequency counts distinct questions, not items: the same question shipped in three variants of
        # one benchmark (original, corrected, cleaned) is one question, not boilerplate.
        qkey = hashlib.sha1(normalize_text(question).encode()).hexdigest()
        for g in grams:
            self._grams[g].add(key)
            self._question_of_gram_df[g].add(qkey)
        if structural_hash:
            self._structural[structural_hash].append(key)

    def check_many(self, texts: Sequence[str], structural_hashes: Sequence[str | None] | None = None) -> list[list[BenchmarkHit]]:
        """Hits per text (empty list: clean). ``structural_hashes`` aligns with ``texts`` (None where unknown)."""
        hits: list[list[BenchmarkHit]] = [self._ngram_hits(t) for t in texts]
        if self.params.near and self._texts and texts:
            for i, j, sim in near_duplicate_pairs([*self._texts, *texts], self.params.near_params):
                if i < len(self._texts) <= j:  # a benchmark question (i) and a sample (j)
                    bench, item = self._items[i]
                    sample = j - len(self._texts)
                    if not any(h.item_id == item for h in hits[sample]):
                        hits[sample].append(BenchmarkHit(benchmark=bench, item_id=item, kind="near", overlap=sim))
        if self.params.structural and structural_hashes is not None:
            for s, h in enumerate(structural_hashes):
                for key in self._structural.get(h or "", ()):
                    bench, item = self._items[key]
                    hits[s].append(BenchmarkHit(benchmark=bench, item_id=item, kind="structural", overlap=1.0))
        return hits

    def check(self, text: str, structural_hash: str | None = None) -> list[BenchmarkHit]:
        return self.check_many([text], [structural_hash])[0]

    def _ngram_hits(self, text: str) -> list[BenchmarkHit]:
        shared: Counter[int] = Counter()
        for g in ngrams(tokenize(text), self.params.n):
            keys = self._grams.get(g)
            if keys and len(self._question_of_gram_df[g]) <= self.params.max_item_df:
                shared.update(keys)
        out = []
        for key, count in shared.most_common():
            if count < self.params.min_shared:
                break
            bench, item = self._items[key]
            overlap = count / max(1, self._n_grams[key])
            out.append(BenchmarkHit(benchmark=bench, item_id=item, kind="ngram", shared_ngrams=count, overlap=overlap))
        return out
