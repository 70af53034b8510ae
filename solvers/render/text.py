"""Expression text shared by the renderers and the formulation: sums, linear expressions, line wrapping."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from solvers.render.names import lit
from solvers.render.shapes import Coef, Gen, RowLoop, TermT, VarRef

# ---- expression text shared by the renderers ------------------------------------------------------------


class Dialect:
    """How one API writes variable access, sums and iteration; the renderers subclass it."""

    sum_fn = "sum"

    def var(self, ref: VarRef, scalar: bool) -> str:
        return ref.group if scalar else f"{ref.group}[{', '.join(ref.index)}]"

    def source(self, gen: Gen) -> str:
        return gen.source

    def sum(self, body: str, gens: tuple[Gen, ...]) -> str:
        return f"{self.sum_fn}({body} {' '.join(g.text(self.source(g)) for g in gens)})"


def linear_text(terms: Iterable[TermT], dialect: Dialect, scalars: set[str]) -> str:
    """``sum(a[i] * x[i] for i in I) - 2 * y`` from templates."""
    parts: list[tuple[bool, str]] = []
    for t in terms:
        vars_text = " * ".join(dialect.var(r, r.group in scalars) for r in t.vars)
        body = vars_text if t.coef.is_one else f"{t.coef.text()} * {vars_text}"
        parts.append((t.coef.negative, dialect.sum(body, t.gens) if t.gens else body))
    return _join(parts)


def explicit_text(terms: Sequence[tuple[float, tuple[VarRef, ...]]], dialect: Dialect, scalars: set[str]) -> str:
    parts: list[tuple[bool, str]] = []
    for c, refs in terms:
        vars_text = " * ".join(dialect.var(r, r.group in scalars) for r in refs)
        parts.append((c < 0, vars_text if abs(c) == 1 else f"{lit(abs(c))} * {vars_text}"))
    return _join(parts)


def _join(parts: list[tuple[bool, str]]) -> str:
    if not parts:
        return "0"
    out = ("-" if parts[0][0] else "") + parts[0][1]
    for neg, text in parts[1:]:
        out += (" - " if neg else " + ") + text
    return out


def wrap_expr(text: str, indent: str = "    ", width: int = 112) -> str:
    """Break a long ``a + b - c`` at its top-level operators (the caller puts it inside parentheses)."""
    if len(text) <= width:
        return text
    pieces = re.split(r"(?<=\S) (?=[+-] |for )", text)
    lines, line = [], ""
    for piece in pieces:
        if line and len(indent if lines else "") + len(line) + len(piece) + 1 > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    return ("\n" + indent).join(lines)


def rhs_text(c: Coef) -> str:
    return ("-" if c.negative else "") + c.text()


def row_name_fstring(name: str, targets: tuple[str, ...]) -> str:
    """``f"capacity[{r}]"``: the name a loop gives each row."""
    return 'f"' + name + "[" + ",".join("{" + t + "}" for t in targets) + ']"'


def loop_header(loop: RowLoop, dialect: Dialect) -> str:
    return " ".join(g.text(dialect.source(g)) for g in loop.gens)


