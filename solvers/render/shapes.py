"""The shapes of a rendering plan: what ``plan(model)`` hands every renderer (sets, parameters, variable groups,
constraint groups as templates or written-out rows, the objective)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from solvers.ir import ConSense, Model, ObjSense, Parameter, VarType
from solvers.render.names import Key, Namespace, key_lit, lit, wrap_items

# ---- the plan -------------------------------------------------------------------------------------------


def _cell(r: int):  # noqa: ANN202
    """(row element, column element) -> the table's key, for rows at index position ``r``."""
    return (lambda i, j: (i, j)) if r == 0 else (lambda i, j: (j, i))


@dataclass(frozen=True)
class SetPlan:
    ident: str
    name: str
    elements: Key
    description: str


@dataclass(frozen=True)
class ParamPlan:
    ident: str
    param: Parameter
    keys: dict[Key, float] | None  # None for a scalar

    def literal(self, order: list[int] | None = None, once: bool = False) -> str:
        """The value as a Python literal; a dict's entries in ``order`` (indices into ``keys``) when given; with
        ``once`` (a ``mirrored`` table) each pair's first entry only."""
        if self.keys is None:
            return lit(float(self.param.values))  # type: ignore[arg-type]
        items = list(self.keys.items())
        if order is not None:
            items = [items[i] for i in order]
        if once:
            kept: dict[Key, float] = {}
            for k, v in items:
                if (k[1], k[0]) not in kept:
                    kept[k] = v
            items = list(kept.items())
        return wrap_items([f"{key_lit(k)}: {lit(v)}" for k, v in items], "{", "}")

    def row_table(self, order: list[int] | None, sets: dict[str, SetPlan], taken: set[str],
                  question: str | None = None) -> str | None:
        """A dense table over two sets as a person types it from the question: one line per row, the row's numbers
        in a list, expanded to the same ``{(i, j): value}`` dict the cell literal writes::

            cost = {(s, d): x for s, row in {
                "Pittsburgh": [25, 21, 19],
                "Gary": [24, 7, 16],
            }.items() for d, x in zip(destinations, row, strict=True)}

        The rows are the index position the entries (in ``order``, the question's) are grouped by: most entries
        follow one of their own row, and most rows state their columns in one order (the question's placement of a
        number can be ambiguous, ``solvers.render.order``, so one misplaced entry does not undo a table). Rows are
        written in the order the question reaches them, columns in that common order: the column set itself when
        it is the set's order, else the names in the question's order (``zip(["Lyon", "Lille"], row, ...)``), so
        a row is copied left to right either way. Sparse keys, a table of one set twice, or entries grouped by
        neither position: None, and the cell literal stays. Why: a cell literal repeats both key names per number
        (~6x the tokens), and a small model copying a difficulty-2 table by cells drops cells once the table is
        larger than the ones it trained on (stop 36: 128 of 165 rejected programs, a ``KeyError``); a row is one
        contiguous copy of the question's row, and ``strict=True`` makes a short row an error, never a silent 0.
        """
        if self.keys is None or len(self.param.index) != 2:
            return None
        a, b = self.param.index
        if a == b or a not in sets or b not in sets:
            return None
        elems = (sets[a].elements, sets[b].elements)
        keys = list(self.keys)
        if order is not None:
            keys = [keys[i] for i in order]
        if len(keys) != len(elems[0]) * len(elems[1]) or set(keys) != set(itertools.product(*elems)):
            return None
        at = {k: n for n, k in enumerate(keys)}
        single = [r for r in (0, 1) if len(elems[r]) == 1]
        best: tuple[tuple[float, int], int, tuple[str, ...]] | None = None
        if single and len(keys) > 1:
            # One element on one side (a single resource): either one row, or a row of one per element of the other
            # side. The question decides as it would with more elements (``order.names_a_column``).
            from solvers.render.order import names_a_column

            s = single[0]
            r = 1 - s if question is not None and names_a_column(question, elems[s][0], len(keys)) else s
            best = ((0.0, 0), r, tuple(sorted(elems[1 - r], key=lambda j: at[_cell(r)(elems[r][0], j)])))
        for r in () if best else (0, 1):
            c = 1 - r
            possible = len(keys) - len(elems[r])  # adjacent pairs within rows, were every row contiguous
            grouped = sum(keys[n][r] == keys[n - 1][r] for n in range(1, len(keys)))
            cell = _cell(r)
            column_orders = Counter(tuple(sorted(elems[c], key=lambda j: at[cell(i, j)])) for i in elems[r])
            columns, rows_agreeing = column_orders.most_common(1)[0]
            if possible and 2 * grouped > possible and 2 * rows_agreeing > len(elems[r]):
                score = ((-grouped / possible, len(elems[r])), r, columns)  # best grouped, then fewer (longer) rows
                best = min(best, score) if best else score
        if best is None:
            return None
        _, r, columns = best
        c = 1 - r
        cell = _cell(r)
        # A row's place is its entries' lower median (the earlier of two): one number the question states twice
        # (a weight equal to a capacity) may be placed at its other mention, which a sum would follow.
        rows = sorted(elems[r], key=lambda i: sorted(at[cell(i, j)] for j in columns)[(len(columns) - 1) // 2])
        local = Namespace(set(taken))
        names = [local.claim_loop(a), local.claim_loop(b)]
        row, x = local.claim("row"), local.claim("x")
        body = "\n".join(f"    {lit(i)}: " + wrap_items([lit(self.keys[cell(i, j)]) for j in columns], "[", "]",
                                                         indent=" " * 8) + "," for i in rows)
        header = sets[(a, b)[c]].ident if columns == elems[c] else wrap_items([lit(j) for j in columns], "[", "]")
        return (f"{{({names[0]}, {names[1]}): {x} for {names[r]}, {row} in {{\n{body}\n}}.items() "
                f"for {names[c]}, {x} in zip({header}, {row}, strict=True)}}")

    @property
    def mirrored(self) -> bool:
        """A table over one set twice (distances between places) whose every entry equals its mirror and has no
        diagonal: a question states each pair once, so the program writes it once and mirrors it."""
        if self.keys is None or len(self.param.index) != 2 or self.param.index[0] != self.param.index[1]:
            return False
        return len(self.keys) > 1 and all(k[0] != k[1] and self.keys.get((k[1], k[0])) == v
                                          for k, v in self.keys.items())


@dataclass
class VarGroupPlan:
    ident: str
    name: str
    sets: tuple[str, ...]  # set names of the index positions
    set_idents: tuple[str, ...]
    keys: list[Key]  # index tuples, in IR order
    full: bool  # keys are the whole product of the sets (in product order)
    keys_ident: str | None  # the data list of keys when not ``full``
    vtype: VarType
    lb: float | None  # uniform bounds (ignored when *_ident is set)
    ub: float | None
    lb_ident: str | None = None  # per-key bound dicts when bounds differ within the group
    ub_ident: str | None = None
    lbs: dict[Key, float | None] = field(default_factory=dict)
    ubs: dict[Key, float | None] = field(default_factory=dict)
    description: str = ""
    unit: str = ""

    @property
    def scalar(self) -> bool:
        return not self.sets


@dataclass(frozen=True)
class Gen:
    """One generator of a comprehension: ``for targets in source [if target == bound ...]``."""

    targets: tuple[str, ...]
    source_kind: str  # "set" | "keys" | "param" (iterate a parameter's keys)
    source: str  # identifier of the set / key list / parameter
    conditions: tuple[tuple[str, str], ...] = ()

    def text(self, source_text: str) -> str:
        t = ", ".join(self.targets)
        cond = " and ".join(f"{a} == {b}" for a, b in self.conditions)
        return f"for {t} in {source_text}" + (f" if {cond}" if cond else "")


@dataclass(frozen=True)
class Coef:
    """A coefficient or right-hand side: a constant, or sign * a parameter indexed by position names."""

    const: float | None = None
    param: str | None = None  # parameter identifier
    index: tuple[str, ...] = ()  # names (loop variables) indexing the parameter
    sign: float = 1.0
    factor: str | None = None  # a scalar parameter multiplying it

    def text(self) -> str:
        """The magnitude (sign handled by the caller)."""
        if self.param is None:
            return lit(abs(self.const or 0.0))
        base = f"{self.param}[{', '.join(self.index)}]" if self.index else self.param
        return f"{base} * {self.factor}" if self.factor else base

    @property
    def negative(self) -> bool:
        return (self.const or 0.0) < 0 if self.param is None else self.sign < 0

    @property
    def is_one(self) -> bool:
        return self.param is None and abs(self.const or 0.0) == 1.0


@dataclass(frozen=True)
class VarRef:
    group: str  # variable group identifier
    index: tuple[str, ...]  # expressions (loop variable names or literals)


@dataclass(frozen=True)
class TermT:
    """``coef * var [* var2]`` summed over ``gens`` (no gens: a single term)."""

    coef: Coef
    vars: tuple[VarRef, ...]
    gens: tuple[Gen, ...]


@dataclass(frozen=True)
class RowLoop:
    targets: tuple[str, ...]
    gens: tuple[Gen, ...]  # how the rows are enumerated (nested set loops, a key list, a parameter's keys)


@dataclass
class Row:
    """An explicit row: terms (coef, var refs with literal indices)."""

    name: str
    terms: list[tuple[float, tuple[VarRef, ...]]]
    sense: ConSense
    rhs: float


@dataclass
class ConGroupPlan:
    ident: str
    name: str
    description: str
    n_rows: int
    sense: ConSense | None = None
    loop: RowLoop | None = None  # None: a single templated row, or explicit rows
    terms: tuple[TermT, ...] = ()
    rhs: Coef | None = None
    rows: list[Row] = field(default_factory=list)  # explicit rows when no template fits
    keys_ident: str | None = None  # data list of row keys when the loop runs over one

    @property
    def templated(self) -> bool:
        return self.rhs is not None


@dataclass
class ObjectivePlan:
    sense: ObjSense
    description: str
    terms: tuple[TermT, ...] | None  # templated linear + quadratic terms, or None
    explicit: list[tuple[float, tuple[VarRef, ...]]]
    constant: float


@dataclass
class Plan:
    model: Model
    sets: list[SetPlan]
    params: list[ParamPlan]
    var_groups: list[VarGroupPlan]
    con_groups: list[ConGroupPlan]
    objective: ObjectivePlan
    extra_data: list[tuple[str, str, str]]  # (identifier, literal, comment) for key lists and bound dicts
    namespace: Namespace

    @property
    def is_mip(self) -> bool:
        return any(v.vtype != VarType.CONTINUOUS for v in self.model.variables)

    @property
    def is_quadratic(self) -> bool:
        return bool(self.model.objective.quadratic)

    def data_lines(self, infinity: str = "None", neg_infinity: str = "None", question: str | None = None,
                   tables: str = "rows") -> list[str]:
        """The data block: sets, parameters, then key lists and bound dicts, with short comments.

        With ``question``, parameters and their entries follow the order the question states the numbers in
        (``solvers.render.order``), so copying the data is a left-to-right walk through the question. ``tables``
        "rows" writes a dense two-set table one row per line (``ParamPlan.row_table``), "cells" one entry per key.
        """
        by_name = {s.name: s for s in self.sets}
        from solvers.render.order import mention_order

        lines: list[str] = []
        for s in self.sets:
            if s.description:
                lines.append(f"# {s.description}")
            lines.append(f"{s.ident} = " + wrap_items([lit(e) for e in s.elements], "[", "]"))
        params = mention_order(question, self.params) if question else [(p, None) for p in self.params]
        for p, order in params:
            note = p.param.description + (f" ({p.param.unit})" if p.param.unit else "")
            if note.strip():
                lines.append(f"# {note.strip()}")
            mirrored = p.mirrored
            table = (p.row_table(order, by_name, self.namespace.taken, question)
                     if tables == "rows" and not mirrored else None)
            lines.append(f"{p.ident} = {table or p.literal(order, once=mirrored)}")
            if mirrored:  # the other direction of every pair (the comprehension reads the dict before |= runs)
                lines.append(f"{p.ident} |= {{(j, i): v for (i, j), v in {p.ident}.items()}}")
        for name, literal, comment in self.extra_data:
            if comment:
                lines.append(f"# {comment}")
            lines.append(f"{name} = {literal.replace('__NEGINF__', neg_infinity).replace('__INF__', infinity)}")
        return lines


