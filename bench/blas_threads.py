"""compare_models with the column scaling's BLAS on one thread (as shipped, threadpoolctl) vs OpenBLAS's default
thread count (one per core), on its own, beside two pure-Python loops, and beside torch GEMMs on two OpenMP
threads (what the contracts stage meets beside a training run or a policy's sampling), in one run.

Pairs: every generator family at difficulty 2 against its held-out ``scaled_vars_rows_reordered`` copy (bench/equivalence.py),
each compared once per arm, arms interleaved pair by pair so that both see the same load.

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


def _torch() -> None:
    """A training run's shape of load: torch GEMMs on 2 OpenMP threads, back to back."""
    import torch

    torch.set_num_threads(2)
    a = torch.randn(1024, 1024)
    while True:
        a = torch.tanh(a @ a)


LOADS = {"none": [], "2 python loops": [_spin, _spin], "torch, 2 threads": [_torch]}


def run(pairs: list, load: str) -> dict[str, list[float]]:
    busy = [mp.get_context("spawn").Process(target=f, daemon=True) for f in LOADS[load]]
    for p in busy:
        p.start()
    times: dict[str, list[float]] = {"one thread": [], "default threads": []}
    try:
        time.sleep(3.0 if busy else 0)  # spawned: let them start
        for ref, cand in track(pairs, description=f"beside {load}"):
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
            cand = eqbench.HELD_OUT_EQUIVALENT["scaled_vars_rows_reordered"](ir, np.random.default_rng(seed))
            if cand is not None:
                pairs.append((ir, cand.to_mps()))
    rows = []
    for load in LOADS:
        t = run(pairs, load)
        rows.append({"beside": load, "pairs": len(pairs),
                     **{f"{arm} total_s": sum(v) for arm, v in t.items()},
                     **{f"{arm} median_ms": statistics.median(v) * 1e3 for arm, v in t.items()},
                     **{f"{arm} max_ms": max(v) * 1e3 for arm, v in t.items()}})
    table = Table(title=f"compare_models over {len(pairs)} pairs: seconds in all")
    for col in ("beside", "default threads", "one thread", "ratio", "max ms default / one"):
        table.add_column(col, justify="right")
    for r in rows:
        d, o = r["default threads total_s"], r["one thread total_s"]
        table.add_row(r["beside"], f"{d:.2f}", f"{o:.2f}", f"{d / o:.1f}x",
                      f"{r['default threads max_ms']:.0f} / {r['one thread max_ms']:.0f}")
    Console(width=80).print(table)
    args.out.write_text(json.dumps({"bench": "blas_threads", "date": datetime.now(UTC).isoformat(), "rows": rows,
                                    "machine": machine()}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
