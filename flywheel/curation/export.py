"""Export curated training shards from the store: select, dedup, decontaminate, split by cluster, mix, write.

``export_shard`` is the whole pipeline; ``flywheel export`` is its command line. The output directory holds
``train.parquet`` / ``val.parquet`` (Hugging Face ``datasets`` loads them as they are), their ``.jsonl`` twins, and
``manifest.json`` (counts, file hashes and the exact selection). The store gets a ``shards`` row plus the
``clusters`` and ``contamination`` rows of this export, so every dropped sample can be traced to its reason.

Representative rule (one sample per cluster): accepted first, then objective match, then the earliest round, then
the smallest problem id, sample index and attempt id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from flywheel import benchmarks
from flywheel.curation import tables
from flywheel.curation.cluster import Cluster, DedupItem, DedupParams, cluster_items
from flywheel.curation.contam_index import load_index
from flywheel.curation.decontam import BenchmarkHit, DecontamIndex, DecontamParams
from flywheel.curation.formats import STAGES, build_row
from flywheel.curation.mix import MixSpec, load_mix, repeats, split_clusters
from flywheel.curation.structural import DEFAULT_HASHER, structural_hash
from flywheel.store import Store
from solvers.errors import FlywheelError, unknown_name
from solvers.ir import Model

REPRESENTATIVE_RULE = "accepted, then objective_match, then earliest round, then problem_id, sample_index, attempt_id"
SPLIT_RULE = "per cluster: sha256(seed:smallest problem_id of the cluster) < validation share"

_LINEAGE_TYPES = {
    "problem_id": pa.string(), "family": pa.string(), "source": pa.string(), "attempt_id": pa.string(),
    "policy": pa.string(), "api": pa.string(), "difficulty": pa.int64(), "round": pa.int64(),
    "cluster_id": pa.string(),
}
_MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
SCHEMAS = {
    "sft": pa.schema([("messages", _MESSAGES), *_LINEAGE_TYPES.items()]),
    "cpt": pa.schema([("text", pa.string()), *_LINEAGE_TYPES.items()]),
}


class ExportError(FlywheelError):
    """An export cannot run (bad selection, nothing selected, output directory in the way)."""


class ExportRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: str
    out: Path
    where: str | None = None
    suite: str | None = None
    include_rejected: bool = False
    mix_file: Path | None = None
    benchmarks: tuple[str, ...] = ()  # card names or paths; empty = every cached card
    decontaminate: bool = True
    contamination_index: bool = True  # also check the contamination index (shipped, or rebuilt into the cache)
    index_path: Path | None = None  # an explicit index file instead of the default one
    dedup: DedupParams = Field(default_factory=DedupParams)
    decontam: DecontamParams = Field(default_factory=DecontamParams)
    system: str | None = None
    template: str | None = None  # SFT: render system/user turns with this policy prompt template (see formats)
    overwrite: bool = False


def selection_sql(req: ExportRequest) -> tuple[str, list[Any]]:
    """The SQL (and parameters) that selects the candidate samples; recorded verbatim in the manifest."""
    clauses, params = [], []
    if req.suite:
        clauses.append(
            # The contract engine's acceptance rule (the store's verdict_summary), restricted to one suite.
            "attempt_id IN (SELECT attempt_id FROM verdicts WHERE suite = ? GROUP BY attempt_id "
            "HAVING NOT bool_or(severity = 'reject' AND outcome = 'fail') "
            "AND NOT bool_or(coalesce(dispute, '') <> '')) AND NOT disputed"
        )
        params.append(req.suite)
    elif not req.include_rejected:
        clauses.append("accepted")
    if req.where:
        clauses.append(f"({req.where})")
    where = " AND ".join(clauses) or "true"
    sql = (
        "SELECT * FROM (SELECT s.*, p.ir_json FROM samples s JOIN problems p USING (problem_id)) "
        f"WHERE {where} ORDER BY round, problem_id, sample_index, attempt_id"
    )
    return sql, params


def _rank(row: dict[str, Any]) -> tuple:
    return (not row.get("accepted"), not row.get("objective_match"), row.get("round") or 0, row["problem_id"],
            row.get("sample_index") or 0, row["attempt_id"])


def _structural_hashes(rows: Sequence[dict[str, Any]]) -> list[str | None]:
    cache: dict[str, str | None] = {}
    out = []
    for row in rows:
        text = row.get("ir_json")
        if not text:
            out.append(None)
            continue
        if text not in cache:
            try:
                cache[text] = structural_hash(Model.model_validate_json(text))
            except Exception:  # noqa: BLE001 - a model the hasher cannot read is simply not structurally deduped
                cache[text] = None
        out.append(cache[text])
    return out


def load_decontam_index(
    names: Sequence[str], params: DecontamParams, use_index: bool = True, index_path: Path | None = None
) -> tuple[DecontamIndex, list[dict[str, Any]], dict[str, Any] | None]:
    """The decontamination index: every requested benchmark's text (card name or path; none = every cached card)
    with its reference models, plus the contamination index's hashed items for every other benchmark.

    Returns the index, what each text-level benchmark contributed, and the contamination index used (None if off).
    A benchmark present as text is skipped in the hashed index: its text-level checks supersede the hashes.
    """
    if not names:
        names = [n for n in benchmarks.load_cards() if benchmarks.is_cached(n)]
    index = DecontamIndex(params)
    used = []
    for name in names:
        items = benchmarks.load_benchmark(name)
        models = benchmarks.load_reference_models(name)
        label = items[0].benchmark if items else Path(name).name
        for item in items:
            model = models.get(item.id)
            index.add(label, item.id, item.question, structural_hash(model) if model else None)
        digest = hashlib.sha256("\n".join(f"{i.id}\t{i.question}" for i in items).encode()).hexdigest()
        used.append({"benchmark": label, "source": str(name), "items": len(items), "reference_models": len(models),
                     "items_sha256": digest})
    index_used = None
    if use_index:
        loaded = load_index(index_path)
        added = loaded.add_to(index, skip=[u["benchmark"] for u in used])
        index_used = {**loaded.describe(), "items_used": added}
    if not len(index):
        raise ExportError(
            "nothing to decontaminate against: run `flywheel datasets pull NAME` or `flywheel datasets index`, pass "
            "--benchmark PATH, or --no-decontam to export without it",
            culprit="export",
        )
    return index, used, index_used


def export_shard(store: Store, req: ExportRequest, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the export; returns the manifest (also written to ``out/manifest.json``)."""
    say = progress or (lambda _msg: None)
    if req.stage not in STAGES:
        raise unknown_name("export stage", req.stage, list(STAGES))
    mix: MixSpec = load_mix(req.mix_file)
    _check_out(req.out, req.overwrite)
    if req.suite:
        suites = [r["suite"] for r in store.query("SELECT DISTINCT suite FROM verdicts ORDER BY 1").to_pylist()]
        if req.suite not in suites:
            raise unknown_name("contract suite (in this store's verdicts)", req.suite, suites)

    # The export ends by writing shards/clusters rows; a store another process is writing would refuse them only
    # after all the work, so ask for the writer lock now and fail fast (it is released at once: a round may
    # continue while the export reads its snapshot).
    with store.lock():
        pass

    say("selecting samples")
    sql, params = selection_sql(req)
    rows = store.query(sql, params).to_pylist()
    if not rows:
        raise ExportError("the selection matched no samples", culprit=req.where or req.suite or "accepted samples")

    say(f"dedup over {len(rows)} samples")
    hashes = _structural_hashes(rows)
    items = [DedupItem(r["attempt_id"], r["problem_id"], r.get("question") or "", h, _rank(r))
             for r, h in zip(rows, hashes, strict=True)]
    clusters, joins = cluster_items(items, req.dedup)

    hits: list[list[BenchmarkHit]] = [[] for _ in rows]
    bench_used: list[dict[str, Any]] = []
    index_used: dict[str, Any] | None = None
    if req.decontaminate:
        say("decontamination")
        index, bench_used, index_used = load_decontam_index(req.benchmarks, req.decontam, req.contamination_index,
                                                            req.index_path)
        hits = index.check_many([it.text for it in items], hashes)
    row_of = {r["attempt_id"]: i for i, r in enumerate(rows)}
    clean = [c for c in clusters if not any(hits[row_of[k]] for k in c.members)]
    contaminated = [c for c in clusters if any(hits[row_of[k]] for k in c.members)]

    say("split and mix")
    val_flags = split_clusters([c.split_key for c in clean], mix.validation, mix.seed)
    rng = np.random.default_rng(mix.seed)
    split_of: dict[str, str] = {}
    train_rows, val_rows = [], []
    for cluster, is_val in zip(clean, val_flags, strict=True):
        rep = dict(rows[row_of[cluster.representative]], cluster_id=cluster.cluster_id)
        (val_rows if is_val else train_rows).append(rep)
        split_of[cluster.representative] = "validation" if is_val else "train"
    copies = repeats(train_rows, mix.weights, rng)
    train_out = [build_row(req.stage, r, req.system, req.template)
                 for r, n in zip(train_rows, copies, strict=True) for _ in range(n)]
    val_out = [build_row(req.stage, r, req.system, req.template) for r in val_rows]

    say("writing shard")
    files = _write_files(req, {"train": train_out, "val": val_out})
    shard_id = hashlib.sha256(
        json.dumps([req.stage, {k: v["sha256"] for k, v in sorted(files.items())}]).encode()
    ).hexdigest()[:16]
    counts = {
        "selected": len(rows),
        "clusters": len(clusters),
        "duplicates_dropped": len(rows) - len(clusters),
        "joins": joins,
        "contaminated_clusters": len(contaminated),
        "contaminated_samples": sum(len(c.members) for c in contaminated),
        "contamination_hits": dict(Counter(h.kind for hs in hits for h in hs)),
        "train_clusters": len(train_rows),
        "val_clusters": len(val_rows),
        "train": len(train_out),
        "val": len(val_out),
        "train_by_family": dict(Counter(r["family"] for r in train_out)),
    }
    manifest = {
        "shard_id": shard_id,
        "stage": req.stage,
        "created_at": dt.datetime.now(dt.UTC).isoformat(),
        "store": str(store.root),
        "selection": {"sql": sql, "params": params, "where": req.where, "suite": req.suite,
                      "include_rejected": req.include_rejected},
        "mix": {"file": str(req.mix_file) if req.mix_file else None,
                "file_sha256": benchmarks.sha256_file(req.mix_file) if req.mix_file else None,
                "spec": mix.model_dump(mode="json")},
        "dedup": {**req.dedup.model_dump(mode="json"), "structural_hasher": DEFAULT_HASHER,
                  "representative_rule": REPRESENTATIVE_RULE},
        "split": {"rule": SPLIT_RULE, "validation": mix.validation, "seed": mix.seed},
        "decontamination": {"enabled": req.decontaminate, **req.decontam.model_dump(mode="json"),
                            "benchmarks": bench_used, "contamination_index": index_used},
        "system_prompt": req.system,
        "prompt_template": req.template,
        "counts": counts,
        "files": files,
        "columns": SCHEMAS[req.stage].names,
    }
    (req.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    say("recording in the store")
    round_ = max(int(r.get("round") or 0) for r in rows)
    _record(store, round_, req.out.absolute(), manifest, rows, clusters, contaminated, split_of, hits)
    return manifest


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ExportError("exists and is not a directory", culprit=str(out))
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ExportError("output directory is not empty (pass --overwrite to replace it)", culprit=str(out))


def _write_files(req: ExportRequest, splits: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Write every file into a temporary sibling directory, then move it into place: a crash leaves no half shard."""
    out = req.out.absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    files: dict[str, dict[str, Any]] = {}
    try:
        for split, records in splits.items():
            table = pa.Table.from_pylist(records, schema=SCHEMAS[req.stage])
            pq.write_table(table, tmp / f"{split}.parquet", compression="zstd")
            with (tmp / f"{split}.jsonl").open("w", encoding="utf-8") as f:
                for rec in records:
                    f.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            for suffix in ("parquet", "jsonl"):
                path = tmp / f"{split}.{suffix}"
                files[path.name] = {"rows": len(records), "bytes": path.stat().st_size,
                                    "sha256": benchmarks.sha256_file(path)}
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return files


def _record(store: Store, round_: int, out: Path, manifest: dict[str, Any], rows: list[dict[str, Any]],
            clusters: list[Cluster], contaminated: list[Cluster], split_of: dict[str, str],
            hits: list[list[BenchmarkHit]]) -> None:
    shard_id = manifest["shard_id"]
    contaminated_ids = {c.cluster_id for c in contaminated}
    problem_of = {r["attempt_id"]: r["problem_id"] for r in rows}
    cluster_rows = []
    for c in clusters:
        for k in c.members:
            where = "contaminated" if c.cluster_id in contaminated_ids else split_of.get(k, "duplicate")
            cluster_rows.append({
                "shard_id": shard_id, "attempt_id": k, "problem_id": problem_of[k], "cluster_id": c.cluster_id,
                "representative": k == c.representative, "cluster_size": len(c.members),
                "reasons": ",".join(sorted(c.reasons)), "split": where,
            })
    hit_rows = [
        {"shard_id": shard_id, "attempt_id": r["attempt_id"], "problem_id": r["problem_id"], "benchmark": h.benchmark,
         "item_id": h.item_id, "kind": h.kind, "shared_ngrams": h.shared_ngrams, "overlap": h.overlap}
        for r, hs in zip(rows, hits, strict=True) for h in hs
    ]
    with store.lock():
        store.write(tables.CLUSTERS.name, round_, cluster_rows)
        if hit_rows:
            store.write(tables.CONTAMINATION.name, round_, hit_rows)
        store.write("shards", round_, [{
            "shard_id": shard_id, "stage": manifest["stage"], "path": str(out),
            "selection": json.dumps(manifest["selection"], sort_keys=True),
            "counts_json": json.dumps(manifest["counts"], sort_keys=True),
            "hashes_json": json.dumps({k: v["sha256"] for k, v in manifest["files"].items()}, sort_keys=True),
            "manifest_json": json.dumps(manifest, sort_keys=True),
        }])

