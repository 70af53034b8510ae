"""``flywheel datasets list|pull|show``: benchmark cards, and fetching their test sets into the cache."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from flywheel import benchmarks
from flywheel.commands.tables import print_table


def register(app: typer.Typer) -> None:
    datasets_app = typer.Typer(help="Benchmark test sets: cards, pull into the cache, inspect.", no_args_is_help=True)

    @datasets_app.command("list")
    def list_(fmt: str = typer.Option("table", "--format", help="table | json")) -> None:
        """Every benchmark card, with whether it is cached."""
        rows = [
            {
                "name": c.name,
                "items": c.items,
                "licence": c.licence,
                "recommended_variant": c.recommended_variant,
                "cached": benchmarks.is_cached(c.name),
                "title": c.title,
            }
            for c in benchmarks.load_cards().values()
        ]
        if fmt == "json":
            typer.echo(json.dumps(rows, indent=2))
            return
        print_table([{"name": r["name"], "items": r["items"], "cached": r["cached"], "prefer": r["recommended_variant"],
                      "title": r["title"]} for r in rows], priority=["name", "items", "cached", "title", "prefer"])

    @datasets_app.command("pull")
    def pull(
        name: str = typer.Argument(..., help="benchmark card name (see `flywheel datasets list`)"),
        url: str | None = typer.Option(None, "--url", help="mirror of curated copies: fetches {url}/{name}/test.jsonl"),
        path: Path | None = typer.Option(None, "--path", help="local copy: a test.jsonl or a folder holding one"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Fetch a benchmark into the cache: by default the card's upstream file at its pinned commit (hash-checked,
        converted with the card's mapping); --url / --path take a curated copy that must match the card's sha256."""
        dest = benchmarks.pull(name, url=url, path=path)
        items = benchmarks.load_benchmark(name)
        source = benchmarks.cache_source(name)
        summary = {"name": name, "items": len(items), "sha256": source.get("test_sha256"), "path": str(dest),
                   **{k: v for k, v in source.items() if k not in ("test_sha256", "items")}}
        if fmt == "json":
            typer.echo(json.dumps(summary, indent=2))
            return
        upstream = source.get("upstream_sha256")
        rows = [{"name": name, "items": len(items), "origin": source.get("origin", "?"),
                 "upstream sha256": upstream[:12] if upstream else "-",
                 "pinned by": source.get("upstream_sha256_pinned_by", "-"), "cached at": str(dest)}]
        print_table(rows, title="pull", priority=["name", "items", "origin", "upstream sha256", "pinned by",
                                                  "cached at"])
        if source.get("origin") == "upstream" and source.get("items") != source.get("card_items"):
            typer.echo(f"note: {source.get('items')} items from upstream, the card's curated copy has "
                       f"{source.get('card_items')}", err=True)

    @datasets_app.command("show")
    def show(
        name: str = typer.Argument(..., help="benchmark card name"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Print a benchmark card."""
        card = benchmarks.get_card(name)
        data = card.model_dump(mode="json")
        if fmt == "json":
            typer.echo(json.dumps(data, indent=2))
            return
        print_table([{"field": key, "value": value if isinstance(value, str) else json.dumps(value)}
                     for key, value in data.items()])

    @datasets_app.command("index")
    def index(
        sources: list[str] = typer.Option([], "--from", help="card name or benchmark folder (repeatable; default: "
                                          "every pulled benchmark)"),
        out: Path | None = typer.Option(None, "--out", help="index file (default: the cache's, which `flywheel "
                                        "export` then prefers to the shipped one)"),
        ngram: int = typer.Option(13, "--ngram", help="word n-gram length (export's --ngram must match)"),
        fmt: str = typer.Option("table", "--format", help="table | json | csv"),
    ) -> None:
        """Rebuild the contamination index (hashes only, no question text) from pulled benchmarks or folders."""
        from flywheel.curation.contam_index import build_index, index_sources, load_index, user_index_path
        from flywheel.curation.decontam import DecontamParams
        from flywheel.store.files import atomic_write_bytes

        dest = out or user_index_path()
        atomic_write_bytes(dest, build_index(index_sources(sources), DecontamParams(n=ngram)))
        info = load_index(dest).describe()
        rows = [{"benchmark": b["benchmark"], "items": b["items"], "items sha256": b["items_sha256"][:12]}
                for b in info["built_from"]]
        print_table(rows, fmt=fmt, title=f"contamination index {info['version']} ({dest.stat().st_size / 1e6:.2f} "
                    f"MB) at {dest}")

    app.add_typer(datasets_app, name="datasets")
