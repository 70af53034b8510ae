"""The five-element formulation (Sets, Parameters, Variables, Objective, Constraints) rendered from the IR.

It is the text a modeller writes before coding: each set with its elements, each parameter with its unit and
(some of) its values, each variable group with its domain, the objective, and each constraint group as one
algebraic row (``sum_{p in products} usage[r,p] * make[p] <= capacity[r]   for all r in resources``) with its
row count. Constraint groups without a template show their first row written out. It reuses the renderers'
plan, so the algebra shown is exactly the algebra the reference programs build.
"""

from __future__ import annotations

import json

from solvers.ir import Model, VarType
from solvers.render.plan import (
    ConGroupPlan,
    Dialect,
    Gen,
    Plan,
    VarGroupPlan,
    VarRef,
    explicit_text,
    linear_text,
    lit,
    plan,
    rhs_text,
)

MAX_VALUES_SHOWN = 8


class _Math(Dialect):
    """Math-like notation: ``sum_{p in products} profit[p] * make[p]``."""

    def var(self, ref: VarRef, scalar: bool) -> str:
        # Literal indices of written-out rows lose their quotes: ``travel[Home_H1]``.
        return ref.group if scalar else f"{ref.group}[{','.join(_plain(i) for i in ref.index)}]"

    def sum(self, body: str, gens: tuple[Gen, ...]) -> str:
        return f"sum_{{{', '.join(_gen_text(g) for g in gens)}}} {body}"


def _plain(index: str) -> str:
    """A literal index (``"O'Hare"`` in program text) back to the element; a loop variable stays as it is."""
    return json.loads(index) if index.startswith('"') else index


def _gen_text(g: Gen) -> str:
    target = g.targets[0] if len(g.targets) == 1 else "(" + ",".join(g.targets) + ")"
    cond = "".join(f": {a} = {b}" for a, b in g.conditions)
    return f"{target} in {g.source}{cond}"


def formulation_text(model: Model) -> str:
    """Five sections, each a heading followed by indented lines; deterministic for a given model."""
    p = plan(model, for_program=False)
    math = _Math()
    scalars = {g.ident for g in p.var_groups if g.scalar}
    out = [f"Model {model.name} ({model.problem_class})", "", "Sets:"]
    out += [f"  {s.ident} = {{{', '.join(s.elements)}}}" + (f"  -- {s.description}" if s.description else "")
            for s in p.sets] or ["  (none)"]
    out += ["", "Parameters:"]
    for pp in p.params:
        prm = pp.param
        head = pp.ident + (f"[{','.join(prm.index)}]" if prm.index else "")
        note = ", ".join(x for x in (prm.description, prm.unit and f"unit: {prm.unit}",
                                     "derived by the modeller" if prm.derived else "") if x)
        out.append(f"  {head}" + (f"  -- {note}" if note else ""))
        out.append(f"      {_values(pp.keys, prm.values)}")
    if not p.params:
        out.append("  (none)")
    out += ["", "Variables:"]
    out += [f"  {_var_line(g)}" for g in p.var_groups]
    out += ["", "Objective:"]
    o = p.objective
    expr = linear_text(o.terms, math, scalars) if o.terms is not None else explicit_text(o.explicit, math, scalars)
    if o.constant:
        expr = f"{expr} {'-' if o.constant < 0 else '+'} {lit(abs(o.constant))}"
    out.append(f"  {o.sense.value} {expr}" + (f"  -- {o.description}" if o.description else ""))
    out += ["", "Constraints:"]
    for cg in p.con_groups:
        out += _con_lines(cg, p, math, scalars)
    if not p.con_groups:
        out.append("  (none)")
    return "\n".join(out) + "\n"


def _values(keys: dict | None, values: object) -> str:
    if keys is None:
        return f"= {lit(float(values))}"  # type: ignore[arg-type]
    items = [f"{','.join(k)}: {lit(v)}" for k, v in keys.items()]
    shown = items[:MAX_VALUES_SHOWN]
    more = f", ... ({len(items)} values)" if len(items) > MAX_VALUES_SHOWN else ""
    return "{" + ", ".join(shown) + more + "}"


def _var_line(g: VarGroupPlan) -> str:
    head = g.ident + (f"[{','.join(g.sets)}]" if g.sets and g.full else f"[{g.keys_ident}]" if g.sets else "")
    if g.vtype == VarType.BINARY:
        domain = "binary"
    else:
        kind = "integer" if g.vtype == VarType.INTEGER else "continuous"
        if g.lb_ident or g.ub_ident:
            domain = f"{kind}, bounds per element"
        elif g.lb is None and g.ub is None:
            domain = f"{kind}, free"
        elif g.ub is None:
            domain = f"{kind}, >= {lit(g.lb)}"
        elif g.lb is None:
            domain = f"{kind}, <= {lit(g.ub)}"
        else:
            domain = f"{kind}, {lit(g.lb)} <= . <= {lit(g.ub)}"
    note = ", ".join(x for x in (g.description, g.unit and f"unit: {g.unit}") if x)
    return f"{head}: {domain}" + (f"  -- {note}" if note else "")


def _con_lines(cg: ConGroupPlan, p: Plan, math: _Math, scalars: set[str]) -> list[str]:
    rows = f"{cg.n_rows} row{'s' if cg.n_rows != 1 else ''}"
    head = f"  {cg.name} ({rows})" + (f": {cg.description}" if cg.description else "")
    if cg.templated:
        assert cg.sense is not None and cg.rhs is not None
        body = f"{linear_text(cg.terms, math, scalars)} {cg.sense.value} {rhs_text(cg.rhs)}"
        if cg.loop is not None:
            body += "   for all " + ", ".join(_gen_text(g) for g in cg.loop.gens)
        return [head, f"      {body}"]
    first = cg.rows[0]
    body = f"{explicit_text(first.terms, math, scalars)} {first.sense.value} {lit(first.rhs)}"
    more = f"   (row {first.name}; {cg.n_rows - 1} more like it)" if cg.n_rows > 1 else ""
    return [head, f"      {body}{more}"]
