"""``python -m flywheel.demo [--size speedrun|full|scratch|smoke] [--work DIR] [--reports DIR] [--fresh]``.

The flywheel on a pretrained checkpoint: import it (``flywheel models import``), measure it zero-shot, round 0
(generator problems with compact reference programs -> sandbox -> contracts -> store) -> SFT -> round 1 (new seeds,
harder difficulties; the fine-tuned policy samples K programs per problem, the contracts accept or reject, the
accepted samples join the data) -> SFT from the previous round's model -> round 2 ... Every model is scored
greedily on the same problems from unseen seeds (strict and lenient Pass@1, per family, miss classes). Each stage
leaves its artefacts in the work directory and is skipped when they exist, so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from flywheel.demo.plots import plot_rounds, short_run, write_rounds_table
from flywheel.demo.run import Demo, budget_plan, final_val, retrain_mix, steps_trained
from flywheel.demo.sizes import SIZES, DemoSize
from solvers.errors import FlywheelError, unknown_name


def rows(shard: Path) -> int:
    return pq.read_metadata(shard / "train.parquet").num_rows


def stage_names(size: DemoSize) -> list[str]:
    names = ["import" if size.init else "tokenizer", "round 0 data", "held-out problems"]
    names += ["zero-shot eval"] if size.zero_shot and size.init else []
    names += ["SFT round 0", "eval round 0"]
    for r in range(1, size.rounds + 1):
        names += [f"round {r} policy samples", f"SFT round {r}", f"eval round {r}"]
    return [*names, "report"]


def round_seed(run_seed: int, r: int, difficulty: int) -> int:
    """The problem seed of round ``r`` >= 1 at one difficulty: ``100_000 * run_seed + 1000 * r + difficulty`` (run
    seed 0 keeps the seeds it always had; round 0 uses ``10 * run_seed + difficulty``, below 1000)."""
    return 100_000 * run_seed + 1000 * r + difficulty


def overrides(size: DemoSize, pairs: list[str]) -> DemoSize:
    """``--set KEY=VALUE`` pairs applied to a size (``sft_steps=36``, ``rounds=0``, ``families=diet,tsp``): the value
    is parsed as the field's type; an unknown key names the nearest field."""
    known = {f.name: f for f in fields(DemoSize)}
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise FlywheelError(f"--set takes KEY=VALUE, got {pair!r}", culprit="--set")
        if key not in known:
            raise unknown_name("demo setting", key, list(known))
        current = getattr(size, key)
        if isinstance(current, tuple):
            kind = type(current[0]) if current else str
            changes[key] = tuple(kind(v) for v in value.split(",") if v)
        elif isinstance(current, bool):
            changes[key] = value.lower() in ("1", "true", "yes")
        elif isinstance(current, (int, float, str)):
            try:
                changes[key] = type(current)(value)
            except ValueError as exc:
                raise FlywheelError(f"{key}: {value!r} must be of type {type(current).__name__}", culprit="--set") from exc
        else:
            raise FlywheelError(f"{key} cannot be set from the command line", culprit="--set")
    return replace(size, **changes)


