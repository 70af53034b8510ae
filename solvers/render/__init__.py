"""Renderers: IR -> idiomatic program text per solver API, and IR -> five-element formulation text.

``render(model, api)`` returns a complete Python program that builds the model with that API's own idioms
(data as literals at the top, one statement per variable group, one statement or loop per constraint group),
solves it once and prints the status and the objective. Each API is one module that registers a ``Renderer``.
"""

from __future__ import annotations

from solvers.errors import unknown_name
from solvers.ir import Model
from solvers.render.base import RENDERERS, STYLES, TABLES, Renderer, register

APIS: tuple[str, ...] = ("gurobipy", "pyomo", "ortools", "coptpy", "docplex")


def render(model: Model, api: str, question: str | None = None, style: str = "compact", tables: str = "rows") -> str:
    """The reference program of ``model`` for ``api``; raises UnknownNameError for an unknown API or style.

    With the problem's ``question``, the data block lists the numbers in the order the question states them
    (``solvers.render.order``): the same program, easier to write by copying from the question. ``style``:
    "compact" (default: no comments or blank lines, a one-line report; what SFT data and the demo train on) or
    "verbose" (commented sections, a report branch per status and the nonzero variables; for reading). ``tables``:
    "rows" (default: a dense table over two sets one row per line, as the question lists it) or "cells" (one
    ``(i, j): value`` entry per cell).
    """
    if style not in STYLES:
        raise unknown_name("render style", style, list(STYLES))
    if tables not in TABLES:
        raise unknown_name("table layout", tables, list(TABLES))
    renderer = _renderer(api)
    renderer.style, renderer.tables = style, tables
    return renderer.render(model, question)


def supports(model: Model, api: str) -> bool:
    """Whether ``render(model, api)`` produces a program (e.g. ortools refuses quadratic objectives)."""
    from solvers.errors import FlywheelError

    renderer = _renderer(api)
    try:
        renderer.check(model)
    except FlywheelError:
        return False
    return True


def _renderer(api: str) -> Renderer:
    """A renderer for ``api``, every API module imported (each registers itself); UnknownNameError otherwise."""
    from solvers.render import coptpy, docplex, gurobipy, ortools, pyomo  # noqa: F401  (registers each API)

    if api not in RENDERERS:
        raise unknown_name("solver API", api, list(RENDERERS))
    return RENDERERS[api]()


__all__ = ["APIS", "RENDERERS", "STYLES", "TABLES", "Renderer", "register", "render", "supports"]
