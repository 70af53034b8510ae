"""Store benchmark: ingest 1,000,000 synthetic sample rows, run a typical aggregate query, measure size on disk;
the same work with JSONL + pandas (the baseline most OR-data pipelines use) side by side.

    .venv/bin/python bench/store.py [--rows 1000000] [--batch 50000] [--repeats 5]

Ingest goes through the real write path (``Store.write``: validation, in-batch and against-the-table dedup by
key, zstd Parquet, fsync, sha256 manifest). The query is the one a difficulty curriculum asks for: pass rate and
median wall time by family x difficulty x policy x round. Both sides start from the same Python dicts, generated
outside the timed region. Writes results to bench/results/store.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flywheel.store import Store, TableSpec, register_table  # noqa: E402
from flywheel.store.lineage import package_version  # noqa: E402
from flywheel.store.schema import INT, TS, B, F, S  # noqa: E402

FAMILIES = ["production_planning", "diet", "blending", "transportation", "assignment", "multi_knapsack",
            "facility_location", "set_cover", "min_cost_flow", "max_flow", "shift_staffing", "lot_sizing",
            "portfolio", "bin_packing", "tsp", "parallel_machine"]
POLICIES = ["reference", "qwen2.5-7b@t0.7", "llama3-8b-sft@t0.7"]
APIS = ["gurobipy", "pyomo", "ortools", "coptpy", "docplex"]
STATUSES = ["ok", "ok", "ok", "ok", "runtime_error", "syntax_error", "solver_infeasible", "timeout_wall"]

SPEC = register_table(TableSpec(
    "bench_samples",
    {"round": INT, "attempt_id": S, "problem_id": S, "family": S, "difficulty": INT, "policy": S, "api": S,
     "exec_status": S, "objective": F, "gt_objective": F, "wall_s": F, "accepted": B, "code": S,
     "created_at": TS},
    key=("attempt_id",),
    doc="benchmark only: one denormalised sample row",
))

QUERY_SQL = """
    SELECT family, difficulty, policy, round, count(*) AS n, avg(accepted::INT) AS pass_rate,
           median(wall_s) AS median_wall_s
    FROM bench_samples GROUP BY ALL ORDER BY ALL
