"""OR-Tools: pywraplp (GLOP for LPs, SCIP for MIPs), or CP-SAT for pure-integer models with integer data.

The shape: a dict comprehension of variables per group, ``for`` statements per constraint group, one solve
call. ``backend(model)`` says which of the two a model gets.

Quadratic objectives are refused with a FlywheelError: pywraplp is linear only, and the one QP-capable solver
in this OR-Tools build's MathOpt is SCIP without Ipopt, which needed >50 CPU-seconds to get within 0.3% on a
12-asset portfolio (HiGHS: milliseconds). A reference program that cannot reproduce its optimum is worse than
none; callers can ask ``solvers.render.supports(model, "ortools")`` first.
"""

from __future__ import annotations

import json

from solvers.errors import FlywheelError
from solvers.ground_truth import cp_sat_compatible
from solvers.ir import Model, VarType
from solvers.render.base import Renderer, multiline_call, register, statement_loop, var_comprehension
from solvers.render.plan import ConGroupPlan, ObjectivePlan, Plan, VarGroupPlan, lit, row_name_fstring


def backend(model: Model) -> str:
    """``cp-sat`` (pure integer, integer data, finite bounds), else ``pywraplp``."""
    return "cp-sat" if cp_sat_compatible(model) else "pywraplp"


@register
class OrtoolsRenderer(Renderer):
    api = "ortools"
    # Bound dicts sit in the data block, before any solver object exists: plain math.inf there.
    infinity = "math.inf"
    neg_infinity = "-math.inf"

    def check(self, model: Model) -> None:
        if model.objective.quadratic:
            raise FlywheelError(
                "ortools cannot solve this model: it has a quadratic objective, pywraplp is linear only and "
                "MathOpt's SCIP (no Ipopt in this build) does not reach the optimum in reasonable time; "
                "use gurobipy, pyomo, coptpy or docplex", culprit=f"solver API ortools, model {model.name}")

    def render(self, model: Model, question: str | None = None) -> str:
        self.backend = backend(model)
        return super().render(model, question)

    # ---- header ------------------------------------------------------------------------------------

    def imports(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            chain = ["import itertools", ""] if len(p.var_groups) > 1 else []
            return [*chain, "from ortools.sat.python import cp_model"]
        needs_inf = any("INF__" in literal for _, literal, _ in p.extra_data)
        return [*(["import math", ""] if needs_inf else []), "from ortools.linear_solver import pywraplp"]

    def model_lines(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            return ["model = cp_model.CpModel()"]
        if p.is_mip:
            return ['solver = pywraplp.Solver.CreateSolver("SCIP")  # SCIP for a MIP']
        return ['solver = pywraplp.Solver.CreateSolver("GLOP")  # GLOP for a linear program',
                "# GLOP's presolve reports an unbounded LP as INFEASIBLE; without it the status is right.",
                'solver.SetSolverSpecificParametersAsString("use_preprocessing: false")']

    # ---- variables ---------------------------------------------------------------------------------

    def _new_var(self, g: VarGroupPlan, name: str, key: str) -> str:
        def bound(attr: str) -> str:
            dict_ident = getattr(g, f"{attr}_ident")
            if dict_ident:
                return f"{dict_ident}[{key}]"
            value = getattr(g, attr)
            if value is None:
                return "-solver.infinity()" if attr == "lb" else "solver.infinity()"
            return lit(value)

        if self.backend == "cp-sat":
            if g.vtype == VarType.BINARY:
                return f"model.NewBoolVar({name})"
            return f"model.NewIntVar({bound('lb')}, {bound('ub')}, {name})"
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
        owner = "model" if self.backend == "cp-sat" else "solver"
        return multiline_call(f"{owner}.{'Maximize' if self.maximize(o) else 'Minimize'}(", self.objective_expr(o))

    def solve_lines(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            groups = ", ".join(f"[{g.ident}]" if g.scalar else f"{g.ident}.values()" for g in p.var_groups)
            return [
                "solver = cp_model.CpSolver()",
                "status = solver.Solve(model)",
                "",
                "if status == cp_model.OPTIMAL:",
                '    print("Optimal objective:", solver.ObjectiveValue())',
                f"    for v in itertools.chain({groups}):" if len(p.var_groups) > 1 else
                f"    for v in {groups}:",
                "        if solver.Value(v):",
                '            print(f"  {v.Name()} = {solver.Value(v)}")',
                "elif status == cp_model.INFEASIBLE:",
                '    print("The model is infeasible")',
                "else:",
                '    print("Solver stopped with status", solver.StatusName(status))',
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
            "    for v in solver.variables():",
            "        if abs(v.solution_value()) > 1e-9:",
            '            print(f"  {v.name()} = {v.solution_value():g}")',
            "elif status == pywraplp.Solver.INFEASIBLE:",
            '    print("The model is infeasible")',
            "elif status == pywraplp.Solver.UNBOUNDED:",
            '    print("The model is unbounded")',
            "else:",
            '    print("Solver stopped with status", status)',
        ]

    def report_lines(self, p: Plan) -> list[str]:
        if self.backend == "cp-sat":
            return ["solver = cp_model.CpSolver()", "status = solver.Solve(model)",
                    'print(f"Optimal objective: {solver.ObjectiveValue()}" if status == cp_model.OPTIMAL else '
                    'f"No optimum: {solver.StatusName(status)}")']
        solve = self.solve_lines(p)
        return [*solve[: solve.index("")],
                'print(f"Optimal objective: {solver.Objective().Value()}" if status == pywraplp.Solver.OPTIMAL '
                'else f"Infeasible or unbounded (status {status})")']