def run(size_name: str, work: Path, reports: Path, fresh: bool = False, progress: bool = True,
        init: str | None = None, settings: list[str] | None = None) -> dict[str, Any]:
    size = SIZES[size_name] if init is None else replace(SIZES[size_name], init=init)
    size = overrides(size, settings or [])
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    demo = Demo(size, work, reports)
    import torch

    torch.set_num_threads(size.threads)  # in-process greedy generation
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    sh = work / "shards"
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeElapsedColumn(), disable=not progress, transient=False)
    names = stage_names(size)
    task = bar.add_task(names[0], total=len(names))

    def step() -> None:
        done = int(bar.tasks[0].completed) + 1
        bar.update(task, advance=1, description=names[min(done, len(names) - 1)])

    with bar:
        base = demo.base_checkpoint()
        step()
        demo.say("round 0: generator problems -> compact reference programs -> sandbox -> contracts -> store")
        for d in size.round0_difficulties:
            demo.store_round(f"r0-d{d}", seed=10 * size.seed + d, difficulty=d, problems=size.round0_problems)
        demo.export("sft", sh / "sft0")
        reference_rows = rows(sh / "sft0")
        tok = None if base else demo.tokenizer([sh / "sft0"])
        step()
        problems = demo.heldout()
        overlap = demo.heldout_overlap(problems)
        step()

        rounds: list[dict[str, Any]] = []
        if size.zero_shot and base:
            demo.say("zero-shot: the imported checkpoint before any training")
            rounds.append({"round": "base", "model": "base", "train_rows": 0, **demo.evaluate(base, problems, "base"),
                           "benchmarks": demo.benchmarks(base, "base")})
            step()

        sft0 = demo.train("sft-r0", demo.recipe("sft-r0", "sft", [sh / "sft0"], steps=size.sft_steps,
                                                seq_len=size.sft_seq_len, lr=size.lr_sft, init=base, tokenizer=tok,
                                                seed=size.seed, budget_s=size.sft_budget_s,
                                                min_steps=size.sft_min_steps))
        step()
        rounds.append({"round": 0, "model": "runs/sft-r0", "train_rows": reference_rows,
                       "train_s": demo.results["stages"].get("train:sft-r0"), "steps": steps_trained(sft0),
                       "steps_planned": size.sft_steps, "budget_plan": budget_plan(sft0),
                       "val_loss_heldout": final_val(sft0),
                       **demo.evaluate(sft0 / "final", problems, "r0"), "benchmarks": demo.benchmarks(sft0 / "final", "r0")})
        if note := short_run(rounds[-1]):
            demo.say(note)
        step()

        model, policy_rounds, accepted = sft0, [], 0
        for r in range(1, size.rounds + 1):
            demo.say(f"round {r}: hf:{model / 'final'} samples {size.round_samples} programs per new problem")
            # New seeds, difficulties the reference round did not cover included; runs of different seeds sample
            # different problems (round_seed).
            new = [demo.store_round(f"r{r}-d{d}", seed=round_seed(size.seed, r, d), difficulty=d,
                                    problems=size.round_problems, policy=f"hf:{model / 'final'}")
                   for d in size.round_difficulties]
            policy_rounds += new
            accept = demo.acceptance(new)
            accepted += accept["accepted"]
            step()
            # Self-distillation data: every accepted policy sample so far, replayed beside round 0's references
            # (the new problems' own reference programs stay out: the gain must be the policy's, not more generator
            # data). The policy's rows get `policy_share` of each batch: drawn in proportion, a few dozen accepted
            # samples among ~600 references were mostly never seen by a short retraining.
            policy_rows = 0
            if accepted:
                listed = ", ".join(str(x) for x in policy_rounds)
                shard = demo.export("sft", sh / f"policy-r{r}", "--where",
                                    f"policy <> 'reference' AND round IN ({listed})", "--mix", str(demo.all_train_mix()))
                policy_rows = shard["counts"]["train"]
            weights = retrain_mix(reference_rows, policy_rows, size.policy_share,
                                  size.retrain_steps * size.batch_rows, size.policy_repeats)
            shards = [sh / "sft0", sh / f"policy-r{r}"][:len(weights)]
            model = demo.train(f"sft-r{r}", demo.recipe(f"sft-r{r}", "sft", shards, weights=weights,
                                                        steps=size.retrain_steps, seq_len=size.sft_seq_len,
                                                        lr=size.lr_retrain, init=model / "final", seed=size.seed))
            step()
            rounds.append({"round": r, "model": f"runs/sft-r{r}", "train_rows": reference_rows + policy_rows,
                           "policy_rows": policy_rows, "data_weights": weights,
                           "train_s": demo.results["stages"].get(f"train:sft-r{r}"), "steps": steps_trained(model),
                           "steps_planned": size.retrain_steps, "policy": accept,
                           "val_loss_heldout": final_val(model), **demo.evaluate(model / "final", problems, f"r{r}"),
                           "benchmarks": demo.benchmarks(model / "final", f"r{r}")})
            step()

        results = demo.results | {
            "settings": {"families": list(size.families), "init": size.init or f"random {size.arch}",
                         "api": size.api, "round0_difficulties": list(size.round0_difficulties),
                         "round_difficulties": list(size.round_difficulties),
                         "heldout_difficulties": list(size.heldout_difficulties),
                         "heldout_problems": len(problems), "heldout_seed": size.heldout_seed, "seed": size.seed,
                         "heldout_in_training_store": overlap, "round0_problems": size.round0_problems,
                         "round_problems": size.round_problems, "round_samples": size.round_samples,
                         "sft_steps": size.sft_steps, "retrain_steps": size.retrain_steps,
                         "policy_share": size.policy_share, "policy_repeats": size.policy_repeats,
                         "round_hf_dtype": size.round_hf_dtype, "round_repeat_stop": size.round_repeat_stop,
                         "batch_rows": size.batch_rows, "lr_sft": size.lr_sft, "lr_retrain": size.lr_retrain,
                         "freeze_layers": size.freeze_layers, "freeze_embeddings": size.freeze_embeddings,
                         "compile": size.compile, "lora_r": size.lora_r, "lora_alpha": size.lora_alpha,
                         "length_groups": size.length_groups,
                         "sft_budget_s": size.sft_budget_s, "sft_min_steps": size.sft_min_steps,
                         "max_tokens": size.max_tokens, "template": "code_only", "render_style": "compact",
                         "benchmarks": list(size.benchmarks), "bench_limit": size.bench_limit,
                         "overrides": list(settings or []),
                         "cpus": os.cpu_count(), "load_at_start": round(load, 1)},
            "rounds": rounds,
            "wall_s": round(time.perf_counter() - t0, 1),
            "resumed": demo.resumed,  # wall_s is this invocation's; the stages an earlier one ran keep their times
        }
        reports.mkdir(parents=True, exist_ok=True)
        plot_rounds(results, reports)
        write_rounds_table(results, reports)
        step()
    demo.say(f"done in {results['wall_s']:.0f}s; results in {reports}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m flywheel.demo", description=__doc__)
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--work", type=Path, default=None, help="default: runs/flywheel-demo-SIZE")
    parser.add_argument("--reports", type=Path, default=Path("reports/flywheel"))
    parser.add_argument("--fresh", action="store_true", help="delete the work directory first")
    parser.add_argument("--init", default=None, help="initial checkpoint (HF folder or import source); default: "
                        "the size's")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override one DemoSize field (repeatable), e.g. --set sft_steps=36 --set rounds=0")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args()
    try:
        run(args.size, args.work or Path(f"runs/flywheel-demo-{args.size}"), args.reports, args.fresh,
            args.progress, args.init, args.settings)
    except FlywheelError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
