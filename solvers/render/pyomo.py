"""Pyomo: a ``ConcreteModel`` with ``Set``, ``Var`` and rule-based ``Constraint`` components, solved by HiGHS.

Pyomo's ``SolverFactory("highs")`` (the ``pyomo.contrib.solver`` HiGHS interface) handles LP, MILP and convex
QP; the older ``appsi_highs`` rejects quadratic objectives, so it is not used. HiGHS has no MIQP, so a
mixed-integer quadratic model is solved with ``gurobi_direct``.
"""

from __future__ import annotations

import json
import keyword
import sys

from solvers.ir import VarType
from solvers.render.base import Renderer, multiline_call, register
from solvers.render.plan import (
    ConGroupPlan,
    Gen,
    Namespace,
    ObjectivePlan,
    Plan,
    Row,
    VarGroupPlan,
    VarRef,
    lit,
)

# (integer?, lower bound 0?) -> domain; bounds beyond the domain go in ``bounds=``.
_DOMAIN = {
    (VarType.CONTINUOUS, True): "pyo.NonNegativeReals", (VarType.CONTINUOUS, False): "pyo.Reals",
    (VarType.INTEGER, True): "pyo.NonNegativeIntegers", (VarType.INTEGER, False): "pyo.Integers",
}


# Public attributes of ``ConcreteModel`` (Pyomo 6.10): a component may not take these names. Kept here so that
# rendering never imports Pyomo (seconds of start-up); a newer Pyomo already imported adds its own names.
_BLOCK_ATTRIBUTES = frozenset("""
Skip activate active active_blocks active_component_data active_components add_component all_blocks
all_component_data all_components block_data_objects clear clear_suffix_value clone cname collect_ctypes component
component_data_iterindex component_data_objects component_map component_objects compute_statistics config construct
contains_component create_instance ctype deactivate del_component dim display doc find_component fix_all_vars
get_suffix_value getname id_index_map index index_set is_component_type is_constructed is_expression_type is_indexed
is_logical_type is_named_expression_type is_numeric_type is_parameter_type is_reference is_variable_type items
iteritems iterkeys itervalues keys load local_name model name nconstraints nobjectives nvariables parent_block
parent_component pprint preprocess private_data reclassify_component_type reconstruct
register_private_data_initializer root_block set_suffix_value set_value solutions statistics to_dense_data
transfer_attributes_from type unfix_all_vars valid_model_component valid_problem_types values write
""".split())


def _model_attributes() -> frozenset[str]:
    pyomo_environ = sys.modules.get("pyomo.environ")
    if pyomo_environ is None:
        return _BLOCK_ATTRIBUTES
    return _BLOCK_ATTRIBUTES | {n for n in dir(pyomo_environ.ConcreteModel) if not n.startswith("_")}


