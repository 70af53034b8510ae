"""Step time of trainer settings, raced on the speedrun's own SFT rows: compiled layers and length-grouped rows
against the plain trainer.

``[train] compile`` (torch.compile of each decoder layer) is a faster implementation of the same step: same rows,
same loss up to float noise. ``[data] length_groups`` changes which rows share a step (similar lengths, so
``trim_tail`` keeps fewer padded columns) but not what an epoch contains: every arm still takes ``batch_rows``
examples per step, so time per step is the unit for both. Freezing (``bench/partial_finetune.py``) uses the same
race.

Arms: one ``training.trainer.Trainer`` per setting, all from the same recipe (a speedrun work dir's
``recipes/sft-r0.toml``: same checkpoint, rows, learning rate, dtype), resident together in this process and stepped
in lockstep (arm A's step i, then B's, ...; the order rotates each step), so load from other jobs falls on all alike.
Step 1 pays one-off costs (the compile) and is reported apart; the step time is the mean over steps 2..N (length
groups sort runs of G rows, so N - 1 should span whole runs: G / batch_rows steps each).

    python bench/train_settings.py --work runs/speedrun-compile/seed0
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
ARMS = ("plain=train.compile=false,data.length_groups=0", "compile=train.compile=true,data.length_groups=0",
        "groups=train.compile=false,data.length_groups=32", "both=train.compile=true,data.length_groups=32")


def parse_arm(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME=key=value,key=value`` (values as JSON where they parse, else strings)."""
    name, _, rest = spec.partition("=")
    over: dict[str, Any] = {}
    for kv in filter(None, rest.split(",")):
        key, _, value = kv.partition("=")
        try:
            over[key] = json.loads(value)
        except json.JSONDecodeError:
            over[key] = value
    return name, over


def race(recipe: Path, arms: dict[str, dict[str, Any]], steps: int, out: Path) -> dict[str, Any]:
    import torch

    from training.config import load_recipe
    from training.trainer import Trainer

    torch.manual_seed(0)
    trainers = {name: Trainer(load_recipe(str(recipe), {"train.eval_every": 0, "train.steps": max(steps, 150),
                                                        **over}), out / name, quiet=True)
                for name, over in arms.items()}
    records: dict[str, list[dict[str, Any]]] = {k: [] for k in trainers}
    names = list(trainers)
    for i in range(steps):
        for name in names[i % len(names):] + names[:i % len(names)]:
            records[name].append(trainers[name].train_step())
        print(f"step {i + 1}: " + "  ".join(f"{n} {records[n][-1]['step_s']:.2f}s" for n in names), flush=True)
    rows = {}
    for name, t in trainers.items():
        times = [r["step_s"] for r in records[name][1:]]
        rows[name] = {"settings": arms[name],
                      "trainable_params": sum(p.numel() for p in t.model.parameters() if p.requires_grad),
                      "first_step_s": records[name][0]["step_s"], "step_s_mean": statistics.mean(times),
                      "step_s_median": statistics.median(times), "step_s_best": min(times),
                      "step_s": [round(x, 3) for x in times], "loss": [round(r["loss"], 4) for r in records[name]],
                      "computed_tokens": [r["computed_tokens"] for r in records[name]], "dtype": t.dtype}
    base = rows[names[0]]["step_s_mean"]
    for row in rows.values():
        row["speedup"] = base / row["step_s_mean"]
    return rows


def markdown(rows: dict[str, Any]) -> str:
    lines = ["| arm | trainable | step 1 s | step s (mean) | tokens/step | speed-up | loss after |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        tokens = statistics.mean(r["computed_tokens"][1:])
        lines.append(f"| {name} | {r['trainable_params'] / 1e6:.1f}M | {r['first_step_s']:.1f} | "
                     f"{r['step_s_mean']:.2f} | {tokens:,.0f} | {r['speedup']:.2f}x | {r['loss'][-1]:.3f} |")
    return "\n".join(lines) + "\n"


def run(argv: list[str], arms: dict[str, dict[str, Any]], work: Path, steps: int, name: str, script: str) -> None:
    recipe = work / "recipes" / "sft-r0.toml"
    if not recipe.is_file():
        raise SystemExit(f"{recipe}: no such recipe (run the speedrun into --work first)")
    rows = race(recipe, arms, steps, ROOT / "runs" / f"bench-{name}")
    out = {"bench": name, "machine": machine(), "recipe": str(recipe), "steps": steps, "arms": rows,
           "command": " ".join([f"python {script}", *argv])}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    md = markdown(rows)
    (RESULTS / f"{name}.md").write_text(md)
    print(md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="a speedrun work dir (its recipes/sft-r0.toml)")
    ap.add_argument("--arm", action="append", default=[], metavar="NAME=KEY=VALUE,...",
                    help=f"an arm by recipe overrides (repeatable; the first is the baseline); default {ARMS}")
    ap.add_argument("--steps", type=int, default=17)
    ap.add_argument("--name", default="train_settings", help="results file stem under bench/results/")
    args = ap.parse_args()
    arms = dict(parse_arm(a) for a in (args.arm or ARMS))
    run(sys.argv[1:], arms, args.work, args.steps, args.name, "bench/train_settings.py")


if __name__ == "__main__":
    main()
