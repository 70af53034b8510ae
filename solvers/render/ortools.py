"""OR-Tools: pywraplp (GLOP for LPs, SCIP for MIPs), CP-SAT for pure-integer models with integer data, and
MathOpt with SCIP for quadratic objectives (pywraplp is linear only).

The three share the shape: a dict comprehension of variables per group, ``for`` statements per constraint
group, one solve call. Which one a model gets is decided by ``backend(model)`` so callers can ask.
"""

from __future__ import annotations

import json

from solvers.ground_truth import cp_sat_compatible
from solvers.ir import Model, VarType
from solvers.render.base import Renderer, multiline_call, register, statement_loop, var_comprehension
from solvers.render.plan import ConGroupPlan, ObjectivePlan, Plan, VarGroupPlan, lit, row_name_fstring


def backend(model: Model) -> str:
    """``mathopt`` (quadratic), ``cp-sat`` (pure integer, integer data, finite bounds), else ``pywraplp``."""
    if model.objective.quadratic:
        return "mathopt"
    if cp_sat_compatible(model):
        return "cp-sat"
    return "pywraplp"


@register
class OrtoolsRenderer(Renderer):
    api = "ortools"

    def render(self, model: Model) -> str:
        self.backend = backend(model)
        # Bound dicts sit in the data block, before any solver object exists: plain math.inf there.
        self.infinity, self.neg_infinity = "math.inf", "-math.inf"
        return super().render(model)

    # ---- header ------------------------------------------------------------------------------------

    def imports(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            return ["from ortools.sat.python import cp_model"]
        if self.backend == "mathopt":
            return ["import math", "", "from ortools.math_opt.python import mathopt"]
        needs_inf = any("INF__" in literal for _, literal, _ in p.extra_data)
        return [*(["import math", ""] if needs_inf else []), "from ortools.linear_solver import pywraplp"]

    def model_lines(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            return ["model = cp_model.CpModel()"]
        if self.backend == "mathopt":
            return [f"model = mathopt.Model(name={json.dumps(p.model.name)})"]
        engine, why = ("SCIP", "a MIP") if p.is_mip else ("GLOP", "a linear program")
        return [f'solver = pywraplp.Solver.CreateSolver("{engine}")  # {engine} for {why}']

    # ---- variables ---------------------------------------------------------------------------------

    def _new_var(self, g: VarGroupPlan, name: str, key: str) -> str:
        def bound(attr: str) -> str:
            dict_ident = getattr(g, f"{attr}_ident")
            if dict_ident:
                return f"{dict_ident}[{key}]"
            value = getattr(g, attr)
            if value is None:
                inf = "math.inf" if self.backend == "mathopt" else "solver.infinity()"
                return f"-{inf}" if attr == "lb" else inf
            return lit(value)

        if self.backend == "cp-sat":
            if g.vtype == VarType.BINARY:
                return f"model.NewBoolVar({name})"
            return f"model.NewIntVar({bound('lb')}, {bound('ub')}, {name})"
        if self.backend == "mathopt":
            if g.vtype == VarType.BINARY:
                return f"model.add_binary_variable(name={name})"
            integer = ", is_integer=True" if g.vtype == VarType.INTEGER else ""
            return f"model.add_variable(lb={bound('lb')}, ub={bound('ub')}{integer}, name={name})"
        if g.vtype == VarType.BINARY:
            return f"solver.BoolVar({name})"
        maker = "IntVar" if g.vtype == VarType.INTEGER else "NumVar"
        return f"solver.{maker}({bound('lb')}, {bound('ub')}, {name})"

    def var_group(self, g: VarGroupPlan) -> list[str]:
        if g.scalar:
            return [f"{g.ident} = {self._new_var(g, json.dumps(g.name), '')}"]
        key, clauses, name, _ = var_comprehension(g, self.p.namespace.taken)
        return multiline_call(f"{g.ident} = {{", f"{key}: {self._new_var(g, name, key)} {clauses}", "}")

    # ---- constraints -------------------------------------------------------------------------------

    def _add(self, expr: str, name: str) -> str:
        if self.backend == "cp-sat":
            return f"model.Add({expr}).WithName({name})"
        if self.backend == "mathopt":
            return f"model.add_linear_constraint({expr}, name={name})"
        return f"solver.Add({expr}, {name})"

    def con_group(self, cg: ConGroupPlan) -> list[str]:
        if cg.loop is None:
            return [self._add(self.template_constraint(cg), json.dumps(cg.name))]
        body = self._add(self.template_constraint(cg), row_name_fstring(cg.name, cg.loop.targets))
        return statement_loop(cg.loop.gens, self, [body])

    def explicit_rows(self, cg: ConGroupPlan) -> list[str]:
        return [self._add(self.row_constraint(row), json.dumps(row.name)) for row in cg.rows]

    # ---- objective and solve -----------------------------------------------------------------------

    def objective(self, o: ObjectivePlan) -> list[str]:
        expr = self.objective_expr(o)
        if self.backend == "cp-sat":
            call = "model.Maximize" if self.maximize(o) else "model.Minimize"
        elif self.backend == "mathopt":
            call = "model.maximize" if self.maximize(o) else "model.minimize"
        else:
            call = "solver.Maximize" if self.maximize(o) else "solver.Minimize"
        return multiline_call(f"{call}(", expr)

    def solve_lines(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            return [
                "solver = cp_model.CpSolver()",
                "status = solver.Solve(model)",
                "",
                "if status == cp_model.OPTIMAL:",
                '    print("Optimal objective:", solver.ObjectiveValue())',
                "elif status == cp_model.INFEASIBLE:",
                '    print("The model is infeasible")',
                "else:",
                '    print("Solver stopped with status", solver.StatusName(status))',
            ]
        if self.backend == "mathopt":
            gap = ["params = mathopt.SolveParameters(relative_gap_tolerance=1e-9)  # prove optimality"] if p.is_mip else []
            call = "mathopt.solve(model, mathopt.SolverType.GSCIP" + (", params=params)" if gap else ")")
            return [
                *gap,
                f"result = {call}  # SCIP solves the convex quadratic objective",
                "",
                "if result.termination.reason == mathopt.TerminationReason.OPTIMAL:",
                '    print("Optimal objective:", result.objective_value())',
                "elif result.termination.reason == mathopt.TerminationReason.INFEASIBLE:",
                '    print("The model is infeasible")',
                "else:",
                '    print("Solver stopped:", result.termination.reason.name)',
            ]
        gap = []
        if p.is_mip:
            gap = ["params = pywraplp.MPSolverParameters()",
                   "params.SetDoubleParam(params.RELATIVE_MIP_GAP, 1e-9)  # prove optimality, not the default gap"]
        return [
            *gap,
            f"status = solver.Solve({'params' if gap else ''})",
            "",
            "if status == pywraplp.Solver.OPTIMAL:",
            '    print("Optimal objective:", solver.Objective().Value())',
            "elif status == pywraplp.Solver.INFEASIBLE:",
            '    print("The model is infeasible")',
            "elif status == pywraplp.Solver.UNBOUNDED:",
            '    print("The model is unbounded")',
            "else:",
            '    print("Solver stopped with status", status)',
        ]
