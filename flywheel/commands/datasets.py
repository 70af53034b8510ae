"""``flywheel datasets list|pull|show``: benchmark cards, and fetching their test sets into the cache."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from flywheel import benchmarks


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
        table = Table("name", "items", "cached", "recommended variant", "title")
        for r in rows:
            table.add_row(r["name"], str(r["items"]), "yes" if r["cached"] else "no", r["recommended_variant"],
                          r["title"])
        Console().print(table)

    @datasets_app.command("pull")
    def pull(
        name: str = typer.Argument(..., help="benchmark card name (see `flywheel datasets list`)"),
        url: str | None = typer.Option(None, "--url", help="base URL; fetches {url}/{name}/test.jsonl"),
        path: Path | None = typer.Option(None, "--path", help="local copy: a test.jsonl or a folder holding one"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Download (or copy) a benchmark into the cache; the file is kept only if its sha256 matches the card."""
        dest = benchmarks.pull(name, url=url, path=path)
        items = benchmarks.load_benchmark(name)
        summary = {"name": name, "items": len(items), "sha256": benchmarks.get_card(name).sha256, "path": str(dest)}
        if fmt == "json":
            typer.echo(json.dumps(summary, indent=2))
            return
        table = Table("name", "items", "sha256", "cached at")
        table.add_row(name, str(len(items)), summary["sha256"][:16] + "…", str(dest))
        Console().print(table)

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
        table = Table("field", "value")
        for key, value in data.items():
            table.add_row(key, value if isinstance(value, str) else json.dumps(value))
        Console().print(table)

    app.add_typer(datasets_app, name="datasets")
