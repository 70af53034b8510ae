"""Does the family breadth matter? (issue 20's proof): fine-tune the same pretrained checkpoint on the same number
of SFT rows drawn (a) from the 16 families main had before issue 20 and (b) from all registered families, and
report zero-shot Pass@1 (strict and lenient, greedy) on the public benchmarks (``../shared/benchmarks``) and on
problems from unseen seeds of both family sets. The base checkpoint's score on the same items is the baseline.

Both arms share every setting but the families: rows, difficulties, steps, learning rate, seed, the prompt
template and the compact reference programs (the demo's recipe, ``flywheel.demo``). Held-out problems come from
seeds the training rounds never use.

    python bench/family_transfer.py --rows 288 --steps 72 --bench-limit 0      # the issue's setting (hours)
    python bench/family_transfer.py --rows 160 --steps 40 --bench-limit 40     # a shorter run
    # arm "all" = the full demo's round-0 model (1,324 rows of all families, 190 steps at seq 2048), arm "16"
    # trained here with the same recipe on as many rows of the 16 original families:
    python bench/family_transfer.py --all-run runs/flywheel-demo-full3/runs/sft-r0 --micro-batch 2 \
        --heldout 16 --bench-limit 20 --max-tokens 1000 --label full

Writes bench/results/family_transfer[_LABEL].json and .md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine  # noqa: E402

from flywheel.demo.run import Demo  # noqa: E402
from flywheel.demo.sizes import ALL_FAMILIES, SIZES  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# The families on main before issue 20 (git log: added 2026-11-30); the other 49 came with issue 20.
ORIGINAL_16 = ("assignment", "bin_packing", "blending", "diet", "facility_location", "lot_sizing", "max_flow",
               "min_cost_flow", "multi_knapsack", "parallel_machine", "portfolio", "production_planning",
               "set_cover", "shift_staffing", "transportation", "tsp")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=288, help="SFT rows of each arm (same count)")
    ap.add_argument("--steps", type=int, default=72, help="SFT steps of each arm (batch 4)")
    ap.add_argument("--difficulties", default="1,2")
    ap.add_argument("--heldout", type=int, default=32, help="unseen-seed problems per family set and difficulty")
    ap.add_argument("--bench-limit", type=int, default=0, help="first N items of each benchmark; 0 = all")
    ap.add_argument("--benchmarks", default="nl4opt,mamo_easylp")
    ap.add_argument("--no-base", action="store_true", help="skip the base checkpoint's scores")
    ap.add_argument("--work", type=Path, default=Path("runs/family-transfer"))
    ap.add_argument("--label", default="")
    ap.add_argument("--seq-len", type=int, default=2048, help="SFT row length (the 65 families' programs run longer "
                    "than the speedrun's three; rows are cut after their last target, so padding costs nothing)")
    ap.add_argument("--max-tokens", type=int, default=1200, help="generation limit per completion")
    ap.add_argument("--base-max-tokens", type=int, default=500, help="the base model's limit (it loops to the "
                    "limit whatever it is; the speedrun's zero-shot outputs all did)")
    ap.add_argument("--micro-batch", type=int, default=0, help="rows per forward/backward (0 = batch 4); the "
                    "gradient is the same, the activation memory smaller")
    ap.add_argument("--batch-generate", type=int, default=32, help="completions generated together")
    ap.add_argument("--all-run", type=Path, default=None, help="an existing all-families SFT run (its config.json "
                    "and final/) to serve as arm 'all': its recipe must match this arm-16 recipe but for the data, "
                    "and --rows becomes its shard's training-row count")
    args = ap.parse_args()
    reused = reuse_all(args) if args.all_run else None
    diffs = tuple(int(d) for d in args.difficulties.split(","))
    arms = {"16": ORIGINAL_16, "all": ALL_FAMILIES}
    missing = sorted(set(ORIGINAL_16) - set(ALL_FAMILIES))
    if missing:
        raise SystemExit(f"families not registered: {missing}")
    per_difficulty = -(-args.rows // len(diffs)) + 16  # a margin for problems the contracts reject
    t0 = time.perf_counter()
    demos: dict[str, Demo] = {}
    for arm, fams in arms.items():
        size = replace(SIZES["speedrun"], families=tuple(fams), round0_difficulties=diffs,
                       heldout_difficulties=diffs, round0_problems=per_difficulty, heldout_problems=args.heldout,
                       rounds=0, bench_limit=args.bench_limit, benchmarks=tuple(args.benchmarks.split(",")),
                       sft_steps=args.steps, sft_seq_len=args.seq_len, max_tokens=args.max_tokens,
                       zero_shot_max_tokens=args.base_max_tokens, micro_batch=args.micro_batch,
                       batch_generate=args.batch_generate)
        (args.work / arm).mkdir(parents=True, exist_ok=True)
        demos[arm] = Demo(size, args.work / arm, RESULTS)
    base = demos["16"].base_checkpoint()
    heldout = {arm: d.heldout() for arm, d in demos.items()}
    result: dict[str, Any] = {"bench": "family_transfer", "label": args.label or "default", "machine": machine(),
                              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "settings": {"rows": args.rows, "steps": args.steps, "difficulties": list(diffs),
                                           "heldout_per_difficulty": args.heldout, "bench_limit": args.bench_limit,
                                           "seq_len": args.seq_len, "max_tokens": args.max_tokens,
                                           "benchmarks": args.benchmarks.split(","), "init": "smollm2",
                                           "families": {a: len(f) for a, f in arms.items()},
                                           "micro_batch": args.micro_batch, "base_max_tokens": args.base_max_tokens},
                              "models": {}}
    models: dict[str, Path] = {}
    if reused:
        result["settings"].update(reused["settings"])
        models["sft-all"] = args.all_run / "final"
    for arm, demo in demos.items():
        if arm in reused_arms(reused):
            continue
        demo.say(f"arm {arm}: {len(arms[arm])} families -> {args.rows} SFT rows -> {args.steps} steps")
        for d in diffs:
            demo.store_round(f"r0-d{d}", seed=d, difficulty=d, problems=per_difficulty)
        shard = demo.export("sft", demo.work / "shards" / "sft0")
        sub = demo.subsample(demo.work / "shards" / "sft0", args.rows, demo.work / "shards" / f"sft-{args.rows}")
        result["settings"][f"rows_available_{arm}"] = shard["counts"]["train"]
        run = demo.train(f"sft-{arm}", demo.recipe(f"sft-{arm}", "sft", [sub], steps=args.steps,
                                                    seq_len=demo.size.sft_seq_len, lr=demo.size.lr_sft, init=base))
        models[f"sft-{arm}"] = run / "final"
        result["settings"][f"train_s_{arm}"] = demo.results["stages"].get(f"train:sft-{arm}") or _train_seconds(run)
    if not args.no_base:
        models["base"] = base  # last: it loops to its limit on every item, the slowest and least informative
    models = dict(sorted(models.items(), key=lambda kv: ["sft-16", "sft-all", "base"].index(kv[0])))
    for name, ckpt in models.items():
        row: dict[str, Any] = {}
        for arm, demo in demos.items():
            # "base" (not "base-on-ARM") gives the base model its own generation limit in the demo's policy file;
            # each arm's demo evaluates in its own work directory, so the tags do not collide
            ev = demo.evaluate(ckpt, heldout[arm], "base" if name == "base" else f"{name}-on-{arm}")
            row[f"heldout_{arm}"] = {k: ev[k] for k in ("items", "pass@1_strict", "pass@1_lenient")}
        row.update(demos["all"].benchmarks(ckpt, name))
        result["models"][name] = row
        (RESULTS / f"family_transfer{'_' + args.label if args.label else ''}.json").write_text(
            json.dumps(result, indent=2, default=str) + "\n")  # after every model: a stopped run keeps its rows
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    suffix = f"_{args.label}" if args.label else ""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"family_transfer{suffix}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    text = table(result)
    (RESULTS / f"family_transfer{suffix}.md").write_text(text + "\n")
    plot(result, RESULTS / f"family_transfer{suffix}.png")
    print(text)


def reused_arms(reused: dict[str, Any] | None) -> set[str]:
    return {"all"} if reused else set()


def plot(r: dict[str, Any], path: Path) -> None:
    """Grouped bars: strict Pass@1 of each model (bars) on each test set (groups), lenient as a lighter cap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = ["heldout_16", "heldout_all", *r["settings"]["benchmarks"]]
    models = list(r["models"])
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    top = 0.0
    for k, name in enumerate(models):
        xs = [i + (k - (len(models) - 1) / 2) * width for i in range(len(sets))]
        row = r["models"][name]
        strict = [100 * (row.get(s) or {}).get("pass@1_strict", 0.0) for s in sets]
        lenient = [100 * (row.get(s) or {}).get("pass@1_lenient", 0.0) for s in sets]
        ax.bar(xs, lenient, width, color=f"C{k}", alpha=0.35)
        ax.bar(xs, strict, width, color=f"C{k}", label=name)
        top = max(top, *lenient, *strict)
    ax.set_ylim(0, max(10.0, 1.15 * top))
    ax.set_xticks(range(len(sets)), [s.replace("heldout_", "unseen ") for s in sets])
    ax.set_ylabel("Pass@1 % (strict; lenient lighter)")
    ax.set_title(f"Family transfer: {r['settings']['rows']} SFT rows, {r['settings']['steps']} steps")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _train_seconds(run: Path) -> float:
    """The training steps' wall time from a run's metrics (a rerun that finds the checkpoint has no stage timing)."""
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    return round(sum(m.get("step_s", 0.0) for m in metrics), 1)


