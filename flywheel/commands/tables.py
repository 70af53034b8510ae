"""One way to print a table from the CLI: readable at 80 columns, full width as ``--format json|csv``.

Rich, asked to fit a table into a narrow terminal, shrinks every column below its content and truncates cells to
stubs ("ass…", "ref…"), headers included. ``print_table`` avoids that: each column gets a width it may not shrink
below (the longest number for a numeric column; the longest word, capped, for a text column, which folds onto more
lines instead of being cut), and when the columns do not fit at those widths the lowest-priority ones are dropped,
with a note naming them and pointing at ``--format json`` / ``--format csv``, which always carry every column.

Rows are dicts (column name -> value); the column order is the first row's key order unless ``columns`` says
otherwise, and ``priority`` lists the most important columns first (unlisted columns rank after them, in order).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

FORMATS = ("table", "json", "csv")
# A text column may fold onto more lines but never narrower than this (or its longest word, if shorter): a 12-wide
# column still shows "objective_mismatch" on two lines, where Rich's own squeeze would print "obj…".
TEXT_MIN = 12
KEY_COLUMNS = 2  # the most important columns (by priority) keep their longest word whole
_BORDER = 3  # per column: one padding space each side plus the vertical rule (Rich's default box)


def cell(value: Any) -> str:
    """The display string of a value: floats to 3 significant digits, None / NaN as "-"."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3g}"
    if value is None:
        return "-"
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    return str(value)


def _is_numeric(values: Sequence[str]) -> bool:
    def num(v: str) -> bool:
        try:
            float(v.rstrip("%x"))
        except ValueError:
            return v in ("-", "")
        return True

    return bool(values) and all(num(v) for v in values)


def _widths(header: str, values: Sequence[str]) -> tuple[int, int]:
    """(narrowest, comfortable) width of a column: neither cuts a header word or a number.

    A numeric column never wraps (its header neither), so both are its widest cell or header. A text column may
    fold: narrowest is its longest word capped at ``TEXT_MIN``, comfortable its longest word (capped at 40).
    """
    if _is_numeric(values):
        w = max(len(header), *(len(v) for v in values)) if values else len(header)
        return w, w
    header_word = max((len(w) for w in header.split()), default=1)
    longest_word = max((len(w) for v in values for w in v.split()), default=1)
    return max(header_word, min(TEXT_MIN, longest_word)), max(header_word, min(40, longest_word))


def fit_columns(
    columns: Sequence[str], rows: Sequence[Mapping[str, str]], width: int, priority: Sequence[str] = ()
) -> tuple[list[str], list[str], dict[str, int]]:
    """(columns kept, columns dropped, minimum width of each kept column) so the table fits ``width`` characters.

    Lowest-priority columns are dropped until the rest fit at their narrowest; then the kept columns are widened
    to their comfortable width, most important first, while the table still fits (so "facility_location" is not
    folded when there is room for it).
    """
    sizes = {c: _widths(c, [r.get(c, "") for r in rows]) for c in columns}
    order = [*[p for p in priority if p in columns], *[c for c in columns if c not in priority]]
    rank = {c: i for i, c in enumerate(order)}
    for c in order[:KEY_COLUMNS]:  # the row's key columns are never folded: a lower-priority column goes first
        sizes[c] = (sizes[c][1], sizes[c][1])
    kept = list(columns)
    dropped: list[str] = []
    while len(kept) > 1 and sum(sizes[c][0] + _BORDER for c in kept) + 1 > width:
        worst = max(kept, key=lambda c: rank[c])
        kept.remove(worst)
        dropped.append(worst)
    widths = {c: sizes[c][0] for c in kept}
    # Spare width goes first to identifier columns (one word per cell, which would otherwise fold mid-word), then
    # to prose columns up to their longest word, then to prose up to their longest cell (fewer wrapped lines).
    prose = {c for c in kept if any(" " in r.get(c, "") for r in rows)}
    longest = {c: max((len(r.get(c, "")) for r in rows), default=0) for c in kept}
    by_rank = sorted(kept, key=lambda c: rank[c])
    for target, chosen in ((sizes, [c for c in by_rank if c not in prose]), (sizes, [c for c in by_rank if c in prose]),
                           (None, [c for c in by_rank if c in prose])):
        for c in chosen:
            spare = width - (sum(widths[k] + _BORDER for k in kept) + 1)
            goal = target[c][1] if target is not None else longest[c]
            widths[c] += max(0, min(spare, goal - widths[c]))
    return kept, [c for c in columns if c in dropped], widths


