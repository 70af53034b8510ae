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
import json
import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from solvers.errors import ModelError
from solvers.ir import ConGroup, ConSense, Model, ObjSense, Parameter, VarGroup, VarType, number_text

Key = tuple[str, ...]

# Names a program uses for its own handles; data identifiers never take them.
RESERVED = frozenset(
    set(keyword.kwlist)
    | {"gp", "GRB", "pyo", "cp", "COPT", "env", "m", "model", "mdl", "Model", "solver", "pywraplp", "cp_model",
       "mathopt", "itertools", "math", "status", "result", "results", "solution", "sol", "v", "var", "value",
       "name", "sum", "min", "max", "abs", "range", "len", "print", "list", "dict", "set", "tuple", "float", "int",
       "str", "object", "type", "open", "input", "id", "map", "filter", "zip", "all", "any", "round", "pow",
       "format", "hash", "iter", "next", "vars", "dir", "help", "exit", "quit", "obj", "objective", "params"}
)


def ident(name: str) -> str:
    """A valid, lower-risk Python identifier for an IR name."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = f"n_{out}"
    return out


class Namespace:
    """Hands out unique identifiers; a name already taken (or reserved) gets a suffix."""

    def __init__(self, reserved: Iterable[str] = RESERVED) -> None:
        self.taken: set[str] = set(reserved)

    def claim(self, wanted: str, suffix: str = "") -> str:
        base = ident(wanted)
        candidates = [base, f"{base}{suffix}"] if suffix else [base]
        candidates += [f"{base}{suffix or '_'}{k}" for k in range(2, 1000)]
        for c in candidates:
            if c not in self.taken:
                self.taken.add(c)
                return c
        raise ModelError(f"cannot name {wanted!r}", culprit=wanted)

    def claim_loop(self, set_name: str) -> str:
        """A loop variable for ``set_name`` as a person picks it: ``p`` for products, then ``pe`` for periods
        if ``p`` is taken, and ``p2`` for a second loop over the same set."""
        base = ident(set_name).lstrip("_").lower() or "k"
        for c in (base[0], base[:2], base[0] + "2", base[:2] + "2", base[0] + "3"):
            if c.isidentifier() and c not in self.taken:
                self.taken.add(c)
                return c
        return self.claim(base[0])


def lit(value: object) -> str:
    """A Python literal for a key element or a number, as it appears in the program."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(lit(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return number_text(float(value))
    raise TypeError(f"no literal for {value!r}")


def key_lit(key: Key) -> str:
    """A dict key in the program: the element itself for one index, a tuple for several."""
    return lit(key[0]) if len(key) == 1 else lit(key)


def wrap_items(items: Sequence[str], open_: str, close: str, indent: str = "    ", width: int = 112) -> str:
    """``open_ a, b, c close`` on one line if it fits, else filled lines of items (what black would write)."""
    one = open_ + ", ".join(items) + close
    if len(one) <= width:
        return one
    lines, line = [], indent
    for item in items:
        piece = item + ","
        if len(line) + len(piece) + 1 > width and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += piece + " "
    lines.append(line.rstrip())
    return open_ + "\n" + "\n".join(lines) + "\n" + close


# ---- the plan -------------------------------------------------------------------------------------------


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

    def literal(self) -> str:
        if self.keys is None:
            return lit(float(self.param.values))  # type: ignore[arg-type]
        return wrap_items([f"{key_lit(k)}: {lit(v)}" for k, v in self.keys.items()], "{", "}")


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

    def data_lines(self, infinity: str = "None", neg_infinity: str = "None") -> list[str]:
        """The data block: sets, parameters, then key lists and bound dicts, with short comments."""
        lines: list[str] = []
        for s in self.sets:
            if s.description:
                lines.append(f"# {s.description}")
            lines.append(f"{s.ident} = " + wrap_items([lit(e) for e in s.elements], "[", "]"))
        for p in self.params:
            note = p.param.description + (f" ({p.param.unit})" if p.param.unit else "")
            if note.strip():
                lines.append(f"# {note.strip()}")
            lines.append(f"{p.ident} = {p.literal()}")
        for name, literal, comment in self.extra_data:
            if comment:
                lines.append(f"# {comment}")
            lines.append(f"{name} = {literal.replace('__NEGINF__', neg_infinity).replace('__INF__', infinity)}")
        return lines


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