@register
class PyomoRenderer(Renderer):
    api = "pyomo"

    def render(self, model, question: str | None = None) -> str:  # type: ignore[no-untyped-def]
        # Keywords too: ``model.or = Constraint(...)`` is a syntax error (a constraint group named "or").
        self.components = Namespace(_model_attributes() | {"obj"} | set(keyword.kwlist))
        self.comp: dict[str, str] = {}
        return super().render(model, question)

    # ---- dialect -----------------------------------------------------------------------------------

    def _component(self, key: str, wanted: str, suffix: str) -> str:
        if key not in self.comp:
            self.comp[key] = self.components.claim(wanted, suffix)
        return self.comp[key]

    def var(self, ref: VarRef, scalar: bool) -> str:
        name = f"model.{self.comp['var:' + ref.group]}"
        return name if scalar else f"{name}[{', '.join(ref.index)}]"

    def source(self, gen: Gen) -> str:
        if gen.source_kind == "set":
            return f"model.{self.comp['set:' + gen.source]}"
        if gen.source_kind == "keys" and "keys:" + gen.source in self.comp:
            return f"model.{self.comp['keys:' + gen.source]}"
        return gen.source

    # ---- pieces ------------------------------------------------------------------------------------

    def imports(self, p: Plan) -> list[str]:
        return ["import pyomo.environ as pyo"]

    def model_lines(self, p: Plan) -> list[str]:
        lines = [f"model = pyo.ConcreteModel(name={json.dumps(p.model.name)})"]
        for s in p.sets:
            lines.append(f"model.{self._component('set:' + s.ident, s.ident, '_set')} = pyo.Set(initialize={s.ident})")
        for g in p.var_groups:
            self._component("var:" + g.ident, g.ident, "_var")
            if g.keys_ident:
                comp = self._component("keys:" + g.keys_ident, g.keys_ident, "_set")
                dimen = f", dimen={len(g.sets)}" if len(g.sets) > 1 else ""
                lines.append(f"model.{comp} = pyo.Set(initialize={g.keys_ident}{dimen})")
        return lines

    def var_group(self, g: VarGroupPlan) -> list[str]:
        comp = self.comp["var:" + g.ident]
        index = [] if g.scalar else ([f"model.{self.comp['set:' + s]}" for s in g.set_idents] if g.full
                                     else [f"model.{self.comp['keys:' + str(g.keys_ident)]}"])
        if g.vtype == VarType.BINARY:
            return [f"model.{comp} = pyo.Var({', '.join([*index, 'domain=pyo.Binary'])})"]
        args = list(index)
        if g.lb_ident or g.ub_ident:
            key = "*k" if len(g.sets) > 1 else "k"
            kexpr = "k"
            lb = f"{g.lb_ident}[{kexpr}]" if g.lb_ident else ("None" if g.lb is None else lit(g.lb))
            ub = f"{g.ub_ident}[{kexpr}]" if g.ub_ident else ("None" if g.ub is None else lit(g.ub))
            args.append(f"domain={_DOMAIN[(g.vtype, False)]}")
            args.append(f"bounds=lambda model, {key}: ({lb}, {ub})")
        else:
            nonneg = g.lb == 0
            args.append(f"domain={_DOMAIN[(g.vtype, nonneg)]}")
            if not (g.lb in (0, None) and g.ub is None):
                lb = "None" if g.lb is None else lit(g.lb)
                ub = "None" if g.ub is None else lit(g.ub)
                args.append(f"bounds=({lb}, {ub})")
        return [f"model.{comp} = pyo.Var({', '.join(args)})"]

    def con_group(self, cg: ConGroupPlan) -> list[str]:
        comp = self.components.claim(cg.ident, "_con")
        if cg.loop is None:
            return multiline_call(f"model.{comp} = pyo.Constraint(expr=", self.template_constraint(cg))
        gens = cg.loop.gens
        if all(g.source_kind == "set" for g in gens):
            index = ", ".join(self.source(g) for g in gens)
            lines = []
        else:
            (gen,) = gens
            index = f"model.{comp}_index"
            source = f"list({gen.source})" if gen.source_kind == "param" else gen.source
            dimen = f", dimen={len(gen.targets)}" if len(gen.targets) > 1 else ""
            lines = [f"{index} = pyo.Set(initialize={source}{dimen})"]
        rule = f"{comp}_rule"
        expr = self.template_constraint(cg, "        ")
        # A wrapped expression needs parentheses to continue past the end of the ``return`` line.
        returned = f"(\n        {expr}\n    )" if "\n" in expr else expr
        return [*lines, f"def {rule}(model, {', '.join(cg.loop.targets)}):",
                f"    return {returned}", "",
                f"model.{comp} = pyo.Constraint({index}, rule={rule})", ""]

    def constant_row(self, row: Row) -> str:
        # A bare bool is an InvalidConstraintError in pyomo: its own markers say "always true" / "always false".
        return "pyo.Constraint.Feasible" if self.constant_row_holds(row) else "pyo.Constraint.Infeasible"

    def explicit_rows(self, cg: ConGroupPlan) -> list[str]:
        comp = self.components.claim(cg.ident, "_con")
        lines = [f"model.{comp} = pyo.ConstraintList()"]
        for row in cg.rows:
            lines += multiline_call(f"model.{comp}.add(", self.row_constraint(row))
        return lines

    def objective(self, o: ObjectivePlan) -> list[str]:
        sense = "pyo.maximize" if self.maximize(o) else "pyo.minimize"
        return multiline_call("model.obj = pyo.Objective(expr=", self.objective_expr(o), extra=f"sense={sense}")

    def solve_lines(self, p: Plan) -> list[str]:
        if p.is_quadratic and p.is_mip:
            solver = ['solver = pyo.SolverFactory("gurobi_direct")  # HiGHS has no mixed-integer QP',
                      'solver.options["MIPGap"] = 1e-9']
        else:
            solver = ['solver = pyo.SolverFactory("highs")']
            if p.is_mip:
                solver.append('solver.options["mip_rel_gap"] = 1e-9  # prove optimality, not the default gap')
            elif p.is_quadratic:  # HiGHS's default QP regularisation can hold an optimum without declaring it
                solver.append('solver.options["qp_regularization_value"] = 0')
        return [
            *solver,
            "results = solver.solve(model, load_solutions=False)",
            "condition = results.solver.termination_condition",
            "",
            "if condition == pyo.TerminationCondition.optimal:",
            "    model.solutions.load_from(results)",
            '    print("Optimal objective:", pyo.value(model.obj))',
            "    for v in model.component_data_objects(pyo.Var):",
            "        if v.value is not None and abs(v.value) > 1e-9:",
            '            print(f"  {v.name} = {v.value:g}")',
            "elif condition in (pyo.TerminationCondition.infeasible, pyo.TerminationCondition.infeasibleOrUnbounded):",
            '    print("The model is infeasible:", condition)',
            "elif condition == pyo.TerminationCondition.unbounded:",
            '    print("The model is unbounded")',
            "else:",
            '    print("Solver stopped:", condition)',
        ]

    def report_lines(self, p: Plan) -> list[str]:
        solve = self.solve_lines(p)
        solver = solve[: solve.index("results = solver.solve(model, load_solutions=False)")]
        return [*solver,
                "results = solver.solve(model, load_solutions=False)",
                "condition = results.solver.termination_condition",
                "if condition == pyo.TerminationCondition.optimal:",
                "    model.solutions.load_from(results)",
                '    print("Optimal objective:", pyo.value(model.obj))',
                "else:",
                '    print("No optimum:", condition)']
