"""The speedrun across seeds (issue 17's speedrun target with its spread): round-0 SFT of SmolLM2-135M-Instruct on
the three LP families, one run per seed, every run scored on the same 60 held-out problems from unseen seeds
(strict and lenient Pass@1, greedy). A seed moves round 0's problems and the SFT data order (``DemoSize.seed``);
the held-out problems do not move, so the spread is the training run's, not the test set's.

Each seed is one ``python -m flywheel.demo --size speedrun`` run (resumable; a seed whose report exists is read,
not re-run). Round 0 only, no zero-shot (0% on every earlier run) and no benchmark transfer (0% on every earlier run).

    python bench/speedrun_seeds.py --seeds 0,1,2 --sft-steps 150 [--lr 1.5e-4]

Writes bench/results/speedrun_seeds.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench._machine import machine  # noqa: E402
from flywheel.demo.sizes import SIZES  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def run_seed(seed: int, steps: int, lr: float, init: str, work: Path, reports: Path,
             extra: Sequence[str] = ()) -> dict[str, Any]:
    report = reports / f"seed{seed}" / "results.json"
    if not report.exists():
        subprocess.run([sys.executable, "-m", "flywheel.demo", "--size", "speedrun",
                        "--work", str(work / f"seed{seed}"), "--reports", str(report.parent), "--init", init, "--no-progress",
                        "--set", f"seed={seed}", "--set", f"sft_steps={steps}", "--set", f"lr_sft={lr}",
                        "--set", "rounds=0",
                        "--set", "zero_shot=False", "--set", "benchmarks=",
                        *[a for kv in extra for a in ("--set", kv)]], cwd=ROOT, check=True)
    return json.loads(report.read_text())


def summarize(results: dict[int, dict[str, Any]]) -> dict[str, Any]:
    per_seed = {}
    for seed, res in sorted(results.items()):
        r0 = next(r for r in res["rounds"] if r["round"] == 0)
        per_seed[seed] = {"strict": r0["pass@1_strict"], "lenient": r0["pass@1_lenient"], "items": r0["items"],
                          "train_s": r0["train_s"], "train_rows": r0["train_rows"],
                          "families": {f: v["pass@1_strict"] for f, v in r0["per_family"].items()},
                          "misses": r0["miss_classes"], "sft_steps": res["settings"]["sft_steps"],
                          "steps": r0.get("steps") or res["settings"]["sft_steps"],  # fewer where a budget cut it
                          "sft_budget_s": res["settings"].get("sft_budget_s", 0.0),
                          "sft_min_steps": res["settings"].get("sft_min_steps", 0),
                          "lr_sft": res["settings"].get("lr_sft"),
                          "freeze": [res["settings"].get("freeze_layers", 0), res["settings"].get("freeze_embeddings", False)],
                          "compile": res["settings"].get("compile", False),
                          "lora": [res["settings"].get("lora_r", 0), res["settings"].get("lora_alpha", 0.0)],
                          "length_groups": res["settings"].get("length_groups", 0),
                          "overlap": res["settings"]["heldout_in_training_store"]}

    def spread(key: str) -> dict[str, float]:
        vals = [s[key] for s in per_seed.values()]
        return {"mean": statistics.mean(vals), "std": statistics.stdev(vals) if len(vals) > 1 else 0.0,
                "min": min(vals), "max": max(vals)}
    return {"per_seed": per_seed, "strict": spread("strict"), "lenient": spread("lenient"),
            "train_s": spread("train_s")}


def markdown(summary: dict[str, Any]) -> str:
    seeds = summary["per_seed"]
    fams = sorted(next(iter(seeds.values()))["families"])
    short = {f: f.split("_")[0][:10] for f in fams}
    lines = ["| seed | steps | train s | strict | lenient | " + " | ".join(short[f] for f in fams) + " |",
             "|---:|---:|---:|---:|---:|" + "---:|" * len(fams)]
    for seed, s in seeds.items():
        lines.append(f"| {seed} | {s['steps']} | {s['train_s']:.0f} | {100 * s['strict']:.1f}% | "
                     f"{100 * s['lenient']:.1f}% | "
                     + " | ".join(f"{100 * s['families'][f]:.0f}%" for f in fams) + " |")
    st, le = summary["strict"], summary["lenient"]
    lines.append(f"| mean | | {summary['train_s']['mean']:.0f} | {100 * st['mean']:.1f}% +- {100 * st['std']:.1f} | "
                 f"{100 * le['mean']:.1f}% +- {100 * le['std']:.1f} |" + " |" * len(fams))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    speedrun = SIZES["speedrun"]  # the defaults are the speedrun size's own
    ap.add_argument("--sft-steps", type=int, default=speedrun.sft_steps)
    ap.add_argument("--lr", type=float, default=speedrun.lr_sft, help="round-0 peak learning rate (lr_sft)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="further speedrun size fields, e.g. freeze_layers=10 (repeatable)")
    ap.add_argument("--init", default="smollm2", help="checkpoint folder or `flywheel models import` source")
    ap.add_argument("--work", type=Path, default=ROOT / "runs" / "speedrun-seeds")
    ap.add_argument("--reports", type=Path, default=ROOT / "reports" / "flywheel" / "speedrun-seeds")
    ap.add_argument("--name", default="speedrun_seeds", help="results file stem under bench/results/")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {s: run_seed(s, args.sft_steps, args.lr, args.init, args.work, args.reports, args.set) for s in seeds}
    summary = summarize(results)
    out = {"bench": args.name, "machine": machine(), "seeds": seeds, "sft_steps": args.sft_steps, "lr_sft": args.lr, "set": args.set,
           "command": " ".join(["python bench/speedrun_seeds.py", *sys.argv[1:]]), **summary}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    md = markdown(summary)
    (RESULTS / f"{args.name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
