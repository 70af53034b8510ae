"""Near-duplicate detection: throughput and recall on planted paraphrases, our numpy MinHash LSH vs datasketch.

Corpus: every question of the shared OR benchmarks (../shared/benchmarks), generated problems from every family
(the hard negatives: one template, different numbers), and light paraphrases of a seeded sample of the benchmark
questions (sentences reordered, synonyms swapped, a few words changed; ``tests/support/perturb.py``). Both
backends run with the same parameters (word-trigram shingles, 128 permutations, threshold 0.4, the same number
check) and are timed end to end (shingling, signatures, LSH, verification), median over repeats.

Baselines in the same run:
- ``datasketch``: ``MinHash.update_batch`` + ``MinHashLSH`` (the well-kept library);
- ``exact``: brute-force exact Jaccard over all pairs (a sparse shingle-incidence product) with the same number
  check: the ground truth that recall and precision are measured against.

    .venv/bin/python bench/dedup.py [--paraphrases 800] [--seeds-per-family 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine, versions  # noqa: E402
from flywheel.curation.near import NearDupParams, near_duplicate_pairs, number_tokens, shingle_tokens  # noqa: E402
from flywheel.curation.normalize import exact_key, jaccard  # noqa: E402
from flywheel.generators.base import family_names, generate_problem  # noqa: E402
from tests.support.perturb import paraphrase  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


def corpus(n_para: int, seeds: int, rng: np.random.Generator) -> tuple[list[str], list[tuple[int, int]]]:
    """Texts and the planted (source, paraphrase) index pairs."""
    seen, questions = set(), []
    for path in sorted(SHARED.glob("*/test.jsonl")):
        for line in path.read_text().splitlines():
            q = json.loads(line)["question"]
            if exact_key(q) not in seen:  # variants of one benchmark repeat questions; keep one copy
                seen.add(exact_key(q))
                questions.append(q)
    generated = [generate_problem(f, s, 1 + s % 5, 0.0).question for f in family_names() for s in range(seeds)]
    picks = rng.choice(len(questions), size=min(n_para, len(questions)), replace=False)
    texts = [*questions, *generated]
    planted = []
    for i in picks:
        planted.append((int(i), len(texts)))
        texts.append(paraphrase(questions[int(i)], rng))
    return texts, planted


def exact_pairs(texts: list[str], params: NearDupParams) -> set[tuple[int, int]]:
    """All pairs with exact shingle Jaccard >= threshold and number Jaccard >= the number threshold."""
    from scipy import sparse

    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, t in enumerate(texts):
        for s in set(shingle_tokens(t, params.shingle)):
            rows.append(i)
            cols.append(vocab.setdefault(s, len(vocab)))
    x = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(texts), len(vocab)))
    sizes = np.asarray(x.sum(axis=1)).ravel()
    inter = sparse.triu(x @ x.T, k=1).tocoo()
    sim = inter.data / (sizes[inter.row] + sizes[inter.col] - inter.data)
    keep = sim >= params.threshold
    numbers = [number_tokens(t) for t in texts]
    return {
        (int(i), int(j)) for i, j in zip(inter.row[keep], inter.col[keep], strict=True)
        if params.number_threshold is None or jaccard(numbers[i], numbers[j]) >= params.number_threshold
    }


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paraphrases", type=int, default=800)
    ap.add_argument("--seeds-per-family", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "dedup.json")
    args = ap.parse_args()

    texts, planted = corpus(args.paraphrases, args.seeds_per_family, np.random.default_rng(0))
    base = NearDupParams()
    truth_time, truth = timed(lambda: exact_pairs(texts, base), 1)
    rows = []
    for name in ("numpy", "datasketch"):
        params = base.model_copy(update={"backend": name})
        seconds, result = timed(lambda p=params: near_duplicate_pairs(texts, p), args.repeats)
        found = {(i, j) for i, j, _ in result}
        rows.append({
            "method": name, "seconds": seconds, "docs_per_s": len(texts) / seconds,
            "planted_recall": sum(p in found for p in planted) / len(planted),
            "recall_vs_exact": len(found & truth) / max(1, len(truth)),
            "precision_vs_exact": len(found & truth) / max(1, len(found)),
            "pairs": len(found),
        })
    rows.append({"method": "exact (brute-force Jaccard)", "seconds": truth_time, "docs_per_s": len(texts) / truth_time,
                 "planted_recall": sum(p in truth for p in planted) / len(planted), "recall_vs_exact": 1.0,
                 "precision_vs_exact": 1.0, "pairs": len(truth)})
    speedup = rows[1]["seconds"] / rows[0]["seconds"]

    print(f"corpus: {len(texts)} texts, {len(planted)} planted paraphrases; params {base.model_dump()}")
    print(f"{'method':28} {'median s':>9} {'docs/s':>9} {'planted rec':>11} {'rec/exact':>9} {'prec/exact':>10} "
          f"{'pairs':>6}")
    for r in rows:
        print(f"{r['method']:28} {r['seconds']:9.2f} {r['docs_per_s']:9.0f} {r['planted_recall']:11.3f} "
              f"{r['recall_vs_exact']:9.3f} {r['precision_vs_exact']:10.3f} {r['pairs']:6d}")
    print(f"numpy backend vs datasketch: {speedup:.1f}x faster (median of {args.repeats})")
    info = {**machine(), **versions("numpy", "datasketch", "scipy"), "date": datetime.now(UTC).isoformat()}
    print(f"machine: {info['cpu']}, {info['cores']} cores, load average {info['load_avg_1m']} "
          "(shared machine: absolute times are inflated by contention; the ratio is the figure to quote)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "bench": "dedup", "corpus": {"texts": len(texts), "planted": len(planted)}, "params": base.model_dump(),
        "rows": rows, "speedup_numpy_vs_datasketch": speedup, "machine": info, "repeats": args.repeats,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
