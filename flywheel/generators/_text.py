"""Small phrasing helpers shared by the family modules (lists in prose, Markdown tables, entity names).

The leading underscore keeps ``family_names()`` from importing this module as a family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from solvers.ir import number_text


def join(items: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``: a list as a person writes it."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table; numbers are written with ``number_text`` so integers carry no ``.0``."""

    def cell(x: object) -> str:
        return number_text(x) if isinstance(x, (int, float)) else str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def names(pool: Sequence[str], n: int, stem: str) -> list[str]:
    """The first ``n`` names of ``pool``, continued as ``stem<k>`` when the pool runs out (always identifiers)."""
    out = list(pool[:n])
    out += [f"{stem}{k}" for k in range(len(out) + 1, n + 1)]
    return out


def drawn_names(rng: np.random.Generator, pool: Sequence[str], n: int, stem: str) -> list[str]:
    """``n`` names drawn from ``pool`` without replacement, in random order (``stem<k>`` past the pool's size).

    ``names`` takes the pool's first ``n``: every instance of a family at a difficulty then has the same names in
    the same order, and a model trained on them learns the names and the list's length by heart instead of copying
    them from the question (stop 37: at an unseen difficulty the round-0 model wrote its difficulty-1 list lengths).
    """
    k = min(n, len(pool))
    out = [str(pool[int(i)]) for i in rng.choice(len(pool), size=k, replace=False)]
    return out + [f"{stem}{j}" for j in range(k + 1, n + 1)]


def spread(rng: np.random.Generator, base: int, low: int = 1, high: int | None = None) -> int:
    """A list size near a difficulty's ``base``: ``base - 1``, ``base`` or ``base + 1`` (at least ``low``, at most
    ``high``: a pool's size, or a cap where a larger instance is slow), so that the sizes of one difficulty overlap
    the next one's and a list's length has to be read from the question."""
    n = max(low, base + int(rng.integers(-1, 2)))
    return n if high is None else min(n, high)


def money(x: float, currency: str) -> str:
    """``$12`` for dollars, ``12 EUR`` / ``12 cents`` otherwise."""
    return f"${number_text(x)}" if currency == "$" else f"{number_text(x)} {currency}"


def plural(word: str) -> str:
    """English plural of a simple noun: ``factory`` -> ``factories``, ``router`` -> ``routers``."""
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def listing(values: Mapping[Any, Any], keys: Sequence[Any] | None = None, fmt: str = "{k} {v}",
            sep: str = ", ", **fields: object) -> str:
    """One phrase per key, joined: ``listing({"A": 3, "B": 5})`` -> ``"A 3, B 5"``; ``fmt`` sees ``k`` (the key) and
    ``v`` (its value through ``number_text``), e.g. ``"{k} ${v}"`` or ``"{v} hours on {k}"``, and any ``fields``
    (the same for every key: ``listing(cost, foods, "{k} {v} {unit}", unit="cents")``). ``keys`` fixes the order
    (default: the mapping's)."""
    return sep.join(fmt.format(k=k, v=number_text(values[k]), **fields) for k in (values if keys is None else keys))
