"""Colour refinement for the exact and WL hashes: splitting cells (``contracts/equivalence/partition.py``, hasher
``contracts-5``) against the synchronous rounds it replaced (``canonical.refine`` run to its stable partition, and
the individualisation loop ``exact_hash`` had on top of it, reproduced here as the baseline), in one run.

Both compute the same stable partition (``tests/test_contracts_partition.py`` checks it); the rounds take as many
passes over the model as the graph is long, and re-run everything after each individualisation. Shapes: a chain of
identical links with costs at both ends (a long horizon of one balance row per period); a multi-period inventory
model (products x periods); a knapsack of identical items (exact_hash individualises all but one); and the 65
generator families at difficulty 3 (the models the contracts see every round), where the claim is "no slower".
Timings are the stable colouring (``wl``) and the discrete ordering exact_hash writes (``order``) on the canonical
model, best of ``--repeat``; a baseline over ``--budget`` seconds is stopped and shown as ">".

    .venv/bin/python bench/refinement.py [--repeat 3] [--budget 60]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402
from contracts.equivalence import from_ir  # noqa: E402
from contracts.equivalence.canonical import _h, canonicalize, discrete, equitable, initial_colours, refine  # noqa: E402
from contracts.equivalence.stdform import INF, StdModel  # noqa: E402
from flywheel.generators.base import family_names, generate_problem  # noqa: E402


def rounds_order(m: StdModel) -> list[str]:
    """The former exact_hash ordering: synchronous refinement, then individualise the first column of the smallest
    tied class and refine again, until every column has its own colour."""
    var, row = refine(m, *initial_colours(m))
    while len(set(var)) < len(var):
        sizes = Counter(var)
        target = min((n, col) for col, n in sizes.items() if n > 1)[1]
        j = var.index(target)
        var = list(var)
        var[j] = _h((target, "*"))
        var, row = refine(m, var, row)
    return var


def chain(n: int) -> StdModel:
    return StdModel([f"x{i}" for i in range(n)], [False] * n, [0.0] * n, [100.0] * n,
                    [{i: 1.0, i + 1: -1.0} for i in range(n - 1)], [-INF] * (n - 1), [5.0] * (n - 1),
                    {0: -3.7, n - 1: 2.1})


def inventory(products: int, periods: int) -> StdModel:
    """inv[p,t-1] + make[p,t] - inv[p,t] = demand (one row per product and period), a shared capacity row per
    period, costs on making only: every product the same, so only the horizon's ends anchor the colours."""
    names, rows, lo, hi, obj = [], [], [], [], {}
    idx = {}
    for p in range(products):
        for t in range(periods):
            for kind in ("make", "inv"):
                idx[kind, p, t] = len(names)
                names.append(f"{kind}_{p}_{t}")
            obj[idx["make", p, t]] = 2.0
    for p in range(products):
        for t in range(periods):
            row = {idx["make", p, t]: 1.0, idx["inv", p, t]: -1.0}
            if t:
                row[idx["inv", p, t - 1]] = 1.0
            rows.append(row)
            lo.append(10.0)
            hi.append(10.0)
    for t in range(periods):
        rows.append({idx["make", p, t]: 1.0 for p in range(products)})
        lo.append(-INF)
        hi.append(40.0 * products)
    n = len(names)
    return StdModel(names, [False] * n, [0.0] * n, [INF] * n, rows, lo, hi, obj)


def knapsack(n: int) -> StdModel:
    return StdModel([f"x{i}" for i in range(n)], [True] * n, [0.0] * n, [1.0] * n, [{i: 3.0 for i in range(n)}],
                    [-INF], [float(n)], {i: -1.0 for i in range(n)})


def _timed(fn_name: str, m: StdModel, q: mp.Queue) -> None:
    fn = {"wl_rounds": lambda: refine(m, *initial_colours(m)), "wl_split": lambda: equitable(m, *initial_colours(m)),
          "order_rounds": lambda: rounds_order(m), "order_split": lambda: discrete(m)}[fn_name]
    t0 = time.perf_counter()
    fn()
    q.put(time.perf_counter() - t0)


def best_time(fn_name: str, m: StdModel, repeat: int, budget: float) -> float | None:
    """Best of ``repeat`` runs in a child process each (so a baseline over ``budget`` seconds can be stopped);
    None when it ran past the budget."""
    best = None
    ctx = mp.get_context("fork")
    for _ in range(repeat):
        q = ctx.Queue()
        p = ctx.Process(target=_timed, args=(fn_name, m, q))
        p.start()
        p.join(budget)
        if p.is_alive():
            p.kill()
            p.join()
            return None
        t = q.get()
        best = t if best is None else min(best, t)
        if t > budget / repeat:
            break
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds before a baseline run is stopped")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "refinement.json")
    args = ap.parse_args()

    shapes = [(f"chain {n}", chain(n)) for n in (250, 500, 1000)]
    shapes += [(f"stock {p}x{t}", inventory(p, t)) for p, t in ((5, 100), (5, 400))]
    shapes += [(f"items {n}", knapsack(n)) for n in (250, 1000, 2000)]
    rows = []
    for label, m in track(shapes, description="shapes"):
        c = canonicalize(m, scale_columns=False).model  # presolve only: the graph the hashes refine
        row = {"shape": label, "columns": c.n_vars, "rows": c.n_rows}
        for what in ("wl", "order"):
            for how in ("rounds", "split"):
                row[f"{what}_{how}_s"] = best_time(f"{what}_{how}", c, args.repeat, args.budget)
        rows.append(row)
    # the generator families: total over one instance each (difficulty 3), the same two ways
    fam = {"wl_rounds": 0.0, "wl_split": 0.0, "order_rounds": 0.0, "order_split": 0.0}
    for f in track(family_names(), description="families"):
        c = canonicalize(from_ir(generate_problem(f, 0, 3).ir)).model
        for key in fam:
            fam[key] += best_time(key, c, args.repeat, args.budget) or float("nan")
    rows.append({"shape": f"{len(family_names())} fams", "columns": None, "rows": None,
                 **{f"{k}_s": v for k, v in fam.items()}})

    def cell(t: float | None) -> str:
        return f">{args.budget:.0f}" if t is None else f"{t:.3f}"

    def ratio(a: float | None, b: float | None) -> str:
        return f">{args.budget / b:.0f}x" if a is None else f"{a / b:.1f}x"

    table = Table(title="stable colouring (wl), exact_hash order (s): rounds vs split")
    for col in ("shape", "wl rounds", "wl split", "ratio", "order rounds", "order split", "ratio"):
        table.add_column(col, justify="left" if col == "shape" else "right", no_wrap=col == "shape")
    for r in rows:
        table.add_row(r["shape"], cell(r["wl_rounds_s"]), cell(r["wl_split_s"]), ratio(r["wl_rounds_s"], r["wl_split_s"]),
                      cell(r["order_rounds_s"]), cell(r["order_split_s"]),
                      ratio(r["order_rounds_s"], r["order_split_s"]))
    Console(width=80).print(table)
    args.out.write_text(json.dumps({"bench": "refinement", "date": datetime.now(UTC).isoformat(),
                                    "repeat": args.repeat, "budget_s": args.budget, "rows": rows,
                                    "machine": machine()}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
