"""The one "register under a name" decorator that name-keyed registries share (ground-truth solvers, tolerance
rules, contract suites): ``@by_name(TABLE, "x")`` stores the decorated object as ``TABLE["x"]`` and returns it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def by_name(table: dict[str, T], name: str) -> Callable[[T], T]:
    def wrap(obj: T) -> T:
        table[name] = obj
        return obj

    return wrap
