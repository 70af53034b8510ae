"""Per-program wall time on a warm sandbox worker for the libraries added to the default preload (cvxpy,
scipy.optimize, pyscipopt): a worker that preloaded the program's library vs one that did not (the default before),
same program, same pool settings. The first run of each arm (worker start-up) is excluded; the median of the rest.

    .venv/bin/python bench/preload.py [--runs 8]

Writes bench/results/preload.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402
from solvers.sandbox import Pool, Program, SandboxConfig  # noqa: E402
from solvers.sandbox.program import DEFAULT_PRELOAD, ON_DEMAND  # noqa: E402

PROGRAMS = {
    "cvxpy": "import cvxpy as cp\nx = cp.Variable(2, nonneg=True)\n"
             "p = cp.Problem(cp.Maximize(3*x[0] + 2*x[1]), [x[0] + x[1] <= 4, x[0] + 3*x[1] <= 6, x[0] <= 3])\n"
             "p.solve(solver=cp.HIGHS)\nprint(p.value)\n",
    "scipy.optimize": "from scipy.optimize import linprog\n"
                      "r = linprog([-3, -2], A_ub=[[1, 1], [1, 3]], b_ub=[4, 6], bounds=[(0, 3), (0, None)])\n"
                      "print(-r.fun)\n",
    "pyscipopt": "from pyscipopt import Model\nm = Model()\nx = m.addVar(ub=3)\ny = m.addVar()\n"
                 "m.addCons(x + y <= 4)\nm.addCons(x + 3*y <= 6)\nm.setObjective(3*x + 2*y, 'maximize')\n"
                 "m.optimize()\nprint(m.getObjVal())\n",
}


def _time(preload: tuple[str, ...], code: str, runs: int) -> tuple[list[float], str, float | None]:
    pool = Pool(SandboxConfig(preload=preload, timeout_s=60), workers=1)
    try:
        times, e = [], None
        for i in range(runs + 1):
            t0 = time.perf_counter()
            e = pool.run(Program(program_id=f"p{i}", code=code))
            times.append(time.perf_counter() - t0)
    finally:
        pool.close()
    return times[1:], str(e.status), e.objective


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args()
    before = tuple(m for m in DEFAULT_PRELOAD if m not in ON_DEMAND)
    rows = []
    for lib in ON_DEMAND:
        arms = {}
        for arm, preload in (("without", before), ("preloaded", DEFAULT_PRELOAD)):
            times, status, objective = _time(preload, PROGRAMS[lib], args.runs)
            arms[arm] = {"median_s": round(statistics.median(times), 4), "runs_s": [round(t, 4) for t in times],
                         "status": status, "objective": objective}
        ratio = arms["without"]["median_s"] / arms["preloaded"]["median_s"]
        rows.append({"library": lib, **arms, "speedup": round(ratio, 1)})
        print(f"{lib:15} {arms['without']['median_s']:7.3f} s -> {arms['preloaded']['median_s']:7.3f} s "
              f"({ratio:5.1f}x)", flush=True)
    out = Path(__file__).resolve().parent / "results" / "preload.json"
    out.write_text(json.dumps({"bench": "preload", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "machine": machine(), "runs": args.runs, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
