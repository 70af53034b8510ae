"""The number-copy rate: the share of a question's numbers that a generated program contains.

A tiny model first learns the program template; whether it then copies the question's data into that template is
what decides Pass@1 (issue 9's measured failure: 5.5% of the numbers copied, 0.7% Pass@1). Numbers are compared by
value (``12`` and ``12.0`` are the same number), each distinct question number counted once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NUMBER = re.compile(r"(?<![A-Za-z_\d.])-?\d+(?:\.\d+)?")


def numbers(text: str) -> set[float]:
    """Distinct numeric values written in ``text`` (identifiers such as ``Warehouse_3`` or ``x1`` are skipped)."""
    found = set()
    for token in _NUMBER.findall(text or ""):
        try:
            found.add(round(float(token), 9))
        except ValueError:  # pragma: no cover - the regex only matches numerals
            continue
    return found


def copy_rate(question: str, program: str) -> float | None:
    """Share of the question's distinct numbers present in ``program``; None when the question has no number."""
    wanted = numbers(question)
    if not wanted:
        return None
    return len(wanted & numbers(program)) / len(wanted)


def mean_copy_rate(pairs: Iterable[tuple[str, str]]) -> float:
    """Mean copy rate over (question, program) pairs that have numbers; 0.0 when none do."""
    rates = [r for q, p in pairs if (r := copy_rate(q, p)) is not None]
    return sum(rates) / len(rates) if rates else 0.0
