"""Key lists written the way a modeller writes them: ``[(a, c) for a in jobs for c in jobs if a != c]``.

A sparse variable group or a row loop over part of a product needs its keys in the program. Written as a literal
list they cost a small model hundreds of tokens (every pair of a 9-job schedule); most are a product of the
program's own sets filtered by one relation between two positions over the same set: different elements
(``a != c``), ordered pairs (``c`` after ``a`` in the set's order: ``for k, a in enumerate(jobs) for c in
jobs[k + 1:]``) or consecutive elements (``zip(periods, periods[1:])``). ``comprehension`` finds the one that yields
exactly the keys, or None (the literal list stays).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from solvers.render.names import Key, Namespace

# Relations between two positions i < j over the same set, tried in this order (the plainest first).
_RELATIONS = ("ne", "lt", "next")
_MAX_PRODUCT = 50_000  # larger products keep their literal list (checking every combination costs more than it saves)


def _holds(rel: str, a: int, c: int) -> bool:
    return a != c if rel == "ne" else (a < c if rel == "lt" else c == a + 1)


def comprehension(keys: Sequence[Key], sets: Sequence[str], elems: dict[str, Sequence[str]],
                  idents: dict[str, str], taken: set[str]) -> str | None:
    """The comprehension over ``sets`` (their program identifiers in ``idents``) yielding exactly ``keys`` (as a
    set: the order of a key list does not change the model), or None."""
    n = len(sets)
    if n < 2 or any(s not in elems or s not in idents for s in sets) or len(set(keys)) != len(keys):
        return None
    size = 1
    for s in sets:
        size *= len(elems[s])
    if size > _MAX_PRODUCT or len(keys) == size:
        return None
    index = [{e: k for k, e in enumerate(elems[s])} for s in sets]
    want = set(keys)
    if any(e not in index[p] for k in want for p, e in enumerate(k)):
        return None
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if sets[i] == sets[j]]
    product = list(itertools.product(*(elems[s] for s in sets)))
    for count in (1, 2):
        for chosen in itertools.combinations(pairs, count):
            if len({p for pair in chosen for p in pair}) != 2 * count:
                continue  # each position in one relation at most
            for rels in itertools.product(_RELATIONS, repeat=count):
                if any(r == "next" and j != i + 1 for r, (i, j) in zip(rels, chosen, strict=True)):
                    continue  # zip(S, S[1:]) binds two adjacent positions
                got = {k for k in product
                       if all(_holds(r, index[i][k[i]], index[j][k[j]]) for r, (i, j) in zip(rels, chosen, strict=True))}
                if got == want:
                    return _text(sets, idents, dict(zip(chosen, rels, strict=True)), taken)
    return None


def _text(sets: Sequence[str], idents: dict[str, str], rels: dict[tuple[int, int], str], taken: set[str]) -> str:
    local = Namespace(set(taken))
    names = [local.claim_loop(s) for s in sets]
    first = {i: (j, r) for (i, j), r in rels.items()}
    second = {j: (i, r) for (i, j), r in rels.items()}
    counters: dict[int, str] = {}
    loops: list[str] = []
    for p, s in enumerate(sets):
        src = idents[s]
        if p in second:
            i, r = second[p]
            if r == "next":
                continue  # written with its partner
            if r == "lt":
                loops.append(f"for {names[p]} in {src}[{counters[i]} + 1:]")
            else:
                loops.append(f"for {names[p]} in {src} if {names[i]} != {names[p]}")
        elif p in first and first[p][1] == "next":
            loops.append(f"for {names[p]}, {names[p + 1]} in zip({src}, {src}[1:])")
        elif p in first and first[p][1] == "lt":
            counters[p] = local.claim("k")
            loops.append(f"for {counters[p]}, {names[p]} in enumerate({src})")
        else:
            loops.append(f"for {names[p]} in {src}")
    return f"[({', '.join(names)}) {' '.join(loops)}]"
