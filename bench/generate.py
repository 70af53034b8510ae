"""Problem-generation throughput: the round's generate stage (generate + two-solver ground truth + the five reference
programs + store rows, in its worker pool, committed into a real store) on this tree against a baseline tree (the
previous code path: ``git archive`` of ``--baseline``, default ``main``), measured in the same run.

    nice -n 19 .venv/bin/python bench/generate.py [--problems 580] [--workers 2] [--repeats 2] [--baseline main]

Each measurement is a fresh subprocess that puts one tree first on ``sys.path`` and runs
``flywheel.round.run.run_round(..., stages=["generate"])`` over ``--problems`` items (every family in turn,
difficulty drawn from the seed, 10% infeasible by design: a default round), so both trees run their own pool,
chunking and commits. Baseline and new alternate, ``--repeats`` times each, so both see the same load.

The machine is shared (other jobs hold the 2 cores), so wall time measures the load as much as the code: the
figures that compare are **CPU seconds per problem** (the subprocess's own CPU plus its pool workers', from
``getrusage``) and their ratio; wall time and the load average are reported as context. The projection for 10,000
problems on a quiet machine divides the CPU time by ``--workers`` cores (the pool's work splits evenly; the
parent's commits overlap with it). Each run also hashes its stored problem and attempt rows (timings zeroed):
both trees must store the same records.

A serial stage breakdown of this tree (CPU seconds per stage per problem: generate, ground truth with HiGHS and
the second solver timed apart, render, store row) follows, over ``--per-family`` seeds of every family.
Writes bench/results/generate.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMING_COLUMNS = ("gt_solve_ms", "measured_difficulty", "measured_level")  # differ run to run by nature


def _cpu_s() -> tuple[float, float]:
    """(this process, its reaped children) user + system CPU seconds."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def records_hash(store: Any) -> str:
    """sha256 over the stored problem and attempt rows in id order, run-dependent timings zeroed."""
    h = hashlib.sha256()
    for row in store.query("SELECT * EXCLUDE (round, created_at) FROM problems ORDER BY problem_id").to_pylist():
        for col in TIMING_COLUMNS:
            row.pop(col, None)
        gt = json.loads(row["ground_truth_json"])
        for run in gt["runs"]:
            run["solve_time_s"] = 0.0
        row["ground_truth_json"] = gt
        h.update(json.dumps(row, sort_keys=True, default=str).encode())
    for row in store.query("SELECT attempt_id, problem_id, api, code FROM attempts ORDER BY attempt_id").to_pylist():
        h.update(json.dumps(row, sort_keys=True).encode())
    return h.hexdigest()[:16]


def child(tree: str, problems: int, workers: int, infeasible_share: float) -> dict[str, Any]:
    """One measurement, in this (fresh) process: the generate stage of a round of ``tree``'s code."""
    sys.path.insert(0, tree)
    t_import = time.perf_counter()
    from flywheel.generators.base import family_names
    from flywheel.round.plan import RoundPlan
    from flywheel.round.run import run_round
    from flywheel.store import Store

    import_s = time.perf_counter() - t_import
    import flywheel

    if not Path(flywheel.__file__).resolve().is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"flywheel imported from {flywheel.__file__}, not from {tree}")
    plan = RoundPlan(problems=problems, families=tuple(family_names()), seed=0, difficulty=None,
                     infeasible_share=infeasible_share, api="rotate")
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp, Store.open(Path(tmp) / "store") as store:
        cpu0, w0 = _cpu_s(), time.perf_counter()
        run_round(store, plan, workers=workers, stages=["generate"])
        wall = time.perf_counter() - w0
        cpu1 = _cpu_s()
        stored = store.count("problems")
        digest = records_hash(store)
    parent_s, workers_s = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    return {"problems": problems, "stored": stored, "workers": workers, "wall_s": wall, "parent_cpu_s": parent_s,
            "workers_cpu_s": workers_s, "cpu_s": parent_s + workers_s,
            "cpu_ms_per_problem": 1000 * (parent_s + workers_s) / problems, "problems_per_wall_s": problems / wall,
            "problems_per_cpu_s": problems / (parent_s + workers_s), "import_s": import_s,
            "load_avg_1m": os.getloadavg()[0], "records_hash": digest}


