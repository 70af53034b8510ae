"""docplex (CPLEX): ``*_var_dict`` / ``*_var_matrix`` per variable group, ``for`` statements with
``add_constraint`` per constraint group, ``mdl.sum`` for sums."""

from __future__ import annotations

import json

from solvers.ir import VarType
from solvers.render.base import Renderer, multiline_call, register, statement_loop, var_comprehension
from solvers.render.plan import ConGroupPlan, ObjectivePlan, Plan, Row, VarGroupPlan, lit, row_name_fstring

_KIND = {VarType.CONTINUOUS: "continuous", VarType.INTEGER: "integer", VarType.BINARY: "binary"}


@register
class DocplexRenderer(Renderer):
    api = "docplex"
    sum_fn = "mdl.sum"
    infinity = "None"  # docplex reads an upper bound of None as +infinity

    def constant_row(self, row: Row) -> str:
        # ``0 >= 2`` is a DOcplexException ("trivially infeasible"); an empty linear expression is added and the
        # solve reports the model infeasible.
        return f"mdl.linear_expr() {row.sense.value} {lit(row.rhs)}"
    neg_infinity = "-1e20"  # CPLEX treats |bound| >= 1e20 as infinite
    add_constr_call, name_keyword = "mdl.add_constraint(", "ctname"

    def imports(self, p: Plan) -> list[str]:
        return ["from docplex.mp.model import Model"]

    def model_lines(self, p: Plan) -> list[str]:
        lines = [f"mdl = Model(name={json.dumps(p.model.name)})"]
        if p.is_mip:
            lines.append("mdl.parameters.mip.tolerances.mipgap = 1e-9  # prove optimality, not the default gap")
        if p.is_quadratic and not p.is_mip:
            # CPLEX's default QP method (barrier) stops an infeasible QP at "dual objective limit exceeded";
            # dual simplex solves the convex QP as well and says "infeasible" plainly.
            lines.append("mdl.parameters.qpmethod = 2  # dual simplex")
        return lines

    def _bounds(self, g: VarGroupPlan, key: str | None) -> list[str]:
        if g.vtype == VarType.BINARY:
            return []
        out = []
        for attr in ("lb", "ub"):
            dict_ident = getattr(g, f"{attr}_ident")
            value = getattr(g, attr)
            if dict_ident:
                out.append(f"{attr}={dict_ident}[{key}]")
            elif attr == "lb" and value is None:
                out.append("lb=-mdl.infinity")
            elif attr == "lb" and value != 0 or attr == "ub" and value is not None:
                out.append(f"{attr}={lit(value)}")
        return out

    def var_group(self, g: VarGroupPlan) -> list[str]:
        kind = _KIND[g.vtype]
        name = f"name={json.dumps(g.name)}"
        if g.scalar:
            return [f"{g.ident} = mdl.{kind}_var({', '.join([*self._bounds(g, None), name])})"]
        if g.lb_ident or g.ub_ident:
            # Bounds differ per element: one variable at a time, each with its own bounds.
            key, clauses, fname, _ = var_comprehension(g, self.p.namespace.taken)
            args = ", ".join([*self._bounds(g, key), f"name={fname}"])
            return multiline_call(f"{g.ident} = {{", f"{key}: mdl.{kind}_var({args}) {clauses}", "}")
        bounds = self._bounds(g, None)
        if g.full and len(g.sets) == 1:
            head = f"mdl.{kind}_var_dict({g.set_idents[0]}"
        elif g.full and len(g.sets) == 2:
            head = f"mdl.{kind}_var_matrix({', '.join(g.set_idents)}"
        elif g.full and len(g.sets) == 3:
            head = f"mdl.{kind}_var_cube({', '.join(g.set_idents)}"
        elif g.full:
            key, clauses, _, _ = var_comprehension(g, self.p.namespace.taken)
            head = f"mdl.{kind}_var_dict([{key} {clauses}]"
        else:
            head = f"mdl.{kind}_var_dict({g.keys_ident}"
        return [f"{g.ident} = {head}, {', '.join([*bounds, name])})"]

    def con_group(self, cg: ConGroupPlan) -> list[str]:
        if cg.loop is None:
            return self.add_constr_lines(self.template_constraint(cg), json.dumps(cg.name))
        body = self.add_constr_lines(self.template_constraint(cg), row_name_fstring(cg.name, cg.loop.targets))
        return statement_loop(cg.loop.gens, self, ["\n".join(body)])

    def objective(self, o: ObjectivePlan) -> list[str]:
        return multiline_call("mdl.maximize(" if self.maximize(o) else "mdl.minimize(", self.objective_expr(o))

    def solve_lines(self, p: Plan) -> list[str]:
        return [
            "solution = mdl.solve()",
            "",
            "status = mdl.solve_details.status",
            "if solution is not None and \"optimal\" in status:",
            '    print("Optimal objective:", solution.objective_value)',
            "    for v, value in solution.iter_var_values():",
            '        print(f"  {v.name} = {value:g}")',
            "elif \"infeasible\" in status:",
            '    print("The model is infeasible:", status)',
            "elif \"unbounded\" in status:",
            '    print("The model is unbounded:", status)',
            "else:",
            '    print("Solver stopped:", status)',
        ]

    def report_lines(self, p: Plan) -> list[str]:
        return ["solution = mdl.solve()",
                'print(f"Optimal objective: {solution.objective_value}" if solution else '
                'f"No optimum: {mdl.solve_details.status}")']
