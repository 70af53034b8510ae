"""Decontamination finds planted benchmark paraphrases and structural copies, and leaves generated problems alone.

Real benchmark questions (from the shared copy) are paraphrased lightly (sentences reordered, synonyms swapped,
a few words changed) with an explicit Generator; the index must name the exact source item.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.perturb import paraphrase

from flywheel import benchmarks
from flywheel.curation.decontam import DecontamIndex, DecontamParams
from flywheel.curation.structural import structural_hash
from flywheel.generators.base import family_names, generate_problem

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="shared benchmark copy not present")
# Four of the eight sets (1,162 questions): enough variety of style and length, and the index builds in seconds.
SETS = ("nl4opt", "mamo_easylp", "industryor_optimind", "optmath_bench")


@pytest.fixture(scope="module")
def items() -> list[benchmarks.BenchmarkItem]:
    return [it for name in SETS for it in benchmarks.load_benchmark(SHARED / name)]


@pytest.fixture(scope="module")
def index(items: list[benchmarks.BenchmarkItem]) -> DecontamIndex:
    idx = DecontamIndex()
    for it in items:
        idx.add(it.benchmark, it.id, it.question)
    return idx


@pytest.fixture(scope="module")
def generated() -> list[str]:
    return [generate_problem(f, seed, 1 + seed % 5, 0.0).question for f in family_names() for seed in range(5)]


def test_planted_paraphrases_are_found_with_their_item_id(items, index) -> None:
    rng = np.random.default_rng(7)
    picks = rng.choice(len(items), size=100, replace=False)
    sources = [items[int(i)] for i in picks]
    texts = [paraphrase(it.question, rng) for it in sources]
    hits = index.check_many(texts)
    found = [any(h.item_id == src.id for h in hs) for src, hs in zip(sources, hits, strict=True)]
    # Measured 100/100 with n-gram + near-duplicate detection; 0.97 leaves room for a different paraphrase draw
    # landing on very short items, while failing if either detector stops working (each alone catches ~0.95).
    assert np.mean(found) >= 0.97
    kinds = {h.kind for hs in hits for h in hs}
    assert "ngram" in kinds
    verbatim = index.check(sources[0].question)
    assert verbatim[0].item_id == sources[0].id and verbatim[0].kind == "ngram" and verbatim[0].overlap == 1.0


def test_each_detector_alone_catches_most(items, index) -> None:
    rng = np.random.default_rng(11)
    sources = [items[int(i)] for i in rng.choice(len(items), size=80, replace=False)]
    texts = [paraphrase(it.question, rng) for it in sources]
    for kind in ("ngram", "near"):
        hits = index.check_many(texts, kinds=(kind,))
        rate = np.mean([any(h.item_id == s.id and h.kind == kind for h in hs)
                        for s, hs in zip(sources, hits, strict=True)])
        assert rate >= 0.9, (kind, rate)  # measured: n-grams alone ~0.98, near-duplicates alone 1.0


def test_unrelated_generated_problems_are_not_flagged(index, generated) -> None:
    hits = index.check_many(generated)
    flagged = [(q[:80], hs) for q, hs in zip(generated, hits, strict=True) if hs]
    assert not flagged


def test_ngram_length_is_configurable(items) -> None:
    src = items[0].question
    words = src.split()
    # Keep an 8-word window of the source inside unrelated text: 8-grams see it, 13-grams do not.
    planted = "A furniture workshop plans its weekly output. " + " ".join(words[5:13]) + " Nothing else matches."
    for n, expect in ((8, True), (13, False)):
        idx = DecontamIndex(DecontamParams(n=n, near=False))
        idx.add(items[0].benchmark, items[0].id, src)
        assert bool(idx.check(planted)) is expect


def test_structural_copies_are_found(tmp_path: Path) -> None:
    """A benchmark folder with reference models; a sample re-telling one as a different story is flagged."""
    bench = tmp_path / "toybench"
    bench.mkdir()
    problems = [generate_problem(f, 3, 2, 0.0) for f in ("diet", "transportation", "production_planning")]
    with (bench / "test.jsonl").open("w") as f:
        for k, p in enumerate(problems):
            f.write(json.dumps({"id": f"toy-{k}", "question": p.question, "answer": 1.0}) + "\n")
    with (bench / "models.jsonl").open("w") as f:
        for k, p in enumerate(problems):
            f.write(json.dumps({"id": f"toy-{k}", "ir": json.loads(p.ir.to_json())}) + "\n")
    idx = DecontamIndex()
    models = benchmarks.load_reference_models(bench)
    assert set(models) == {"toy-0", "toy-1", "toy-2"}
    for it in benchmarks.load_benchmark(bench):
        idx.add(it.benchmark, it.id, it.question, structural_hash(models[it.id]))
    # The copy: same model, renamed variables and constraints, rows scaled and reordered, objective sense flipped.
    copy = _disguise(problems[1].ir)
    other = generate_problem("transportation", 4, 2, 0.0).ir  # same family, different instance
    story = "A brewery moves kegs between depots and pubs; find the cheapest plan."
    hits = idx.check_many([story, story], [structural_hash(copy), structural_hash(other)])
    assert [(h.benchmark, h.item_id, h.kind) for h in hits[0]] == [("toybench", "toy-1", "structural")]
    assert hits[1] == []


def _disguise(model):
    from solvers.ir import Model

    d = json.loads(model.to_json())
    rename = {v["name"]: f"x{i}" for i, v in enumerate(d["variables"])}
    for v in d["variables"]:
        v["name"] = rename[v["name"]]
    for k, c in enumerate(d["constraints"]):
        c["name"] = f"c{k}"
        c["terms"] = [[rename[a], 3.0 * b] for a, b in reversed(c["terms"])]
        c["rhs"] *= 3.0
    d["constraints"].reverse()
    d["objective"]["terms"] = [[rename[a], -b] for a, b in d["objective"]["terms"]]
    d["objective"]["sense"] = "maximize" if d["objective"]["sense"] == "minimize" else "minimize"
    d["objective"]["constant"] = -d["objective"].get("constant", 0.0)
    return Model.model_validate(d)
