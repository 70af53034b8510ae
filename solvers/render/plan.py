"""What every renderer shares: the IR read back into the shape a person would write it in.

A renderer should not re-discover, per API, that ``capacity[r]`` is ``sum(usage[r, p] * make[p] for p in
products) <= capacity[r]``. ``plan(model)`` does it once: it names the program's identifiers, turns sets and
parameters into Python literals, and for every constraint group tries to find a *template*, one sum per
variable group, whose coefficients and right-hand sides are read from parameters, that reproduces every row of
the group exactly. Where no template reproduces the rows exactly, the group is written row by row with its
numbers; correctness never depends on the template search, only the idiom does.

The template search (``_match``) in words: each term of a row is a product of 1 or 2 variables. Every index
position of a variable either repeats a value already bound (a row index, or an earlier variable's index of the
same set) or is new, and so summed over. Terms with the same variable groups and the same binding pattern form a
*class*; a class becomes one ``sum(coef * var[...] for ...)``. A class is accepted when, in every row, its terms
are exactly the variables the sum would enumerate (missing ones only where the coefficient read from the
parameter is 0) and its coefficient is one constant, a scalar parameter, or +/- one parameter indexed by the
positions.
"""

from __future__ import annotations

import itertools

from solvers.errors import ModelError
from solvers.ir import ConGroup, Model, Parameter, VarGroup, VarType
from solvers.render.keys import comprehension
from solvers.render.names import RESERVED, Key, Namespace, ident, key_lit, lit, wrap_items
from solvers.render.search import TemplateSearch
from solvers.render.shapes import (
    Coef,
    ConGroupPlan,
    Gen,
    ObjectivePlan,
    ParamPlan,
    Plan,
    Row,
    RowLoop,
    SetPlan,
    TermT,
    VarGroupPlan,
    VarRef,
)
from solvers.render.text import (
    Dialect,
    explicit_text,
    linear_text,
    loop_header,
    rhs_text,
    row_name_fstring,
    wrap_expr,
)

# The renderers import everything from here: one place to look for what a plan is made of.
__all__ = [
    "RESERVED", "Coef", "ConGroupPlan", "Dialect", "Gen", "Key", "Namespace", "ObjectivePlan", "ParamPlan", "Plan",
    "Row", "RowLoop", "SetPlan", "TermT", "VarGroupPlan", "VarRef", "explicit_text", "ident", "key_lit",
    "linear_text", "lit", "loop_header", "plan", "rhs_text", "row_name_fstring", "wrap_expr", "wrap_items",
]

_RECENT: dict[tuple[int, bool], tuple[Model, Plan]] = {}
_RECENT_MAX = 16


def plan(model: Model, for_program: bool = True) -> Plan:
    """Read the IR into a renderable plan (identifiers, data literals, templates or explicit rows).

    ``for_program`` keeps identifiers clear of the names a program uses itself (``open`` -> ``open_var``); a
    formulation is not executed, so it passes False and keeps the IR's names. A problem is rendered for five
    APIs and a formulation; the last few plans are kept (keyed by identity, with the model held so the id
    cannot be reused) so that the search runs once per model.
    """
    key = (id(model), for_program)
    hit = _RECENT.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    result = _Planner(model, RESERVED if for_program else frozenset()).run()
    if len(_RECENT) >= _RECENT_MAX:
        _RECENT.pop(next(iter(_RECENT)))
    _RECENT[key] = (model, result)
    return result