def reuse_all(args: argparse.Namespace) -> dict[str, Any]:
    """Check that ``--all-run`` was trained with this script's arm-16 recipe (but for its data) and take its row
    count; a mismatch is an error that names the field and the flag that matches it."""
    cfg_file = args.all_run / "config.json"
    if not (args.all_run / "final" / "config.json").exists() or not cfg_file.exists():
        raise SystemExit(f"--all-run {args.all_run}: no config.json and final/ checkpoint there")
    recipe = json.loads(cfg_file.read_text())["recipe"]
    speedrun = SIZES["speedrun"]
    want = {("data", "seq_len"): (args.seq_len, "--seq-len"), ("train", "steps"): (args.steps, "--steps"),
            ("train", "micro_batch"): (args.micro_batch or speedrun.batch_rows, "--micro-batch"),
            ("train", "batch_rows"): (speedrun.batch_rows, None), ("train", "lr"): (speedrun.lr_sft, None),
            ("train", "seed"): (0, None)}
    for (section, key), (value, flag) in want.items():
        got = recipe[section][key]
        if got != value:
            hint = f" (pass {flag} {got})" if flag else " (the demo recipe's value; not a flag here)"
            raise SystemExit(f"--all-run {cfg_file}: recipe {section}.{key} = {got!r}, this run uses {value!r}{hint}")
    if Path(recipe["model"]["path"]).name != "smollm2":
        raise SystemExit(f"--all-run {cfg_file}: initialised from {recipe['model']['path']}, not an imported smollm2")
    shard = Path(recipe["data"]["sources"][0]["path"])
    counts = json.loads((shard / "manifest.json").read_text())["counts"]
    args.rows = counts["train"]
    fams = counts.get("train_by_family", {})
    if fams and set(fams) != set(ALL_FAMILIES):
        raise SystemExit(f"--all-run {shard}: trained on {len(fams)} families, not all {len(ALL_FAMILIES)}")
    secs = _train_seconds(args.all_run)
    return {"settings": {"all_run": str(args.all_run), "rows_available_all": counts["train"],
                         "train_s_all": round(secs, 1), "all_run_shard": str(shard)}}


def table(r: dict[str, Any]) -> str:
    """Strict / lenient Pass@1 per model (rows) and test set (columns); fits 80 columns for two benchmarks."""
    sets = ["heldout_16", "heldout_all", *r["settings"]["benchmarks"]]
    head = "| model | " + " | ".join(s.replace("heldout_", "unseen ") for s in sets) + " |"
    lines = [f"Family transfer: {r['settings']['rows']} SFT rows, {r['settings']['steps']} steps, strict / "
             "lenient Pass@1 (items)", "", head, "|---|" + "---:|" * len(sets)]
    for name, row in r["models"].items():
        cells = []
        for s in sets:
            e = row.get(s) or {}
            cells.append(f"{e['pass@1_strict']:.0%} / {e['pass@1_lenient']:.0%} ({e['items']})"
                         if "pass@1_strict" in e else e.get("skipped", "-"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
