"""The renderer interface and the program skeleton every API fills in.

A rendered program has the same five parts in every API: a header comment, the data as Python literals, the
decision variables (one statement per variable group), the constraints (one statement or loop per constraint
group), the objective, and one solve call followed by the status and objective printed. Subclasses say how
their API writes each part; ``plan`` has already decided names, loops and templates.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from abc import ABC, abstractmethod
from typing import ClassVar

from solvers.ir import Model, ObjSense, VarType
from solvers.render.plan import (
    ConGroupPlan,
    Dialect,
    ObjectivePlan,
    Plan,
    Row,
    VarGroupPlan,
    explicit_text,
    linear_text,
    lit,
    plan,
    rhs_text,
    wrap_expr,
)

RENDERERS: dict[str, type[Renderer]] = {}


def register(cls: type[Renderer]) -> type[Renderer]:
    """Class decorator: make a renderer available under its ``api`` name."""
    RENDERERS[cls.api] = cls
    return cls


STYLES: tuple[str, ...] = ("compact", "verbose")
TABLES: tuple[str, ...] = ("rows", "cells")  # how a dense two-set table is written (``ParamPlan.row_table``)


class Renderer(Dialect, ABC):
    api: ClassVar[str]
    infinity: ClassVar[str] = "None"
    neg_infinity: ClassVar[str] = "None"
    style: str = "compact"
    tables: str = "rows"

    def render(self, model: Model, question: str | None = None) -> str:
        """The program of ``model``; with ``question``, its data block follows the question's order of numbers.

        ``style`` "verbose" writes a header, a comment per section, group and datum, and a status report with one
        branch per outcome plus the nonzero variables; "compact" (the default) is the same model code without any
        comment or blank line and a one-line report: what an expert writes, and about half the tokens
        (``bench/program_tokens.py``).
        """
        program = self._verbose(model, question)
        return _compact(program, self.report_lines(self.p)) if self.style == "compact" else program

    def _verbose(self, model: Model, question: str | None) -> str:
        self.check(model)
        p = plan(model)
        self.p = p
        self.scalars = {g.ident for g in p.var_groups if g.scalar}
        m = model.metrics()
        kind = {"LP": "linear program", "IP": "integer program", "MILP": "mixed-integer linear program",
                "QP": "convex quadratic program", "MIQP": "mixed-integer quadratic program"}[model.problem_class]
        article = "an" if kind[0] in "aeiou" else "a"
        lines = [f"# {model.name}: {article} {kind} with {m['n_vars']} variables and {m['n_constraints']} constraints, "
                 f"written for {self.api}.", *self.imports(p), "", "# ---- data ----",
                 *p.data_lines(self.infinity, self.neg_infinity, question, self.tables), "", *self.model_lines(p), "",
                 "# ---- decision variables ----"]
        for g in p.var_groups:
            note = g.description + (f" ({g.unit})" if g.unit else "")
            if note.strip():
                lines.append(f"# {note.strip()}")
            lines += self.var_group(g)
        lines += ["", "# ---- constraints ----"]
        for cg in p.con_groups:
            desc = f": {cg.description}" if cg.description else ""
            rows = f" ({cg.n_rows} row{'s' if cg.n_rows != 1 else ''})"
            lines.append(f"# {cg.name}{desc}{rows}")
            lines += self.con_group(cg) if cg.templated else self.explicit_rows(cg)
        lines += ["", "# ---- objective ----"]
        if p.objective.description:
            lines.append(f"# {p.objective.sense.value} {p.objective.description}")
        lines += self.objective(p.objective)
        lines += ["", SOLVE_MARK, *self.solve_lines(p)]
        return "\n".join(lines) + "\n"

    def check(self, model: Model) -> None:
        """Raise a FlywheelError when this API cannot express ``model`` (default: every model is fine)."""

    # ---- pieces each API writes --------------------------------------------------------------------

    @abstractmethod
    def imports(self, p: Plan) -> list[str]: ...

    @abstractmethod
    def model_lines(self, p: Plan) -> list[str]: ...

    @abstractmethod
    def var_group(self, g: VarGroupPlan) -> list[str]: ...

    @abstractmethod
    def con_group(self, cg: ConGroupPlan) -> list[str]:
        """A templated group: one statement or loop."""

    # The statement that adds one constraint and the keyword naming it (``m.addConstr(`` / ``name``), for the APIs
    # whose one-constraint call takes the expression then the name; the others override ``explicit_rows``.
    add_constr_call: str = ""
    name_keyword: str = "name"

    def add_constr_lines(self, expr: str, name: str) -> list[str]:
        """One ``add_constr_call`` of ``expr`` (wrapped), named by the Python expression ``name``."""
        return multiline_call(self.add_constr_call, expr, extra=f"{self.name_keyword}={name}")

    def explicit_rows(self, cg: ConGroupPlan) -> list[str]:
        """A group written row by row."""
        return [line for row in cg.rows for line in self.add_constr_lines(self.row_constraint(row),
                                                                          json.dumps(row.name))]

    @abstractmethod
    def objective(self, o: ObjectivePlan) -> list[str]: ...

    @abstractmethod
    def solve_lines(self, p: Plan) -> list[str]: ...

    @abstractmethod
    def report_lines(self, p: Plan) -> list[str]:
        """The compact style's solve call and one-line report (the verbose report's last section replaced)."""

    # ---- shared helpers ----------------------------------------------------------------------------

    def template_constraint(self, cg: ConGroupPlan, indent: str = "    ") -> str:
        """``lhs <= rhs`` of a templated group, wrapped for the given indentation."""
        assert cg.rhs is not None and cg.sense is not None
        text = f"{linear_text(cg.terms, self, self.scalars)} {cg.sense.value} {rhs_text(cg.rhs)}"
        return wrap_expr(text, indent)

    def row_constraint(self, row: Row, indent: str = "    ") -> str:
        if not row.terms:  # every term filtered out (a coverage row with no site in range): a constant comparison
            return self.constant_row(row)
        return wrap_expr(f"{explicit_text(row.terms, self, self.scalars)} {row.sense.value} {lit(row.rhs)}", indent)

    def constant_row(self, row: Row) -> str:
        """A row without variables, ``0 >= 2``: gurobipy, coptpy and OR-Tools take the Python bool (a false one makes
        the model infeasible); pyomo and docplex refuse it at build time and override this."""
        return f"0 {row.sense.value} {lit(row.rhs)}"

    @staticmethod
    def constant_row_holds(row: Row) -> bool:
        return {">=": 0 >= row.rhs, "<=": 0 <= row.rhs, "==": row.rhs == 0}[row.sense.value]

    def objective_expr(self, o: ObjectivePlan, indent: str = "    ") -> str:
        body = linear_text(o.terms, self, self.scalars) if o.terms is not None else explicit_text(
            o.explicit, self, self.scalars)
        if o.constant:
            body = f"{body} {'-' if o.constant < 0 else '+'} {lit(abs(o.constant))}" if body != "0" else lit(
                o.constant)
        return wrap_expr(body, indent)

    @staticmethod
    def maximize(o: ObjectivePlan) -> bool:
        return o.sense == ObjSense.MAXIMIZE

    @staticmethod
    def is_mip(p: Plan) -> bool:
        return p.is_mip

    @staticmethod
    def vtype_of(g: VarGroupPlan) -> VarType:
        return g.vtype


SOLVE_MARK = "# ---- solve and report ----"


def _compact(program: str, report: list[str]) -> str:
    """``program`` without comments and blank lines, its solve-and-report section replaced by ``report``.

    Comments are found with ``tokenize`` (a ``#`` inside a string literal, e.g. a product named "No. #3", stays).
    """
    head = program.split(SOLVE_MARK)[0] + "\n".join(report) + "\n"
    drop = comment_columns(head)
    lines = []
    for n, line in enumerate(head.split("\n"), 1):
        line = line[: drop[n]].rstrip() if n in drop else line.rstrip()
        if line:
            lines.append(line)
    return "\n".join(lines) + "\n"


# Everything up to a line's first comment: code outside strings, and complete one-line string literals.
_UP_TO_COMMENT = re.compile(r"""(?:[^'"#\n]|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')*#""")


def comment_columns(source: str) -> dict[int, int]:
    """Line number (1-based) -> column where its comment starts, as ``tokenize`` reports ``COMMENT`` tokens.

    ``tokenize`` is pure Python and took half of every render; a rendered program has no string spanning lines
    (no triple quotes, no backslash-newline inside a string), so each line is scanned alone with one regex. A
    source that has either falls back to ``tokenize``.
    """
    if '"""' in source or "'''" in source or "\\\n" in source:
        return {tok.start[0]: tok.start[1] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    drop: dict[int, int] = {}
    for n, line in enumerate(source.split("\n"), 1):
        if "#" in line:
            found = _UP_TO_COMMENT.match(line)
            if found:
                drop[n] = found.end() - 1
    return drop


def index_args(g: VarGroupPlan) -> str:
    """The index argument(s) of a gurobipy/coptpy-style ``addVars``: the sets, or the key list."""
    return ", ".join(g.set_idents) if g.full else str(g.keys_ident)


def multiline_call(head: str, body: str, tail: str = ")", extra: str | None = None) -> list[str]:
    """``head body[, extra]tail`` on one line if it fits, else hanging: the body starts on the head's line and
    continues aligned under it, ``extra`` (``name=...``) ends the last line or gets its own.

    No line is ever just ``head`` or ``)``: the sandbox's sanity contract reads many identical lines as a
    degenerate program, and a model with 30 written-out rows would otherwise repeat them 30 times.
    """
    flat_body = _flatten(body)
    suffix = f", {extra}" if extra else ""
    one = f"{head}{flat_body}{suffix}{tail}"
    if len(one) <= WIDTH:
        return [one]
    pad = " " * len(head)
    lines = (head + wrap_expr(flat_body, pad, WIDTH)).split("\n")
    if extra and len(lines[-1]) + len(suffix) + len(tail) <= WIDTH:
        lines[-1] += f"{suffix}{tail}"
    elif extra:
        lines[-1] += ","
        lines.append(f"{pad}{extra}{tail}")
    else:
        lines[-1] += tail
    return lines


def generator_call(head: str, expr: str, loop: str, extra: str) -> list[str]:
    """``m.addConstrs((expr for r in R), name="c")``, hanging like ``multiline_call`` when it is long."""
    expr = _flatten(expr)
    one = f"{head}({expr} {loop}), {extra})"
    if len(one) <= WIDTH:
        return [one]
    pad = " " * (len(head) + 1)
    lines = (f"{head}(" + wrap_expr(expr, pad, WIDTH)).split("\n")
    return [*lines, f"{pad}{loop}), {extra})"]


def _flatten(text: str) -> str:
    return re.sub(r"\n\s*", " ", text)


WIDTH = 116


def statement_loop(loop_gens: tuple, dialect: Dialect, body: list[str]) -> list[str]:
    """Nested ``for`` statements over a row loop's generators, with ``body`` inside the innermost one."""
    lines, indent = [], ""
    for g in loop_gens:
        lines.append(f"{indent}{g.text(dialect.source(g))}:")
        indent += "    "
    return lines + [indent + line.replace("\n", "\n" + indent) for line in body]


def var_comprehension(g: VarGroupPlan, taken: set[str]) -> tuple[str, str, str, tuple[str, ...]]:
    """How a dict-of-variables API enumerates a group: (key expression, ``for`` clauses, name f-string, targets).

    ``make = {p: solver.NumVar(..., f"make[{p}]") for p in products}``.
    """
    from solvers.render.plan import Namespace

    local = Namespace(taken)
    targets = tuple(local.claim_loop(s) for s in g.sets)
    if g.full:
        clauses = " ".join(f"for {t} in {s}" for t, s in zip(targets, g.set_idents, strict=True))
    else:
        clauses = f"for {', '.join(targets)} in {g.keys_ident}"
    key = targets[0] if len(targets) == 1 else "(" + ", ".join(targets) + ")"
    name = 'f"' + g.name + "[" + ",".join("{" + t + "}" for t in targets) + ']"'
    return key, clauses, name, targets
