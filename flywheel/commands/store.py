"""``flywheel store check`` (integrity) and ``flywheel store info`` (tables, parts, rows, size)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from flywheel.store import DEFAULT_PATH, TABLES, Store
from flywheel.store.check import check_store
from solvers.errors import StoreError


def register(app: typer.Typer) -> None:
    store_app = typer.Typer(help="Inspect and verify a sample store.", no_args_is_help=True)

    @store_app.command("check")
    def check(
        store: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
        quarantine: bool = typer.Option(True, "--quarantine/--no-quarantine",
                                        help="record corrupt parts so the views skip them"),
    ) -> None:
        """Verify schema version, every part's bytes, sha256, row count and column types against its manifest."""
        with Store.open(store, create=False) as st:
            report = check_store(st, quarantine=quarantine)
        if fmt == "json":
            typer.echo(json.dumps({"schema_version": report.schema_version, "tables": report.tables,
                                   "findings": [f.__dict__ for f in report.findings],
                                   "quarantined": report.quarantined, "ok": report.ok}, indent=1))
        else:
            console = Console()
            render_table([{"table": name, "parts": stats["parts"], "rows": stats["rows"]}
                          for name, stats in sorted(report.tables.items())], console,
                         title=f"store {store} (schema v{report.schema_version})")
            for f in report.findings:
                colour = "red" if f.severity == "error" else "yellow"
                console.print(f"[{colour}]{f.severity}[/]: {f.path}: {f.problem}", highlight=False)
            if report.quarantined:
                console.print(f"quarantined {len(report.quarantined)} part(s); the views skip them")
            if report.ok:
                console.print("[green]ok[/]: every part matches its manifest")
        if not report.ok:
            first = report.errors[0]
            raise StoreError(f"{len(report.errors)} corrupt or missing part(s), first: {first.problem}",
                             culprit=first.path)

    @store_app.command("info")
    def info(
        store: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        fmt: str = typer.Option("table", "--format", help="table | json"),
    ) -> None:
        """Tables with their parts, rows and a one-line description, and the store's size on disk."""
        with Store.open(store, create=False) as st:
            rows = [{"table": name, "parts": len(st.parts(name)), "rows": sum(p.rows for p in st.parts(name)),
                     "key": ",".join(spec.key), "doc": spec.doc} for name, spec in TABLES.items()]
            size = st.size_bytes()
        if fmt == "json":
            typer.echo(json.dumps({"tables": rows, "bytes": size}, indent=1))
            return
        render_table([{"table": r["table"], "parts": r["parts"], "rows": r["rows"], "key": r["key"],
                       "what a row is": r["doc"]} for r in rows], Console(),
                     title=f"{store}: {size / 1e6:.1f} MB", priority=["table", "rows", "what a row is", "key"])

    app.add_typer(store_app, name="store")
