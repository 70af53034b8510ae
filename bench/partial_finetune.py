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
all alike: ``bench/train_settings.py``'s race. Step time is the mean over steps 2..N (step 1 pays one-off costs).

    python bench/partial_finetune.py --work runs/speedrun-fz10/seed0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.train_settings import run  # noqa: E402


def arm_name(layers: int, embeddings: bool) -> str:
    return "full" if not layers and not embeddings else f"emb{'+' if embeddings else '-'}L{layers}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="a speedrun work dir (its recipes/sft-r0.toml)")
    ap.add_argument("--arms", default="0:0,0:1,5:1,10:1,15:1", help="LAYERS:EMBEDDINGS, comma-separated")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--name", default="partial_finetune", help="results file stem under bench/results/")
    args = ap.parse_args()
    arms = {}
    for a in args.arms.split(","):
        layers, emb = int(a.split(":")[0]), a.split(":")[1] == "1"
        arms[arm_name(layers, emb)] = {"train.freeze_layers": layers, "train.freeze_embeddings": emb}
    run(sys.argv[1:], arms, args.work, args.steps, args.name, "bench/partial_finetune.py")


if __name__ == "__main__":
    main()
