"""Bin packing (IP, binary): put every item into one of the available identical bins using as few bins as possible.

The bins available are as many as first-fit decreasing needs, so the instance is feasible. Two symmetry-breaking
rows (bins used in order, item k only in the first k+1 bins) remove relabelled copies of each packing, which takes
HiGHS from hundreds of nodes to one on the largest instances. Infeasible variant: fewer bins than the total size
divided by the capacity, rounded up.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from flywheel.generators._text import drawn_names, listing, spread, table
from flywheel.generators.base import Family, register
from solvers.ir import Model, VarType, number_text


def first_fit_decreasing(sizes: dict[str, int], capacity: int) -> int:
    """Number of bins first-fit decreasing uses (an upper bound on the optimum)."""
    loads: list[int] = []
    for s in sorted(sizes.values(), reverse=True):
        for k, load in enumerate(loads):
            if load + s <= capacity:
                loads[k] += s
                break
        else:
            loads.append(s)
    return len(loads)


@register
class BinPacking(Family):
    def sample(self, rng: np.random.Generator, difficulty: int, domain: str) -> dict[str, Any]:
        vocab = self.vocab[domain]
        # Sizes around 5 / 7 / 9 items by difficulty, names drawn from the domain's pool (``spread``, ``drawn_names``).
        items = drawn_names(rng, vocab["items"], spread(rng, 3 + 2 * difficulty, 2), "Item")
        lo, hi = vocab["capacity"]
        capacity = int(rng.integers(lo, hi + 1))
        # 25-60% of a bin each: at least two bins are always needed, and several items share a bin.
        size = {i: int(rng.integers(capacity // 4, capacity * 3 // 5 + 1)) for i in items}
        n_bins = first_fit_decreasing(size, capacity)
        return {"items": items, "size": size, "capacity": capacity, "bins": [f"{vocab['stem']}{k + 1}"
                                                                             for k in range(n_bins)]}

    def make_infeasible(self, data: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        need = -(-sum(data["size"].values()) // data["capacity"])  # ceil: total size over capacity
        stem = data["bins"][0].rstrip("0123456789")
        return {**data, "bins": [f"{stem}{k + 1}" for k in range(need - 1)]}

    def build(self, data: dict[str, Any]) -> Model:
        b = self.builder(data)
        items, bins = b.elements("items", "bins")
        b.add_param("n_bins", len(bins), (), "bins", "number of bins available")
        put = b.add_vars("put", ("items", "bins"), VarType.BINARY, description="1 if the item goes into the bin")
        use = b.add_vars("use", ("bins",), VarType.BINARY, description="1 if the bin is used")
        b.add_constrs("assign", ("items",), "every item goes into exactly one bin",
                      lambda i: ([(put[(i, k)], 1) for k in bins], "==", 1))
        b.add_constrs("capacity", ("bins",), "a used bin holds at most its capacity; an unused bin holds nothing",
                      lambda k: ([(put[(i, k)], data["size"][i]) for i in items] + [(use[(k,)], -data["capacity"])],
                                 "<=", 0))
        # Number bins by their first item: item k (0-based) then lies in one of the first k+1 bins. Together with
        # use_in_order this removes the bin-relabelling symmetry that makes branch and bound slow.
        b.con_group("first_bins_only", ("items", "bins"), "item k goes into one of the first k+1 bins")
        for k, i in enumerate(items):
            for late in bins[k + 1:]:
                b.add_constr("first_bins_only", (i, late), [(put[(i, late)], 1)], "==", 0)
        b.add_constrs("use_in_order", ("bins", "bins"), "bin k+1 is used only if bin k is (removes symmetric packings)",
                      lambda k, nxt: ([(use[(nxt,)], 1), (use[(k,)], -1)], "<=", 0),
                      keys=list(zip(bins[:-1], bins[1:], strict=True)))
        b.set_objective("minimize", [(use[(k,)], 1) for k in bins], description="number of bins used")
        return b.build()

    def fields(self, data: dict[str, Any], v: dict[str, Any], domain: str) -> dict[str, Any]:
        items = data["items"]
        unit, cap, k = v["unit"], number_text(data["capacity"]), number_text(len(data["bins"]))
        sizes = listing(data["size"], items)
        rows = [[i, data["size"][i]] for i in items]
        t2_part0 = table([v["item"].capitalize(), f"Size ({unit})"], rows)
        return {"t2_part0": t2_part0, "cap": cap, "k": k, "sizes": sizes, "unit": unit}
