"""``flywheel export`` (curated CPT/SFT shards from the store) and ``flywheel stats`` (pass rates, failure taxonomy)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from flywheel.curation import tables as _curation_tables  # noqa: F401 - registers clusters/contamination for SQL
from flywheel.store import DEFAULT_PATH, Store


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3g}"
    return "-" if value is None else str(value)


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        stage: str = typer.Option(..., "--stage", help="sft | cpt"),
        out: Path = typer.Option(..., "--out", help="output directory (train/val .parquet + .jsonl, manifest.json)"),
        where: str | None = typer.Option(None, "--where", help="SQL predicate over the samples view (ANDed)"),
        suite: str | None = typer.Option(None, "--suite", help="select samples that pass this contract suite"),
        mix: Path | None = typer.Option(None, "--mix", help="TOML mixture file (weights, validation share, seed)"),
        store_path: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        benchmark: list[str] = typer.Option([], "--benchmark", help="benchmark card or folder to decontaminate "
                                            "against (repeatable; default: every cached card)"),
        no_decontam: bool = typer.Option(False, "--no-decontam", help="skip decontamination (recorded)"),
        include_rejected: bool = typer.Option(False, "--include-rejected", help="do not require accepted"),
        ngram: int = typer.Option(13, "--ngram", help="word n-gram length of the decontamination overlap test"),
        system: str | None = typer.Option(None, "--system", help="system message for SFT records"),
        template: str | None = typer.Option(None, "--template", help="SFT: render the prompt with this policy "
                                            "template (as `run-round --policy` sends it) instead of the bare question"),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace a non-empty output directory"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Select, dedup, decontaminate, split by cluster and mix samples into a training shard."""
        from flywheel.curation.decontam import DecontamParams
        from flywheel.curation.export import ExportRequest, export_shard

        req = ExportRequest(
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
        table = Table("shard", "stage", "selected", "clusters", "duplicates", "contaminated", "train", "val", "out",
                      title="export")
        table.add_row(manifest["shard_id"], stage, str(counts["selected"]), str(counts["clusters"]),
                      str(counts["duplicates_dropped"]), str(counts["contaminated_samples"]), str(counts["train"]),
                      str(counts["val"]), str(out))
        Console().print(table)

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
        console = Console()
        rates = Table("family", "diff", "policy", "round", "samples", "accepted", "pass", "obj match", "exec ok",
                      "median wall s", "median solve s", title="pass rates")
        for r in data["pass_rates"]:
            rates.add_row(*(_fmt(r[k]) for k in ("family", "difficulty", "policy", "round", "samples", "accepted",
                                                 "pass_rate", "objective_match_rate", "exec_ok_rate", "median_wall_s",
                                                 "median_solve_s")))
        console.print(rates)
        measured = Table("policy", "level", "samples", "pass", "mean knob", "mean score", "techniques",
                         title="pass rates by measured difficulty")
        for r in data["by_measured_level"]:
            measured.add_row(*(_fmt(r[k]) for k in ("policy", "measured_level", "samples", "pass_rate", "mean_knob",
                                                    "mean_measured", "mean_techniques")))
        console.print(measured)
        techniques = Table("policy", "technique", "samples", "pass", title="pass rates by modelling technique")
        for r in data["by_technique"]:
            techniques.add_row(*(_fmt(r[k]) for k in ("policy", "technique", "samples", "pass_rate")))
        console.print(techniques)
        failures = Table("family", "reason", "count", "share of family", title="failure taxonomy")
        for r in data["failures"]:
            failures.add_row(r["family"], r["reason"], str(r["count"]), _fmt(r["share_of_family"]))
        console.print(failures)
        boundary = Table("policy", "family", "attempts", "pass", "code", "solver", "formulation", "infra",
                         "pass rate", "top failures", title="capability boundary (first failure along the pipeline)")
        for r in data["capability_boundary"]:
            boundary.add_row(r["policy"], r["family"], *(str(r[k]) for k in ("attempts", "pass", "code", "solver",
                                                                              "formulation", "infra")),
                             _fmt(r["pass_rate"]), r["top_failures"])
        console.print(boundary)