class _Planner(TemplateSearch):
    def __init__(self, model: Model, reserved: frozenset[str] = RESERVED) -> None:
        self.m = model
        self.ns = Namespace(reserved)
        self.extra: list[tuple[str, str, str]] = []
        self._key_lists: list[tuple[str, tuple[str, ...], set[Key]]] = []  # (identifier, sets, keys) written so far
        self.set_elems = {s.name: s.elements for s in model.sets}

    # -- data ------------------------------------------------------------------------------------------

    def run(self) -> Plan:
        m = self.m
        sets = [SetPlan(self.ns.claim(s.name), s.name, s.elements, s.description) for s in m.sets]
        self.set_ident = {s.name: s.ident for s in sets}
        params = [ParamPlan(self.ns.claim(p.name), p, _param_keys(p)) for p in m.params]
        self.params = params
        self.var_of: dict[str, tuple[str, Key]] = {}
        self.var_groups = self._var_groups()
        self.vg_by_name = {g.name: g for g in self.var_groups}
        self._projection_cache: dict[tuple[str, tuple[int, ...]], dict[Key, list[Key]]] = {}
        cons = self._con_groups()
        obj = self._objective()
        return Plan(m, sets, params, self.var_groups, cons, obj, self.extra, self.ns)

    def _var_groups(self) -> list[VarGroupPlan]:
        m = self.m
        declared: dict[str, VarGroup] = {g.name: g for g in m.var_groups}
        members: dict[str, list] = {}
        for v in m.variables:
            members.setdefault(v.group, []).append(v)
        out = []
        for gname, vs in members.items():
            g = declared.get(gname)
            sets = tuple(g.index) if g else ()
            usable = all(s in self.set_elems for s in sets) and all(len(v.index) == len(sets) for v in vs)
            if not usable or (not sets and len(vs) > 1):
                # An undeclared or inconsistent group: index its variables by their own names.
                sets, keys = ("__names__",), [(v.name,) for v in vs]
            else:
                keys = [tuple(v.index) for v in vs]
            self.var_of.update({v.name: (gname, k) for v, k in zip(vs, keys, strict=True)})
            vtypes = {v.vtype for v in vs}
            if len(vtypes) > 1:
                raise ModelError(f"variable group {gname} mixes types {sorted(vtypes)}", culprit=f"model {m.name}")
            product = [tuple(k) for k in itertools.product(*(self.set_elems.get(s, ()) for s in sets))]
            full = sets != ("__names__",) and keys == product
            gi = self.ns.claim(gname, "_var")
            keys_ident = None
            if not full:
                keys_ident = self.ns.claim(f"{gname}_keys")
                self.extra.append((keys_ident, self._key_list(keys, sets), f"index of {gname}"))
                self._key_lists.append((keys_ident, sets, set(keys)))
            set_idents = tuple(self.set_ident.get(s, s) for s in sets)
            vtype = vs[0].vtype
            plan = VarGroupPlan(gi, gname, sets, set_idents, keys, full, keys_ident, vtype, vs[0].lb, vs[0].ub,
                                description=g.description if g else "", unit=g.unit if g else "")
            if vtype != VarType.BINARY:
                for attr, label in (("lb", "lower"), ("ub", "upper")):
                    values = {k: getattr(v, attr) for k, v in zip(keys, vs, strict=True)}
                    if len(set(values.values())) > 1:
                        bid = self.ns.claim(f"{gname}_{attr}")
                        inf = "__NEGINF__" if attr == "lb" else "__INF__"
                        items = [f"{key_lit(k)}: {inf if b is None else lit(b)}" for k, b in values.items()]
                        self.extra.append((bid, wrap_items(items, "{", "}"), f"{label} bound of each {gname}"))
                        setattr(plan, f"{attr}_ident", bid)
                        setattr(plan, f"{attr}s", values)
            out.append(plan)
        return out

    # -- templates -------------------------------------------------------------------------------------


    def _con_groups(self) -> list[ConGroupPlan]:
        m = self.m
        declared: dict[str, ConGroup] = {g.name: g for g in m.con_groups}
        rows_of: dict[str, list] = {}
        for c in m.constraints:
            rows_of.setdefault(c.group, []).append(c)
        order = [g for g in declared if g in rows_of] + [g for g in rows_of if g not in declared]
        out = []
        for gname in order:
            cons = rows_of[gname]
            g = declared.get(gname, ConGroup(name=gname))
            cp = ConGroupPlan(ident=ident(gname), name=gname, description=g.description, n_rows=len(cons))
            if not self._template_group(cp, g, cons):
                cp.rows = [Row(c.name, [(coef, (self._ref(v),)) for v, coef in c.terms], c.sense, c.rhs)
                           for c in cons]
            out.append(cp)
        return out

    def _template_group(self, cp: ConGroupPlan, g: ConGroup, cons: list) -> bool:
        row_sets = tuple(g.index)
        if len({c.sense for c in cons}) != 1 or any(not c.terms for c in cons):
            return False
        if any(len(c.index) != len(row_sets) for c in cons) or any(s not in self.set_elems for s in row_sets):
            return False
        if not row_sets and len(cons) != 1:
            return False
        local = Namespace(self.ns.taken)
        targets = tuple(local.claim_loop(s) for s in row_sets)
        rows = [(tuple(c.index), row_sets, [((v,), coef) for v, coef in c.terms]) for c in cons]
        terms = self._match(rows, local, targets)
        if terms is None:  # a variable over a subset (or superset) of a row set: bind it by value
            terms = self._match(rows, local, targets, nested=True)
        if terms is None:
            return False
        rhs = self._rhs([(tuple(c.index), c.rhs) for c in cons], row_sets, targets)
        if rhs is None:
            return False
        cp.sense, cp.terms, cp.rhs = cons[0].sense, terms, rhs
        if row_sets:
            cp.loop = self._row_loop(cp, row_sets, targets, [tuple(c.index) for c in cons])
        return True

    def _row_loop(self, cp: ConGroupPlan, row_sets: tuple[str, ...], targets: tuple[str, ...],
                  keys: list[Key]) -> RowLoop:
        product = [tuple(k) for k in itertools.product(*(self.set_elems[s] for s in row_sets))]
        if set(keys) == set(product) and len(keys) == len(product):
            return RowLoop(targets, tuple(Gen((t,), "set", self.set_ident[s]) for t, s in zip(targets, row_sets,
                                                                                               strict=True)))
        for p in self.params:
            if p.keys is not None and p.param.index == row_sets and set(p.keys) == set(keys) and len(p.keys) == len(keys):
                return RowLoop(targets, (Gen(targets, "param", p.ident),))
        for vg in self.var_groups:  # the rows of a sparse group's own keys: loop over its key list
            if vg.keys_ident and vg.sets == row_sets and set(vg.keys) == set(keys) and len(vg.keys) == len(keys):
                return RowLoop(targets, (Gen(targets, "keys", vg.keys_ident),))
        kid = self.ns.claim(f"{cp.name}_keys")
        cp.keys_ident = kid
        self.extra.append((kid, self._key_list(keys, row_sets), f"rows of {cp.name}"))
        self._key_lists.append((kid, row_sets, set(keys)))
        return RowLoop(targets, (Gen(targets, "keys", kid),))

    def _key_list(self, keys: list[Key], sets: tuple[str, ...]) -> str:
        """A key list as a modeller writes it: another list or a parameter's keys when they are the same keys, the
        comprehension over the program's sets that yields it, full sets times such a list (``[(d, i, j) for d in
        demands for i, j in arcs]``), else the literal list."""
        same = self._same_keys(set(keys), sets)
        if same:
            name, is_list = same
            return name if is_list else f"list({name})"
        return (comprehension(keys, sets, self.set_elems, self.set_ident, self.ns.taken)
                or self._times_sets(keys, sets) or wrap_items([key_lit(k) for k in keys], "[", "]"))

    def _same_keys(self, keys: set[Key], sets: tuple[str, ...]) -> tuple[str, bool] | None:
        """(identifier, is a list) of a key list already written or of a parameter (a dict: iterating it gives its
        keys) with exactly these keys over these sets."""
        for name, group_sets, group_keys in self._key_lists:
            if group_sets == sets and group_keys == keys:
                return name, True
        for p in self.params:
            if p.keys is not None and tuple(p.param.index) == sets and set(p.keys) == keys:
                return p.ident, False
        return None

    def _times_sets(self, keys: list[Key], sets: tuple[str, ...]) -> str | None:
        """``[(d, i, j) for d in demands for i, j in arcs]``: the keys are full sets at some positions times a key
        list (or parameter keys) already in the program at the others."""
        n, want = len(sets), set(keys)
        for size in range(1, n):
            for rest in itertools.combinations(range(n), size):
                full = [p for p in range(n) if p not in rest]
                if any(sets[p] not in self.set_elems for p in full):
                    continue
                part = {tuple(k[p] for p in rest) for k in want}
                count = len(part)
                for p in full:
                    count *= len(self.set_elems[sets[p]])
                if count != len(want):
                    continue
                same = self._same_keys(part, tuple(sets[p] for p in rest))
                if same is None:
                    continue
                source = same[0]
                expanded = set()
                for combo in itertools.product(*(self.set_elems[sets[p]] for p in full)):
                    for k in part:
                        key = [""] * n
                        for p, v in zip(full, combo, strict=True):
                            key[p] = v
                        for p, v in zip(rest, k, strict=True):
                            key[p] = v
                        expanded.add(tuple(key))
                if expanded != want:
                    continue
                local = Namespace(set(self.ns.taken))
                names = [local.claim_loop(sets[p]) for p in range(n)]
                loops = [f"for {names[p]} in {self.set_ident[sets[p]]}" for p in full]
                loops.append(f"for {', '.join(names[p] for p in rest)} in {source}")
                return f"[({', '.join(names)}) {' '.join(loops)}]"
        return None

    def _ref(self, vname: str) -> VarRef:
        g, k = self.var_of[vname]
        gp = self.vg_by_name[g]
        return VarRef(gp.ident, tuple(lit(e) for e in k))

    # -- objective -------------------------------------------------------------------------------------

    def _objective(self) -> ObjectivePlan:
        o = self.m.objective
        items: list[tuple[tuple[str, ...], float]] = [((v,), c) for v, c in o.terms]
        items += [((a, b), c) for a, b, c in o.quadratic]
        local = Namespace(self.ns.taken)
        terms = self._match([((), (), items)], local, ()) if items else ()
        if terms is None and o.quadratic:
            linear = self._match([((), (), items[:len(o.terms)])], local, ()) if o.terms else ()
            quad = self._symmetric_quadratic(local)
            terms = None if linear is None or quad is None else (*linear, quad)
        explicit = [(c, tuple(self._ref(v) for v in names)) for names, c in items]
        return ObjectivePlan(o.sense, o.description, terms, explicit, o.constant)



def _param_keys(p: Parameter) -> dict[Key, float] | None:
    if not isinstance(p.values, dict):
        return None
    n = len(p.index)
    out: dict[Key, float] = {}
    for k, v in p.values.items():
        key: Key = (k,) if n <= 1 else tuple(k.split(","))
        if n > 1 and len(key) != n:
            key = (k,)  # element names with commas: usable as a literal, never matched by a template
        out[key] = float(v)
    return out