def _fold_long_words(text: str, width: int) -> str:
    """Break words longer than the column at its width. Rich measures a column's minimum as its longest word and
    takes the difference from the other columns, whatever ``max_width`` says; pre-folded words keep the fitted
    widths exact (the break lands where Rich's ``overflow="fold"`` would put it)."""
    if width < 1 or all(len(w) <= width for w in text.split()):
        return text
    return " ".join(w if len(w) <= width else "\n".join(w[i:i + width] for i in range(0, len(w), width))
                    for w in text.split(" "))


def render_table(
    rows: Sequence[Mapping[str, Any]],
    console: Console,
    *,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    priority: Sequence[str] = (),
) -> list[str]:
    """Print ``rows`` as a Rich table fitted to ``console.width``; returns the dropped columns (also noted below it)."""
    cols = list(columns) if columns is not None else list(rows[0].keys()) if rows else []
    if not cols:
        console.print(f"{title}: no rows" if title else "no rows")
        return []
    text_rows = [{c: cell(r.get(c)) for c in cols} for r in rows]
    kept, dropped, widths = fit_columns(cols, text_rows, console.width, priority)
    table = Table(title=title)
    for c in kept:
        numeric = _is_numeric([r[c] for r in text_rows])
        table.add_column(c, justify="right" if numeric else "left", min_width=widths[c], max_width=widths[c],
                         no_wrap=numeric, overflow="fold")
    for r in text_rows:
        table.add_row(*(_fold_long_words(r[c], widths[c]) for c in kept))
    console.print(table)
    if dropped:
        console.print(f"[dim]not shown at {console.width} columns: {', '.join(dropped)} "
                      f"(--format json or --format csv prints every column)[/dim]")
    return dropped


def to_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    cols = list(columns) if columns is not None else list(rows[0].keys()) if rows else []
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: r.get(c) if not isinstance(r.get(c), list | tuple | dict) else json.dumps(r.get(c))
                         for c in cols})
    return buf.getvalue()


def check_format(fmt: str, allowed: Sequence[str] = FORMATS) -> str:
    if fmt not in allowed:
        raise typer.BadParameter(f"unknown format {fmt!r}; choose one of {', '.join(allowed)}", param_hint="--format")
    return fmt


def print_table(
    rows: Sequence[Mapping[str, Any]],
    *,
    fmt: str = "table",
    title: str | None = None,
    columns: Sequence[str] | None = None,
    priority: Sequence[str] = (),
    console: Console | None = None,
    json_default: Callable[[Any], Any] = str,
) -> None:
    """Print one table in the requested ``--format``: a fitted Rich table, JSON rows, or CSV (all columns)."""
    check_format(fmt)
    if fmt == "json":
        typer.echo(json.dumps(list(rows), indent=2, default=json_default))
    elif fmt == "csv":
        typer.echo(to_csv(rows, columns), nl=False)
    else:
        render_table(rows, console or Console(), title=title, columns=columns, priority=priority)


def print_tables(
    tables: Sequence[tuple[str, Sequence[Mapping[str, Any]], Sequence[str]]],
    *,
    fmt: str,
    console: Console | None = None,
) -> None:
    """Several tables ``(title, rows, priority)``: fitted Rich tables, or CSV sections headed ``# title``.

    (``--format json`` of a multi-table command prints its own structure; callers handle it before this.)
    """
    check_format(fmt)
    con = console or Console()
    for i, (title, rows, priority) in enumerate(tables):
        if fmt == "csv":
            typer.echo(("\n" if i else "") + f"# {title}")
            typer.echo(to_csv(rows), nl=False)
        else:
            render_table(rows, con, title=title, priority=priority)
