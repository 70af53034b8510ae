"""coptpy (COPT): ``addVars`` per variable group and ``addConstrs`` with a generator per constraint group,
the gurobipy-like idiom COPT's Python API offers."""

from __future__ import annotations

import json

from solvers.ir import VarType
from solvers.render.base import Renderer, generator_call, index_args, multiline_call, register, var_comprehension
from solvers.render.plan import ConGroupPlan, ObjectivePlan, Plan, VarGroupPlan, lit, loop_header

_VTYPE = {VarType.CONTINUOUS: "COPT.CONTINUOUS", VarType.INTEGER: "COPT.INTEGER", VarType.BINARY: "COPT.BINARY"}


@register
class CoptpyRenderer(Renderer):
    api = "coptpy"
    sum_fn = "cp.quicksum"
    infinity = "COPT.INFINITY"
    neg_infinity = "-COPT.INFINITY"
    add_constr_call = "model.addConstr("

    def imports(self, p: Plan) -> list[str]:
        return ["import coptpy as cp", "from coptpy import COPT"]

    def model_lines(self, p: Plan) -> list[str]:
        lines = ["env = cp.Envr()", f"model = env.createModel({json.dumps(p.model.name)})",
                 "model.setParam(COPT.Param.Logging, 0)  # keep the log quiet"]
        if p.is_mip:
            lines.append("model.setParam(COPT.Param.RelGap, 1e-9)  # prove optimality, not the default 0.01% gap")
        return lines

    def _bounds(self, g: VarGroupPlan, key: str | None) -> list[str]:
        if g.vtype == VarType.BINARY:
            return []
        out = []
        for attr, default in (("lb", 0.0), ("ub", None)):
            dict_ident = getattr(g, f"{attr}_ident")
            value = getattr(g, attr)
            if dict_ident:
                out.append(f"{attr}={dict_ident}[{key}]")
            elif value is None and attr == "lb":
                out.append("lb=-COPT.INFINITY")
            elif value is not None and value != default:
                out.append(f"{attr}={lit(value)}")
        return out

    def var_group(self, g: VarGroupPlan) -> list[str]:
        vtype = [f"vtype={_VTYPE[g.vtype]}"] if g.vtype != VarType.CONTINUOUS else []
        if g.scalar:
            return [f"{g.ident} = model.addVar({', '.join([*self._bounds(g, None), *vtype, f'name={json.dumps(g.name)}'])})"]
        if g.lb_ident or g.ub_ident:
            # Bounds differ per element: create each variable with its own bounds, keyed like addVars would.
            key, clauses, name, _ = var_comprehension(g, self.p.namespace.taken)
            args = ", ".join([*self._bounds(g, key), *vtype, f"name={name}"])
            return multiline_call(f"{g.ident} = cp.tupledict({{", f"{key}: model.addVar({args}) {clauses}", "})")
        args = ", ".join([index_args(g), *self._bounds(g, None), *vtype, f"nameprefix={json.dumps(g.name)}"])
        return [f"{g.ident} = model.addVars({args})"]

    def con_group(self, cg: ConGroupPlan) -> list[str]:
        name = json.dumps(cg.name)
        if cg.loop is None:
            return self.add_constr_lines(self.template_constraint(cg), name)
        return generator_call("model.addConstrs(", self.template_constraint(cg), loop_header(cg.loop, self),
                              f"nameprefix={name}")

    def objective(self, o: ObjectivePlan) -> list[str]:
        sense = "COPT.MAXIMIZE" if self.maximize(o) else "COPT.MINIMIZE"
        return multiline_call("model.setObjective(", self.objective_expr(o), extra=f"sense={sense}")

    def solve_lines(self, p: Plan) -> list[str]:
        return [
            "model.solve()",
            "",
            "if model.status == COPT.OPTIMAL:",
            '    print("Optimal objective:", model.objval)',
            "    for v in model.getVars():",
            "        if abs(v.x) > 1e-9:",
            '            print(f"  {v.name} = {v.x:g}")',
            "elif model.status == COPT.INFEASIBLE:",
            '    print("The model is infeasible")',
            "elif model.status == COPT.UNBOUNDED:",
            '    print("The model is unbounded")',
            "else:",
            '    print("Solver stopped with status", model.status)',
        ]

    def report_lines(self, p: Plan) -> list[str]:
        return ["model.solve()",
                'print(f"Optimal objective: {model.objval}" if model.status == COPT.OPTIMAL else '
                'f"Infeasible or unbounded (status {model.status})")']
