"""The contract stage's cost with user contract files jailed (issue 18), against a baseline checkout in the same run.

Each tree (this one, and ``--baseline``, e.g. main before the change) runs in its own interpreter over a copy of the
same store (the demo's): its executed samples are re-checked with the ``default`` suite plus the README's user file
(``contracts/examples/my_contracts.py``), as ``flywheel contracts run --suite default --contracts FILE`` does. The
executor hands back each sample's stored execution, so the sandbox is out of the measurement and only the contracts
(repairs, checks, the blind processes) are timed. Cold = the first pass in a fresh interpreter (the jailed processes
start); warm = the median of the following passes.

    nice -n 19 .venv/bin/python bench/contracts_jail.py --store runs/flywheel-demo-speedrun/store --baseline /work/main
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402

# Runs inside each tree's own interpreter: prints {"cold": s, "warm": [s, ...], "samples": n, "summary": {...}}.
MEASURE = r"""
import json, sys, time
from contracts.engine import run_suite
from contracts.suites import Suite, load_suite
from flywheel.commands.contracts import _stored_samples
from flywheel.store import Store

store, user, repeats, spec = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with Store.open(store, create=False) as st:
    samples, _ = _stored_samples(st, None, None)
by_id = {s.sample_id: s.execution for s in samples}

def executor(attempts):
    return [by_id[a.attempt_id].model_copy(update={"program_id": a.attempt_id}) for a in attempts]

times = []
for _ in range(1 + repeats):
    start = time.perf_counter()
    if "," in spec:  # a list of contracts, then the user file's
        extra = load_suite(user)
        suite = Suite.of("bench", *spec.split(","), *extra.contracts)
    else:
        suite = load_suite(spec, contract_files=[user])
    report = run_suite(suite, samples, executor=executor)
    times.append(time.perf_counter() - start)
print(json.dumps({"cold": times[0], "warm": times[1:], "samples": len(samples), "summary": report.summary()}))
"""


def _measure(tree: Path, store: Path, repeats: int, suite: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-contracts-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        user = tree / "contracts" / "examples" / "my_contracts.py"
        out = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", MEASURE, str(copy), str(user),
                              str(repeats), suite], cwd=tree, capture_output=True, text=True, timeout=3600, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, required=True, help="a checkout with its own .venv (e.g. main)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--suite", action="append", default=None,
                    help="suite name, or contract names joined by commas (repeatable); default: the repairs alone, "
                         "then the policy suite (both plus the user file)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/contracts_jail.json"))
    args = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    suites = args.suite or ["strip_fences,fix_import_aliases,add_solve_call,inject_solver_params", "policy"]
    results = []
    print(f"{'suite':12} {'tree':10} {'samples':>8} {'cold s':>8} {'warm s':>8}")
    for spec in suites:
        rows = {}
        for name, tree in (("baseline", args.baseline.resolve()), ("jailed", here)):
            rows[name] = _measure(tree, args.store.resolve(), args.repeats, spec)
        base, new = rows["baseline"], rows["jailed"]
        assert base["summary"] == new["summary"], (base["summary"], new["summary"])  # same verdicts, cost moves
        label = "repairs" if "," in spec else spec
        for name, r in rows.items():
            print(f"{label:12} {name:10} {r['samples']:8d} {r['cold']:8.2f} {statistics.median(r['warm']):8.2f}")
        ratio_cold = new["cold"] / base["cold"]
        ratio_warm = statistics.median(new["warm"]) / statistics.median(base["warm"])
        print(f"{label:12} jailed / baseline: cold x{ratio_cold:.2f}, warm x{ratio_warm:.2f}")
        results.append({"suite": spec, "rows": rows, "ratio_cold": ratio_cold, "ratio_warm": ratio_warm})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": datetime.now(UTC).isoformat(), "machine": machine(),
                                    "store": str(args.store), "results": results}, indent=2))


if __name__ == "__main__":
    main()
