"""The parent's check of a captured MPS solve: pure-Python reader + check vs HiGHS's reader + numpy, by model size.

``verify.check_record`` reads a small captured model with ``solvers/sandbox/mps.py`` (pure Python, HiGHS's
semantics) and checks it without numpy; larger models (over ``verify.FAST_MPS_CHARS``) and anything the reader is not
sure of go through HiGHS (a scratch file, ``readModel``, ``getModel``, ``clearModel``) and numpy. Both give the same
verdict (``tests/test_sandbox_mps.py``); this measures what each costs the parent, per record, on real captured
records, to set the cut-off.

Records: every ``check_record`` call the parent makes while classifying (a) the corpus of ``bench/sandbox.py`` (the
knapsack programs whose throughput issue 3 sets a target for), and (b) gurobipy transportation models of growing
size (3x3 to 90x90 lanes), so that the sizes span 0.3k to ~450k characters (where the cut-off falls). Each record is checked by both paths,
``--repeats`` times (each a mean over enough calls to last >= 20 ms); the median per record; per size bucket the
medians and the median ratio. On a shared machine, ``--lock /tmp/team/cpu.lock`` holds that lock (flock) while timing,
not while the programs run.

    .venv/bin/python bench/verify_mps.py [--repeats 7] [--programs 204] [--lock /tmp/team/cpu.lock]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import solvers.sandbox.verify as verify  # noqa: E402
from bench._machine import machine, versions  # noqa: E402
from bench.sandbox import corpus  # noqa: E402
from solvers.sandbox import Program, SandboxConfig, run_batch  # noqa: E402
from solvers.sandbox.mps import parse  # noqa: E402

BUCKETS = [(0, 1_000), (1_000, 3_000), (3_000, 6_000), (6_000, 10_000), (10_000, 20_000), (20_000, 40_000),
           (40_000, 100_000), (100_000, verify.MAX_MPS_CHARS + 1)]
TRANSPORT = """import gurobipy as gp
n = {n}
m = gp.Model("transport"); m.Params.OutputFlag = 0
cost = {{(i, j): 1 + (7 * i + 13 * j) % 19 for i in range(n) for j in range(n)}}
x = m.addVars(n, n, name="ship")
m.addConstrs((x.sum(i, "*") <= 20 + i % 5 for i in range(n)), name="supply")
m.addConstrs((x.sum("*", j) >= 15 + j % 3 for j in range(n)), name="demand")
m.setObjective(x.prod(cost), gp.GRB.MINIMIZE)
m.optimize()
"""


def captured(programs: list[Program]) -> list[tuple[str, dict[str, Any], float, Any]]:
    """Every ``check_record`` call made while the parent classifies ``programs`` (its real inputs)."""
    calls: list[tuple[str, dict[str, Any], float, Any]] = []
    real = verify.check_record

    def spy(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
        calls.append((mps, dict(solution), objective, sense))
        return real(mps, solution, objective, sense)

    verify.check_record = spy  # type: ignore[assignment]
    try:
        config = SandboxConfig(timeout_s=60.0, memory_mb=2048, capture_mps=True,
                               preload=("numpy", "gurobipy", "coptpy", "highspy"))
        for _ in run_batch(programs, config):
            pass
    finally:
        verify.check_record = real  # type: ignore[assignment]
    return calls


def per_call(fn: Callable[[], Any], repeats: int) -> float:
    """Median over ``repeats`` of the mean CPU time (this thread's: the parent pays in CPU, and another process
    taking the core does not count) of one call, each repeat lasting >= 20 ms."""
    start = time.thread_time()
    fn()
    once = max(time.thread_time() - start, 1e-6)
    calls = max(1, int(0.02 / once))
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        for _ in range(calls):
            fn()
        times.append((time.thread_time() - start) / calls)
    return statistics.median(times)


def time_record(record: tuple[str, dict[str, Any], float, Any], repeats: int) -> dict[str, Any]:
    mps, solution, objective, sense = record
    cutoff = verify.FAST_MPS_CHARS
    try:
        verify.FAST_MPS_CHARS = verify.MAX_MPS_CHARS  # every model the reader takes goes the fast way
        fast_verdict = verify.check_record(*record)
        fast = per_call(lambda: verify.check_record(*record), repeats)
    finally:
        verify.FAST_MPS_CHARS = cutoff
    highs_verdict = verify._check_highs(*record)
    highs = per_call(lambda: verify._check_highs(*record), repeats)
    if fast_verdict != highs_verdict:
        raise AssertionError(f"verdicts differ: {fast_verdict!r} vs {highs_verdict!r}")
    model = parse(mps)
    return {"chars": len(mps), "columns": len(model.col_names) if model else None,
            "nonzeros": len(model.index) if model else None, "fast_reader": model is not None,
            "fast_ms": fast * 1e3, "highs_ms": highs * 1e3, "ratio": highs / fast}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--programs", type=int, default=204, help="size of bench/sandbox.py's corpus to capture")
    ap.add_argument("--lock", type=Path, help="a lock file to hold (flock) while timing")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "verify_mps.json")
    args = ap.parse_args()

    knapsacks = captured(corpus(args.programs))
    transport = captured([Program(program_id=f"transport-{n}", code=TRANSPORT.format(n=n))
                          for n in (3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 25, 32, 40, 50, 60, 75, 90)])
    rows = []
    with contextlib.ExitStack() as stack:
        if args.lock:
            fcntl.flock(stack.enter_context(args.lock.open("a")), fcntl.LOCK_EX)
        load = machine()["load_avg_1m"]
        for source, records in (("sandbox corpus", knapsacks), ("transport", transport)):
            for record in records:
                rows.append({"source": source, **time_record(record, args.repeats)})

    def summary(label: str, chosen: list[dict[str, Any]]) -> dict[str, Any]:
        taken = [r for r in chosen if r["fast_reader"]]
        return {"records": label, "n": len(chosen), "fast_reader": len(taken),
                "median_chars": statistics.median(r["chars"] for r in chosen),
                "median_nonzeros": statistics.median(r["nonzeros"] for r in taken) if taken else None,
                "fast_ms": statistics.median(r["fast_ms"] for r in chosen),
                "highs_ms": statistics.median(r["highs_ms"] for r in chosen),
                "ratio": statistics.median(r["ratio"] for r in chosen)}

    table = [summary("sandbox corpus (bench/sandbox.py)", [r for r in rows if r["source"] == "sandbox corpus"])]
    for lo, hi in BUCKETS:
        chosen = [r for r in rows if lo <= r["chars"] < hi]
        if chosen:
            table.append(summary(f"{lo // 1000}k-{hi // 1000}k chars", chosen))
    print(f"{'records':36} {'n':>4} {'fast rd':>7} {'chars':>8} {'nnz':>6} {'fast ms':>8} {'HiGHS ms':>9} "
          f"{'HiGHS/fast':>10}")
    for t in table:
        nnz = "-" if t["median_nonzeros"] is None else f"{t['median_nonzeros']:.0f}"
        print(f"{t['records']:36} {t['n']:4d} {t['fast_reader']:7d} {t['median_chars']:8.0f} {nnz:>6} "
              f"{t['fast_ms']:8.3f} {t['highs_ms']:9.3f} {t['ratio']:10.2f}")
    print(f"cut-off in use: verify.FAST_MPS_CHARS = {verify.FAST_MPS_CHARS} (larger models go through HiGHS)")
    info = {**machine(), **versions("highspy", "numpy", "gurobipy"), "date": datetime.now(UTC).isoformat(),
            "load_avg_1m_when_timing_began": load}
    print(f"machine: {info['cpu']}, {info['cores']} cores, load average {load} when timing began "
          "(shared machine: quote the ratios; absolute times are context)")
    args.out.write_text(json.dumps({"table": table, "records": rows, "fast_mps_chars": verify.FAST_MPS_CHARS,
                                    "repeats": args.repeats, "machine": info}, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
