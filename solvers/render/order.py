"""Data in question-mention order: the data block lists parameters and their entries in the order the question
states their numbers.

Why: a model that writes the program from the question has to copy every number. When the program's data block
follows the question (``profit`` before ``usage`` if the question gives profits first, and ``usage`` product-major
when the question says "each unit of Solvent needs 5 hours of Reactor, 3 hours of Distillation"), copying is a
monotone walk through the question, the pattern induction heads learn first. The IR's own order (``usage`` keyed
resource-major) makes it a search instead. Reordering a dict literal changes no value, so the program is the same
model; only the reading order changes.

How an entry is placed: every numeral of the question is an occurrence; an entry (key elements, value) can take an
occurrence of its value, preferring the one nearest to the mentions of its key's element names (greedy over all
entries of all parameters, closest pairs first, each occurrence used once while unused ones remain). An entry whose
value the question never writes (a derived number, a percentage given as a fraction) keeps its place behind the
entry before it in IR order.

Tables first: a number in a markdown table cell belongs to the entry whose key elements the cell's row label and
column header name (``| Bread | 33 | 3 | 3 |`` under ``| Product | Profit | Flour | Butter |``: the first 3 is
(Flour, Bread)). Those entries take their cell before the nearest-mention pass, which on equal values in one row
would otherwise hand each number to whichever key element is written closest, and so write one table row in a
different order from the next: an inconsistency a model copying the table has to learn around.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence

from solvers.render.shapes import ParamPlan

_NUMBER = re.compile(r"(?<![A-Za-z_\d.])-?\d+(?:\.\d+)?(?![\d])")
Entry = tuple[int, int]  # (parameter index, entry index)


def _value(token: str) -> float:
    return round(float(token), 9)


@functools.lru_cache(maxsize=4096)
def _name_pattern(form: str) -> re.Pattern[str]:
    # Compiled once per name: re's own cache (512 entries) thrashes over a batch of problems with many names.
    return re.compile(rf"(?<!\w){re.escape(form)}(?!\w)")


def _mentions(question: str, name: str) -> list[int]:
    """Character positions where element ``name`` is written (as a whole word, or with ``_`` read as a space),
    sorted."""
    spots: list[int] = []
    for form in {name, name.replace("_", " ")}:
        spots += [m.start() for m in _name_pattern(form).finditer(question)]
    return sorted(spots)


def _nearest(spots: list[int], q: int) -> int:
    """Distance from ``q`` to the nearest of the sorted ``spots`` (0 when there are none): a bisection, not a scan
    (the scan was most of a reference program's render time)."""
    if not spots:
        return 0
    i = bisect.bisect_left(spots, q)
    return min(abs(spots[j] - q) for j in (i - 1, i) if 0 <= j < len(spots))


def names_a_column(question: str, name: str, entries: int) -> bool:
    """Whether the question states ``name`` as a table's column: next to every one of its ``entries`` numbers ("5
    hours of Reactor; 2 hours of Reactor") or as a column header of a markdown table, rather than once before them."""
    if len(_mentions(question, name)) >= entries:
        return True
    return any(_mentions(label.split(" | ", 1)[-1], name) for cells in _table_cells(question).values()
               for _, label in cells)


def mention_order(question: str, params: Sequence[ParamPlan]) -> list[tuple[ParamPlan, list[int]]]:
    """``params`` sorted by where the question first states one of their numbers, each with its entries' order
    (indices into ``param.keys``), both following the question; ties and unplaced entries keep IR order."""
    entries = tuple(((((), float(p.param.values)),) if p.keys is None else tuple(p.keys.items()))  # type: ignore[arg-type]
                    for p in params)
    return [(params[pi], list(order)) for pi, order in _mention_order(question, entries)]


@functools.lru_cache(maxsize=256)
def _mention_order(question: str, entries: tuple[tuple[tuple[tuple[str, ...], float], ...], ...]
                   ) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The placement behind ``mention_order``, on hashable data: one reference program per solver API renders
    the same question and parameters, so the placement is computed once per problem, not once per API."""
    occurrences: dict[float, list[int]] = {}
    for m in _NUMBER.finditer(question):
        occurrences.setdefault(_value(m.group()), []).append(m.start())
    name_spots: dict[str, list[int]] = {}

    def spots(name: str) -> list[int]:
        if name not in name_spots:
            name_spots[name] = _mentions(question, name)
        return name_spots[name]

    placed: dict[Entry, int] = {}
    used: set[int] = set()
    cells = _table_cells(question)
    for pi, items in enumerate(entries):
        for ei, (key, value) in enumerate(items):
            if len(key) < 2:
                continue
            for q, labels in cells.get(round(value, 9), ()):
                if q not in used and all(_mentions(labels, e) for e in key):
                    placed[(pi, ei)] = q
                    used.add(q)
                    break
    pairs: list[tuple[float, int, Entry]] = []
    for pi, items in enumerate(entries):
        for ei, (key, value) in enumerate(items):
            for q in occurrences.get(round(value, 9), []):
                dist = sum(_nearest(spots(e), q) for e in key)
                pairs.append((dist, q, (pi, ei)))
    pairs.sort()
    for allow_reuse in (False, True):  # first one entry per occurrence, then shared occurrences for the rest
        for _, q, entry in pairs:
            if entry not in placed and (allow_reuse or q not in used):
                placed[entry] = q
                used.add(q)

    position: dict[Entry, float] = {}
    last = -1.0
    for pi, items in enumerate(entries):
        for ei in range(len(items)):
            last = placed.get((pi, ei), last + 1e-6)  # unplaced: right behind the entry before it
            position[(pi, ei)] = last
    ordered = []
    for pi, items in enumerate(entries):
        order = tuple(sorted(range(len(items)), key=lambda ei: (position[(pi, ei)], ei)))
        first = min((position[(pi, ei)] for ei in range(len(items))), default=float(pi))
        ordered.append((first, pi, order))
    ordered.sort(key=lambda t: (t[0], t[1]))
    return tuple((pi, order) for _, pi, order in ordered)


_ROW = re.compile(r"^\|(.*)\|[ \t]*$", re.M)


def _table_cells(question: str) -> dict[float, list[tuple[int, str]]]:
    """Every number in a markdown table body cell, by value: (position, its row label + column header), in
    reading order."""
    out: dict[float, list[tuple[int, str]]] = {}
    header: list[str] | None = None
    last_end = -2
    for m in _ROW.finditer(question):
        if m.start() != last_end + 1:  # a new table starts after a non-table line
            header = None
        last_end = m.end()
        cells = m.group(1).split("|")
        if header is None:
            header = [c.strip() for c in cells]
            continue
        if all(set(c.strip()) <= set("-: ") for c in cells):
            continue  # the |---|---| separator
        start = m.start(1)
        label = cells[0]
        for j, cell in enumerate(cells):
            if j and j < len(header):
                for n in _NUMBER.finditer(cell):
                    out.setdefault(_value(n.group()), []).append((start + n.start(), f"{label} | {header[j]}"))
            start += len(cell) + 1
    return out
