"""The template search: find, for a group of rows, sums over index sets whose coefficients and right-hand
sides are read from parameters and that reproduce every row exactly (see ``solvers.render.plan``).

``TemplateSearch`` is a mixin of the planner: it reads the planner's variable groups, parameters and sets.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

from solvers.ir import Model
from solvers.render.names import Key, Namespace, lit
from solvers.render.shapes import Coef, Gen, ParamPlan, TermT, VarGroupPlan, VarRef


class TemplateSearch:
    """Template search over the planner's state, which the planner fills in before searching."""

    m: Model
    params: list[ParamPlan]
    set_elems: dict[str, tuple[str, ...]]
    set_ident: dict[str, str]
    var_of: dict[str, tuple[str, Key]]  # variable name -> (group, index tuple)
    vg_by_name: dict[str, VarGroupPlan]
    _projection_cache: dict[tuple[str, tuple[int, ...]], dict[Key, list[Key]]]

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
               local: Namespace, row_targets: tuple[str, ...], nested: bool = False) -> tuple[TermT, ...] | None:
        """Find term templates reproducing every row. ``rows``: (row key, row set names, [(var names, coef)]).

        A variable's index binds to a position holding the same (set, value). With ``nested``, an index that finds
        no such position also binds to the one row position holding its value over a nested set (``order[i]`` over
        "stops" in a row indexed by "places" x "places"): the second try of a group whose rows and variables use a
        set and its subset (``plan._template_group``); the first try keeps such a value a summed index.
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
                        if hit is None and nested:
                            near = [i for i, (s, v) in enumerate(positions[:len(rsets)])
                                    if v == val and self._nested(s, sname)]
                            hit = near[0] if len(near) == 1 else None
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

    def _nested(self, a: str, b: str) -> bool:
        """One of the two sets holds every element of the other."""
        ea, eb = set(self.set_elems.get(a, ())), set(self.set_elems.get(b, ()))
        return bool(ea) and bool(eb) and (ea <= eb or eb <= ea)

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
            p = self._scalar_named(same)
            if p is not None:
                yield Coef(param=p.ident, sign=1.0 if same * float(p.param.values) > 0 else -1.0)  # type: ignore[arg-type]
            yield Coef(const=same)

    def _scalar_named(self, value: float) -> ParamPlan | None:
        """The scalar parameter a number is read from: named only when exactly one scalar parameter has that
        magnitude. Two with the same value (a fleet of 3 vans, 3 shifts a day) give no evidence which one a row
        means, and a program that reads the wrong name teaches the wrong model; the literal is always right."""
        hits = [p for p in self.params if p.keys is None and abs(float(p.param.values)) == abs(value)]  # type: ignore[arg-type]
        return hits[0] if len(hits) == 1 else None

    def _indexed_coefs(self, items: list, pos_sets: list[str]) -> Iterable[Coef]:
        for p in self.params:
            if p.keys is None:
                continue
            for mapping in _mappings(p.param.index, pos_sets):
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
            for mapping in _mappings(p.param.index, row_sets):
                for sign in (1.0, -1.0):
                    if all(p.keys.get(tuple(k[i] for i in mapping)) == sign * v for k, v in rows):
                        return Coef(param=p.ident, index=tuple(row_targets[i] for i in mapping), sign=sign)
        # A parameter times a scalar parameter (``lower[q] * batch``).
        for scalar in (p for p in self.params if p.keys is None and float(p.param.values) not in (0.0, 1.0)):
            factor = float(scalar.param.values)  # type: ignore[arg-type]
            # another scalar with the same value: which one is meant is unknown, so the factor stays a number
            factor_text = scalar.ident if self._scalar_named(factor) is scalar else lit(factor)
            for p in self.params:
                if p.keys is None or not p.param.index:
                    continue
                for mapping in _mappings(p.param.index, row_sets):
                    if all((val := p.keys.get(tuple(k[i] for i in mapping))) is not None and val * factor == v
                           for k, v in rows):
                        return Coef(param=p.ident, index=tuple(row_targets[i] for i in mapping),
                                    factor=factor_text)
        values = [v for _, v in rows]
        if len(set(values)) == 1:
            c = values[0]
            p = self._scalar_named(c) if c not in (0.0, 1.0, -1.0) else None
            if p is not None:
                return Coef(param=p.ident, sign=1.0 if c == float(p.param.values) else -1.0)  # type: ignore[arg-type]
            return Coef(const=c)
        return None

    # -- constraint groups -----------------------------------------------------------------------------


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


def _mappings(param_index: Sequence[str], sets: Sequence[str]) -> Iterator[tuple[int, ...]]:
    """Every way to index a parameter from positions: for each of its index sets, a position over that same set."""
    return itertools.product(*([i for i, s in enumerate(sets) if s == ps] for ps in param_index))