class _Planner:
    def __init__(self, model: Model, reserved: frozenset[str] = RESERVED) -> None:
        self.m = model
        self.ns = Namespace(reserved)
        self.extra: list[tuple[str, str, str]] = []
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
                self.extra.append((keys_ident, wrap_items([key_lit(k) for k in keys], "[", "]"),
                                   f"index of {gname}"))
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

    def _projection(self, group: str, dims: tuple[int, ...]) -> dict[Key, list[Key]]:
        """Keys of a variable group, bucketed by their values at ``dims``."""
        ck = (group, dims)
        if ck not in self._projection_cache:
            buckets: dict[Key, list[Key]] = {}
            for k in self.vg_by_name[group].keys:
                buckets.setdefault(tuple(k[d] for d in dims), []).append(k)
            self._projection_cache[ck] = buckets
        return self._projection_cache[ck]

    def _match(self, rows: list[tuple[Key, tuple[str, ...], list[tuple[tuple[str, ...], float]]]],
               local: Namespace, row_targets: tuple[str, ...]) -> tuple[TermT, ...] | None:
        """Find term templates reproducing every row. ``rows``: (row key, row set names, [(var names, coef)]).

        Returns None when no template reproduces the rows exactly.
        """
        classes: dict[tuple, list[tuple[int, list[tuple[str, str]], tuple[Key, ...], float]]] = {}
        class_order: list[tuple] = []
        signature_of_first: set[tuple] | None = None
        for r, (rkey, rsets, terms) in enumerate(rows):
            seen: set[tuple] = set()
            for names, coef in terms:
                positions: list[tuple[str, str]] = [(s, v) for s, v in zip(rsets, rkey, strict=True)]
                binding: list[tuple[int, ...]] = []
                groups: list[str] = []
                keys: list[Key] = []
                for vname in names:
                    g, k = self.var_of[vname]
                    gp = self.vg_by_name[g]
                    b = []
                    for d, val in enumerate(k):
                        sname = gp.sets[d]
                        hit = next((i for i, p in enumerate(positions) if p == (sname, val)), None)
                        if hit is None:
                            positions.append((sname, val))
                            hit = len(positions) - 1
                        b.append(hit)
                    binding.append(tuple(b))
                    groups.append(g)
                    keys.append(k)
                ckey = (tuple(groups), tuple(binding))
                if ckey not in classes:
                    if r > 0:
                        return None  # a class that the first row lacks: rows differ in shape
                    classes[ckey] = []
                    class_order.append(ckey)
                seen.add(ckey)
                classes[ckey].append((r, positions, tuple(keys), coef))
            if signature_of_first is None:
                signature_of_first = seen
            elif seen != signature_of_first:
                return None
        templates = []
        for ckey in class_order:
            t = self._template(ckey, classes[ckey], rows, local, row_targets)
            if t is None:
                return None
            templates.append(t)
        return tuple(templates)

    def _template(self, ckey: tuple, items: list, rows: list, local: Namespace,
                  row_targets: tuple[str, ...]) -> TermT | None:
        groups, binding = ckey
        n_row = len(row_targets)
        local = Namespace(local.taken)  # each sum is its own comprehension scope: names may repeat across sums
        # Position -> set name (same in every row by construction of the binding).
        first_positions = items[0][1]
        pos_sets = [s for s, _ in first_positions]
        # Enumerate what the sum would produce in each row; compare with what the row holds.
        by_row: dict[int, dict[tuple[Key, ...], float]] = {}
        for r, _, keys, c in items:
            by_row.setdefault(r, {})[keys] = c
        expected_rows = []
        for r, (rkey, _, _) in enumerate(rows):
            expected = self._enumerate(groups, binding, list(rkey), n_row)
            if not set(by_row.get(r, {})) <= set(expected):
                return None
            expected_rows.append((by_row.get(r, {}), expected))
        coef = next((c for c in self._coefs(items, pos_sets) if self._covers(c, expected_rows)), None)
        if coef is None:
            return None
        # Names for the positions: row loop variables first, then one fresh name per summed position.
        names = list(row_targets)
        for p in range(n_row, len(pos_sets)):
            names.append(local.claim_loop(pos_sets[p]))
        gens: list[Gen] = []
        refs: list[VarRef] = []
        bound_so_far = set(range(n_row))
        for g, b in zip(groups, binding, strict=True):
            gp = self.vg_by_name[g]
            new = [p for p in b if p not in bound_so_far]
            if gp.full:
                for p in dict.fromkeys(new):
                    gens.append(Gen((names[p],), "set", self.set_ident[pos_sets[p]]))
            elif new:
                targets, conds, used = [], [], set()
                for p in b:
                    if p in bound_so_far or p in used:
                        dummy = local.claim_loop(pos_sets[p])
                        targets.append(dummy)
                        conds.append((dummy, names[p]))
                    else:
                        targets.append(names[p])
                        used.add(p)
                gens.append(Gen(tuple(targets), "keys", gp.keys_ident or "", tuple(conds)))
            bound_so_far |= set(b)
            refs.append(VarRef(gp.ident, tuple(names[p] for p in b)))
        coef_named = Coef(coef.const, coef.param, tuple(names[int(i)] for i in coef.index), coef.sign)
        return TermT(coef_named, tuple(refs), tuple(gens))

    def _enumerate(self, groups: tuple[str, ...], binding: tuple[tuple[int, ...], ...], values: list[str],
                   n_row: int) -> dict[tuple[Key, ...], list[str]]:
        """Every combination of variable keys a sum over the free positions produces, given the bound values."""
        out: dict[tuple[Key, ...], list[str]] = {}

        def rec(j: int, vals: list[str | None], acc: tuple[Key, ...]) -> None:
            if j == len(groups):
                out[acc] = [v or "" for v in vals]
                return
            b = binding[j]
            known = tuple(d for d, p in enumerate(b) if p < len(vals) and vals[p] is not None)
            bucket = self._projection(groups[j], known).get(tuple(vals[b[d]] for d in known), [])  # type: ignore[misc]
            for k in bucket:
                new_vals = list(vals)
                ok = True
                for d, p in enumerate(b):
                    while len(new_vals) <= p:
                        new_vals.append(None)
                    if new_vals[p] is None:
                        new_vals[p] = k[d]
                    elif new_vals[p] != k[d]:
                        ok = False
                        break
                if ok:
                    rec(j + 1, new_vals, acc + (k,))

        rec(0, list(values), ())
        return out

    def _covers(self, coef: Coef, expected_rows: list) -> bool:
        """Terms the sum would add beyond a row's own are harmless only where the coefficient read is 0
        (the builder dropped zero coefficients); a constant coefficient allows none."""
        for actual, expected in expected_rows:
            for combo, values in expected.items():
                if combo not in actual and (coef.param is None or self._coef_value(coef, values) != 0.0):
                    return False
        return True

    def _coefs(self, items: list, pos_sets: list[str]) -> Iterable[Coef]:
        """Candidate coefficients, most natural first: a constant, a scalar parameter, +/- an indexed parameter."""
        coefs = [c for *_, c in items]
        same = coefs[0] if len(set(coefs)) == 1 else None
        if same is not None and abs(same) == 1:
            yield Coef(const=same)
        yield from self._indexed_coefs(items, pos_sets)
        if same is not None and abs(same) != 1:
            for p in self.params:
                if p.keys is None and abs(float(p.param.values)) == abs(same):  # type: ignore[arg-type]
                    yield Coef(param=p.ident, sign=1.0 if same * float(p.param.values) > 0 else -1.0)  # type: ignore[arg-type]
                    break
            yield Coef(const=same)

    def _indexed_coefs(self, items: list, pos_sets: list[str]) -> Iterable[Coef]:
        for p in self.params:
            if p.keys is None:
                continue
            options = [[i for i, s in enumerate(pos_sets) if s == ps] for ps in p.param.index]
            for mapping in itertools.product(*options):
                sign = None
                ok = True
                for _, positions, _, c in items:
                    val = p.keys.get(tuple(positions[i][1] for i in mapping))
                    if val is None or val == 0:
                        ok = False
                        break
                    s = c / val
                    if s not in (1.0, -1.0) or (sign is not None and s != sign):
                        ok = False
                        break
                    sign = s
                if ok and sign is not None:
                    yield Coef(param=p.ident, index=tuple(str(i) for i in mapping), sign=sign)

    def _coef_value(self, coef: Coef, values: list[str]) -> float | None:
        p = next(pp for pp in self.params if pp.ident == coef.param)
        if p.keys is None:
            return float(p.param.values)  # type: ignore[arg-type]
        return p.keys.get(tuple(values[int(i)] for i in coef.index))

    def _rhs(self, rows: list[tuple[Key, float]], row_sets: tuple[str, ...], row_targets: tuple[str, ...]) -> Coef | None:
        # A parameter indexed by the row sets first (``capacity[r]``), then a constant or scalar parameter.
        for p in self.params:
            if p.keys is None or not p.param.index:
                continue
            options = [[i for i, s in enumerate(row_sets) if s == ps] for ps in p.param.index]
            for mapping in itertools.product(*options):
                for sign in (1.0, -1.0):
                    if all(p.keys.get(tuple(k[i] for i in mapping)) == sign * v for k, v in rows):
                        return Coef(param=p.ident, index=tuple(row_targets[i] for i in mapping), sign=sign)
        # A parameter times a scalar parameter (``lower[q] * batch``).
        for scalar in (p for p in self.params if p.keys is None and float(p.param.values) not in (0.0, 1.0)):
            factor = float(scalar.param.values)  # type: ignore[arg-type]
            for p in self.params:
                if p.keys is None or not p.param.index:
                    continue
                options = [[i for i, s in enumerate(row_sets) if s == ps] for ps in p.param.index]
                for mapping in itertools.product(*options):
                    if all((val := p.keys.get(tuple(k[i] for i in mapping))) is not None and val * factor == v
                           for k, v in rows):
                        return Coef(param=p.ident, index=tuple(row_targets[i] for i in mapping),
                                    factor=scalar.ident)
        values = [v for _, v in rows]
        if len(set(values)) == 1:
            c = values[0]
            if c not in (0.0, 1.0, -1.0):
                for p in self.params:
                    if p.keys is None and abs(float(p.param.values)) == abs(c):  # type: ignore[arg-type]
                        return Coef(param=p.ident, sign=1.0 if c == float(p.param.values) else -1.0)  # type: ignore[arg-type]
            return Coef(const=c)
        return None

    # -- constraint groups -----------------------------------------------------------------------------

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
        kid = self.ns.claim(f"{cp.name}_keys")
        cp.keys_ident = kid
        self.extra.append((kid, wrap_items([key_lit(k) for k in keys], "[", "]"), f"rows of {cp.name}"))
        return RowLoop(targets, (Gen(targets, "keys", kid),))

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


    def _symmetric_quadratic(self, local: Namespace) -> TermT | None:
        """``sum(P[i, j] * x[i] * x[j] for i in S for j in S)`` when the quadratic form equals it.

        Generators often write a symmetric form as its upper triangle with doubled off-diagonal coefficients;
        comparing the forms (not the term lists) recovers the sum a person writes.
        """
        form: dict[tuple[str, str], float] = {}
        groups = set()
        for a, b, c in self.m.objective.quadratic:
            (ga, ka), (gb, kb) = self.var_of[a], self.var_of[b]
            groups |= {ga, gb}
            pair = (ka[0], kb[0]) if len(ka) == 1 and len(kb) == 1 else None
            if pair is None or len(groups) > 1:
                return None
            key = (min(pair), max(pair))
            form[key] = form.get(key, 0.0) + c
        (g,) = groups
        gp = self.vg_by_name[g]
        if not gp.full or len(gp.sets) != 1:
            return None
        elems = self.set_elems[gp.sets[0]]
        for p in self.params:
            if p.keys is None or p.param.index != (gp.sets[0], gp.sets[0]):
                continue
            ok = True
            for i, a in enumerate(elems):
                for b in elems[i:]:
                    pa, pb = p.keys.get((a, b)), p.keys.get((b, a))
                    if pa is None or pb is None:
                        ok = False
                        break
                    want = pa if a == b else pa + pb
                    if abs(form.get((min(a, b), max(a, b)), 0.0) - want) > 1e-12 * (1 + abs(want)):
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                i_name, j_name = local.claim_loop(gp.sets[0]), local.claim_loop(gp.sets[0])
                sid = self.set_ident[gp.sets[0]]
                return TermT(Coef(param=p.ident, index=(i_name, j_name)),
                             (VarRef(gp.ident, (i_name,)), VarRef(gp.ident, (j_name,))),
                             (Gen((i_name,), "set", sid), Gen((j_name,), "set", sid)))
        return None