"""


def batch_rows(index: int, size: int, rounds: int) -> list[dict[str, Any]]:
    """Deterministic synthetic rows of batch ``index`` (its own Generator: the two sides get identical rows)."""
    rng = np.random.default_rng([2026, index])
    fam = rng.integers(len(FAMILIES), size=size)
    diff = rng.integers(1, 6, size=size)
    pol = rng.integers(len(POLICIES), size=size)
    api = rng.integers(len(APIS), size=size)
    status = rng.integers(len(STATUSES), size=size)
    gt = rng.uniform(10, 10_000, size=size).round(4)
    noise = rng.random(size)
    wall = rng.gamma(2.0, 0.4, size=size).round(4)
    code_len = rng.integers(300, 1500, size=size)
    rows = []
    base = index * size
    for i in range(size):
        ok = STATUSES[status[i]] == "ok"
        obj = float(gt[i]) if ok and noise[i] < 0.8 else (float(gt[i]) * 1.1 if ok else None)
        rows.append({
            "round": 1 + (base + i) % rounds, "attempt_id": f"a{base + i:012x}", "problem_id": f"p{(base + i) // 4:010x}",
            "family": FAMILIES[fam[i]], "difficulty": int(diff[i]), "policy": POLICIES[pol[i]], "api": APIS[api[i]],
            "exec_status": STATUSES[status[i]], "objective": obj, "gt_objective": float(gt[i]),
            "wall_s": float(wall[i]), "accepted": bool(ok and noise[i] < 0.8),
            "code": "import gurobipy as gp\n" + "x" * int(code_len[i] // 8),
        })
    return rows


def bench_store(root: Path, n_batches: int, batch: int, rounds: int) -> dict[str, float]:
    store = Store.open(root)
    ingest_s = ingest_cpu_s = 0.0
    with store.lock():
        for b in range(n_batches):
            rows = batch_rows(b, batch, rounds)
            # One round per batch is how a round commits; rows carry round r, so split by round like run-round.
            by_round: dict[int, list[dict[str, Any]]] = {}
            for r in rows:
                by_round.setdefault(r.pop("round"), []).append(r)
            t, c = time.perf_counter(), time.process_time()
            for rnd, rs in by_round.items():
                store.write("bench_samples", rnd, rs)
            ingest_s += time.perf_counter() - t
            ingest_cpu_s += time.process_time() - c
        repeat = [r for r in batch_rows(0, batch, rounds) if r.pop("round") == 1]
        t = time.perf_counter()
        again = store.write("bench_samples", 1, repeat)
        dedup_s = time.perf_counter() - t
    assert again == 0
    store.close()
    times, cpu = [], []
    for _ in range(args.repeats):
        t, c = time.perf_counter(), time.process_time()
        with Store.open(root, create=False) as st:  # a fresh reader each time: open + views + query
            result = st.query(QUERY_SQL)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)  # all of DuckDB's threads included
    return {"ingest_s": ingest_s, "rows_per_s": n_batches * batch / ingest_s, "ingest_cpu_s": ingest_cpu_s,
            "rows_per_cpu_s": n_batches * batch / ingest_cpu_s, "rewrite_batch_s": dedup_s,
            "query_s_median": statistics.median(times), "query_cpu_s_median": statistics.median(cpu),
            "query_rows": result.num_rows,
            "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file())}


def bench_jsonl(root: Path, n_batches: int, batch: int, rounds: int) -> dict[str, float]:
    import pandas as pd

    root.mkdir(parents=True)
    path = root / "samples.jsonl"
    ingest_s = ingest_cpu_s = 0.0
    with open(path, "w") as f:
        for b in range(n_batches):
            rows = batch_rows(b, batch, rounds)
            t, c = time.perf_counter(), time.process_time()
            f.write("".join(json.dumps(r) + "\n" for r in rows))
            f.flush()
            ingest_s += time.perf_counter() - t
            ingest_cpu_s += time.process_time() - c
    load_times, query_times, cpu = [], [], []
    for _ in range(min(args.repeats, 3)):  # each repeat re-parses the whole JSONL file: minutes on a busy machine
        t, c = time.perf_counter(), time.process_time()
        df = pd.read_json(path, lines=True)
        t_loaded = time.perf_counter()
        df["accepted_i"] = df["accepted"].astype(int)
        out = (df.groupby(["family", "difficulty", "policy", "round"])
               .agg(n=("attempt_id", "size"), pass_rate=("accepted_i", "mean"), median_wall_s=("wall_s", "median"))
               .reset_index())
        query_times.append(time.perf_counter() - t_loaded)
        cpu.append(time.process_time() - c)
        load_times.append(t_loaded - t)
        del df
    return {"ingest_s": ingest_s, "rows_per_s": n_batches * batch / ingest_s, "ingest_cpu_s": ingest_cpu_s,
            "rows_per_cpu_s": n_batches * batch / ingest_cpu_s,
            "query_s_median": statistics.median(a + b for a, b in zip(load_times, query_times, strict=True)),
            "query_cpu_s_median": statistics.median(cpu),
            "query_only_s_median": statistics.median(query_times), "query_rows": len(out),
            "bytes": path.stat().st_size}


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    import os

    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "duckdb": package_version("duckdb"), "pyarrow": package_version("pyarrow"),
            "pandas": package_version("pandas"), "numpy": package_version("numpy"),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


def main() -> None:
    n_batches = args.rows // args.batch
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        store = bench_store(tmp / "store", n_batches, args.batch, args.rounds)
        jsonl = bench_jsonl(tmp / "jsonl", n_batches, args.batch, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert store["query_rows"] == jsonl["query_rows"], "both sides must compute the same groups"
    from rich.console import Console
    from rich.table import Table

    table = Table(width=110, title=f"store bench: {n_batches * args.batch:,} sample rows, {args.batch:,}-row batches")
    for c in ("", "store (DuckDB + Parquet)", "JSONL + pandas", "ratio"):
        table.add_column(c, justify="right")
    table.add_row("ingest rows/s", f"{store['rows_per_s']:,.0f}", f"{jsonl['rows_per_s']:,.0f}",
                  f"{store['rows_per_s'] / jsonl['rows_per_s']:.2f}x")
    table.add_row("ingest rows per CPU-second", f"{store['rows_per_cpu_s']:,.0f}", f"{jsonl['rows_per_cpu_s']:,.0f}",
                  f"{store['rows_per_cpu_s'] / jsonl['rows_per_cpu_s']:.2f}x")
    table.add_row("aggregate query s (median, cold open)", f"{store['query_s_median']:.3f}",
                  f"{jsonl['query_s_median']:.3f}", f"{jsonl['query_s_median'] / store['query_s_median']:.1f}x faster")
    table.add_row("aggregate query CPU-s (median)", f"{store['query_cpu_s_median']:.3f}",
                  f"{jsonl['query_cpu_s_median']:.3f}",
                  f"{jsonl['query_cpu_s_median'] / store['query_cpu_s_median']:.1f}x less")
    table.add_row("  of which pandas groupby on a loaded frame", "", f"{jsonl['query_only_s_median']:.3f}", "")
    table.add_row("size on disk MB", f"{store['bytes'] / 1e6:.1f}", f"{jsonl['bytes'] / 1e6:.1f}",
                  f"{jsonl['bytes'] / store['bytes']:.1f}x smaller")
    table.add_row(f"re-write of a {args.batch // args.rounds:,}-row part (dedup, adds 0) s", f"{store['rewrite_batch_s']:.3f}", "n/a", "")
    Console(width=140).print(table)
    out = {"rows": n_batches * args.batch, "batch": args.batch, "repeats": args.repeats, "store": store,
           "jsonl_pandas": jsonl, "targets": {"ingest_rows_per_s": 50_000, "query_s": 1.0},
           "machine": machine(),
           "note": "2 shared cores, other engineers' jobs running: absolute times are inflated; compare ratios"}
    dest = Path(__file__).resolve().parent / "results" / "store.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    main()
