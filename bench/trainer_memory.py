"""Resident memory of CPU training with and without the per-step heap trim (``[train] trim_memory``).

glibc keeps freed chunks below its mmap threshold (which rises to 32 MB) in the heap, and a training step frees GBs
of activations whose sizes follow each batch's row lengths, so without a trim the heap only grows. Each arm is one
process (resident memory is per process) running ``--steps`` steps of the same recipe (same checkpoint, rows, order,
dtype, compile setting) with ``trim_memory`` on or off, one arm after the other; per step it records the step time
and the resident memory after the step, and the process's peak. Step time is the mean of steps 2..N.

    python bench/trainer_memory.py --recipe runs/flywheel-demo-full-v2/recipes/sft-r0.toml --steps 45

Writes bench/results/trainer_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench._machine import machine  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def _rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**30


def arm(recipe: str, steps: int, trim: bool, out: Path) -> dict:
    """One arm, in this process: ``steps`` trainer steps, memory after each."""
    from training.config import load_recipe
    from training.trainer import Trainer

    rec = load_recipe(recipe, {"train.steps": max(steps, 2), "train.time_budget_s": 0.0, "train.save_every": 0,
                               "train.trim_memory": trim})
    trainer = Trainer(rec, out, "cpu", None)
    rows = []
    for _ in range(steps):
        t0 = time.perf_counter()
        record = trainer.train_step()
        rows.append({"step": record["step"], "step_s": time.perf_counter() - t0, "rss_gb": _rss_gb(),
                     "computed_tokens": record["computed_tokens"]})
    return {"trim": trim, "steps": rows, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "final_rss_gb": rows[-1]["rss_gb"], "mean_step_s": statistics.mean(r["step_s"] for r in rows[1:])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipe", required=True, help="an sft/cpt recipe (e.g. a demo work dir's recipes/sft-r0.toml)")
    ap.add_argument("--steps", type=int, default=45)
    ap.add_argument("--name", default="trainer_memory")
    ap.add_argument("--arm", choices=["on", "off"], help=argparse.SUPPRESS)  # the child process of one arm
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.arm:
        print(json.dumps(arm(args.recipe, args.steps, args.arm == "on", args.out)))
        return
    result = {"machine": machine(), "recipe": args.recipe, "steps": args.steps, "arms": {}}
    for name in ("off", "on"):
        out = Path(f"/tmp/trainer-memory-{name}")
        proc = subprocess.run([sys.executable, __file__, "--recipe", args.recipe, "--steps", str(args.steps),
                               "--arm", name, "--out", str(out)], capture_output=True, text=True, check=True)
        result["arms"][name] = json.loads(proc.stdout.strip().splitlines()[-1])
    off, on = result["arms"]["off"], result["arms"]["on"]
    result["ratios"] = {"peak_rss_off_over_on": off["peak_rss_gb"] / on["peak_rss_gb"],
                        "step_s_on_over_off": on["mean_step_s"] / off["mean_step_s"]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1))
    lines = ["| trim | peak RSS GB | RSS after last step GB | mean step s |", "|---|---:|---:|---:|"]
    lines += [f"| {n} | {a['peak_rss_gb']:.1f} | {a['final_rss_gb']:.1f} | {a['mean_step_s']:.2f} |"
              for n, a in result["arms"].items()]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
