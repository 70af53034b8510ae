"""Problem-generation throughput: problems/s for generate + ground truth (+ reference programs + store) over every
family, against the one-solver baseline (HiGHS only, no second opinion) measured in the same run.

    .venv/bin/python bench/generate.py [--per-family 4] [--repeats 3] [--infeasible-share 0.1]
    .venv/bin/python bench/generate.py --round 10000 --workers 2   # the round's pooled path, 10k problems

``--round N`` also times the path a round takes (``flywheel.round.generate``: a fork pool of ``--workers``
processes running generate + two-solver ground truth + every reference program + store rows, the parent writing
batches of 500 into a real store), over N problems with families rotating as a round's items do, against the
serial stage totals above as the baseline (problems/s ratio), and projects the time for 10,000 problems.

Each repeat generates ``per-family`` problems per registered family (seeds 0..n-1, difficulty drawn from the seed
as a round does), then times four stages per problem: ``generate`` (sample, IR, question, formulation),
``ground_truth`` (HiGHS + the second solver), ``render`` (the five reference programs) and ``store`` (one batched
``Store.write`` into a temporary store, when ``flywheel.store`` exists). The baseline is ``generate`` + a HiGHS
solve only: what the second solver costs is the ratio. Medians over repeats; writes bench/results/generate.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine, versions  # noqa: E402
from flywheel.generators.base import family_names, generate_problem  # noqa: E402
from solvers.ground_truth import solve_ground_truth, solve_with  # noqa: E402
from solvers.render import APIS, render, supports  # noqa: E402


def store_writer():  # type: ignore[no-untyped-def]
    """A function writing problems into a fresh temporary store, or None when ``flywheel.store`` is absent."""
    try:
        from flywheel.store import Store
        from flywheel.store.rows import problem_row
    except ImportError:
        return None
    root = Path(tempfile.mkdtemp(prefix="bench-generate-store-"))

    def write(problems: list, round_index: int) -> None:
        with Store.open(root / f"r{round_index}") as store:
            store.write("problems", round_index, [problem_row(p) for p in problems])

    return write


def one_repeat(families: list[str], per_family: int, infeasible_share: float, write, repeat: int) -> dict[str, Any]:
    stage = {"generate": 0.0, "ground_truth": 0.0, "render": 0.0, "store": 0.0, "baseline_highs_only": 0.0}
    per_family_s: dict[str, float] = {f: 0.0 for f in families}
    disputed, problems = 0, []
    for family in families:
        for seed in range(per_family):
            t0 = time.perf_counter()
            problem = generate_problem(family, seed, None, infeasible_share)
            t1 = time.perf_counter()
            truth = solve_ground_truth(problem.ir)
            t2 = time.perf_counter()
            programs = {api: render(problem.ir, api) for api in APIS if supports(problem.ir, api)}
            t3 = time.perf_counter()
            solve_with(problem.ir, "highs")  # the baseline's only solve
            t4 = time.perf_counter()
            stage["generate"] += t1 - t0
            stage["ground_truth"] += t2 - t1
            stage["render"] += t3 - t2
            stage["baseline_highs_only"] += (t1 - t0) + (t4 - t3)
            per_family_s[family] += t3 - t0
            disputed += truth.disputed
            problems.append(problem.model_copy(update={"ground_truth": truth, "reference_programs": programs}))
    if write is not None:
        t0 = time.perf_counter()
        write(problems, repeat)
        stage["store"] = time.perf_counter() - t0
    return {"stage_s": stage, "per_family_s": per_family_s, "n": len(problems), "disputed": disputed}


def round_path(n: int, workers: int, infeasible_share: float) -> dict[str, Any]:
    """N problems through the round's generate worker in its fork pool, stored in batches: problems/s."""
    from flywheel.generators.base import derive_seed
    from flywheel.round.generate import _generate_item, _pool, _warm_imports
    from flywheel.store import Store
    from solvers.render import APIS as RENDER_APIS

    families = family_names()
    tasks = [(i, families[i % len(families)], derive_seed(0, i), None, infeasible_share,
              RENDER_APIS[i % len(RENDER_APIS)]) for i in range(n)]
    root = Path(tempfile.mkdtemp(prefix="bench-generate-round-"))
    _warm_imports()
    t0 = time.perf_counter()
    disputed, batch = 0, []
    with Store.open(root / "store") as store, _pool(workers, n) as pool:
        results = pool.map(_generate_item, tasks, chunksize=8) if pool else map(_generate_item, tasks)

        def flush() -> None:
            store.write("problems", 0, [b["problem"] for b in batch])
            store.write("attempts", 0, [b["attempt"] for b in batch if b["attempt"]])

        for res in results:
            batch.append(res)
            disputed += res["disputed"]
            if len(batch) >= 500:
                flush()
                batch = []
        if batch:
            flush()
        stored = store.count("problems")
    seconds = time.perf_counter() - t0
    return {"problems": n, "stored": stored, "workers": workers, "seconds": seconds, "problems_per_s": n / seconds,
            "projected_10k_s": 10_000 * seconds / n, "disputed": disputed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-family", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--infeasible-share", type=float, default=0.1)
    ap.add_argument("--round", type=int, default=0, help="also time N problems through the round's pooled path")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    families = family_names()
    write = store_writer()
    results = [one_repeat(families, args.per_family, args.infeasible_share, write, r) for r in range(args.repeats)]
    n = results[0]["n"]

    def med(key: str) -> float:
        return statistics.median(r["stage_s"][key] for r in results)

    full = med("generate") + med("ground_truth") + med("render") + med("store")
    rows = [
        ("generate only", med("generate")),
        ("ground truth (2 solvers)", med("ground_truth")),
        ("render reference programs (5 APIs)", med("render")),
        ("store write" if write else "store write (flywheel.store missing: skipped)", med("store")),
        ("generate + ground truth", med("generate") + med("ground_truth")),
        ("full: generate + GT + render + store", full),
        ("baseline: generate + HiGHS only", med("baseline_highs_only")),
    ]
    print(f"{n} problems per repeat over {len(families)} families, {args.repeats} repeats (medians)")
    print(f"{'stage':44s} {'total s':>9s} {'problems/s':>11s}")
    for name, seconds in rows:
        rate = n / seconds if seconds > 0 else float("inf")
        print(f"{name:44s} {seconds:9.3f} {rate:11.1f}")
    ratio = (med("generate") + med("ground_truth")) / med("baseline_highs_only")
    print(f"two-solver ground truth costs {ratio:.2f}x the HiGHS-only baseline (generate included in both)")
    per_family = {f: statistics.median(r["per_family_s"][f] for r in results) / args.per_family for f in families}
    print("slowest families (ms per problem, generate + GT + render):",
          ", ".join(f"{f} {1000 * s:.0f}" for f, s in sorted(per_family.items(), key=lambda kv: -kv[1])[:5]))
    pooled = None
    if args.round:
        pooled = round_path(args.round, args.workers, args.infeasible_share)
        serial_rate = n / full
        print(f"round path: {pooled['problems']} problems ({pooled['stored']} stored) on {pooled['workers']} workers "
              f"in {pooled['seconds']:.1f} s = {pooled['problems_per_s']:.1f} problems/s "
              f"({pooled['problems_per_s'] / serial_rate:.2f}x the serial full path); 10,000 problems: "
              f"{pooled['projected_10k_s']:.0f} s projected")
    print("note: measured on a shared 2-core machine while other jobs ran; absolute times are distorted, "
          "ratios less so.")
    out = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions("highspy", "gurobipy", "ortools", "numpy", "pydantic", "duckdb", "pyarrow"),
        "args": vars(args),
        "families": families,
        "problems_per_repeat": n,
        "stage_s_median": {k: med(k) for k in results[0]["stage_s"]},
        "problems_per_s": {name: (n / s if s > 0 else None) for name, s in rows},
        "two_solver_over_baseline": ratio,
        "per_family_ms_median": {f: 1000 * s for f, s in per_family.items()},
        "disputed": [r["disputed"] for r in results],
        "store": bool(write),
        "round_path": pooled,
        "note": "shared 2-core machine under load from other jobs: absolute times distorted",
    }
    path = Path(__file__).resolve().parent / "results" / "generate.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
