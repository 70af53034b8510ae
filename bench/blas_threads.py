"""compare_models with the column scaling's BLAS on one thread (as shipped, threadpoolctl) vs OpenBLAS's default
thread count (one per core), on a quiet machine and beside two busy processes (what the contracts stage meets
beside a training run, or as one of a worker per core), in one run.

Pairs: every generator family at difficulty 2 against its held-out ``scaled_variables`` copy (bench/equivalence.py),
each compared once per arm, arms interleaved pair by pair so that both see the same load. The busy processes are
pure-Python loops (no BLAS of their own).

    .venv/bin/python bench/blas_threads.py [--seeds 1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import equivalence as eqbench  # noqa: E402

import contracts.equivalence.canonical as canonical  # noqa: E402
from bench._machine import machine  # noqa: E402
from contracts.equivalence import compare_models  # noqa: E402
from flywheel.generators.base import family_names, generate_problem  # noqa: E402

SHIPPED = canonical._log_scale_solve


def _spin() -> None:
    while True:
        pass


def run(pairs: list, load: int) -> dict[str, list[float]]:
    busy = [mp.get_context("fork").Process(target=_spin, daemon=True) for _ in range(load)]
    for p in busy:
        p.start()
    times: dict[str, list[float]] = {"one thread": [], "default threads": []}
    try:
        time.sleep(0.5 if load else 0)
        for ref, cand in track(pairs, description=f"{load} busy processes"):
            for arm, solve in (("one thread", SHIPPED), ("default threads", canonical._log_scale_solve_1)):
                canonical._log_scale_solve = solve
                t0 = time.perf_counter()
                compare_models(ref, cand)
                times[arm].append(time.perf_counter() - t0)
    finally:
        canonical._log_scale_solve = SHIPPED
        for p in busy:
            p.kill()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "blas_threads.json")
    args = ap.parse_args()
    pairs = []
    for f in family_names():
        for seed in range(args.seeds):
            ir = generate_problem(f, seed, 2).ir
            cand = eqbench.EQUIVALENT["scaled_variables"](ir, np.random.default_rng(seed))
            if cand is not None:
                pairs.append((ir, cand.to_mps()))
    rows = []
    for load in (0, 2):
        t = run(pairs, load)
        rows.append({"busy_processes": load, "pairs": len(pairs),
                     **{f"{arm} total_s": sum(v) for arm, v in t.items()},
                     **{f"{arm} median_ms": statistics.median(v) * 1e3 for arm, v in t.items()},
                     **{f"{arm} max_ms": max(v) * 1e3 for arm, v in t.items()}})
    table = Table(title=f"compare_models over {len(pairs)} pairs: seconds in all")
    for col in ("busy", "default threads", "one thread", "ratio", "max ms default / one"):
        table.add_column(col, justify="right")
    for r in rows:
        d, o = r["default threads total_s"], r["one thread total_s"]
        table.add_row(str(r["busy_processes"]), f"{d:.2f}", f"{o:.2f}", f"{d / o:.1f}x",
                      f"{r['default threads max_ms']:.0f} / {r['one thread max_ms']:.0f}")
    Console(width=80).print(table)
    args.out.write_text(json.dumps({"bench": "blas_threads", "date": datetime.now(UTC).isoformat(), "rows": rows,
                                    "machine": machine()}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