def _short(set_name: str) -> str:
    """The loop-variable name a person picks for a set: its first letter (``products`` -> ``p``)."""
    base = ident(set_name).lstrip("_") or "k"
    return base[0].lower()


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


# ---- expression text shared by the renderers ------------------------------------------------------------


class Dialect:
    """How one API writes variable access, sums and iteration; the renderers subclass it."""

    sum_fn = "sum"

    def var(self, ref: VarRef, scalar: bool) -> str:
        return ref.group if scalar else f"{ref.group}[{', '.join(ref.index)}]"

    def source(self, gen: Gen) -> str:
        return gen.source

    def sum(self, body: str, gens: tuple[Gen, ...]) -> str:
        return f"{self.sum_fn}({body} {' '.join(g.text(self.source(g)) for g in gens)})"


def linear_text(terms: Iterable[TermT], dialect: Dialect, scalars: set[str]) -> str:
    """``sum(a[i] * x[i] for i in I) - 2 * y`` from templates."""
    parts: list[tuple[bool, str]] = []
    for t in terms:
        vars_text = " * ".join(dialect.var(r, r.group in scalars) for r in t.vars)
        body = vars_text if t.coef.is_one else f"{t.coef.text()} * {vars_text}"
        parts.append((t.coef.negative, dialect.sum(body, t.gens) if t.gens else body))
    return _join(parts)


