"""The contamination index shipped in the package: paraphrases flagged with no benchmark pulled, no text inside,
and `flywheel export --stage sft` working with no flags right after a round on a fresh store."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_here import flywheel_here
from support.perturb import paraphrase

from flywheel import benchmarks
from flywheel.curation.contam_index import INDEX_ENV, SHIPPED, index_sources, load_index
from flywheel.curation.decontam import DecontamIndex, DecontamParams
from flywheel.generators.base import family_names, generate_problem

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared benchmark copy not present")


@pytest.fixture(autouse=True)
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh machine: nothing pulled, no rebuilt index, so only the shipped index is there."""
    monkeypatch.setenv(benchmarks.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(INDEX_ENV, raising=False)


def test_shipped_index_covers_every_card_compactly() -> None:
    loaded = load_index()
    assert loaded.path == SHIPPED
    cards = benchmarks.load_cards()
    built = {b["benchmark"]: b["items"] for b in loaded.meta["built_from"]}
    assert built == {name: card.items for name, card in cards.items()}
    assert len(set(loaded.item_ids)) == sum(built.values())
    assert SHIPPED.stat().st_size < 6_000_000  # "a few MB": 4.2 MB for 2,316 items at the defaults


@needs_shared
def test_shipped_index_holds_no_question_text() -> None:
    raw = b"".join(zipfile.ZipFile(io.BytesIO(SHIPPED.read_bytes())).read(n) for n in
                   zipfile.ZipFile(io.BytesIO(SHIPPED.read_bytes())).namelist())
    for name in benchmarks.load_cards():
        for item in benchmarks.load_benchmark(SHARED / name)[:20]:
            words = item.question.split()
            assert " ".join(words[:6]).encode() not in raw, (name, item.id)


@needs_shared
def test_shipped_index_is_current_with_the_shared_copy() -> None:
    # The index is a deterministic function of (id, question) per item and the parameters (checked for a small set
    # in test_index_rebuild_command...): comparing the digests of its inputs is enough, without rebuilding 4 MB.
    import hashlib

    expected = []
    for bench, items in index_sources([str(SHARED / n) for n in sorted(benchmarks.load_cards())]):
        digest = hashlib.sha256("".join(f"{i}\t{q}\n" for i, q in items).encode()).hexdigest()
        expected.append({"benchmark": bench, "items": len(items), "items_sha256": digest})
    assert load_index().meta["built_from"] == expected, "rebuild: flywheel datasets index --from ... --out " + str(SHIPPED)


@needs_shared
def test_paraphrases_flagged_by_the_index_alone_and_generated_problems_not() -> None:
    index = DecontamIndex()
    assert load_index().add_to(index) == 2316
    items = [it for name in ("nl4opt", "mamo_easylp", "optibench", "industryor_optimind")
             for it in benchmarks.load_benchmark(SHARED / name)]
    rng = np.random.default_rng(5)
    sources = [items[int(i)] for i in rng.choice(len(items), size=60, replace=False)]
    hits = index.check_many([paraphrase(s.question, rng) for s in sources])
    found = np.mean([any(h.item_id == s.id for h in hs) for s, hs in zip(sources, hits, strict=True)])
    # The text-built index finds 100/100 planted paraphrases (test_curation_decontam); the hashed one must match it
    # (0.97 allows one unlucky short item in a draw of 60, and fails if either detector is broken).
    assert found >= 0.97
    assert {h.kind for hs in hits for h in hs} >= {"ngram"}
    generated = [generate_problem(f, seed, 1 + seed % 5, 0.0).question for f in family_names() for seed in range(3)]
    assert not [g[:60] for g, hs in zip(generated, index.check_many(generated), strict=True) if hs]


@needs_shared
def test_hashed_and_text_index_agree() -> None:
    items = benchmarks.load_benchmark(SHARED / "nl4opt")
    text, hashed = DecontamIndex(), DecontamIndex()
    for it in items:
        text.add(it.benchmark, it.id, it.question)
    load_index().add_to(hashed, skip=[n for n in benchmarks.load_cards() if n != "nl4opt"])
    rng = np.random.default_rng(9)
    probes = [paraphrase(items[int(i)].question, rng) for i in rng.choice(len(items), size=30, replace=False)]
    strip = [[(h.item_id, h.kind, h.shared_ngrams) for h in hs] for hs in text.check_many(probes)]
    assert strip == [[(h.item_id, h.kind, h.shared_ngrams) for h in hs] for hs in hashed.check_many(probes)]


def test_index_rebuild_command_and_parameter_mismatch(tmp_path: Path, capsys, monkeypatch) -> None:
    bench = tmp_path / "toyset"
    bench.mkdir()
    question = ("A bakery bakes bagels and croissants with 70 hours of oven time and 32 pastry chef hours; "
                "a batch of bagels earns 20 dollars and a batch of croissants 40 dollars. Maximise the profit.")
    (bench / "test.jsonl").write_text(json.dumps({"id": "toy-0", "question": question, "answer": 1060}) + "\n")
    code, out, err = flywheel_here(capsys, monkeypatch, "datasets", "index", "--from", str(bench), "--format", "json")
    assert code == 0, err
    assert json.loads(out) == [{"benchmark": "toyset", "items": 1, "items sha256": json.loads(out)[0]["items sha256"]}]
    rebuilt = load_index()  # the cache's rebuilt index now takes precedence over the shipped one
    assert rebuilt.path != SHIPPED and rebuilt.item_ids == ["toy-0"]
    index = DecontamIndex()
    rebuilt.add_to(index)
    assert index.check(question.replace("Maximise", "Maximize"))[0].item_id == "toy-0"
    with pytest.raises(Exception, match="built with n=13"):
        rebuilt.add_to(DecontamIndex(DecontamParams(n=8)))


@pytest.mark.slow
def test_export_with_no_flags_after_a_fresh_round(tmp_path: Path, capsys, monkeypatch) -> None:
    """`make demo` then `flywheel export --stage sft`: the newcomer's path, on a fresh store with nothing pulled."""
    monkeypatch.chdir(tmp_path)
    code, _, err = flywheel_here(capsys, monkeypatch, "run-round", "--problems", "4", "--families",
                                 "diet,production_planning", "--seed", "3", "--workers", "1")
    assert code == 0, err
    code, out, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", columns=80)
    assert code == 0, err
    assert "decontamination: 0 samples dropped" in out and "contamination index" in out and "shipped" in out
    (shard,) = (tmp_path / "shards").iterdir()
    manifest = json.loads((shard / "manifest.json").read_text())
    d = manifest["decontamination"]
    assert d["enabled"] and d["benchmarks"] == [] and d["contamination_index"]["items_used"] == 2316
    assert d["contamination_index"]["sha256"] == load_index().sha256  # the version used is recorded
    assert manifest["counts"]["train"] + manifest["counts"]["val"] >= 1
    code, out, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--no-decontam", "--out",
                                   str(tmp_path / "raw"))
    assert code == 0, err
    assert "skipped (--no-decontam" in out
    assert json.loads((tmp_path / "raw" / "manifest.json").read_text())["decontamination"]["enabled"] is False
