"""Issue 20's transfer table on the public test sets, gathered from the ``flywheel eval run`` directories that made it.

Each row is one ``flywheel eval run`` (its command is written beside its figures; rerunning it with the same policy
cache reproduces the row): the base checkpoint and the two fine-tuned arms of ``bench/family_transfer.py`` ((a) rows
from the 16 original families, (b) from all of them; the same recipe and number of rows), zero-shot, greedy, on all of
NL4Opt and MAMO EasyLP. Strict and lenient Pass@1 with a 95% Wilson interval, and the strict misses by class.

    python bench/family_transfer_public.py [--eval runs/family-transfer/all/eval]

Writes bench/results/family_transfer_public.{json,md}; rows whose evaluation directory is missing are skipped, and
where the run over every item is missing, the run over the most leading items (``--limit N``, directory ``...-N``)
stands in, its item count shown.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
BENCH = "../shared/benchmarks"
ARMS = {  # arm -> (checkpoint, policy config, note)
    "base": ("runs/family-transfer/16/base", "runs/family-transfer/all/policy-repeat.toml",
             "rows that loop end at 128 repeated tokens ([policy] repeat_stop)"),
    "(a) 16 families": ("runs/family-transfer/16/runs/sft-16/final", "runs/family-transfer/all/policy.toml", ""),
    "(b) all 65": ("runs/flywheel-demo-full3/runs/sft-r0/final", "runs/family-transfer/all/policy.toml", ""),
}
DIRS = {("nl4opt", "base"): "base-nl4opt-all", ("nl4opt", "(a) 16 families"): "sft-16-nl4opt-all",
        ("nl4opt", "(b) all 65"): "sft-all-nl4opt-all", ("mamo_easylp", "base"): "base-mamo_easylp-all",
        ("mamo_easylp", "(a) 16 families"): "sft-16-mamo_easylp-all",
        ("mamo_easylp", "(b) all 65"): "sft-all-mamo_easylp-all"}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of k successes in n: honest near 0, where these scores live."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def largest(eval_dir: Path, name: str) -> Path | None:
    """The run of ``name`` (all items) or, failing it, of ``name`` with the largest ``--limit`` (``...-256``)."""
    if (eval_dir / name / "summary.json").is_file():
        return eval_dir / name
    stem = name.removesuffix("-all")
    runs = [p for p in eval_dir.glob(f"{stem}-*") if p.name.removeprefix(f"{stem}-").isdigit()
            and (p / "summary.json").is_file()]
    return max(runs, key=lambda p: int(p.name.rsplit("-", 1)[1]), default=None)


def row(eval_dir: Path, benchmark: str, arm: str) -> dict | None:
    path = largest(eval_dir, DIRS[(benchmark, arm)])
    if path is None:
        return None
    summary = json.loads((path / "summary.json").read_text())
    s = summary["summary"][benchmark]
    limit = "" if path.name.endswith("-all") else f" --limit {path.name.rsplit('-', 1)[1]}"
    checkpoint, config, note = ARMS[arm]
    strict, lenient = s["rules"]["strict"], s["rules"]["orlm_lenient"]
    return {"benchmark": benchmark, "arm": arm, "checkpoint": f"hf:{checkpoint}", "items": s["items"],
            "strict": {**strict, "wilson95": [round(x, 4) for x in wilson(strict["passed"], s["items"])]},
            "lenient": lenient, "miss_classes": s["miss_classes"], "negated_objective": s.get("negated_objective", 0),
            "note": note,
            "command": f"flywheel eval run --policy hf:{checkpoint} --benchmark {BENCH}/{benchmark}{limit} --api gurobipy "
                       f"--config {config} --out {path}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval", type=Path, default=Path("runs/family-transfer/all/eval"))
    args = ap.parse_args()
    rows = [r for b in ("nl4opt", "mamo_easylp") for a in ARMS if (r := row(args.eval, b, a))]
    result = {"bench": "family_transfer_public", "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": machine(),
              "note": "zero-shot Pass@1 on the items each row counts (a set's leading items where it counts fewer than "
                      "the set holds: NL4Opt 245, MAMO EasyLP 652), greedy, at most 1,000 new tokens, fp32 decoding, "
                      "2 threads; the fine-tuned arms are bench/results/family_transfer_full.json's checkpoints "
                      "(760 SFT rows seen by each)", "results": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "family_transfer_public.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["| benchmark | model | items | strict (95% CI) | lenient | misses (strict) |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        st, le, (lo, hi) = r["strict"], r["lenient"], r["strict"]["wilson95"]
        misses = ", ".join(f"{k} {v}" for k, v in sorted(r["miss_classes"].items()))
        lines.append(f"| {r['benchmark']} | {r['arm']} | {r['items']} | {st['passed']} ({st['pass@1']:.1%}; "
                     f"{lo:.1%}-{hi:.1%}) | {le['passed']} ({le['pass@1']:.1%}) | {misses} |")
    (RESULTS / "family_transfer_public.md").write_text("\n".join(lines) + "\n")
    print(f"{'benchmark':<12} {'model':<16} {'items':>5} {'strict':>14} {'lenient':>14}")
    for r in rows:
        st, le = r["strict"], r["lenient"]
        print(f"{r['benchmark']:<12} {r['arm']:<16} {r['items']:>5} {st['passed']:>5} ({st['pass@1']:5.1%}) "
              f"{le['passed']:>5} ({le['pass@1']:5.1%})")


if __name__ == "__main__":
    main()