def explicit_text(terms: Sequence[tuple[float, tuple[VarRef, ...]]], dialect: Dialect, scalars: set[str]) -> str:
    parts: list[tuple[bool, str]] = []
    for c, refs in terms:
        vars_text = " * ".join(dialect.var(r, r.group in scalars) for r in refs)
        parts.append((c < 0, vars_text if abs(c) == 1 else f"{lit(abs(c))} * {vars_text}"))
    return _join(parts)


def _join(parts: list[tuple[bool, str]]) -> str:
    if not parts:
        return "0"
    out = ("-" if parts[0][0] else "") + parts[0][1]
    for neg, text in parts[1:]:
        out += (" - " if neg else " + ") + text
    return out


def wrap_expr(text: str, indent: str = "    ", width: int = 112) -> str:
    """Break a long ``a + b - c`` at its top-level operators (the caller puts it inside parentheses)."""
    if len(text) <= width:
        return text
    pieces = re.split(r"(?<=\S) (?=[+-] |for )", text)
    lines, line = [], ""
    for piece in pieces:
        if line and len(indent if lines else "") + len(line) + len(piece) + 1 > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    return ("\n" + indent).join(lines)


def rhs_text(c: Coef) -> str:
    return ("-" if c.negative else "") + c.text()


def row_name_fstring(name: str, targets: tuple[str, ...]) -> str:
    """``f"capacity[{r}]"``: the name a loop gives each row."""
    return 'f"' + name + "[" + ",".join("{" + t + "}" for t in targets) + ']"'


def loop_header(loop: RowLoop, dialect: Dialect) -> str:
    return " ".join(g.text(dialect.source(g)) for g in loop.gens)


def sense_sym(s: ConSense) -> str:
    return s.value
