"""The contamination index shipped inside the package: decontamination on a machine with no benchmark pulled.

``contamination_index.npz`` (beside this module) holds, for every item of every carded benchmark, only hashes: the
64-bit hashes of its word n-grams, of its number tokens and of its normalised question, and its MinHash signature,
with the benchmark name and item id. No question text. ``DecontamIndex.add_hashed`` turns those rows back into an
index that flags copies (n-grams) and paraphrases (MinHash + numbers) exactly as the text-built index would.

The index *version* is the sha256 of its arrays; ``flywheel export`` records it in the shard manifest.
``flywheel datasets index`` rebuilds the index from pulled benchmarks (or from folders) into the cache, where it
takes precedence over the shipped one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from flywheel import benchmarks
from flywheel.curation.decontam import DecontamIndex, DecontamParams, text_hashes
from flywheel.curation.near import signatures
from solvers.errors import FlywheelError

SHIPPED = Path(__file__).resolve().parent / "contamination_index.npz"
INDEX_FILE = "contamination_index.npz"
INDEX_ENV = "FLYWHEEL_CONTAMINATION_INDEX"  # an explicit index file (overrides the cache's and the shipped one)
FORMAT = 1


class ContaminationIndexError(FlywheelError):
    """The contamination index is missing, unreadable, or built with other parameters."""


def user_index_path() -> Path:
    return benchmarks.cache_dir() / INDEX_FILE


def default_index_path() -> Path | None:
    """Which index ``export`` uses: ``$FLYWHEEL_CONTAMINATION_INDEX``, else one rebuilt into the cache, else the
    shipped one (None only if the package was installed without its data)."""
    env = os.environ.get(INDEX_ENV)
    if env:
        return Path(env)
    for path in (user_index_path(), SHIPPED):
        if path.is_file():
            return path
    return None


def build_index(sources: Iterable[tuple[str, Sequence[tuple[str, str]]]], params: DecontamParams) -> bytes:
    """The ``.npz`` bytes of an index over ``(benchmark, [(item id, question), ...])``; deterministic."""
    names: list[str] = []
    item_bench: list[int] = []
    item_ids: list[str] = []
    keys: list[int] = []
    n_grams: list[int] = []
    gram_hash: list[int] = []
    gram_item: list[int] = []
    num_hash: list[int] = []
    num_offsets = [0]
    sigs: list[np.ndarray] = []
    built_from: list[dict[str, Any]] = []
    for bench, items in sources:
        names.append(bench)
        digest = hashlib.sha256()
        batch = signatures([q for _, q in items], params.near_params)  # one batch: same rows as one at a time
        for (item_id, question), sig in zip(items, batch, strict=True):
            grams, numbers, key = text_hashes(question, params.n)
            row = len(item_ids)
            item_bench.append(len(names) - 1)
            item_ids.append(item_id)
            keys.append(key)
            n_grams.append(len(grams))
            gram_hash.extend(grams)
            gram_item.extend([row] * len(grams))
            num_hash.extend(numbers)
            num_offsets.append(len(num_hash))
            sigs.append(sig)
            digest.update(f"{item_id}\t{question}\n".encode())
        built_from.append({"benchmark": bench, "items": len(items), "items_sha256": digest.hexdigest()})
    order = np.argsort(np.array(gram_hash, dtype=np.uint64), kind="stable")  # sorted hashes compress better
    meta = {"format": FORMAT, "n": params.n, "near": params.near_params.model_dump(mode="json"),
            "built_from": built_from}
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8),
        benchmarks=np.frombuffer("\n".join(names).encode(), dtype=np.uint8),
        item_ids=np.frombuffer("\n".join(item_ids).encode(), dtype=np.uint8),
        item_bench=np.array(item_bench, dtype=np.uint16),
        question_key=np.array(keys, dtype=np.uint64),
        n_grams=np.array(n_grams, dtype=np.uint32),
        gram_hash=np.array(gram_hash, dtype=np.uint64)[order],
        gram_item=np.array(gram_item, dtype=np.uint16 if len(item_ids) < 2**16 else np.uint32)[order],
        num_hash=np.array(num_hash, dtype=np.uint64),
        num_offsets=np.array(num_offsets, dtype=np.uint32),
        signatures=np.stack(sigs) if sigs else np.zeros((0, params.near_params.num_perm), dtype=np.uint32),
    )
    return buf.getvalue()


class LoadedIndex:
    """A contamination index file: its version (sha256), what it was built from, and its rows."""

    def __init__(self, path: Path) -> None:
        try:
            raw = path.read_bytes()
            with np.load(io.BytesIO(raw)) as z:
                self._arrays = {k: z[k] for k in z.files}
            self.meta: dict[str, Any] = json.loads(self._arrays["meta"].tobytes())
        except (OSError, ValueError, KeyError) as exc:
            raise ContaminationIndexError(f"cannot read the contamination index: {exc}", culprit=str(path)) from None
        if self.meta.get("format") != FORMAT:
            raise ContaminationIndexError(f"index format {self.meta.get('format')} is not {FORMAT}; rebuild it with "
                                          "`flywheel datasets index`", culprit=str(path))
        self.path = path
        # The version hashes the arrays, not the file: a zip records write times, so rebuilding identical content
        # gives other bytes but the same version.
        content = hashlib.sha256()
        for name in sorted(self._arrays):
            content.update(name.encode() + b"\0" + self._arrays[name].tobytes())
        self.sha256 = content.hexdigest()
        self.benchmarks = self._arrays["benchmarks"].tobytes().decode().split("\n")
        self.item_ids = self._arrays["item_ids"].tobytes().decode().split("\n")

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "sha256": self.sha256, "version": self.sha256[:16],
                "shipped": self.path.resolve() == SHIPPED, "items": len(self.item_ids),
                "built_from": self.meta["built_from"]}

    def add_to(self, index: DecontamIndex, skip: Iterable[str] = ()) -> int:
        """Add every item (except those of benchmarks in ``skip``) to ``index``; returns how many were added.

        The index must have been built with the same n-gram length and MinHash parameters as ``index`` uses:
        hashes of 13-grams say nothing about 8-grams.
        """
        near = index.params.near_params.model_dump(mode="json")
        if self.meta["n"] != index.params.n or any(self.meta["near"].get(k) != near[k]
                                                   for k in ("shingle", "num_perm", "seed")):
            raise ContaminationIndexError(
                f"the index was built with n={self.meta['n']} and MinHash {self.meta['near']}, not n={index.params.n}; "
                "rebuild it with `flywheel datasets index --ngram N` or pass --no-decontam", culprit=str(self.path))
        a = self._arrays
        skipped = set(skip)
        grams: dict[int, list[int]] = {}
        for h, item in zip(a["gram_hash"].tolist(), a["gram_item"].tolist(), strict=True):
            grams.setdefault(item, []).append(h)
        offsets = a["num_offsets"].tolist()
        numbers = a["num_hash"].tolist()
        added = 0
        for row, item_id in enumerate(self.item_ids):
            bench = self.benchmarks[int(a["item_bench"][row])]
            if bench in skipped:
                continue
            index.add_hashed(bench, item_id, grams.get(row, []), numbers[offsets[row]:offsets[row + 1]],
                             int(a["question_key"][row]), a["signatures"][row])
            added += 1
        return added


def load_index(path: Path | None = None) -> LoadedIndex:
    path = path or default_index_path()
    if path is None or not path.is_file():
        raise ContaminationIndexError("no contamination index: rebuild one with `flywheel datasets index`, or pass "
                                      "--no-decontam", culprit=str(path or SHIPPED))
    return LoadedIndex(path)


def index_sources(names_or_paths: Sequence[str] | None = None) -> list[tuple[str, list[tuple[str, str]]]]:
    """(benchmark, [(id, question)]) for every pulled card, or for the given card names / folders."""
    chosen = list(names_or_paths or [n for n in benchmarks.load_cards() if benchmarks.is_cached(n)])
    if not chosen:
        raise ContaminationIndexError("no benchmark is pulled: run `flywheel datasets pull NAME` first, or pass "
                                      "folders with --from", culprit=str(benchmarks.cache_dir()))
    out = []
    for name in chosen:
        items = benchmarks.load_benchmark(name)
        out.append((items[0].benchmark if items else Path(name).name, [(i.id, i.question) for i in items]))
    return out