def measure(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", str(tree), "--problems", str(args.problems),
                          "--workers", str(args.workers), "--infeasible-share", str(args.infeasible_share)],
                         cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"measurement of {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_tree(ref: str, into: Path) -> Path:
    """``ref``'s files (``git archive``), the previous code path to compare against."""
    tree = into / f"baseline-{ref.replace('/', '_')}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def stage_breakdown(per_family: int, infeasible_share: float) -> dict[str, Any]:
    """Serial CPU seconds per stage of one problem on this tree (first problem of the run excluded: it pays the
    solvers' one-off set-up, a Gurobi environment and the HiGHS banner)."""
    sys.path.insert(0, str(ROOT))
    from flywheel.generators.base import family_names, generate_problem
    from flywheel.store.rows import problem_row
    from solvers.ground_truth import judge, second_solvers, solve_with
    from solvers.render import APIS, render, supports

    families = family_names()
    stage = dict.fromkeys(("generate", "highs", "second_solver", "render", "store_row"), 0.0)
    per_family_s = dict.fromkeys(families, 0.0)
    clock = time.process_time
    jobs = [(f, s) for s in range(per_family) for f in families]
    for n, (family, seed) in enumerate([jobs[0], *jobs]):
        t0 = clock()
        problem = generate_problem(family, seed, None, infeasible_share)
        t1 = clock()
        primary = solve_with(problem.ir, "highs")
        t2 = clock()
        second = solve_with(problem.ir, second_solvers(problem.ir)[0])
        t3 = clock()
        programs = {api: render(problem.ir, api, problem.question) for api in APIS if supports(problem.ir, api)}
        t4 = clock()
        problem_row(problem.model_copy(update={"ground_truth": judge(primary, second),
                                               "reference_programs": programs}))
        t5 = clock()
        if n == 0:
            continue
        for key, s in zip(stage, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            stage[key] += s
        per_family_s[family] += t5 - t0
    count = len(jobs)
    return {"problems": count, "cpu_ms_per_problem": {k: 1000 * v / count for k, v in stage.items()},
            "total_cpu_ms_per_problem": 1000 * sum(stage.values()) / count,
            "per_family_cpu_ms": {f: 1000 * s / per_family for f, s in per_family_s.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problems", type=int, default=580, help="items per round measurement (20 per family)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2, help="round measurements per tree, alternating")
    ap.add_argument("--baseline", default="main", help="git ref of the previous code path")
    ap.add_argument("--per-family", type=int, default=3, help="seeds per family in the serial stage breakdown")
    ap.add_argument("--infeasible-share", type=float, default=0.1)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.problems, args.workers, args.infeasible_share)))
        return
    sys.path.insert(0, str(ROOT))
    from bench._machine import machine, versions

    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="bench-generate-trees-") as tmp:
        trees = {"baseline": baseline_tree(args.baseline, Path(tmp)), "new": ROOT}
        for r in range(args.repeats):
            for name in ("baseline", "new") if r % 2 == 0 else ("new", "baseline"):
                runs[name].append(res := measure(trees[name], args))
                print(f"{name:8s} {res['problems']} problems: {res['cpu_ms_per_problem']:6.1f} CPU ms/problem "
                      f"(parent {res['parent_cpu_s']:.1f} s + workers {res['workers_cpu_s']:.1f} s), wall "
                      f"{res['wall_s']:.1f} s = {res['problems_per_wall_s']:.1f}/s at load "
                      f"{res['load_avg_1m']:.1f}, records {res['records_hash']}", flush=True)

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in runs[name])

    hashes = {x["records_hash"] for name in runs for x in runs[name]}
    summary = {name: {k: med(name, k) for k in ("cpu_ms_per_problem", "parent_cpu_s", "workers_cpu_s", "wall_s",
                                                  "problems_per_wall_s", "problems_per_cpu_s")} for name in runs}
    for name in runs:
        summary[name]["projected_10k_quiet_s"] = 10_000 * summary[name]["cpu_ms_per_problem"] / 1000 / args.workers
    cpu_ratio = summary["baseline"]["cpu_ms_per_problem"] / summary["new"]["cpu_ms_per_problem"]
    wall_ratio = summary["baseline"]["wall_s"] / summary["new"]["wall_s"]
    print(f"\n{'round generate stage (medians)':34s} {'baseline':>10s} {'new':>10s}")
    for key, label in (("cpu_ms_per_problem", "CPU ms / problem"), ("problems_per_cpu_s", "problems / CPU s"),
                       ("parent_cpu_s", "parent CPU s"), ("workers_cpu_s", "workers CPU s"),
                       ("problems_per_wall_s", "problems / wall s (loaded)"),
                       ("projected_10k_quiet_s", f"10k problems, {args.workers} quiet cores, s")):
        print(f"{label:34s} {summary['baseline'][key]:10.1f} {summary['new'][key]:10.1f}")
    print(f"new / baseline: {cpu_ratio:.2f}x fewer CPU seconds per problem; wall {wall_ratio:.2f}x (load-bound)")
    print("records identical across trees and runs:", len(hashes) == 1)

    breakdown = stage_breakdown(args.per_family, args.infeasible_share)
    print(f"\nserial stage breakdown, this tree, {breakdown['problems']} problems (CPU ms / problem):")
    for key, ms in breakdown["cpu_ms_per_problem"].items():
        print(f"  {key:14s} {ms:6.1f}")
    print(f"  {'total':14s} {breakdown['total_cpu_ms_per_problem']:6.1f}")
    slow = sorted(breakdown["per_family_cpu_ms"].items(), key=lambda kv: -kv[1])[:6]
    print("slowest families (CPU ms / problem):", ", ".join(f"{f} {ms:.0f}" for f, ms in slow))
    out = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions("highspy", "gurobipy", "ortools", "numpy", "pydantic", "duckdb", "pyarrow"),
        "args": {k: v for k, v in vars(args).items() if k != "child"},
        "round_generate": {"runs": runs, "median": summary, "cpu_ratio_baseline_over_new": cpu_ratio,
                           "wall_ratio_baseline_over_new": wall_ratio, "records_identical": len(hashes) == 1},
        "serial_stages": breakdown,
        "note": "shared 2-core machine under load from other jobs: compare CPU seconds; wall is context",
    }
    path = ROOT / "bench" / "results" / "generate.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
