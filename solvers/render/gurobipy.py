"""gurobipy: ``m.addVars`` per variable group, ``m.addConstrs`` with a generator per constraint group."""

from __future__ import annotations

import json

from solvers.ir import VarType
from solvers.render.base import Renderer, generator_call, index_args, multiline_call, register
from solvers.render.plan import ConGroupPlan, ObjectivePlan, Plan, VarGroupPlan, lit, loop_header

_VTYPE = {VarType.INTEGER: "GRB.INTEGER", VarType.BINARY: "GRB.BINARY"}


@register
class GurobipyRenderer(Renderer):
    api = "gurobipy"
    sum_fn = "gp.quicksum"
    infinity = "GRB.INFINITY"
    neg_infinity = "-GRB.INFINITY"
    add_constr_call = "m.addConstr("

    def imports(self, p: Plan) -> list[str]:
        return ["import gurobipy as gp", "from gurobipy import GRB"]

    def model_lines(self, p: Plan) -> list[str]:
        lines = [f"m = gp.Model({json.dumps(p.model.name)})", "m.Params.OutputFlag = 0  # keep the log quiet"]
        if p.is_mip:
            lines.append("m.Params.MIPGap = 1e-9  # prove optimality instead of stopping at the default 0.01% gap")
        return lines

    def var_group(self, g: VarGroupPlan) -> list[str]:
        args = [] if g.scalar else [index_args(g)]
        if g.vtype != VarType.BINARY:
            if g.lb_ident:
                args.append(f"lb={g.lb_ident}")
            elif g.lb is None:
                args.append("lb=-GRB.INFINITY")
            elif g.lb != 0:
                args.append(f"lb={lit(g.lb)}")
            if g.ub_ident:
                args.append(f"ub={g.ub_ident}")
            elif g.ub is not None:
                args.append(f"ub={lit(g.ub)}")
        if g.vtype in _VTYPE:
            args.append(f"vtype={_VTYPE[g.vtype]}")
        args.append(f"name={json.dumps(g.name)}")
        call = "m.addVar" if g.scalar else "m.addVars"
        return [f"{g.ident} = {call}({', '.join(args)})"]

    def con_group(self, cg: ConGroupPlan) -> list[str]:
        name = json.dumps(cg.name)
        if cg.loop is None:
            return self.add_constr_lines(self.template_constraint(cg), name)
        return generator_call("m.addConstrs(", self.template_constraint(cg), loop_header(cg.loop, self), f"name={name}")

    def objective(self, o: ObjectivePlan) -> list[str]:
        sense = "GRB.MAXIMIZE" if self.maximize(o) else "GRB.MINIMIZE"
        return multiline_call("m.setObjective(", self.objective_expr(o), extra=sense)

    def solve_lines(self, p: Plan) -> list[str]:
        return [
            "m.optimize()",
            "",
            "if m.Status == GRB.OPTIMAL:",
            '    print("Optimal objective:", m.ObjVal)',
            "    for v in m.getVars():",
            "        if abs(v.X) > 1e-9:",
            '            print(f"  {v.VarName} = {v.X:g}")',
            "elif m.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):",
            '    print("The model is infeasible (status", m.Status, ")")',
            "elif m.Status == GRB.UNBOUNDED:",
            '    print("The model is unbounded")',
            "else:",
            '    print("Solver stopped with status", m.Status)',
        ]

    def report_lines(self, p: Plan) -> list[str]:
        return ["m.optimize()",
                'print(f"Optimal objective: {m.ObjVal}" if m.Status == GRB.OPTIMAL else '
                'f"Infeasible or unbounded (status {m.Status})")']
