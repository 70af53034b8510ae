"""``flywheel export`` (curated CPT/SFT shards from the store) and ``flywheel stats`` (pass rates, failure taxonomy)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from flywheel.commands.tables import print_table, print_tables
from flywheel.curation import tables as _curation_tables  # noqa: F401 - registers clusters/contamination for SQL
from flywheel.store import DEFAULT_PATH, Store


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3g}"
    return "-" if value is None else str(value)


# Short headers: at 80 columns every header must stay readable; --format json keeps the long field names.
_PASS_COLUMNS = {"family": "family", "difficulty": "diff", "policy": "policy", "round": "round", "samples": "n",
                 "accepted": "acc", "pass_rate": "pass", "objective_match_rate": "obj ok", "exec_ok_rate": "exec ok",
                 "median_wall_s": "wall s", "median_solve_s": "solve s"}
_BOUNDARY_COLUMNS = {"policy": "policy", "family": "family", "attempts": "n", "pass": "pass", "code": "code",
                     "solver": "solver", "formulation": "formul.", "infra": "infra", "pass_rate": "pass rate",
                     "top_failures": "top failures"}


def _renamed(rows: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    return [{short: r.get(key) for key, short in names.items()} for r in rows]


def stats_tables(data: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[str]]]:
    """The tables of `flywheel stats` (three, plus measured difficulty and techniques when there are rows) as (title, rows, most important columns first)."""
    failures = [{"family": r["family"], "reason": r["reason"], "count": r["count"], "share": r["share_of_family"]}
                for r in data["failures"]]
    return [
        ("pass rates", _renamed(data["pass_rates"], _PASS_COLUMNS),
         ["family", "diff", "policy", "pass", "n", "round", "acc", "obj ok", "exec ok", "solve s", "wall s"]),
        ("failure taxonomy", failures, ["family", "reason", "count", "share"]),
        ("capability boundary (first failure along the pipeline)", _renamed(data["capability_boundary"],
                                                                           _BOUNDARY_COLUMNS),
         ["policy", "family", "n", "pass rate", "formul.", "solver", "code", "top failures", "infra", "pass"]),
    ] + [t for t in [
        ("pass rates by measured difficulty", [
            {"policy": r["policy"], "level": r["measured_level"], "n": r["samples"], "pass": r["pass_rate"],
             "knob": r["mean_knob"], "score": r["mean_measured"], "techniques": r["mean_techniques"]}
            for r in data.get("by_measured_level", [])],
         ["policy", "level", "pass", "n", "knob", "score", "techniques"]),
        ("pass rates by modelling technique", [
            {"policy": r["policy"], "technique": r["technique"], "n": r["samples"], "pass": r["pass_rate"]}
            for r in data.get("by_technique", [])], ["policy", "technique", "pass", "n"]),
    ] if t[1]]  # the measured-difficulty and technique tables, when the store has rows for them


def decontamination_summary(manifest: dict[str, Any]) -> str:
    """One line saying what decontamination did (or that it was skipped, as the manifest records)."""
    d = manifest["decontamination"]
    if not d["enabled"]:
        return "decontamination: skipped (--no-decontam, recorded in the manifest)"
    parts = []
    idx = d.get("contamination_index")
    if idx:
        parts.append(f"contamination index {idx['version']} ({'shipped' if idx['shipped'] else idx['path']}: "
                     f"{idx['items_used']} items of {len(idx['built_from'])} benchmarks)")
    if d["benchmarks"]:
        parts.append(f"pulled text of {', '.join(b['benchmark'] for b in d['benchmarks'])}")
    hits = manifest["counts"]["contamination_hits"]
    found = ", ".join(f"{k} {v}" for k, v in sorted(hits.items())) or "no hits"
    return (f"decontamination: {manifest['counts']['contaminated_samples']} samples dropped ({found}); checked "
            f"against {' + '.join(parts)}")


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        stage: str = typer.Option(..., "--stage", help="sft | cpt"),
        out: Path | None = typer.Option(None, "--out", help="output directory (train/val .parquet + .jsonl, "
                                        "manifest.json); default shards/STAGE-UTCTIME"),
        where: str | None = typer.Option(None, "--where", help="SQL predicate over the samples view (ANDed)"),
        suite: str | None = typer.Option(None, "--suite", help="select samples that pass this contract suite"),
        mix: Path | None = typer.Option(None, "--mix", help="TOML mixture file (weights, validation share, seed)"),
        store_path: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        benchmark: list[str] = typer.Option([], "--benchmark", help="benchmark card or folder to decontaminate "
                                            "against (repeatable; default: every cached card)"),
        no_decontam: bool = typer.Option(False, "--no-decontam", help="skip decontamination (recorded)"),
        index: Path | None = typer.Option(None, "--index", help="contamination index file (default: the one "
                                          "`flywheel datasets index` rebuilt into the cache, else the shipped one)"),
        include_rejected: bool = typer.Option(False, "--include-rejected", help="do not require accepted"),
        ngram: int = typer.Option(13, "--ngram", help="word n-gram length of the decontamination overlap test"),
        system: str | None = typer.Option(None, "--system", help="system message for SFT records"),
        template: str | None = typer.Option(None, "--template", help="SFT: render the prompt with this policy "
                                            "template (as `run-round --policy` sends it) instead of the bare question"),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace a non-empty output directory"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Select, dedup, decontaminate, split by cluster and mix samples into a training shard.

        Decontamination is on by default: against the contamination index shipped in the package (hashes of every
        carded benchmark) and the text of every pulled benchmark."""
        import datetime as dt

        from flywheel.curation.decontam import DecontamParams
        from flywheel.curation.export import ExportRequest, export_shard

        if out is None:
            out = Path("shards") / f"{stage}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S')}"
        req = ExportRequest(index_path=index,
            stage=stage, out=out, where=where, suite=suite, include_rejected=include_rejected, mix_file=mix,
            benchmarks=tuple(benchmark), decontaminate=not no_decontam, decontam=DecontamParams(n=ngram),
            system=system, template=template, overwrite=overwrite,
        )
        store = Store.open(store_path, create=False)
        try:
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                          console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("export", total=None)
                manifest = export_shard(store, req, progress=lambda msg: bar.update(task, description=msg))
        finally:
            store.close()
        if fmt == "json":
            typer.echo(json.dumps(manifest, indent=2))
            return
        counts = manifest["counts"]
        print_table([{"shard": manifest["shard_id"], "stage": stage, "selected": counts["selected"],
                      "clusters": counts["clusters"], "dups": counts["duplicates_dropped"],
                      "contam.": counts["contaminated_samples"], "train": counts["train"], "val": counts["val"],
                      "out": str(out)}],
                    title="export", priority=["shard", "train", "val", "contam.", "selected", "out", "dups",
                                              "clusters", "stage"])
        typer.echo(decontamination_summary(manifest))

    @app.command("stats")
    def stats(
        store_path: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Pass rates by family x difficulty x policy x round, solve times, and failure taxonomy per family."""
        from flywheel.curation.stats import compute_stats

        store = Store.open(store_path, create=False)
        try:
            data = compute_stats(store)
        finally:
            store.close()
        if fmt == "json":
            typer.echo(json.dumps(data, indent=2, default=str))
            return
        print_tables(stats_tables(data), fmt=fmt)
