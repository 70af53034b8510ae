"""``flywheel sql "SELECT ..."``: query a store's views; print a table, CSV or JSON, or write Parquet."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import typer
from rich.console import Console

from flywheel.commands.tables import render_table
from flywheel.store import DEFAULT_PATH, Store
from solvers.errors import ConfigError, StoreError

FORMATS = ("table", "csv", "json", "parquet")


def register(app: typer.Typer) -> None:
    @app.command("sql")
    def sql(
        query: str = typer.Argument(..., help="SQL over the views: problems, attempts, executions, solves, "
                                              "verdicts, repairs, disputes, samples, rounds, shards, ..."),
        store: Path = typer.Option(Path(DEFAULT_PATH), "--store", help="store directory"),
        fmt: str = typer.Option("table", "--format", help="table | csv | json | parquet"),
        out: Path | None = typer.Option(None, "--out", help="write the result to this file instead of stdout"),
        max_width: int = typer.Option(60, "--max-width", help="truncate cells longer than this in table format"),
    ) -> None:
        """Run one SQL query against the store (read-only; safe while a round is writing)."""
        if fmt not in FORMATS:
            raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", culprit="--format")
        if fmt == "parquet" and out is None:
            raise ConfigError("parquet output needs --out FILE", culprit="--format")
        with Store.open(store, create=False) as st:
            result = st.query(query)
        write_result(result, fmt, out, max_width)


def write_result(result: pa.Table, fmt: str, out: Path | None, max_width: int = 60) -> None:
    """Render an Arrow result in ``fmt`` to ``out`` (or stdout)."""
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the output directory: {exc.strerror}", culprit=str(out)) from None
    if fmt == "parquet":
        pq.write_table(result, out)  # type: ignore[arg-type]
        return
    if fmt == "csv":
        buf = io.BytesIO()
        pacsv.write_csv(_flat(result), buf)
        _emit(buf.getvalue().decode(), out)
    elif fmt == "json":
        _emit(json.dumps(result.to_pylist(), default=str, indent=1) + "\n", out)
    else:
        # Long values are cut at --max-width on purpose (a SQL result can hold whole programs); the column layout
        # itself is fitted to the terminal by the shared helper (--format csv/json print everything).
        rows = [{c: _cell(v, max_width) for c, v in zip(result.column_names, row.values(), strict=True)}
                for row in result.to_pylist()]
        if out is not None:
            console = Console(file=io.StringIO(), width=200)
            render_table(rows, console, columns=result.column_names)
            _emit(console.file.getvalue(), out)  # type: ignore[attr-defined]
        else:
            render_table(rows, Console(width=None if sys.stdout.isatty() else 200), columns=result.column_names)
            Console(stderr=True).print(f"[dim]{result.num_rows} row(s)[/]")


def _flat(table: pa.Table) -> pa.Table:
    """CSV cannot hold nested values: turn lists and structs into JSON text."""
    cols = []
    for col in table.columns:
        if pa.types.is_nested(col.type):
            col = pa.array([None if v is None else json.dumps(v, default=str) for v in col.to_pylist()], pa.string())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def _cell(value: object, max_width: int) -> str:
    text = "NULL" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))
    text = text.replace("\n", "⏎")
    return text if len(text) <= max_width else text[: max_width - 1] + "…"


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
