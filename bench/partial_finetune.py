"""Step time of partial fine-tuning against full fine-tuning, on the speedrun's own SFT rows.

Partial fine-tuning (``[train] freeze_embeddings`` and ``freeze_layers = N``) freezes the input embeddings (with
SmolLM2's tied LM head) and the lowest N decoder layers: nothing below the first trainable layer takes part in the
backward and the frozen weights carry no gradient and no AdamW state. It is a **training setting, not a faster
kernel**: it changes what is learnt, so its worth is the Pass@1 it reaches in the time it saves, which
``bench/speedrun_seeds.py --set freeze_layers=N --set freeze_embeddings=True`` measures. This bench gives the other
half, the time per step, as ratios to full fine-tuning measured in one run.

Arms: one ``training.trainer.Trainer`` per setting, all from the same recipe (a speedrun work dir's
``recipes/sft-r0.toml``: same checkpoint, rows, order, learning rate, dtype), resident together in this process and
stepped in lockstep (arm A's step i, then B's, ...; the order rotates each step), so load from other jobs falls on
all alike. Step time is the median over steps 2..N (step 1 pays one-off costs).

    python bench/partial_finetune.py --work runs/speedrun-fz10/seed0
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench._machine import machine  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def arm_name(layers: int, embeddings: bool) -> str:
    return "full" if not layers and not embeddings else f"emb{'+' if embeddings else '-'}L{layers}"


def race(recipe: Path, arms: list[tuple[int, bool]], steps: int, out: Path) -> dict[str, Any]:
    import torch

    from training.config import load_recipe
    from training.trainer import Trainer

    torch.manual_seed(0)
    trainers = {}
    for layers, emb in arms:
        r = load_recipe(str(recipe), {"train.freeze_layers": layers, "train.freeze_embeddings": emb,
                                      "train.eval_every": 0, "train.steps": max(steps, 150)})
        trainers[arm_name(layers, emb)] = Trainer(r, out / arm_name(layers, emb), quiet=True)
    records: dict[str, list[dict[str, Any]]] = {k: [] for k in trainers}
    names = list(trainers)
    for i in range(steps):
        for name in names[i % len(names):] + names[:i % len(names)]:
            records[name].append(trainers[name].train_step())
        print(f"step {i + 1}: " + "  ".join(f"{n} {records[n][-1]['step_s']:.2f}s" for n in names), flush=True)
    rows = {}
    for name, t in trainers.items():
        times = [r["step_s"] for r in records[name][1:]]
        rows[name] = {"trainable_params": sum(p.numel() for p in t.model.parameters() if p.requires_grad),
                      "step_s_median": statistics.median(times), "step_s_best": min(times),
                      "step_s": [round(x, 3) for x in times], "loss": [round(r["loss"], 4) for r in records[name]],
                      "computed_tokens": [r["computed_tokens"] for r in records[name]], "dtype": t.dtype}
    base = rows.get("full", next(iter(rows.values())))["step_s_median"]
    for row in rows.values():
        row["speedup_vs_full"] = base / row["step_s_median"]
    return rows


def markdown(rows: dict[str, Any]) -> str:
    lines = ["| arm | trainable | step s (median) | speed-up | loss after |", "|---|---:|---:|---:|---:|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['trainable_params'] / 1e6:.1f}M | {r['step_s_median']:.2f} | "
                     f"{r['speedup_vs_full']:.2f}x | {r['loss'][-1]:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="a speedrun work dir (its recipes/sft-r0.toml)")
    ap.add_argument("--arms", default="0:0,0:1,5:1,10:1,15:1", help="LAYERS:EMBEDDINGS, comma-separated")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--name", default="partial_finetune", help="results file stem under bench/results/")
    args = ap.parse_args()
    recipe = args.work / "recipes" / "sft-r0.toml"
    if not recipe.is_file():
        raise SystemExit(f"{recipe}: no such recipe (run the speedrun into --work first)")
    arms = [(int(a.split(":")[0]), a.split(":")[1] == "1") for a in args.arms.split(",")]
    rows = race(recipe, arms, args.steps, ROOT / "runs" / "bench-partial")
    out = {"bench": args.name, "machine": machine(), "recipe": str(recipe), "steps": args.steps, "arms": rows,
           "command": " ".join(["python bench/partial_finetune.py", *sys.argv[1:]])}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=2) + "\n")
    md = markdown(rows)
    (RESULTS / f"{args.name}.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
